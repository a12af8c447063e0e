//! The broker: stores messages, serves pulls, tracks consumer groups and offsets, and announces
//! itself to name servers.
//!
//! [`Broker::start`] opens the message store (recovering it if needed), loads the `config/` files,
//! binds the listener, registers with every name server and starts the background services.
//! Request handling is split by concern: `send`, `pull`, `client` (heartbeats and group
//! membership), `queries` (offsets and timestamps), `admin`, and `introspect` (what operators ask:
//! connections, statistics from `traffic`, offset resets, questions passed on to a client).
//! Static topics' logical queues are mapped onto physical ones by `logical_queues`; what lives on
//! another broker group is asked of it through `forward`. Kafka clients are served by `kafka`, on
//! a listener of their own (`kafkaListen`), over the same topics and store. Master/slave
//! replication's protocol cores are in [`ha`].

mod acls;
mod admin;
mod auth;
mod client;
mod cold_read;
pub(crate) mod config_file;
mod console;
mod consumers;
mod core;
mod forward;
mod groups;
pub mod ha;
mod introspect;
mod kafka;
mod logical_queues;
mod long_polling;
mod metrics;
mod metrics_http;
mod offsets;
mod persist;
mod pop;
mod producers;
mod property_filter;
mod pull;
mod queries;
mod rebalance_lock;
mod registration;
mod role;
mod schedule;
mod send;
mod send_back;
mod slave_sync;
mod static_topics;
mod stats;
mod timer;
mod topics;
mod traffic;
mod transaction;
mod uniq_id;

pub(crate) use auth::{
    LOCAL_AUTHENTICATION_METADATA_PROVIDER, LOCAL_AUTHORIZATION_METADATA_PROVIDER,
};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use skiff_model::command::{ErrorKind, Reply, Request};
use skiff_store::{MessageStore, StoreConfig};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::{BrokerConfig, BrokerRole, FlushDiskType, MetricsExporterType};
use crate::net::{self, ClientChannel, Handled, RequestContext, Service};
use consumers::ConsumerManager;
use groups::SubscriptionGroupManager;
use long_polling::PullHoldService;
use offsets::ConsumerOffsetManager;
use producers::ProducerManager;
use rebalance_lock::RebalanceLockManager;
use registration::NameServerLink;
use schedule::ScheduleService;
use stats::BrokerStats;
use topics::TopicConfigManager;

/// Everything request handlers share.
pub(crate) struct BrokerState {
    /// The configuration the broker started with (most settings are read from here).
    config: BrokerConfig,
    /// The configuration as UPDATE_BROKER_CONFIG left it: what GET_BROKER_CONFIG shows. Of its
    /// changes, `brokerPermission` (`broker_permission`), `autoCreateTopicEnable` and
    /// `autoCreateSubscriptionGroup` (held by the topic and group managers), the retention
    /// settings (held by the store), `haTransferBatchSize` (`ha_transfer_batch_size`) and
    /// `useServerSideResetOffset` (read from here) take effect at once; all are written into the
    /// config file (`settings_file`) and so apply after a restart.
    settings: parking_lot::RwLock<BrokerConfig>,
    /// The config file the broker started from, kept up to date with UPDATE_BROKER_CONFIG.
    settings_file: Option<crate::config::write_back::WriteBack>,
    /// `brokerPermission` in force (UPDATE_BROKER_CONFIG changes it at runtime).
    broker_permission: std::sync::atomic::AtomicI32,
    /// `haTransferBatchSize` in force: a master's connections to its slaves read it before each
    /// frame (UPDATE_BROKER_CONFIG changes it at runtime, as on Java).
    ha_transfer_batch_size: Arc<std::sync::atomic::AtomicUsize>,
    /// `brokerIP1:listenPort`: what clients connect to and what record STOREHOSTs say.
    broker_addr: String,
    /// `broker_addr` as an address, for records the broker writes itself.
    store_host: SocketAddr,
    store: Arc<MessageStore>,
    topics: TopicConfigManager,
    /// The broker's part of each static topic.
    static_topics: static_topics::TopicQueueMappingManager,
    groups: SubscriptionGroupManager,
    offsets: ConsumerOffsetManager,
    consumers: ConsumerManager,
    producers: ProducerManager,
    /// Queue locks of orderly consumers.
    locks: RebalanceLockManager,
    /// Compiled SQL92 subscriptions.
    selectors: property_filter::SelectorCache,
    pull_holds: PullHoldService,
    /// Bounds the pulls reading cold data on blocking threads (`pullMessageThreadPoolNums`).
    cold_reads: Arc<tokio::sync::Semaphore>,
    /// Throttles groups that read too much cold data (`coldDataFlowControlEnable`).
    cold_read_control: cold_read::ColdReadControl,
    stats: BrokerStats,
    /// Per-topic and per-group statistics (VIEW_BROKER_STATS_DATA).
    traffic: traffic::TrafficStats,
    /// Messages in and out over the last hour, for the web console's chart.
    throughput: console::Throughput,
    name_servers: NameServerLink,
    /// Requests passed on to other broker groups (a static topic's older stretches).
    forwarder: forward::Forwarder,
    schedule: ScheduleService,
    pop: pop::PopService,
    /// `aclEnable`: the accounts every request is checked against.
    acl: Option<Arc<crate::acl::AccessControl>>,
    /// ACL 2.0 users (`authenticationMetadataProvider`), managed with the AUTH_*_USER codes.
    users: Option<Arc<auth::UserStore>>,
    /// ACL 2.0 ACLs (`authorizationMetadataProvider`), managed with the AUTH_*_ACL codes.
    acls: Option<Arc<acls::AclStore>>,
    /// `authenticationEnabled`: every request is signed by one of `users`.
    authentication: Option<auth::Authentication>,
    /// `metricsExporterType=PROM`: what `/metrics` serves.
    metrics: Option<Arc<metrics::BrokerMetrics>>,
    /// A master's slaves and how far each holds the CommitLog (`None` on a slave).
    replicas: Option<Arc<ha::acks::ReplicaAcks>>,
    /// A slave's replication client as GET_BROKER_HA_STATUS shows it (`None` on a master).
    ha_client: Option<Arc<ha::client::ClientStatus>>,
    /// The port slaves connect to (`haListenPort`), once bound.
    ha_port: Option<u16>,
    /// The timer's last checkpoint (`None` without a timer, as on a slave).
    timer_progress: timer::Progress,
    /// Fired when UPDATE_BROKER_CONFIG changed `brokerRole` or `brokerId`: the role lives in
    /// the store, the listeners and every background task, so the broker starts again in place
    /// with `settings` ([`Broker::restart_requested`]).
    restart: tokio::sync::Notify,
}

impl BrokerState {
    /// The broker's managers, loaded from the `config/` files of `config`'s data directory,
    /// around an opened store and its schedule service.
    fn new(
        config: BrokerConfig,
        broker_addr: String,
        store_host: SocketAddr,
        store: Arc<MessageStore>,
        schedule: ScheduleService,
    ) -> BrokerState {
        BrokerState {
            settings: parking_lot::RwLock::new(config.clone()),
            restart: tokio::sync::Notify::new(),
            settings_file: config
                .config_file
                .clone()
                .map(crate::config::write_back::WriteBack::spawn),
            broker_permission: std::sync::atomic::AtomicI32::new(config.broker_permission),
            ha_transfer_batch_size: Arc::new(std::sync::atomic::AtomicUsize::new(
                config.ha_transfer_batch_size,
            )),
            topics: TopicConfigManager::load(&config),
            static_topics: static_topics::TopicQueueMappingManager::load(&config),
            groups: SubscriptionGroupManager::load(&config),
            offsets: ConsumerOffsetManager::load(&config),
            consumers: ConsumerManager::default(),
            producers: ProducerManager::default(),
            locks: RebalanceLockManager::new(config.rebalance_lock_max_live_time),
            selectors: property_filter::SelectorCache::default(),
            pull_holds: PullHoldService::default(),
            cold_read_control: cold_read::ColdReadControl::new(&config),
            cold_reads: Arc::new(tokio::sync::Semaphore::new(
                config.pull_message_thread_pool_nums,
            )),
            stats: BrokerStats::new(now_millis()),
            traffic: traffic::TrafficStats::new(&config.broker_cluster_name),
            throughput: console::Throughput::new(now_millis()),
            name_servers: NameServerLink::new(&config),
            forwarder: forward::Forwarder::new(&config),
            pop: pop::PopService::new(&config),
            acl: None,
            users: None,
            acls: None,
            authentication: None,
            metrics: None,
            replicas: None,
            ha_client: None,
            ha_port: None,
            timer_progress: timer::Progress::default(),
            broker_addr,
            store_host,
            store,
            schedule,
            config,
        }
    }
}

impl BrokerState {
    /// `brokerPermission` in force.
    fn permission(&self) -> i32 {
        self.broker_permission
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Service for BrokerState {
    fn access_control(&self) -> Option<&crate::acl::AccessControl> {
        self.acl.as_deref()
    }

    fn authenticates(&self) -> bool {
        self.authentication.is_some()
    }

    fn authenticate(&self, access: &skiff_model::acl::AccessRequest) -> Result<(), Reply> {
        match &self.authentication {
            Some(authentication) => authentication.check(access),
            None => Ok(()),
        }
    }

    fn handle(self: Arc<Self>, ctx: &RequestContext, request: Request) -> Handled {
        if let Some(refusal) = role::slave_refusal(&self.config, &request) {
            return Handled::Now(refusal);
        }
        match request {
            Request::Send(send) => send::handle(&self, ctx, send),
            Request::Pull(pull) => pull::handle(&self, ctx, pull),
            Request::ConsumerSendMsgBack(back) => send_back::handle(&self, back),
            Request::Heartbeat(heartbeat) => Handled::Now(client::heartbeat(&self, ctx, heartbeat)),
            Request::UnregisterClient {
                client_id,
                producer_group,
                consumer_group,
            } => Handled::Now(client::unregister(
                &self,
                ctx,
                &client_id,
                producer_group.as_deref(),
                consumer_group.as_deref(),
            )),
            Request::GetConsumerListByGroup { group } => {
                Handled::Now(client::consumer_list(&self, &group))
            }
            Request::EndTransaction(end) => transaction::end_transaction(&self, end),
            Request::CheckClientConfig(check) => {
                Handled::Now(property_filter::check_client_config(&self, &check))
            }
            Request::LockBatchMq(lock) => Handled::Now(rebalance_lock::lock_batch(&self, &lock)),
            Request::UnlockBatchMq(lock) => {
                Handled::Now(rebalance_lock::unlock_batch(&self, &lock))
            }
            Request::QueryConsumerOffset {
                group,
                queue,
                set_zero_if_not_found,
            } => queries::query_consumer_offset(&self, &group, &queue, set_zero_if_not_found),
            Request::UpdateConsumerOffset {
                group,
                queue,
                offset,
            } => queries::update_consumer_offset(&self, &group, &queue, offset),
            Request::GetMaxOffset { queue } => queries::max_offset(&self, &queue),
            Request::GetMinOffset { queue } => queries::min_offset(&self, &queue),
            Request::SearchOffsetByTimestamp {
                queue,
                timestamp,
                boundary,
            } => queries::search_offset(&self, &queue, timestamp, boundary),
            Request::GetEarliestMsgStoreTime { queue } => {
                queries::earliest_store_time(&self, &queue)
            }
            Request::QueryMessage {
                topic,
                key,
                max_num,
                begin_timestamp,
                end_timestamp,
                unique_key,
            } => Handled::Now(queries::query_message(
                &self,
                &topic,
                &key,
                max_num,
                (begin_timestamp, end_timestamp),
                unique_key,
            )),
            Request::ViewMessage { commit_log_offset } => {
                Handled::Now(queries::view_message(&self, commit_log_offset))
            }
            Request::CreateTopic(topic) => admin::create_topic(&self, topic),
            Request::DeleteTopicInBroker { topic } => admin::delete_topic(&self, &topic),
            Request::GetAllTopicConfig => {
                let (topics, data_version) = self.topics.snapshot();
                Handled::Now(Reply::TopicConfigs {
                    topics,
                    data_version,
                })
            }
            Request::GetTopicConfig { topic, lo } => Handled::Now(match self.topics.get(&topic) {
                Some(config) => Reply::TopicConfig {
                    config: Box::new(config),
                    mapping: lo
                        .then(|| self.static_topics.get(&topic))
                        .flatten()
                        .map(Box::new),
                },
                None => Reply::error(
                    ErrorKind::TopicNotExist,
                    format!("No topic in this broker. topic: {topic}"),
                ),
            }),
            Request::CreateSubscriptionGroup(group) => {
                Handled::Now(admin::create_subscription_group(&self, group))
            }
            Request::GetTopicStats { topic } => Handled::Now(admin::topic_stats(&self, &topic)),
            Request::GetConsumeStats { group, topic } => {
                Handled::Now(admin::consume_stats(&self, &group, topic.as_deref()))
            }
            Request::GetBrokerRuntimeInfo => Handled::Now(admin::runtime_info(&self)),
            Request::Pop(command) => pop::handle(&self, ctx, command),
            Request::Admin(command) => introspect::handle(&self, command),
            other => Handled::Now(Reply::error(
                ErrorKind::RequestNotSupported,
                format!(
                    "the broker does not serve {}; send it to a name server",
                    skiff_protocol::remoting::request_name(&other)
                ),
            )),
        }
    }

    fn on_answered(&self, answered: &net::Answered) {
        if let Some(metrics) = &self.metrics {
            metrics.answered(answered);
        }
    }

    fn on_connect(&self, _channel: &ClientChannel) {
        if let Some(metrics) = &self.metrics {
            metrics.connections(1);
        }
    }

    fn on_disconnect(&self, channel: &ClientChannel) {
        if let Some(metrics) = &self.metrics {
            metrics.connections(-1);
        }
        self.producers.on_channel_closed(channel);
        for group in self.consumers.on_channel_closed(channel) {
            client::notify_consumer_ids_changed(self, &group);
        }
    }
}

pub(crate) fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn store_config(config: &BrokerConfig, store_host: SocketAddr) -> StoreConfig {
    StoreConfig {
        root_dir: config.store_path_root_dir.clone(),
        commit_log_file_size: config.mapped_file_size_commit_log,
        consume_queue_file_entries: config.mapped_file_size_consume_queue / 20,
        flush_disk_type: match config.flush_disk_type {
            FlushDiskType::AsyncFlush => skiff_store::FlushDiskType::AsyncFlush,
            FlushDiskType::SyncFlush => skiff_store::FlushDiskType::SyncFlush,
        },
        flush_interval_commit_log_ms: config.flush_interval_commit_log,
        flush_commit_log_least_pages: config.flush_commit_log_least_pages,
        flush_commit_log_timed: config.flush_commit_log_timed,
        flush_commit_log_thorough_interval_ms: config.flush_commit_log_thorough_interval,
        sync_flush_timeout_ms: config.sync_flush_timeout,
        flush_interval_consume_queue_ms: config.flush_interval_consume_queue,
        flush_consume_queue_least_pages: config.flush_consume_queue_least_pages,
        flush_consume_queue_thorough_interval_ms: config.flush_consume_queue_thorough_interval,
        max_message_size: config.max_message_size,
        store_host,
        check_crc_on_recover: config.check_crc_on_recover,
        access_message_in_memory_max_ratio: config.access_message_in_memory_max_ratio,
        access_message_in_memory_hot_ratio: config.access_message_in_memory_hot_ratio,
        data_read_ahead_enable: config.data_read_ahead_enable,
        warm_mapped_file_enable: config.warm_maped_file_enable,
        commit_log_resident_tail: config.commit_log_resident_tail,
        message_index_enable: config.message_index_enable,
        max_hash_slot_num: config.max_hash_slot_num,
        max_index_num: config.max_index_num,
        max_msgs_num_batch: config.max_msgs_num_batch,
        default_query_max_num: config.default_query_max_num,
        retention: retention_settings(config),
        clean_resource_interval_ms: config.clean_resource_interval,
        message_delay_level: config.message_delay_level.clone(),
        role: match config.broker_role {
            BrokerRole::Slave => skiff_store::StoreRole::Slave,
            BrokerRole::AsyncMaster | BrokerRole::SyncMaster => skiff_store::StoreRole::Master,
        },
        ..StoreConfig::default()
    }
}

/// The store's retention settings of `config` (UPDATE_BROKER_CONFIG changes them at runtime).
fn retention_settings(config: &BrokerConfig) -> skiff_store::RetentionSettings {
    skiff_store::RetentionSettings {
        file_reserved_time_hours: config.file_reserved_time,
        delete_when: config.delete_when.clone(),
        disk_max_used_space_ratio: config.disk_max_used_space_ratio,
        disk_space_clean_forcibly_ratio: config.disk_space_clean_forcibly_ratio,
        disk_space_warning_level_ratio: config.disk_space_warning_level_ratio,
        clean_file_forcibly_enable: config.clean_file_forcibly_enable,
        delete_file_batch_max: config.delete_file_batch_max,
    }
}

/// A running broker.
pub struct Broker {
    state: Arc<BrokerState>,
    local_addr: SocketAddr,
    /// The "VIP" listener (listen port - 2), when it could be opened.
    vip_addr: Option<SocketAddr>,
    /// Where `/metrics` is served (`metricsExporterType=PROM`).
    metrics_addr: Option<SocketAddr>,
    /// Where Kafka clients connect (`kafkaListen`).
    kafka_addr: Option<SocketAddr>,
    shutdown: CancellationToken,
    server: JoinHandle<()>,
    background: Vec<JoinHandle<()>>,
    /// Stops re-registering before the broker unregisters.
    stop_registering: CancellationToken,
    registering: JoinHandle<()>,
    /// The timer thread (`timerWheelEnable`).
    timer: Option<timer::TimerService>,
}

impl Broker {
    /// Opens the store, binds the listener, registers with the name servers and starts serving.
    pub async fn start(config: BrokerConfig) -> anyhow::Result<Broker> {
        let tls = crate::tls::ServerTls::from_config(&config.tls, "broker")?;
        // With ACL 2.0 authentication on (never with ACL 1.0) there is no open-broker warning.
        let acl = if config.authentication_enabled {
            None
        } else {
            crate::acl::start_for(
                "broker",
                crate::acl::Scope::Every,
                config.acl_enable,
                &config.acl_plain_file,
            )?
        };
        let bind = SocketAddr::new(config.bind_address, config.listen_port);
        let listener = TcpListener::bind(bind).await.with_context(|| {
            format!("cannot listen on {bind}: is another broker running? choose another listenPort")
        })?;
        let local_addr = listener.local_addr()?;
        let vip_listener = bind_vip(&config, local_addr).await;
        let advertised_ip = config.advertised_ip();
        let broker_addr = format!("{advertised_ip}:{}", local_addr.port());
        let store_host: SocketAddr = broker_addr
            .parse()
            .with_context(|| format!("brokerIP1 {advertised_ip} is not an IP address"))?;

        let kafka_listener = bind_kafka(&config).await?;
        let ha_listener = match config.broker_role {
            BrokerRole::Slave => None,
            BrokerRole::AsyncMaster | BrokerRole::SyncMaster => {
                Some(bind_ha(&config, local_addr).await?)
            }
        };
        if config.broker_role == BrokerRole::SyncMaster && config.in_sync_replicas < 2 {
            warn!(
                in_sync_replicas = config.in_sync_replicas,
                "brokerRole=SYNC_MASTER with inSyncReplicas < 2 answers sends without waiting \
                 for a slave (as Java 5 does); set inSyncReplicas=2 for sends to wait for one"
            );
        }
        let metrics_listener = match config.metrics_exporter_type {
            MetricsExporterType::Disable => None,
            MetricsExporterType::Prom => Some(bind_metrics(&config).await?),
        };
        let store_cfg = store_config(&config, store_host);
        let opening = Instant::now();
        let store = tokio::task::spawn_blocking(move || MessageStore::open(store_cfg))
            .await?
            .with_context(|| {
                format!(
                    "cannot open the message store in {}",
                    config.store_path_root_dir.display()
                )
            })?;
        let store = Arc::new(store);
        let schedule = {
            let (config, store) = (config.clone(), store.clone());
            tokio::task::spawn_blocking(move || ScheduleService::start(&config, store)).await??
        };

        let users = auth::UserStore::open(&config)
            .context("cannot set up the ACL 2.0 users (initAuthenticationUser)")?
            .map(Arc::new);
        let authentication = auth::Authentication::new(&config, users.clone());
        if authentication.is_some() {
            info!(users_store = users.is_some(), "ACL 2.0 authentication on: every request must be signed by a user (AclClientRPCHook with the user name and password)");
        }
        let mut state = BrokerState::new(
            config,
            broker_addr.clone(),
            store_host,
            store.clone(),
            schedule,
        );
        state.acl = acl;
        state.users = users;
        state.acls = acls::AclStore::open(&state.config).map(Arc::new);
        state.authentication = authentication;
        if ha_listener.is_some() {
            state.replicas = Some(Arc::new(ha::acks::ReplicaAcks::new(
                state.config.in_sync_replicas,
            )));
        }
        if state.config.broker_role == BrokerRole::Slave {
            state.ha_client = Some(Arc::default());
        }
        state.ha_port = ha_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port());
        let recovery = opening.elapsed();
        let state = Arc::new_cyclic(|weak| {
            if metrics_listener.is_some() {
                state.metrics = Some(Arc::new(metrics::BrokerMetrics::new(
                    &state.config.broker_cluster_name,
                    &state.config.broker_name,
                    recovery,
                    weak.clone(),
                )));
            }
            state
        });
        state.topics.persist_if_changed_at_load();
        {
            // The revive log is replayed before anyone can pop or ack.
            let state = state.clone();
            tokio::task::spawn_blocking(move || pop::recover(&state)).await?;
        }
        let weak = Arc::downgrade(&state);
        store.set_message_arrival_listener(Arc::new(move |topic: &str, queue_id, max_offset| {
            if let Some(state) = weak.upgrade() {
                state.pull_holds.notify_arrival(topic, queue_id, max_offset);
                state.pop.notify_arrival(topic);
            }
        }));

        let timer = {
            let (config, store) = (state.config.clone(), store.clone());
            let progress = state.timer_progress.clone();
            tokio::task::spawn_blocking(move || {
                timer::TimerService::start(&config, store, progress)
            })
            .await?
            .context("cannot open the timer files (timerwheel, timerlog, config/timercheck)")?
        };

        let shutdown = CancellationToken::new();
        let limits = net::Limits {
            max_frame_len: state.config.frame_max_length,
            idle_timeout: Duration::from_secs(state.config.server_channel_max_idle_time_seconds),
            max_connections: state.config.server_max_connections,
            max_in_flight: state.config.server_max_in_flight_requests,
            handshake_timeout: crate::tls::HANDSHAKE_TIMEOUT,
        };
        let mut vip_addr = None;
        let vip_server = vip_listener.map(|listener| {
            vip_addr = listener.local_addr().ok();
            tokio::spawn(net::serve(
                listener,
                state.clone(),
                limits,
                tls.clone(),
                shutdown.clone(),
            ))
        });
        let server = tokio::spawn(net::serve(
            listener,
            state.clone(),
            limits,
            tls,
            shutdown.clone(),
        ));
        let mut background = vec![
            tokio::spawn(persist_offsets_periodically(
                state.clone(),
                shutdown.clone(),
            )),
            tokio::spawn(roll_stats_days(state.clone(), shutdown.clone())),
            tokio::spawn(sample_traffic(state.clone(), shutdown.clone())),
            tokio::spawn(client::expire_silent_clients(
                state.clone(),
                shutdown.clone(),
            )),
        ];
        // Transaction checks and POP revive write to the CommitLog: the master's work only.
        if state.config.broker_role == BrokerRole::Slave {
            background.push(tokio::spawn(slave_sync::run(
                state.clone(),
                shutdown.clone(),
            )));
        } else {
            background.push(tokio::spawn(transaction::service::run(
                state.clone(),
                shutdown.clone(),
            )));
            background.push(tokio::spawn(pop::revive_periodically(
                state.clone(),
                shutdown.clone(),
            )));
        }
        background.extend(vip_server);
        if state.cold_read_control.enabled() {
            background.push(tokio::spawn(end_cold_read_periods(
                state.clone(),
                shutdown.clone(),
            )));
        }
        let ha_timings = ha::HaTimings::of(&state.config);
        if let (Some(listener), Some(acks)) = (ha_listener, &state.replicas) {
            info!(addr = ?listener.local_addr().ok(), "HA port open: slaves replicate from here (haListenPort)");
            background.push(tokio::spawn(ha::service::serve(
                listener,
                store.clone(),
                acks.clone(),
                ha_timings.clone(),
                state.ha_transfer_batch_size.clone(),
                shutdown.clone(),
            )));
        }
        if state.config.broker_role == BrokerRole::Slave {
            let master = ha::client::MasterSource {
                fixed: state.config.ha_master_address.clone(),
                announced: state.name_servers.master(),
                tls: state.config.tls.client_uses_tls(state.config.use_tls),
                credentials: state.name_servers.credentials(),
            };
            background.push(tokio::spawn(ha::client::run(
                store.clone(),
                master,
                ha_timings,
                state.ha_client.clone().unwrap_or_default(),
                shutdown.clone(),
            )));
        }
        let mut kafka_addr = None;
        if let Some(listener) = kafka_listener {
            let bound = listener.local_addr()?;
            kafka_addr = Some(bound);
            let front =
                kafka::KafkaFront::new(state.clone(), (state.config.advertised_ip(), bound.port()));
            let front = Arc::new(front);
            background.push(tokio::spawn(front.run_timers(shutdown.clone())));
            // Plain TCP only: Kafka's TLS and SASL are not served yet (`bind_kafka` refuses them).
            background.push(tokio::spawn(net::serve_front(
                listener,
                front,
                limits,
                crate::tls::ServerTls::disabled(),
                shutdown.clone(),
            )));
            info!(addr = %bound, "serving Kafka clients (bootstrap.servers)");
        }
        let mut metrics_addr = None;
        if let (Some(listener), Some(metrics)) = (metrics_listener, &state.metrics) {
            metrics_addr = listener.local_addr().ok();
            info!(addr = ?metrics_addr, "serving Prometheus metrics at /metrics and the web console at /console/");
            background.push(tokio::spawn(metrics_http::serve(
                listener,
                metrics.clone(),
                state.clone(),
                shutdown.clone(),
            )));
        }
        // Routes exist when `start` returns, so clients started right after find this broker.
        state.name_servers.register(&state).await;
        let stop_registering = CancellationToken::new();
        let registering = tokio::spawn(registration::keep_registering(
            state.clone(),
            stop_registering.clone(),
        ));
        info!(
            broker = %state.config.broker_name,
            cluster = %state.config.broker_cluster_name,
            %local_addr,
            advertised = %broker_addr,
            vip = ?vip_addr,
            "broker listening"
        );
        Ok(Broker {
            state,
            local_addr,
            vip_addr,
            metrics_addr,
            kafka_addr,
            shutdown,
            server,
            background,
            stop_registering,
            registering,
            timer,
        })
    }

    /// Waits until UPDATE_BROKER_CONFIG changes `brokerRole` or `brokerId` (a slave promoted to
    /// master, a master turned slave), then gives the settings to start again with: the caller
    /// [`shuts down`](Broker::shutdown) this broker and starts one with them, on the ports this
    /// one listened on. Clients reconnect as after any broker restart; routes follow at the new
    /// broker's registration.
    pub async fn restart_requested(&self) -> BrokerConfig {
        self.state.restart.notified().await;
        let mut config = self.state.settings.read().clone();
        // Same address for clients and slaves, even where the first start took any free port.
        config.listen_port = self.local_addr.port();
        if self.state.config.listen_port == 0 && config.ha_listen_port.is_none() {
            // Any free port again (listen port + 1 may be taken), or the one slaves know.
            config.ha_listen_port = Some(self.state.ha_port.unwrap_or(0));
        }
        config
    }

    /// Where slaves connect (`haListenPort`); `None` on a slave.
    pub fn ha_addr(&self) -> Option<SocketAddr> {
        self.state
            .ha_port
            .map(|port| SocketAddr::new(self.local_addr.ip(), port))
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The VIP channel's address: listen port - 2, where admin tools and the Dashboard
    /// (`isVIPChannel`, `sendMessageWithVIPChannel`) send broker requests.
    pub fn vip_addr(&self) -> Option<SocketAddr> {
        self.vip_addr
    }

    /// Where `/metrics` is served, when `metricsExporterType=PROM`.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Where Kafka clients connect, when `kafkaListen` is set.
    pub fn kafka_addr(&self) -> Option<SocketAddr> {
        self.kafka_addr
    }

    /// Unregisters, answers held pulls, drains connections, persists config and flushes the store.
    pub async fn shutdown(self) {
        self.stop_registering.cancel();
        let _ = self.registering.await;
        self.state.name_servers.unregister(&self.state).await;
        self.state.pull_holds.shutdown();
        self.state.pop.shutdown();
        self.shutdown.cancel();
        let _ = self.server.await;
        for task in self.background {
            let _ = task.await;
        }
        // Stop re-putting delayed and timer messages (each writes its progress), then the final
        // config writes and the store, all off the runtime.
        let state = self.state.clone();
        let timer = self.timer;
        let _ = tokio::task::spawn_blocking(move || {
            state.schedule.shutdown();
            if let Some(timer) = timer {
                timer.stop();
            }
            state.offsets.persist_if_dirty();
            state.topics.persist();
            state.static_topics.persist();
            state.groups.persist();
            state.store.shutdown();
        })
        .await;
        info!(broker = %self.state.config.broker_name, "broker stopped");
    }
}

/// The VIP channel: Java's `BrokerController` opens a second server on the listen port - 2 (no key
/// sets it) serving the same requests, which admin clients with `isVIPChannel` (the Dashboard's
/// default) and producers with `sendMessageWithVIPChannel` use. Unlike Java, a port that is taken
/// does not stop the broker: the clients that use the main port still work, and the log says so.
async fn bind_vip(config: &BrokerConfig, main: SocketAddr) -> Option<TcpListener> {
    // Port 0 (any free port) in tests; Java then also takes any free port.
    let port = main.port().saturating_sub(2);
    let port = if config.listen_port == 0 { 0 } else { port };
    let addr = SocketAddr::new(config.bind_address, port);
    match TcpListener::bind(addr).await {
        Ok(listener) => Some(listener),
        Err(err) => {
            warn!(
                %addr, %err,
                "cannot open the VIP channel (listen port - 2): admin tools with isVIPChannel=true \
                 (the Dashboard's default) and producers with sendMessageWithVIPChannel=true will \
                 not reach this broker; free the port or set those options to false"
            );
            None
        }
    }
}

/// The HA listener slaves connect to: `haListenPort`, else the listen port + 1 as Java's
/// `BrokerStartup` sets it (any free port when the listen port is 0, in tests).
async fn bind_ha(config: &BrokerConfig, main: SocketAddr) -> anyhow::Result<TcpListener> {
    let port = match config.ha_listen_port {
        Some(port) => port,
        None if config.listen_port == 0 => 0,
        None => main.port().wrapping_add(1),
    };
    let addr = SocketAddr::new(config.bind_address, port);
    TcpListener::bind(addr).await.with_context(|| {
        format!("cannot listen for slaves on {addr}: is another broker using it? set haListenPort")
    })
}

/// The Kafka listener (`kafkaListen`). It has no TLS and no SASL yet, so it is refused on a
/// broker whose RocketMQ port requires either: it would let Kafka clients past the checks.
async fn bind_kafka(config: &BrokerConfig) -> anyhow::Result<Option<TcpListener>> {
    let Some(addr) = config.kafka_listen else {
        return Ok(None);
    };
    let secured = config.acl_enable
        || config.authentication_enabled
        || config.tls.server_mode == crate::config::TlsMode::Enforcing;
    if secured {
        if config.kafka_listen_optional {
            warn!("no Kafka listener: this broker requires ACL, authentication or TLS, which the Kafka listener does not serve yet");
            return Ok(None);
        }
        anyhow::bail!(
            "kafkaListen cannot be used with aclEnable, authenticationEnabled or \
             tls.server.mode=enforcing: the Kafka listener has no SASL or TLS yet and would let \
             Kafka clients past them; unset kafkaListen"
        );
    }
    match TcpListener::bind(addr).await {
        Ok(listener) => Ok(Some(listener)),
        Err(err) if config.kafka_listen_optional => {
            warn!(%addr, %err, "no Kafka listener: the port is taken; Kafka clients will not reach this broker (choose another with --kafka-listen)");
            Ok(None)
        }
        Err(err) => Err(anyhow::Error::new(err).context(format!(
            "cannot serve Kafka clients on {addr}: choose another kafkaListen"
        ))),
    }
}

/// The `/metrics` listener: `metricsPromExporterHost` (else the advertised IP, as Java falls
/// back to `brokerIP1`) and `metricsPromExporterPort`.
async fn bind_metrics(config: &BrokerConfig) -> anyhow::Result<TcpListener> {
    let host = match config.metrics_prom_exporter_host {
        Some(host) => host,
        None => config.advertised_ip().parse().with_context(|| {
            format!(
                "brokerIP1 {} is not an IP address; set metricsPromExporterHost",
                config.advertised_ip()
            )
        })?,
    };
    let addr = SocketAddr::new(host, config.metrics_prom_exporter_port);
    TcpListener::bind(addr).await.with_context(|| {
        format!(
            "cannot serve metrics on {addr}: choose another metricsPromExporterPort \
             (or metricsExporterType=DISABLE)"
        )
    })
}

async fn end_cold_read_periods(state: Arc<BrokerState>, shutdown: CancellationToken) {
    let mut ticker = tokio::time::interval(cold_read::PERIOD);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => state.cold_read_control.end_period(now_millis()),
        }
    }
}

async fn roll_stats_days(state: Arc<BrokerState>, shutdown: CancellationToken) {
    let mut ticker = tokio::time::interval(Duration::from_secs(10));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => state.stats.roll_day(now_millis()),
        }
    }
}

/// Samples the traffic statistics: every 10 s for the minute window, every 10 min for the hour
/// and every hour for the day (`BrokerStatsManager`'s schedules); and every 10 s the totals of the
/// web console's throughput chart.
async fn sample_traffic(state: Arc<BrokerState>, shutdown: CancellationToken) {
    use traffic::Window;
    let period = Window::Minute.period_ms();
    let mut ticker = tokio::time::interval(Duration::from_millis(period as u64));
    let mut ticks: i64 = 0;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {
                let now = now_millis();
                state.traffic.sample(Window::Minute, now);
                let (put, got) = state.stats.totals();
                state.throughput.sample(now, put, got);
                for window in [Window::Hour, Window::Day] {
                    if (ticks * period) % window.period_ms() == 0 {
                        state.traffic.sample(window, now);
                    }
                }
                ticks += 1;
            }
        }
    }
}

async fn persist_offsets_periodically(state: Arc<BrokerState>, shutdown: CancellationToken) {
    let period = Duration::from_millis(state.config.flush_consumer_offset_interval.max(100));
    let mut ticker = tokio::time::interval(period);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => state.offsets.request_persist_if_dirty(),
        }
    }
}
