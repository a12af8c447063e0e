//! The topic's queues, from the name server's route; the topic is created on every master broker
//! first if the name server does not know it.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use skiff_model::command::{ErrorKind, QueueRef, Reply, Request};
use skiff_model::route::{perm, TopicConfig, TopicRouteData, MASTER_ID};
use skiff_server::remoting_client::RemotingClient;

/// How long a new broker may take to register, and a new topic to appear in the route.
const ROUTE_WAIT: Duration = Duration::from_secs(15);

/// One queue and the broker that hosts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub broker: String,
    pub queue: QueueRef,
}

/// Where producers write and consumers read.
#[derive(Debug, Default)]
pub struct Queues {
    pub write: Vec<Target>,
    pub read: Vec<Target>,
}

impl Queues {
    /// Every broker address the queues name, once each.
    pub fn brokers(&self) -> Vec<String> {
        let mut brokers: Vec<String> = self
            .write
            .iter()
            .chain(&self.read)
            .map(|t| t.broker.clone())
            .collect();
        brokers.sort();
        brokers.dedup();
        brokers
    }
}

/// The queues of `topic`, creating it with `queue_nums` queues per broker when it is missing.
pub async fn prepare(
    namesrv: &str,
    topic: &str,
    queue_nums: i32,
    timeout: Duration,
) -> Result<Queues> {
    let ns = RemotingClient::connect(namesrv, timeout).await?;
    if let Some(route) = route(&ns, topic, timeout).await? {
        return Ok(queues_of(topic, &route));
    }
    // A broker that has just started may not have registered yet.
    let deadline = Instant::now() + ROUTE_WAIT;
    let masters = loop {
        let masters = masters(&ns, timeout).await?;
        if !masters.is_empty() {
            break masters;
        }
        if Instant::now() >= deadline {
            bail!("the name server at {namesrv} knows no broker after {ROUTE_WAIT:?}: is one registered?");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for broker in &masters {
        let client = RemotingClient::connect(broker, timeout).await?;
        let request = Request::CreateTopic(TopicConfig::new(topic, queue_nums));
        match client.invoke(&request, timeout).await? {
            Reply::Success => {
                println!("created topic {topic} with {queue_nums} queues on {broker}")
            }
            other => bail!("creating topic {topic} on {broker}: {other:?}"),
        }
    }
    let deadline = Instant::now() + ROUTE_WAIT;
    loop {
        if let Some(route) = route(&ns, topic, timeout).await? {
            return Ok(queues_of(topic, &route));
        }
        if Instant::now() >= deadline {
            bail!(
                "topic {topic} was created but the name server has no route after {ROUTE_WAIT:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn route(
    ns: &RemotingClient,
    topic: &str,
    timeout: Duration,
) -> Result<Option<TopicRouteData>> {
    let request = Request::GetRouteInfo {
        topic: topic.to_string(),
    };
    match ns.invoke(&request, timeout).await? {
        Reply::Route(route) if !route.queue_datas.is_empty() => Ok(Some(route)),
        Reply::Route(_) => Ok(None),
        Reply::Error(err) if err.kind == ErrorKind::TopicNotExist => Ok(None),
        other => bail!("route of {topic} from {}: {other:?}", ns.addr()),
    }
}

async fn masters(ns: &RemotingClient, timeout: Duration) -> Result<Vec<String>> {
    let reply = ns
        .invoke(&Request::GetBrokerClusterInfo, timeout)
        .await
        .context("asking the name server for its brokers")?;
    let Reply::ClusterInfo(info) = reply else {
        bail!("cluster info from {}: {reply:?}", ns.addr());
    };
    Ok(info
        .broker_addr_table
        .values()
        .filter_map(|broker| broker.broker_addrs.get(&MASTER_ID).cloned())
        .collect())
}

/// Producers write to masters' writable queues and consumers read their readable ones, as the
/// Java client's `topicRouteData2TopicPublishInfo` and `...SubscribeInfo` do.
fn queues_of(topic: &str, route: &TopicRouteData) -> Queues {
    let mut queues = Queues::default();
    for data in &route.queue_datas {
        let Some(broker) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == data.broker_name)
            .and_then(|b| b.broker_addrs.get(&MASTER_ID))
        else {
            continue;
        };
        let target = |queue_id| Target {
            broker: broker.clone(),
            queue: QueueRef {
                topic: topic.to_string(),
                queue_id,
                physical: false,
            },
        };
        if perm::is_writeable(data.perm) {
            queues.write.extend((0..data.write_queue_nums).map(target));
        }
        if perm::is_readable(data.perm) {
            queues.read.extend((0..data.read_queue_nums).map(target));
        }
    }
    queues
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_model::route::{BrokerData, QueueData};

    #[test]
    fn queues_follow_permissions_and_skip_brokers_without_master() {
        let broker = |name: &str, id: i64| BrokerData {
            broker_name: name.into(),
            broker_addrs: [(id, format!("{name}:10911"))].into(),
            ..BrokerData::default()
        };
        let route = TopicRouteData {
            queue_datas: vec![
                QueueData {
                    broker_name: "a".into(),
                    read_queue_nums: 2,
                    write_queue_nums: 3,
                    perm: perm::READ | perm::WRITE,
                    topic_sys_flag: 0,
                },
                QueueData {
                    broker_name: "b".into(),
                    read_queue_nums: 1,
                    write_queue_nums: 1,
                    perm: perm::READ,
                    topic_sys_flag: 0,
                },
                QueueData {
                    broker_name: "slave-only".into(),
                    read_queue_nums: 4,
                    write_queue_nums: 4,
                    perm: perm::READ | perm::WRITE,
                    topic_sys_flag: 0,
                },
            ],
            broker_datas: vec![broker("a", 0), broker("b", 0), broker("slave-only", 1)],
            ..TopicRouteData::default()
        };
        let queues = queues_of("T", &route);
        let ids = |targets: &[Target]| {
            targets
                .iter()
                .map(|t| (t.broker.clone(), t.queue.queue_id))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(&queues.write),
            [
                ("a:10911".to_string(), 0),
                ("a:10911".into(), 1),
                ("a:10911".into(), 2)
            ]
        );
        assert_eq!(
            ids(&queues.read),
            [
                ("a:10911".to_string(), 0),
                ("a:10911".into(), 1),
                ("b:10911".into(), 0)
            ]
        );
        assert_eq!(queues.brokers(), ["a:10911", "b:10911"]);
    }
}
