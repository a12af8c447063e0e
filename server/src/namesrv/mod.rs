//! The name server: a stateless directory of broker groups and topic routes.
//!
//! Brokers register every 30 s over a long-lived connection; clients ask for routes. A broker that
//! stops registering for its timeout (120 s by default), or whose connection closes, is dropped
//! along with the queues only it served.

mod kv_config;
mod route_info;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use skiff_model::admin::{AdminCommand, AdminReply};
use skiff_model::command::{ErrorKind, Reply, Request};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::NamesrvConfig;
use crate::net::{self, ClientChannel, Handled, RequestContext, Service};
pub use route_info::{BrokerIdentity, RouteInfoManager};

struct NameServerService {
    routes: RouteInfoManager,
    kv: kv_config::KvConfigManager,
    /// The settings as UPDATE_NAMESRV_CONFIG left them (GET_NAMESRV_CONFIG's answer); changes
    /// are written into the config file (`settings_file`) and take effect after a restart.
    settings: parking_lot::RwLock<crate::config::NamesrvConfig>,
    /// The config file the name server started from, kept up to date with UPDATE_NAMESRV_CONFIG.
    settings_file: Option<crate::config::write_back::WriteBack>,
    broker_timeout: Duration,
    /// `aclEnable`: the accounts every request is checked against.
    acl: Option<Arc<crate::acl::AccessControl>>,
}

impl Service for NameServerService {
    fn access_control(&self) -> Option<&crate::acl::AccessControl> {
        self.acl.as_deref()
    }

    fn handle(self: Arc<Self>, ctx: &RequestContext, request: Request) -> Handled {
        let updates_config = matches!(
            request,
            Request::Admin(AdminCommand::UpdateNamesrvConfig { .. })
        );
        let reply = self.answer(ctx, request);
        if !updates_config || reply != Reply::Success || self.settings_file.is_none() {
            return Handled::Now(reply);
        }
        // As Java's `Configuration.update`, the file is written before the answer.
        Handled::Later(Box::pin(async move {
            let written = tokio::task::spawn_blocking(move || {
                self.settings_file
                    .as_ref()
                    .is_none_or(|file| file.flush(SETTINGS_FILE_TIMEOUT))
            })
            .await
            .unwrap_or(false);
            if !written {
                warn!("the config file is not written yet; the settings hold until a restart");
            }
            reply
        }))
    }

    fn on_disconnect(&self, channel: &ClientChannel) {
        for broker in self.routes.on_channel_closed(channel.id()) {
            info!(broker = %broker.broker_name, addr = %broker.broker_addr, "broker connection closed; removed from routes");
        }
    }
}

impl NameServerService {
    fn answer(&self, ctx: &RequestContext, request: Request) -> Reply {
        match request {
            Request::RegisterBroker(registration) => {
                let first = !self.routes.is_live(&registration.broker_addr);
                let result = self.routes.register_broker(
                    &registration,
                    ctx.channel.id(),
                    self.broker_timeout,
                );
                if first {
                    info!(broker = %registration.broker_name, addr = %registration.broker_addr,
                          cluster = %registration.cluster_name, topics = registration.topics.len(),
                          "broker registered");
                }
                Reply::BrokerRegistered(result)
            }
            Request::UnregisterBroker {
                cluster_name,
                broker_name,
                broker_addr,
                broker_id,
            } => {
                info!(broker = %broker_name, addr = %broker_addr, "broker unregistered");
                self.routes.unregister_broker(&BrokerIdentity {
                    cluster_name,
                    broker_name,
                    broker_addr,
                    broker_id,
                });
                Reply::Success
            }
            Request::GetRouteInfo { topic } => match self.routes.topic_route(&topic) {
                Some(route) => Reply::Route(route),
                None => Reply::error(
                    ErrorKind::TopicNotExist,
                    format!("No topic route info in name server for the topic: {topic}"),
                ),
            },
            Request::GetBrokerClusterInfo => Reply::ClusterInfo(self.routes.cluster_info()),
            Request::GetAllTopicList => Reply::TopicList(self.routes.all_topics()),
            Request::DeleteTopicInNamesrv {
                topic,
                cluster_name,
            } => {
                self.routes.delete_topic(&topic, cluster_name.as_deref());
                Reply::Success
            }
            Request::Admin(command) => self.admin(ctx, command),
            other => Reply::error(
                ErrorKind::RequestNotSupported,
                format!(
                    "the name server does not serve {}; send it to a broker",
                    skiff_protocol::remoting::request_name(&other)
                ),
            ),
        }
    }
}

/// How long UPDATE_NAMESRV_CONFIG waits for its settings to be in the config file.
const SETTINGS_FILE_TIMEOUT: Duration = Duration::from_secs(3);

/// Keys UPDATE_NAMESRV_CONFIG refuses (Java's default `configBlackList`).
const CONFIG_BLACK_LIST: [&str; 3] = ["configBlackList", "configStorePath", "kvConfigPath"];

impl NameServerService {
    /// UPDATE_NAMESRV_CONFIG (`DefaultRequestProcessor.updateConfig`): checked and applied
    /// together; GET_NAMESRV_CONFIG shows the result. Nothing of it changes the running name
    /// server: the settings are written into the config file it started from (by the file's
    /// writer thread, before the answer) and take effect after a restart. Java writes them
    /// into its `configStorePath` file, which it does not read at start.
    fn update_config(&self, ctx: &RequestContext, properties: &str) -> Reply {
        // Held throughout, so that two updates at once do not lose one.
        let mut settings = self.settings.write();
        let (updated, changes) = match crate::config::with_updates(
            &*settings,
            properties,
            &CONFIG_BLACK_LIST,
            crate::config::NamesrvConfig::validate,
        ) {
            Ok(updated) => updated,
            Err(refused) => return refused.into(),
        };
        let keys: Vec<&str> = changes.iter().map(|(key, _)| key.as_str()).collect();
        match &self.settings_file {
            Some(file) => {
                info!(?keys, client = %ctx.channel.peer(), file = %file.path().display(), "name server settings updated (UPDATE_NAMESRV_CONFIG) and written into the config file; they apply after a restart");
                file.record(&changes);
            }
            None => {
                info!(?keys, client = %ctx.channel.peer(), "name server settings updated (UPDATE_NAMESRV_CONFIG); started without a config file, so they are lost at a restart (start with -c FILE to keep them)");
            }
        }
        *settings = updated;
        Reply::Success
    }

    fn admin(&self, ctx: &RequestContext, command: AdminCommand) -> Reply {
        match command {
            AdminCommand::PutKvConfig {
                namespace,
                key,
                value,
            } => self.kv.put(&namespace, &key, &value),
            AdminCommand::GetKvConfig { namespace, key } => self.kv.get(&namespace, &key),
            AdminCommand::DeleteKvConfig { namespace, key } => self.kv.delete(&namespace, &key),
            AdminCommand::GetKvList { namespace } => self.kv.list(&namespace),
            AdminCommand::GetNamesrvConfig => Reply::Admin(AdminReply::Config {
                properties: self
                    .settings
                    .read()
                    .java_properties()
                    .into_iter()
                    .map(|(key, value)| (key.to_string(), value))
                    .collect(),
                data_version: None,
            }),
            AdminCommand::UpdateNamesrvConfig { properties } => {
                self.update_config(ctx, &properties)
            }
            AdminCommand::WritePerm {
                broker_name,
                writable,
            } => {
                let topic_count = self.routes.set_write_perm(&broker_name, writable);
                info!(broker = %broker_name, writable, topics = topic_count,
                      client = %ctx.channel.peer(), "write permission of broker changed");
                Reply::Admin(AdminReply::WritePermChanged {
                    writable,
                    topic_count,
                })
            }
            AdminCommand::SystemTopicsFromNamesrv => {
                let (topics, broker_addr) = self.routes.system_topics();
                Reply::Admin(AdminReply::SystemTopics {
                    topics,
                    broker_addr,
                })
            }
            other @ (AdminCommand::TopicConsumers { .. }
            | AdminCommand::HaStatus
            | AdminCommand::GetBrokerConfig
            | AdminCommand::GetAllSubscriptionGroups
            | AdminCommand::GetAllConsumerOffsets
            | AdminCommand::GetAllDelayOffsets
            | AdminCommand::GetAllMessageRequestModes
            | AdminCommand::GetTimerCheckpoint
            | AdminCommand::GetTimerMetrics
            | AdminCommand::DeleteSubscriptionGroup { .. }
            | AdminCommand::ConsumerConnections { .. }
            | AdminCommand::ProducerConnections { .. }
            | AdminCommand::SystemTopicsFromBroker
            | AdminCommand::ConsumerRunningInfo { .. }
            | AdminCommand::StatsData { .. }
            | AdminCommand::ResetOffset { .. }
            | AdminCommand::AllProducerInfo
            | AdminCommand::CleanUnusedTopic
            | AdminCommand::CleanExpiredConsumeQueue
            | AdminCommand::CreateTopicList(_)
            | AdminCommand::CreateStaticTopic { .. }
            | AdminCommand::CreateSubscriptionGroupList(_)
            | AdminCommand::DeleteExpiredCommitLog
            | AdminCommand::ExportRocksDbConfig { .. }
            | AdminCommand::UpdateColdReadThresholds { .. }
            | AdminCommand::RemoveColdReadThreshold { .. }
            | AdminCommand::ColdReadInfo
            | AdminCommand::SetCommitLogReadAhead { .. }
            | AdminCommand::ResetMasterFlushOffset { .. }
            | AdminCommand::CheckRocksDbCqWriteProgress { .. }
            | AdminCommand::ExportPopRecords
            | AdminCommand::CreateUser { .. }
            | AdminCommand::UpdateUser { .. }
            | AdminCommand::DeleteUser { .. }
            | AdminCommand::GetUser { .. }
            | AdminCommand::ListUsers { .. }
            | AdminCommand::CreateAcl { .. }
            | AdminCommand::DeleteAcl { .. }
            | AdminCommand::GetAcl { .. }
            | AdminCommand::ListAcls { .. }
            | AdminCommand::UpdateBrokerConfig { .. }
            | AdminCommand::ConsumerStatus { .. }
            | AdminCommand::ConsumerStatusFromClient { .. }
            | AdminCommand::CloneGroupOffset { .. }
            | AdminCommand::QueryConsumeQueue { .. }
            | AdminCommand::ConsumeMessageDirectly { .. }
            | AdminCommand::BrokerConsumeStats { .. }) => Reply::error(
                ErrorKind::RequestNotSupported,
                format!(
                    "the name server does not serve {}; send it to a broker",
                    skiff_protocol::remoting::request_name(&Request::Admin(other))
                ),
            ),
        }
    }
}

/// A running name server.
pub struct NameServer {
    local_addr: SocketAddr,
    shutdown: CancellationToken,
    server: JoinHandle<()>,
    scanner: JoinHandle<()>,
}

impl NameServer {
    /// Binds the listener and starts serving and scanning for dead brokers.
    pub async fn start(config: NamesrvConfig) -> anyhow::Result<NameServer> {
        let tls = crate::tls::ServerTls::from_config(&config.tls, "name server")?;
        let acl = crate::acl::start_for(
            "name server",
            crate::acl::Scope::AdminOnly,
            config.acl_enable,
            &config.acl_plain_file,
        )?;
        let bind = SocketAddr::new(config.bind_address, config.listen_port);
        let listener = TcpListener::bind(bind).await.with_context(|| {
            format!(
                "cannot listen on {bind}: is another name server running? choose another address"
            )
        })?;
        let local_addr = listener.local_addr()?;
        let service = Arc::new(NameServerService {
            routes: RouteInfoManager::default(),
            kv: kv_config::KvConfigManager::default(),
            settings: parking_lot::RwLock::new(config.clone()),
            settings_file: config
                .config_file
                .clone()
                .map(crate::config::write_back::WriteBack::spawn),
            broker_timeout: Duration::from_millis(config.broker_channel_expired_time),
            acl,
        });
        let shutdown = CancellationToken::new();
        let server = tokio::spawn(net::serve(
            listener,
            service.clone(),
            net::Limits::new(config.frame_max_length),
            tls,
            shutdown.clone(),
        ));
        let scan_every = Duration::from_millis(config.scan_not_active_broker_interval.max(100));
        let scanner = tokio::spawn(scan_not_active_brokers(
            service,
            scan_every,
            shutdown.clone(),
        ));
        info!(%local_addr, "name server listening");
        Ok(NameServer {
            local_addr,
            shutdown,
            server,
            scanner,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, closes connections and waits for the tasks to end.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.scanner.await;
        let _ = self.server.await;
        info!("name server stopped");
    }
}

async fn scan_not_active_brokers(
    service: Arc<NameServerService>,
    every: Duration,
    shutdown: CancellationToken,
) {
    let mut ticker = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {
                for broker in service.routes.scan_not_active_brokers() {
                    warn!(broker = %broker.broker_name, addr = %broker.broker_addr,
                          "broker stopped registering; removed from routes");
                }
            }
        }
    }
}
