//! Requests this broker passes on to another broker group (Java's `RpcClient` in
//! `BrokerOuterAPI`): the older stretches of a static topic's logical queues live on the group
//! that led them before a remapping. The other group is found by name as the master address in
//! the name servers' cluster info, looked up again when older than [`REFRESH`] or unknown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use skiff_model::command::{Reply, Request};
use skiff_model::route::MASTER_ID;
use tracing::warn;

use super::BrokerState;
use crate::config::BrokerConfig;
use crate::remoting_client::RemotingClient;

/// How long a master address from the cluster info is trusted (Java refreshes every 5 s).
const REFRESH: Duration = Duration::from_secs(5);

pub(super) struct Forwarder {
    /// `forwardTimeout`: for connecting and for each answer.
    timeout: Duration,
    use_tls: bool,
    credentials: Option<Arc<crate::acl::Credentials>>,
    /// Master address by broker group name, and when it was read.
    masters: Mutex<(Option<Instant>, HashMap<String, String>)>,
    /// One connection per address.
    clients: Mutex<HashMap<String, RemotingClient>>,
}

impl Forwarder {
    pub(super) fn new(config: &BrokerConfig) -> Self {
        Forwarder {
            timeout: Duration::from_millis(config.forward_timeout),
            use_tls: config.tls.client_uses_tls(config.use_tls),
            credentials: config
                .inner_client_authentication_credentials
                .as_deref()
                .and_then(|json| crate::acl::Credentials::parse(json).ok())
                .map(Arc::new),
            masters: Mutex::new((None, HashMap::new())),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Sends `request` to the master of broker group `bname` and returns its answer; `Err` says
    /// why none came (Java's remark where it has one).
    pub(super) async fn call(
        &self,
        state: &BrokerState,
        bname: &str,
        request: &Request,
    ) -> Result<Reply, String> {
        let addr = self.master(state, bname).await?;
        let client = self.client(&addr).await?;
        match client.invoke(request, self.timeout).await {
            Ok(reply) => Ok(reply),
            Err(err) => {
                warn!(broker = bname, %addr, %err, "a request passed on to another broker group failed");
                Err(format!("error from remoting layer: {err}"))
            }
        }
    }

    async fn master(&self, state: &BrokerState, bname: &str) -> Result<String, String> {
        {
            let masters = self.masters.lock();
            let fresh = masters.0.is_some_and(|at| at.elapsed() < REFRESH);
            if let (true, Some(addr)) = (fresh, masters.1.get(bname)) {
                return Ok(addr.clone());
            }
        }
        let (_, info) = state.name_servers.cluster_info().await?;
        let table: HashMap<String, String> = info
            .broker_addr_table
            .into_iter()
            .filter_map(|(name, data)| Some((name, data.broker_addrs.get(&MASTER_ID)?.clone())))
            .collect();
        let addr = table.get(bname).cloned();
        *self.masters.lock() = (Some(Instant::now()), table);
        addr.ok_or_else(|| format!("cannot find addr for broker {bname}"))
    }

    async fn client(&self, addr: &str) -> Result<RemotingClient, String> {
        if let Some(client) = self.clients.lock().get(addr) {
            if !client.is_closed() {
                return Ok(client.clone());
            }
        }
        let client = RemotingClient::connect_with(addr, self.timeout, self.use_tls)
            .await
            .map_err(|err| format!("error from remoting layer: {err}"))?
            .signed_by(self.credentials.clone());
        self.clients.lock().insert(addr.to_string(), client.clone());
        Ok(client)
    }
}
