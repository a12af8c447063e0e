//! Registration with name servers (`BrokerOuterAPI.registerBrokerAll`): at start, every
//! `registerNameServerPeriod` (30 s), and whenever topics change, the broker sends its whole topic
//! table to every name server; at shutdown it unregisters so clients stop routing to it before it
//! goes away. A big table goes in parts (`enableSplitRegistration`, or whenever one request
//! would not fit in a frame), each awaited, so start still returns only once every topic is
//! routable.
//!
//! A request that creates a topic (an auto-creating send, UPDATE_AND_CREATE_TOPIC) registers
//! before it is answered, as the Java broker does: a client that asks a name server for the route
//! right after its SEND_OK must find it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use skiff_model::command::{Reply, Request};
use skiff_model::route::{
    perm, BrokerRegistration, ClusterInfo, DataVersion, RegistrationResult, TopicConfig,
};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::BrokerState;
use crate::config::BrokerConfig;
use crate::remoting_client::RemotingClient;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(6);
/// Room left in a frame for the length fields and the registration's header.
const FRAME_HEADER_ROOM: usize = 4096;

/// The broker's connections to its name servers.
pub(super) struct NameServerLink {
    addrs: Vec<String>,
    /// `useTLS` / `tls.enable`.
    use_tls: bool,
    /// One connection per name server; the lock also serializes registrations.
    clients: Mutex<HashMap<String, RemotingClient>>,
    /// `innerClientAuthenticationCredentials`: signs registrations for name servers with ACL on.
    credentials: Option<Arc<crate::acl::Credentials>>,
    /// Whether the log already said that the topic table is registered in parts unasked.
    warned_split: AtomicBool,
    /// The master's addresses as the name servers answer a slave's registration (Java's
    /// `handleRegisterBrokerResult`): what the HA client and the metadata sync connect to.
    master: tokio::sync::watch::Sender<RegistrationResult>,
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
            warned_split: AtomicBool::new(false),
            master: tokio::sync::watch::channel(RegistrationResult::default()).0,
        }
    }

    /// `innerClientAuthenticationCredentials`, for the broker's other calls to its peers.
    pub(super) fn credentials(&self) -> Option<Arc<crate::acl::Credentials>> {
        self.credentials.clone()
    }

    /// The master's remoting and HA addresses, as the name servers last answered them (empty on
    /// a master, and on a slave until its master registers).
    pub(super) fn master(&self) -> tokio::sync::watch::Receiver<RegistrationResult> {
        self.master.subscribe()
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
        let requests = self.registrations(state, topics, data_version);
        self.send(&mut clients, &requests).await;
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
        let requests = self.registrations(state, topics, data_version);
        self.send(&mut clients, &requests).await;
    }

    /// The requests announcing `topics`: one, or (Java's `registerBrokerAll` with
    /// `enableSplitRegistration`) one per `splitRegistrationSize` topics and a last one with the
    /// rest, all with the same data version; name servers (Java's and Skiff's) add each part's
    /// topics to the broker's routes. A table whose single request would exceed `frameMaxLength`
    /// is split even with split registration off: a name server closes the connection on such a
    /// frame (Java's does too), so the broker would never be routable.
    fn registrations(
        &self,
        state: &BrokerState,
        topics: BTreeMap<String, TopicConfig>,
        data_version: DataVersion,
    ) -> Vec<Request> {
        let config = &state.config;
        let size = config.split_registration_size.max(1);
        let whole = registration(state, topics, data_version);
        let split = config.enable_split_registration
            || (whole.topics.len() > size
                && {
                    let len = skiff_protocol::remoting::register_broker_body_len(&whole);
                    let too_big = len + FRAME_HEADER_ROOM > config.frame_max_length;
                    if too_big && !self.warned_split.swap(true, Ordering::Relaxed) {
                        warn!(
                        topics = whole.topics.len(),
                        body_bytes = len,
                        frame_max_length = config.frame_max_length,
                        parts_of = size,
                        "the topic table does not fit in one registration request: sent in parts; \
                         set enableSplitRegistration=true to say so (splitRegistrationSize sets the part size)"
                    );
                    }
                    too_big
                });
        if !split {
            return vec![Request::RegisterBroker(whole)];
        }
        split_registration(whole, size)
            .into_iter()
            .map(Request::RegisterBroker)
            .collect()
    }

    /// Sends `requests` in order to every name server, each awaited before the next; a name
    /// server that fails one gets no more (the next period sends everything again).
    async fn send(&self, clients: &mut HashMap<String, RemotingClient>, requests: &[Request]) {
        // Of several name servers, the first answer naming a master counts, as in Java.
        let mut master_seen = false;
        for addr in &self.addrs {
            let Some(client) = connected(clients, addr, self.use_tls, &self.credentials).await
            else {
                continue;
            };
            for request in requests {
                match client.invoke(request, REQUEST_TIMEOUT).await {
                    Ok(Reply::BrokerRegistered(result)) => {
                        if !master_seen && result.master_addr.is_some() {
                            master_seen = true;
                            self.master.send_if_modified(|known| {
                                let changed = *known != result;
                                *known = result;
                                changed
                            });
                        }
                    }
                    Ok(Reply::Error(err)) => {
                        warn!(namesrv = %addr, error = %err.message, "name server refused the registration");
                        break;
                    }
                    Ok(other) => {
                        warn!(namesrv = %addr, reply = ?other, "unexpected registration reply");
                        break;
                    }
                    Err(err) => {
                        warn!(namesrv = %addr, %err, "registration failed; will retry");
                        clients.remove(addr);
                        break;
                    }
                }
            }
        }
    }

    /// GET_BROKER_CLUSTER_INFO from the first name server that answers (for the web console), on
    /// a connection of its own so that it never waits behind a registration.
    pub(super) async fn cluster_info(&self) -> Result<(String, ClusterInfo), String> {
        let mut last_error = "namesrvAddr is not set".to_string();
        for addr in &self.addrs {
            let client =
                match RemotingClient::connect_with(addr, CONNECT_TIMEOUT, self.use_tls).await {
                    Ok(client) => client.signed_by(self.credentials.clone()),
                    Err(err) => {
                        last_error = format!("{addr}: {err}");
                        continue;
                    }
                };
            match client
                .invoke(&Request::GetBrokerClusterInfo, CONNECT_TIMEOUT)
                .await
            {
                Ok(Reply::ClusterInfo(info)) => return Ok((addr.clone(), info)),
                Ok(Reply::Error(err)) => last_error = format!("{addr}: {}", err.message),
                Ok(other) => last_error = format!("{addr}: unexpected answer {other:?}"),
                Err(err) => last_error = format!("{addr}: {err}"),
            }
        }
        Err(last_error)
    }

    /// Tells every name server this broker is leaving.
    pub(super) async fn unregister(&self, state: &BrokerState) {
        let config = &state.config;
        let request = Request::UnregisterBroker {
            cluster_name: config.broker_cluster_name.clone(),
            broker_name: config.broker_name.clone(),
            broker_addr: state.broker_addr.clone(),
            broker_id: config.effective_broker_id(),
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

/// `whole` as Java's split registration sends it: a part per `size` topics, then one with the
/// rest, which Java sends even when empty (it is the heartbeat too). `size` is at least 1.
fn split_registration(whole: BrokerRegistration, size: usize) -> Vec<BrokerRegistration> {
    let mut template = whole;
    let topics = std::mem::take(&mut template.topics);
    let mut parts = Vec::with_capacity(topics.len() / size + 1);
    let mut part = BTreeMap::new();
    for (name, topic) in topics {
        part.insert(name, topic);
        if part.len() >= size {
            parts.push(BrokerRegistration {
                topics: std::mem::take(&mut part),
                ..template.clone()
            });
        }
    }
    parts.push(BrokerRegistration {
        topics: part,
        ..template
    });
    parts
}

fn registration(
    state: &BrokerState,
    mut topics: BTreeMap<String, TopicConfig>,
    data_version: DataVersion,
) -> BrokerRegistration {
    let config = &state.config;
    // A broker that is not read-write announces its topics with its own permission
    // (`registerBrokerAll`): a read-only broker gets no sends routed to it.
    let permission = state.permission();
    if !perm::is_writeable(permission) || !perm::is_readable(permission) {
        for topic in topics.values_mut() {
            topic.perm &= permission;
        }
    }
    let (ip, port) = state
        .broker_addr
        .rsplit_once(':')
        .unwrap_or((state.broker_addr.as_str(), ""));
    // Slaves reach the HA port at `brokerIP2`, which defaults to the advertised IP.
    let ha_ip = config.broker_ip2.as_deref().unwrap_or(ip);
    // Java's default HA port is the listen port + 1 (the bound one, when listenPort is 0).
    let ha_port = state
        .ha_port
        .or(config.ha_listen_port)
        .or_else(|| port.parse::<u16>().ok().map(|p| p.wrapping_add(1)))
        .unwrap_or(0);
    BrokerRegistration {
        cluster_name: config.broker_cluster_name.clone(),
        broker_name: config.broker_name.clone(),
        broker_addr: state.broker_addr.clone(),
        broker_id: config.effective_broker_id(),
        ha_server_addr: format!("{ha_ip}:{ha_port}"),
        heartbeat_timeout_millis: None,
        enable_acting_master: Some(false),
        data_version,
        topic_queue_mappings: state.static_topics.infos(topics.keys()),
        topics,
        filter_server_list: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(topics: usize) -> BrokerRegistration {
        BrokerRegistration {
            broker_name: "broker-a".into(),
            data_version: DataVersion {
                state_version: 0,
                timestamp: 7,
                counter: 3,
            },
            topics: (0..topics)
                .map(|i| (format!("T{i:05}"), TopicConfig::new(format!("T{i:05}"), 4)))
                .collect(),
            ..BrokerRegistration::default()
        }
    }

    #[test]
    fn split_registration_sends_parts_of_the_size_then_the_rest() {
        let parts = split_registration(whole(2_001), 800);
        let sizes: Vec<usize> = parts.iter().map(|p| p.topics.len()).collect();
        assert_eq!(sizes, [800, 800, 401]);
        let mut seen = BTreeMap::new();
        for part in &parts {
            // Every part is a complete registration with the broker's one data version.
            assert_eq!(part.broker_name, "broker-a");
            assert_eq!(part.data_version, whole(0).data_version);
            seen.extend(part.topics.clone());
        }
        assert_eq!(seen, whole(2_001).topics);
    }

    #[test]
    fn split_registration_ends_with_an_empty_part_as_java_does() {
        let sizes: Vec<usize> = split_registration(whole(1_600), 800)
            .iter()
            .map(|p| p.topics.len())
            .collect();
        assert_eq!(sizes, [800, 800, 0]);
        let sizes: Vec<usize> = split_registration(whole(3), 800)
            .iter()
            .map(|p| p.topics.len())
            .collect();
        assert_eq!(sizes, [3]);
    }
}
