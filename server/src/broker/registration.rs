//! Registration with name servers (`BrokerOuterAPI.registerBrokerAll`): at start, every
//! `registerNameServerPeriod` (30 s), and at once whenever topics change, the broker sends its
//! whole topic table to every name server; at shutdown it unregisters so clients stop routing to
//! it before it goes away.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use skiff_model::command::{Reply, Request};
use skiff_model::route::BrokerRegistration;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::BrokerState;
use crate::remoting_client::RemotingClient;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(6);

type Clients = Mutex<HashMap<String, RemotingClient>>;

pub(super) struct Registrar {
    state: Arc<BrokerState>,
    clients: Arc<Clients>,
    task: JoinHandle<()>,
    stop: CancellationToken,
}

impl Registrar {
    /// Registers once (so routes exist when `start` returns), then keeps registering.
    pub(super) async fn start(state: Arc<BrokerState>, shutdown: CancellationToken) -> Registrar {
        let clients = Arc::new(Clients::default());
        let addrs = name_server_addrs(&state);
        if addrs.is_empty() {
            warn!("namesrvAddr is not set: clients cannot find this broker; set namesrvAddr in the broker config");
        }
        register_all(&state, &clients, &addrs).await;
        let stop = shutdown.child_token();
        let task = tokio::spawn(keep_registering(
            state.clone(),
            clients.clone(),
            addrs,
            stop.clone(),
        ));
        Registrar {
            state,
            clients,
            task,
            stop,
        }
    }

    /// Stops registering and tells every name server this broker is leaving.
    pub(super) async fn unregister(self) {
        self.stop.cancel();
        let _ = self.task.await;
        let config = &self.state.config;
        let request = Request::UnregisterBroker {
            cluster_name: config.broker_cluster_name.clone(),
            broker_name: config.broker_name.clone(),
            broker_addr: self.state.broker_addr.clone(),
            broker_id: config.broker_id,
        };
        for (addr, client) in self.clients.lock().await.drain() {
            if let Err(err) = client.invoke(&request, REQUEST_TIMEOUT).await {
                warn!(namesrv = %addr, %err, "could not unregister from name server");
            }
        }
    }
}

fn name_server_addrs(state: &BrokerState) -> Vec<String> {
    state
        .config
        .namesrv_addr
        .as_deref()
        .unwrap_or("")
        .split(';')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

async fn keep_registering(
    state: Arc<BrokerState>,
    clients: Arc<Clients>,
    addrs: Vec<String>,
    stop: CancellationToken,
) {
    let period = Duration::from_millis(state.config.register_name_server_period.max(1000));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
            _ = state.topics.changed() => {}
        }
        register_all(&state, &clients, &addrs).await;
    }
}

fn registration(state: &BrokerState) -> BrokerRegistration {
    let config = &state.config;
    let (topics, data_version) = state.topics.snapshot();
    let ha_port = config
        .ha_listen_port
        .unwrap_or_else(|| config.listen_port.wrapping_add(1));
    let ip = state
        .broker_addr
        .rsplit_once(':')
        .map_or(state.broker_addr.as_str(), |(ip, _)| ip);
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

async fn register_all(state: &BrokerState, clients: &Clients, addrs: &[String]) {
    let request = Request::RegisterBroker(registration(state));
    let mut clients = clients.lock().await;
    for addr in addrs {
        let client = match clients.get(addr) {
            Some(client) if !client.is_closed() => client.clone(),
            _ => match RemotingClient::connect(addr, CONNECT_TIMEOUT).await {
                Ok(client) => {
                    clients.insert(addr.clone(), client.clone());
                    client
                }
                Err(err) => {
                    warn!(namesrv = %addr, %err, "cannot register with name server; will retry (is namesrvAddr right?)");
                    continue;
                }
            },
        };
        match client.invoke(&request, REQUEST_TIMEOUT).await {
            Ok(Reply::BrokerRegistered(_)) => {}
            Ok(Reply::Error(err)) => {
                warn!(namesrv = %addr, error = %err.message, "name server refused the registration")
            }
            Ok(other) => warn!(namesrv = %addr, reply = ?other, "unexpected registration reply"),
            Err(err) => {
                warn!(namesrv = %addr, %err, "registration failed; will retry");
                clients.remove(addr);
            }
        }
    }
}
