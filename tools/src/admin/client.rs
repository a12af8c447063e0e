//! How `skiff admin` reaches a cluster: the name servers it was given, and the brokers they list,
//! over [`RemotingClient`] (one connection per address, signed when credentials are given).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use skiff_model::command::{Reply, Request};
use skiff_model::route::{ClusterInfo, TopicRouteData, MASTER_ID};
use skiff_protocol::remoting::codes::response;
use skiff_protocol::remoting::{self, RemotingCommand};
use skiff_server::acl::Credentials;
use skiff_server::remoting_client::RemotingClient;
use tokio::sync::Mutex;

/// A refusal from a server: its response code and remark, kept so that callers can react to
/// particular codes (an offline consumer group, a code an older broker does not know).
#[derive(Debug, thiserror::Error)]
#[error("{addr} refused: {remark} (code {code})")]
pub struct Refused {
    pub addr: String,
    pub code: i32,
    pub remark: String,
}

impl Refused {
    /// The refusal `addr` answered with: its response code and remark as sent.
    fn by(addr: &str, response: &RemotingCommand) -> Refused {
        Refused {
            addr: addr.to_string(),
            code: response.code,
            remark: response
                .remark
                .as_deref()
                .unwrap_or_default()
                .trim()
                .to_string(),
        }
    }
}

/// One master broker: its name and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Master {
    pub name: String,
    pub addr: String,
}

pub struct Admin {
    namesrvs: Vec<String>,
    timeout: Duration,
    credentials: Option<Arc<Credentials>>,
    connections: Mutex<HashMap<String, RemotingClient>>,
}

impl Admin {
    pub fn new(
        namesrvs: Vec<String>,
        timeout: Duration,
        credentials: Option<Credentials>,
    ) -> Admin {
        Admin {
            namesrvs,
            timeout,
            credentials: credentials.map(Arc::new),
            connections: Mutex::new(HashMap::new()),
        }
    }

    pub fn namesrvs(&self) -> &[String] {
        &self.namesrvs
    }

    async fn connect(&self, addr: &str) -> Result<RemotingClient> {
        let mut connections = self.connections.lock().await;
        if let Some(client) = connections.get(addr).filter(|c| !c.is_closed()) {
            return Ok(client.clone());
        }
        let client = RemotingClient::connect(addr, self.timeout)
            .await?
            .signed_by(self.credentials.clone());
        connections.insert(addr.to_string(), client.clone());
        Ok(client)
    }

    /// Sends `request` to `addr`; a refusal becomes a [`Refused`] error with the response code
    /// as sent (the command model folds codes it does not know into a system error).
    pub async fn call(&self, addr: &str, request: &Request) -> Result<Reply> {
        let client = self.connect(addr).await?;
        let frame = remoting::encode_request(request, 0, false);
        let response = client.invoke_frame(frame, self.timeout).await?;
        let reply = remoting::decode_reply(request, &response)
            .map_err(|e| anyhow!("unexpected answer from {addr}: {e}"))?;
        match reply {
            Reply::Error(_) => Err(Refused::by(addr, &response).into()),
            reply => Ok(reply),
        }
    }

    /// Sends a hand-built frame (codes the command model has no variant for) to `addr` and
    /// returns the successful response; other codes become a [`Refused`] error.
    pub async fn call_frame(&self, addr: &str, frame: RemotingCommand) -> Result<RemotingCommand> {
        let client = self.connect(addr).await?;
        let response = client.invoke_frame(frame, self.timeout).await?;
        if response.code != response::SUCCESS {
            return Err(Refused::by(addr, &response).into());
        }
        Ok(response)
    }

    /// Sends `request` to the first name server that answers.
    pub async fn namesrv(&self, request: &Request) -> Result<Reply> {
        let mut last = None;
        for addr in &self.namesrvs {
            match self.call(addr, request).await {
                Ok(reply) => return Ok(reply),
                // A refusal is the answer; only an unreachable name server means "try the next".
                Err(err) if err.is::<Refused>() => return Err(err),
                Err(err) => last = Some(err.context(format!("name server {addr}"))),
            }
        }
        Err(last.unwrap_or_else(|| anyhow!("no name server given (--namesrv)")))
    }

    pub async fn cluster_info(&self) -> Result<ClusterInfo> {
        match self.namesrv(&Request::GetBrokerClusterInfo).await? {
            Reply::ClusterInfo(info) => Ok(info),
            other => bail!("the name server answered cluster info with {other:?}"),
        }
    }

    pub async fn route(&self, topic: &str) -> Result<TopicRouteData> {
        let request = Request::GetRouteInfo {
            topic: topic.to_string(),
        };
        match self.namesrv(&request).await {
            Ok(Reply::Route(route)) => Ok(route),
            Ok(other) => bail!("the name server answered the route of {topic} with {other:?}"),
            Err(err) if refused_with(&err, response::TOPIC_NOT_EXIST) => {
                bail!("topic {topic} does not exist (no name server has a route for it)")
            }
            Err(err) => Err(err),
        }
    }

    /// The master brokers of `cluster` (all clusters when `None`), or the one at `broker`.
    pub async fn masters(
        &self,
        cluster: Option<&str>,
        broker: Option<&str>,
    ) -> Result<Vec<Master>> {
        let info = self.cluster_info().await?;
        if let Some(addr) = broker {
            let name = info
                .broker_addr_table
                .values()
                .find(|data| data.broker_addrs.values().any(|a| a == addr))
                .map(|data| data.broker_name.clone())
                .unwrap_or_else(|| addr.to_string());
            return Ok(vec![Master {
                name,
                addr: addr.to_string(),
            }]);
        }
        let names: Vec<&String> = match cluster {
            Some(cluster) => info
                .cluster_addr_table
                .get(cluster)
                .with_context(|| {
                    format!(
                        "cluster {cluster} is not known to the name server (it knows: {})",
                        join_or_none(info.cluster_addr_table.keys())
                    )
                })?
                .iter()
                .collect(),
            None => info.broker_addr_table.keys().collect(),
        };
        let masters: Vec<Master> = names
            .into_iter()
            .filter_map(|name| {
                let addr = info
                    .broker_addr_table
                    .get(name)?
                    .broker_addrs
                    .get(&MASTER_ID)?;
                Some(Master {
                    name: name.clone(),
                    addr: addr.clone(),
                })
            })
            .collect();
        if masters.is_empty() {
            bail!("no master broker is registered with the name server");
        }
        Ok(masters)
    }

    /// The master brokers that serve `topic`, by its route.
    pub async fn topic_masters(&self, topic: &str) -> Result<Vec<Master>> {
        let route = self.route(topic).await?;
        Ok(route
            .broker_datas
            .iter()
            .filter_map(|data| {
                Some(Master {
                    name: data.broker_name.clone(),
                    addr: data.broker_addrs.get(&MASTER_ID)?.clone(),
                })
            })
            .collect())
    }
}

/// Whether `err` is a refusal with response code `code`.
pub fn refused_with(err: &anyhow::Error, code: i32) -> bool {
    err.downcast_ref::<Refused>()
        .is_some_and(|r| r.code == code)
}

/// Whether the server said it does not know the request code.
pub fn not_supported(err: &anyhow::Error) -> bool {
    refused_with(err, response::REQUEST_CODE_NOT_SUPPORTED)
}

pub fn join_or_none<'a>(items: impl Iterator<Item = &'a String>) -> String {
    let all: Vec<&str> = items.map(String::as_str).collect();
    if all.is_empty() {
        "none".to_string()
    } else {
        all.join(", ")
    }
}
