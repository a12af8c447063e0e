//! Registration with name servers (`BrokerOuterAPI.registerBrokerAll`): at start, every
//! `registerNameServerPeriod` (30 s), and whenever topics change, the broker sends its whole topic
//! table to every name server; at shutdown it unregisters so clients stop routing to it before it
//! goes away.
//!
//! A request that creates a topic (an auto-creating send, UPDATE_AND_CREATE_TOPIC) registers
//! before it is answered, as the Java broker does: a client that asks a name server for the route
//! right after its SEND_OK must find it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use skiff_model::command::{Reply, Request};
use skiff_model::route::{BrokerRegistration, DataVersion, TopicConfig};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::BrokerState;
use crate::config::BrokerConfig;
use crate::remoting_client::RemotingClient;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(6);

/// The broker's connections to its name servers.
pub(super) struct NameServerLink {
    addrs: Vec<String>,
    /// `useTLS` / `tls.enable`.
    use_tls: bool,
    /// One connection per name server; the lock also serializes registrations.
    clients: Mutex<HashMap<String, RemotingClient>>,
    /// `innerClientAuthenticationCredentials`: signs registrations for name servers with ACL on.
    credentials: Option<Arc<crate::acl::Credentials>>,
}

impl NameServerLink {
    pub(super) fn new(config: &BrokerConfig) -> Self {
        let addrs: Vec<String> = config
            .namesrv_addr
            .as_deref()
            .unwrap_or("")
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        if addrs.is_empty() {
            warn!("namesrvAddr is not set: clients cannot find this broker; set namesrvAddr in the broker config");
        }
        NameServerLink {
            addrs,
            use_tls: config.tls.client_uses_tls(config.use_tls),
            clients: Mutex::new(HashMap::new()),
            credentials: config
                .inner_client_authentication_credentials
                .as_deref()
                .and_then(|json| crate::acl::Credentials::parse(json).ok())
                .map(Arc::new),
        }
    }

    /// Sends the broker's current topic table to every name server.
    pub(super) async fn register(&self, state: &BrokerState) {
        if self.addrs.is_empty() {
            return;
        }
        let mut clients = self.clients.lock().await;
        // Built under the lock, so a registration never overtakes a newer one with older topics.
        let (topics, data_version) = state.topics.snapshot();
        // Everything goes now, changed topics included.
        drop(state.topics.take_unannounced());
        let request = Request::RegisterBroker(registration(state, topics, data_version));
        self.send(&mut clients, &request).await;
    }

    /// Sends only the topics changed since the last registration (Java's
    /// `registerIncrementBrokerData`; name servers merge them into the broker's routes), so
    /// creating a topic costs the same with 100 or 100,000 topics.
    pub(super) async fn register_changed(&self, state: &BrokerState) {
        if self.addrs.is_empty() {
            return;
        }
        let mut clients = self.clients.lock().await;
        let (topics, data_version) = state.topics.take_unannounced();
        if topics.is_empty() {
            return;
        }
        let request = Request::RegisterBroker(registration(state, topics, data_version));
        self.send(&mut clients, &request).await;
    }

    async fn send(&self, clients: &mut HashMap<String, RemotingClient>, request: &Request) {
        for addr in &self.addrs {
            let Some(client) = connected(clients, addr, self.use_tls, &self.credentials).await
            else {
                continue;
            };
            match client.invoke(request, REQUEST_TIMEOUT).await {
                Ok(Reply::BrokerRegistered(_)) => {}
                Ok(Reply::Error(err)) => {
                    warn!(namesrv = %addr, error = %err.message, "name server refused the registration")
                }
                Ok(other) => {
                    warn!(namesrv = %addr, reply = ?other, "unexpected registration reply")
                }
                Err(err) => {
                    warn!(namesrv = %addr, %err, "registration failed; will retry");
                    clients.remove(addr);
                }
            }
        }
    }

    /// Tells every name server this broker is leaving.
    pub(super) async fn unregister(&self, state: &BrokerState) {
        let config = &state.config;
        let request = Request::UnregisterBroker {
            cluster_name: config.broker_cluster_name.clone(),
            broker_name: config.broker_name.clone(),
            broker_addr: state.broker_addr.clone(),
            broker_id: config.broker_id,
        };
        for (addr, client) in self.clients.lock().await.drain() {
            if let Err(err) = client.invoke(&request, REQUEST_TIMEOUT).await {
                warn!(namesrv = %addr, %err, "could not unregister from name server");
            }
        }
    }
}

/// The open connection to `addr`, reconnecting if needed.
async fn connected(
    clients: &mut HashMap<String, RemotingClient>,
    addr: &str,
    tls: bool,
    credentials: &Option<Arc<crate::acl::Credentials>>,
) -> Option<RemotingClient> {
    if let Some(client) = clients.get(addr).filter(|c| !c.is_closed()) {
        return Some(client.clone());
    }
    match RemotingClient::connect_with(addr, CONNECT_TIMEOUT, tls).await {
        Ok(client) => {
            let client = client.signed_by(credentials.clone());
            clients.insert(addr.to_string(), client.clone());
            Some(client)
        }
        Err(err) => {
            warn!(namesrv = %addr, %err, "cannot register with name server; will retry (is namesrvAddr right?)");
            None
        }
    }
}

/// Re-registers every period and whenever the topic table changes, until `stop`.
pub(super) async fn keep_registering(state: Arc<BrokerState>, stop: CancellationToken) {
    let period = Duration::from_millis(state.config.register_name_server_period.max(1000));
    let mut topics_changed = state.topics.subscribe();
    loop {
        let full = tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(period) => true,
            // A watch keeps the change pending while a registration runs: none is missed.
            changed = topics_changed.changed() => {
                if changed.is_err() {
                    return;
                }
                false
            }
        };
        if full {
            topics_changed.mark_unchanged();
            state.name_servers.register(&state).await;
        } else {
            // A change: tell the name servers about the changed topics only.
            state.name_servers.register_changed(&state).await;
        }
    }
}

fn registration(
    state: &BrokerState,
    topics: BTreeMap<String, TopicConfig>,
    data_version: DataVersion,
) -> BrokerRegistration {
    let config = &state.config;
    let (ip, port) = state
        .broker_addr
        .rsplit_once(':')
        .unwrap_or((state.broker_addr.as_str(), ""));
    // Java's default HA port is the listen port + 1 (the bound one, when listenPort is 0).
    let ha_port = config
        .ha_listen_port
        .or_else(|| port.parse::<u16>().ok().map(|p| p.wrapping_add(1)))
        .unwrap_or(0);
    BrokerRegistration {
        cluster_name: config.broker_cluster_name.clone(),
        broker_name: config.broker_name.clone(),
        broker_addr: state.broker_addr.clone(),
        broker_id: config.broker_id,
        ha_server_addr: format!("{ip}:{ha_port}"),
        heartbeat_timeout_millis: None,
        enable_acting_master: false,
        data_version,
        topics,
        filter_server_list: Vec::new(),
    }
}
