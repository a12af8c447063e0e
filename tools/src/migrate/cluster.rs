//! What `skiff migrate` reads from a cluster: its broker groups (a master at brokerId 0, slaves
//! at the other ids) and, per broker, its runtime table and settings, over the admin protocol.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use skiff_model::command::{Reply, Request};
use skiff_model::route::MASTER_ID;

use crate::admin::broker::broker_config;
use crate::admin::client::{join_or_none, Admin, Master, Refused};

/// One broker group as the name servers list it.
#[derive(Debug, Clone)]
pub struct Group {
    pub cluster: String,
    pub name: String,
    /// brokerId → address.
    pub brokers: BTreeMap<i64, String>,
}

impl Group {
    pub fn master(&self) -> Option<&String> {
        self.brokers.get(&MASTER_ID)
    }

    pub fn slaves(&self) -> impl Iterator<Item = (i64, &String)> {
        self.brokers
            .iter()
            .filter(|(id, _)| **id != MASTER_ID)
            .map(|(id, addr)| (*id, addr))
    }

    /// The id a new slave takes: the lowest one above 0 not in use.
    pub fn free_slave_id(&self) -> i64 {
        (1..).find(|id| !self.brokers.contains_key(id)).unwrap_or(1)
    }
}

/// The broker groups of the cluster, or only those named in `only` (every name must exist).
pub async fn groups(admin: &Admin, only: &[String]) -> Result<Vec<Group>> {
    let info = admin.cluster_info().await?;
    for name in only {
        if !info.broker_addr_table.contains_key(name) {
            bail!(
                "broker group {name} is not registered with the name server (it knows: {})",
                join_or_none(info.broker_addr_table.keys())
            );
        }
    }
    let mut groups = Vec::new();
    for (name, data) in &info.broker_addr_table {
        if !only.is_empty() && !only.contains(name) {
            continue;
        }
        groups.push(Group {
            cluster: data.cluster.clone(),
            name: name.clone(),
            brokers: data.broker_addrs.clone(),
        });
    }
    if groups.is_empty() {
        bail!("no broker group is registered with the name server");
    }
    Ok(groups)
}

/// How often, and how far apart, a refused runtime-info request is tried again.
const REFUSALS_TOLERATED: u32 = 20;
const REFUSED_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

/// A broker's GET_BROKER_RUNTIME_INFO table.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub addr: String,
    pub table: BTreeMap<String, String>,
}

impl Runtime {
    /// A broker that refuses is asked again for a few seconds: a Java broker fails this request
    /// (a `NoSuchElementException`) until its store statistics have a first sample.
    pub async fn read(admin: &Admin, addr: &str) -> Result<Runtime> {
        let mut refusals = 0;
        loop {
            match admin.call(addr, &Request::GetBrokerRuntimeInfo).await {
                Ok(Reply::KeyValues(table)) => {
                    return Ok(Runtime {
                        addr: addr.to_string(),
                        table,
                    })
                }
                Ok(other) => bail!("{addr} answered runtime info with {other:?}"),
                Err(err) if err.is::<Refused>() && refusals < REFUSALS_TOLERATED => {
                    refusals += 1;
                    tokio::time::sleep(REFUSED_PAUSE).await;
                }
                Err(err) => return Err(err.context(format!("broker {addr} does not answer"))),
            }
        }
    }

    /// Skiff's brokers add `skiffVersion` to Java's table.
    pub fn is_skiff(&self) -> bool {
        self.table.contains_key("skiffVersion")
    }

    /// "Skiff 0.1.0" or "Apache RocketMQ V5_3_3".
    pub fn kind(&self) -> String {
        match self.table.get("skiffVersion") {
            Some(v) => format!("Skiff {v}"),
            None => format!(
                "Apache RocketMQ {}",
                self.table
                    .get("brokerVersionDesc")
                    .map_or("(unknown version)", String::as_str)
            ),
        }
    }

    fn number(&self, key: &str) -> Result<i64> {
        self.table
            .get(key)
            .with_context(|| format!("{} reports no {key}", self.addr))?
            .trim()
            .parse()
            .map_err(|_| anyhow!("{} reports a {key} that is not a number", self.addr))
    }

    pub fn commit_log_min(&self) -> Result<i64> {
        self.number("commitLogMinOffset")
    }

    pub fn commit_log_max(&self) -> Result<i64> {
        self.number("commitLogMaxOffset")
    }
}

/// A broker's settings in force (GET_BROKER_CONFIG), by Java key.
pub async fn settings(
    admin: &Admin,
    group: &Group,
    addr: &str,
) -> Result<BTreeMap<String, String>> {
    let master = Master {
        name: group.name.clone(),
        addr: addr.to_string(),
    };
    broker_config(admin, &master)
        .await
        .with_context(|| format!("reading the settings of {addr}"))
}

/// `1.5 GiB`-style sizes for people.
pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_free_ids() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        let group = Group {
            cluster: "c".into(),
            name: "a".into(),
            brokers: BTreeMap::from([(0, "m".to_string()), (1, "s".to_string())]),
        };
        assert_eq!(group.free_slave_id(), 2);
        assert_eq!(group.slaves().count(), 1);
    }
}
