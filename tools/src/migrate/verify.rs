//! `skiff migrate verify`: checks that a group's slave holds what its master holds. Four checks:
//! the CommitLog end, every queue's max offset, the last record of every queue byte for byte
//! (VIEW_MESSAGE_BY_ID on both, at the CommitLog offset the master's ConsumeQueue gives), and the
//! committed consumer offsets. A slave behind its master is *lagging* (wait, or stop writes and
//! wait); one that disagrees with it has *diverged* (stop: never cut over to it).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use clap::Args;
use serde_json::json;
use skiff_model::admin::{AdminCommand, AdminReply};
use skiff_model::command::{QueueRef, Reply, Request};

use super::cluster::{self, Runtime};
use crate::admin::client::Admin;
use crate::admin::output::{table, Shown};

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  Before a cutover (writes to the master stopped), everything must be equal:
    skiff migrate verify -n 10.0.0.5:9876 -b broker-a
  While producers still write, accept a slave that is behind but agrees with its master:
    skiff migrate verify -n 10.0.0.5:9876 --allow-lag

Exit status 0 when every check passes; 1 when a slave has diverged from its master, lags \
(without --allow-lag), or a broker cannot be asked.")]
pub struct VerifyArgs {
    /// Only this broker group (repeatable) [default: every group with a slave]
    #[arg(short = 'b', long = "broker", value_name = "NAME")]
    pub brokers: Vec<String>,

    /// Pass when a slave is behind its master but holds an identical prefix
    #[arg(long)]
    pub allow_lag: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Outcome {
    Equal,
    Lagging,
    Diverged,
}

impl Outcome {
    pub(super) fn word(self) -> &'static str {
        match self {
            Outcome::Equal => "equal",
            Outcome::Lagging => "lagging",
            Outcome::Diverged => "DIVERGED",
        }
    }
}

pub(super) struct Check {
    pub(super) name: &'static str,
    pub(super) outcome: Outcome,
    pub(super) detail: String,
}

pub async fn run(admin: &Admin, args: VerifyArgs) -> Result<Shown> {
    let groups = cluster::groups(admin, &args.brokers).await?;
    let mut rows = Vec::new();
    let mut out = Vec::new();
    let mut worst = Outcome::Equal;
    let mut verified = 0;
    for group in &groups {
        let Some(master) = group.master() else {
            bail!(
                "{} has no master registered: nothing to verify against",
                group.name
            );
        };
        let slaves: Vec<(i64, String)> = group.slaves().map(|(id, a)| (id, a.clone())).collect();
        if slaves.is_empty() {
            if args.brokers.contains(&group.name) {
                bail!(
                    "{} has no slave registered: start one (skiff migrate plan --out writes its \
                     config) and wait for skiff migrate replicate",
                    group.name
                );
            }
            continue;
        }
        for (id, slave) in slaves {
            let checks = verify_pair(admin, master, &slave).await?;
            verified += 1;
            let mut checks_json = Vec::new();
            for check in &checks {
                worst = worst.max(check.outcome);
                rows.push(vec![
                    group.name.clone(),
                    format!("{slave} ({id})"),
                    check.name.to_string(),
                    check.outcome.word().to_string(),
                    check.detail.clone(),
                ]);
                checks_json.push(json!({
                    "check": check.name,
                    "outcome": check.outcome.word(),
                    "detail": check.detail,
                }));
            }
            out.push(json!({
                "brokerName": group.name,
                "master": master,
                "slave": slave,
                "slaveBrokerId": id,
                "checks": checks_json,
            }));
        }
    }
    if verified == 0 {
        bail!("no broker group has a slave registered: nothing to verify");
    }
    let text = table(&["Broker", "Slave", "Check", "Result", "Detail"], rows);
    let failed = match worst {
        Outcome::Diverged => Some(
            "a slave disagrees with its master: do not cut over to it; move its store aside and \
             replicate again",
        ),
        Outcome::Lagging if !args.allow_lag => Some(
            "a slave is behind its master: wait (skiff migrate replicate), or stop writes and \
             verify again",
        ),
        _ => None,
    };
    if let Some(reason) = failed {
        println!("{}", text.trim_end());
        bail!("{reason}");
    }
    Ok(Shown::new(json!({ "pairs": out }), text))
}

pub(super) async fn verify_pair(admin: &Admin, master: &str, slave: &str) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    // The slave first, then the master, here and per queue: the other way round, a slave of a
    // master still taking writes (--allow-lag) could seem ahead of it.
    let slave_max = Runtime::read(admin, slave).await?.commit_log_max()?;
    let master_max = Runtime::read(admin, master).await?.commit_log_max()?;
    checks.push(Check {
        name: "CommitLog end",
        outcome: compare(master_max, slave_max),
        detail: format!("master {master_max}, slave {slave_max}"),
    });

    let topics = match admin.call(master, &Request::GetAllTopicConfig).await? {
        Reply::TopicConfigs { topics, .. } => topics,
        other => bail!("{master} answered the topic list with {other:?}"),
    };
    let (mut queues, mut behind, mut ahead) = (0, 0, 0);
    let (mut records, mut records_differ) = (0, Vec::new());
    for topic in topics.values() {
        let count = topic.read_queue_nums.max(topic.write_queue_nums);
        for queue_id in 0..count {
            let queue = QueueRef {
                topic: topic.topic_name.clone(),
                queue_id,
                physical: true,
            };
            let on_slave = max_offset(admin, slave, &queue).await.unwrap_or(0);
            let on_master = max_offset(admin, master, &queue).await?;
            queues += 1;
            match compare(on_master, on_slave) {
                Outcome::Lagging => behind += 1,
                Outcome::Diverged => ahead += 1,
                Outcome::Equal => {}
            }
            let last = on_master.min(on_slave) - 1;
            if last >= 0 {
                records += 1;
                if let Some(why) = same_record(admin, master, slave, &queue, last).await? {
                    records_differ.push(why);
                }
            }
        }
    }
    checks.push(Check {
        name: "queue max offsets",
        outcome: if ahead > 0 {
            Outcome::Diverged
        } else if behind > 0 {
            Outcome::Lagging
        } else {
            Outcome::Equal
        },
        detail: format!(
            "{queues} queues of {} topics: {} equal, {behind} behind, {ahead} ahead of the master",
            topics.len(),
            queues - behind - ahead
        ),
    });
    checks.push(Check {
        name: "last records",
        outcome: if records_differ.is_empty() {
            Outcome::Equal
        } else {
            Outcome::Diverged
        },
        detail: if records_differ.is_empty() {
            format!("{records} byte-identical")
        } else {
            format!(
                "{} of {records} differ, first: {}",
                records_differ.len(),
                records_differ[0]
            )
        },
    });

    let master_offsets = consumer_offsets(admin, master).await?;
    let slave_offsets = consumer_offsets(admin, slave).await?;
    let differing: Vec<String> = master_offsets
        .iter()
        .filter(|(key, queues)| slave_offsets.get(*key) != Some(queues))
        .map(|(key, _)| key.clone())
        .collect();
    let total: usize = master_offsets.values().map(BTreeMap::len).sum();
    checks.push(Check {
        name: "consumer offsets",
        outcome: if differing.is_empty() {
            Outcome::Equal
        } else {
            Outcome::Lagging
        },
        detail: if differing.is_empty() {
            format!(
                "{total} committed queue offsets of {} topic@group equal",
                master_offsets.len()
            )
        } else {
            format!(
                "{} of {} topic@group differ (a slave copies them periodically: Java every 60 s), first: {}",
                differing.len(),
                master_offsets.len(),
                differing[0]
            )
        },
    });
    Ok(checks)
}

/// The slave may be behind; never ahead.
fn compare(master: i64, slave: i64) -> Outcome {
    match slave.cmp(&master) {
        std::cmp::Ordering::Equal => Outcome::Equal,
        std::cmp::Ordering::Less => Outcome::Lagging,
        std::cmp::Ordering::Greater => Outcome::Diverged,
    }
}

async fn max_offset(admin: &Admin, addr: &str, queue: &QueueRef) -> Result<i64> {
    match admin
        .call(
            addr,
            &Request::GetMaxOffset {
                queue: queue.clone(),
            },
        )
        .await?
    {
        Reply::Offset(offset) => Ok(offset),
        other => bail!("{addr} answered a max offset with {other:?}"),
    }
}

/// `None` when the record at `index` of `queue` is the same on both; else what differs.
async fn same_record(
    admin: &Admin,
    master: &str,
    slave: &str,
    queue: &QueueRef,
    index: i64,
) -> Result<Option<String>> {
    let request = Request::Admin(AdminCommand::QueryConsumeQueue {
        topic: queue.topic.clone(),
        queue_id: queue.queue_id,
        index,
        count: 1,
        group: None,
    });
    let entry = match admin.call(master, &request).await? {
        Reply::Admin(AdminReply::ConsumeQueue(view)) => {
            view.entries.and_then(|e| e.first().copied())
        }
        other => bail!("{master} answered a ConsumeQueue query with {other:?}"),
    };
    let Some(entry) = entry else {
        return Ok(None);
    };
    let view = Request::ViewMessage {
        commit_log_offset: entry.physical_offset,
    };
    let on_master = match admin.call(master, &view).await? {
        Reply::Message(bytes) => bytes,
        other => bail!("{master} answered a message lookup with {other:?}"),
    };
    let at = format!(
        "{}/{} offset {index} (CommitLog {})",
        queue.topic, queue.queue_id, entry.physical_offset
    );
    match admin.call(slave, &view).await {
        Ok(Reply::Message(bytes)) if bytes == on_master => Ok(None),
        Ok(Reply::Message(_)) => Ok(Some(format!("{at}: the records differ"))),
        Ok(other) => Ok(Some(format!("{at}: the slave answered {other:?}"))),
        Err(err) => Ok(Some(format!(
            "{at}: the slave has no record there ({})",
            crate::health::describe(&err)
        ))),
    }
}

pub(super) async fn consumer_offsets(
    admin: &Admin,
    addr: &str,
) -> Result<BTreeMap<String, BTreeMap<i32, i64>>> {
    match admin
        .call(addr, &Request::Admin(AdminCommand::GetAllConsumerOffsets))
        .await?
    {
        Reply::Admin(AdminReply::ConsumerOffsets { table, .. }) => Ok(table),
        other => bail!("{addr} answered the consumer offsets with {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slave_may_lag_but_never_lead() {
        assert_eq!(compare(10, 10), Outcome::Equal);
        assert_eq!(compare(10, 4), Outcome::Lagging);
        assert_eq!(compare(10, 11), Outcome::Diverged);
        assert!(Outcome::Diverged > Outcome::Lagging);
    }
}
