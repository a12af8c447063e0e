//! `skiff migrate plan`: reads each broker group's master (version, role, store layout, CommitLog
//! range, topics, groups, committed offsets), says what stands in the way of replicating it onto
//! Skiff, and writes the `broker.conf` of the Skiff slave that will copy it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use skiff_model::admin::{AdminCommand, AdminReply};
use skiff_model::command::{Reply, Request};

use super::cluster::{self, bytes, Group, Runtime};
use crate::admin::client::Admin;
use crate::admin::output::Shown;

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  Look at every broker group and write one slave config per group into ./migration:
    skiff migrate plan -n 10.0.0.5:9876 --out migration --data-root /var/lib/skiff
  Only broker-a, the slave listening on 10921:
    skiff migrate plan -n 10.0.0.5:9876 -b broker-a --out migration --listen-port 10921
  The slave host has several addresses; clients must use 10.0.0.7:
    skiff migrate plan -n 10.0.0.5:9876 --out migration --broker-ip 10.0.0.7

The slave config copies the master's store layout (mappedFileSizeCommitLog, \
mappedFileSizeConsumeQueue, maxMessageSize), flushing, delay levels, timer and filter settings, \
and adds brokerId (the lowest free one), brokerRole=SLAVE, namesrvAddr, listenPort, \
storePathRootDir and (with --broker-ip) brokerIP1. Running plan again writes the same files; a file changed since is kept unless \
--force. Nothing is changed on the cluster.")]
pub struct PlanArgs {
    /// Only this broker group (repeatable) [default: every group]
    #[arg(short = 'b', long = "broker", value_name = "NAME")]
    pub brokers: Vec<String>,

    /// Write `<brokerName>-skiff-slave.conf` for each group into this directory
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// The slaves' data directories go under this one, one per group [default: ./skiff-data]
    #[arg(long, value_name = "DIR")]
    pub data_root: Option<PathBuf>,

    /// The slaves' listenPort [default: the master's]
    #[arg(long, value_name = "PORT")]
    pub listen_port: Option<u16>,

    /// The address clients reach the slaves at (brokerIP1) [default: the slave host's own]
    #[arg(long, value_name = "IP")]
    pub broker_ip: Option<std::net::IpAddr>,

    /// Replace slave configs that differ from what plan writes
    #[arg(long)]
    pub force: bool,
}

/// The master's settings a slave must share: the store layout (a different segment size would
/// make the copied CommitLog unreadable) and what decides how stored messages are served.
const COPIED_KEYS: [&str; 16] = [
    "brokerClusterName",
    "brokerName",
    "mappedFileSizeCommitLog",
    "mappedFileSizeConsumeQueue",
    "maxMessageSize",
    "flushDiskType",
    "messageDelayLevel",
    "timerWheelEnable",
    "timerPrecisionMs",
    "enablePropertyFilter",
    "fileReservedTime",
    "deleteWhen",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
    "aclEnable",
    "slaveReadEnable",
];

/// Java features a Skiff slave cannot copy: the key, the value that blocks, and why.
const BLOCKERS: [(&str, &str, &str); 3] = [
    (
        "enableDLegerCommitLog",
        "true",
        "a DLedger (Raft) CommitLog: Skiff replicates the classic master/slave HA protocol only",
    ),
    (
        "enableControllerMode",
        "true",
        "controller mode (AutoSwitchHAService): Skiff replicates the classic HA protocol only",
    ),
    (
        "duplicationEnable",
        "true",
        "duplication mode: the master's CommitLog is itself a copy",
    ),
];

pub async fn run(admin: &Admin, args: PlanArgs) -> Result<Shown> {
    let groups = cluster::groups(admin, &args.brokers).await?;
    let data_root = match &args.data_root {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?.join("skiff-data"),
    };
    let mut text = String::new();
    let mut out = Vec::new();
    let mut blocked = Vec::new();
    for group in &groups {
        let (shown, json) = plan_group(admin, group, &args, &data_root).await?;
        if json["blockers"].as_array().is_some_and(|b| !b.is_empty()) {
            blocked.push(group.name.clone());
        }
        text.push_str(&shown);
        text.push('\n');
        out.push(json);
    }
    if !blocked.is_empty() {
        print!("{text}");
        bail!(
            "{} cannot be migrated as it is: see the blockers above",
            blocked.join(", ")
        );
    }
    Ok(Shown::new(json!({ "groups": out }), text))
}

async fn plan_group(
    admin: &Admin,
    group: &Group,
    args: &PlanArgs,
    data_root: &Path,
) -> Result<(String, serde_json::Value)> {
    let mut text = format!("{} (cluster {})\n", group.name, group.cluster);
    let Some(master) = group.master() else {
        let blocker = format!(
            "no master is registered for {} (only brokerIds {}): start its master first",
            group.name,
            ids(group)
        );
        text.push_str(&format!("  blocker  {blocker}\n"));
        return Ok((
            text,
            json!({ "brokerName": group.name, "blockers": [blocker] }),
        ));
    };
    let runtime = Runtime::read(admin, master).await?;
    let settings = cluster::settings(admin, group, master).await?;
    let (min, max) = (runtime.commit_log_min()?, runtime.commit_log_max()?);
    let topics = match admin.call(master, &Request::GetAllTopicConfig).await? {
        Reply::TopicConfigs { topics, .. } => topics.len(),
        other => bail!("{master} answered the topic list with {other:?}"),
    };
    let subscriptions = match admin
        .call(
            master,
            &Request::Admin(AdminCommand::GetAllSubscriptionGroups),
        )
        .await?
    {
        Reply::Admin(AdminReply::SubscriptionGroups { groups, .. }) => groups.len(),
        other => bail!("{master} answered the group list with {other:?}"),
    };
    let offsets = match admin
        .call(master, &Request::Admin(AdminCommand::GetAllConsumerOffsets))
        .await?
    {
        Reply::Admin(AdminReply::ConsumerOffsets { table, .. }) => {
            table.values().map(BTreeMap::len).sum::<usize>()
        }
        other => bail!("{master} answered the consumer offsets with {other:?}"),
    };
    let role = settings
        .get("brokerRole")
        .cloned()
        .unwrap_or_else(|| "ASYNC_MASTER".into());
    text.push_str(&format!(
        "  master   {master}  {}  {role}  CommitLog {min}..{max} ({})\n",
        runtime.kind(),
        bytes(max - min)
    ));
    text.push_str(&format!(
        "  holds    {topics} topics, {subscriptions} subscription groups, {offsets} committed queue offsets\n"
    ));
    let slaves: Vec<String> = group
        .slaves()
        .map(|(id, addr)| format!("{addr} (brokerId {id})"))
        .collect();
    text.push_str(&format!(
        "  slaves   {}\n",
        if slaves.is_empty() {
            "none".to_string()
        } else {
            slaves.join(", ")
        }
    ));

    let mut blockers: Vec<String> = BLOCKERS
        .iter()
        .filter(|(key, value, _)| settings.get(*key).is_some_and(|v| v == value))
        .map(|(key, value, why)| format!("{key}={value}: {why}"))
        .collect();
    if runtime.is_skiff() {
        text.push_str("  plan     nothing to do: the master is already Skiff\n");
        return Ok((
            text,
            json!({
                "brokerName": group.name, "master": master, "masterKind": runtime.kind(),
                "blockers": blockers, "alreadySkiff": true,
            }),
        ));
    }
    for key in ["mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue"] {
        if !settings.contains_key(key) {
            blockers.push(format!(
                "the master does not report {key}: the slave's store layout cannot be matched"
            ));
        }
    }
    for blocker in &blockers {
        text.push_str(&format!("  blocker  {blocker}\n"));
    }

    let slave_id = group.free_slave_id();
    let data_dir = data_root.join(&group.name);
    let listen_port = match args.listen_port {
        Some(port) => port.to_string(),
        None => settings
            .get("listenPort")
            .cloned()
            .unwrap_or_else(|| "10911".into()),
    };
    let mut conf = slave_conf(
        group,
        master,
        &settings,
        slave_id,
        &listen_port,
        &data_dir,
        &admin.namesrvs().join(";"),
    );
    if let Some(ip) = args.broker_ip {
        conf.push_str(&format!("brokerIP1={ip}\n"));
    }
    let mut conf_json = serde_json::Value::Null;
    if let Some(dir) = &args.out {
        let path = dir.join(format!("{}-skiff-slave.conf", group.name));
        let what = write_conf(&path, &conf, args.force)?;
        text.push_str(&format!(
            "  plan     1. start the Skiff slave ({what}): skiff broker -c {}\n",
            path.display()
        ));
        conf_json = json!(path.display().to_string());
    } else {
        text.push_str(&format!(
            "  plan     1. start a Skiff slave (brokerId={slave_id}, brokerRole=SLAVE) from the config \
             --out writes\n"
        ));
    }
    text.push_str(&format!(
        "           2. skiff migrate replicate -b {}    (copies {} from the master, then follows it)\n",
        group.name,
        bytes(max - min)
    ));
    text.push_str(&format!(
        "           3. skiff migrate verify -b {}       (CommitLog, queue offsets, last records, consumer offsets)\n",
        group.name
    ));
    let json = json!({
        "brokerName": group.name,
        "cluster": group.cluster,
        "master": master,
        "masterKind": runtime.kind(),
        "brokerRole": role,
        "commitLogMinOffset": min,
        "commitLogMaxOffset": max,
        "topics": topics,
        "subscriptionGroups": subscriptions,
        "committedQueueOffsets": offsets,
        "slaves": group.slaves().map(|(id, addr)| json!({"brokerId": id, "addr": addr})).collect::<Vec<_>>(),
        "blockers": blockers,
        "slaveBrokerId": slave_id,
        "slaveConfig": conf_json,
    });
    Ok((text, json))
}

fn ids(group: &Group) -> String {
    group
        .brokers
        .keys()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The slave's `broker.conf`: the master's settings a copy must share, and the slave's own.
fn slave_conf(
    group: &Group,
    master: &str,
    settings: &BTreeMap<String, String>,
    slave_id: i64,
    listen_port: &str,
    data_dir: &Path,
    namesrv: &str,
) -> String {
    let mut conf = format!(
        "# The Skiff slave of broker group {} (master {master}), written by `skiff migrate plan`.\n\
         # Start it with: skiff broker -c <this file>\n",
        group.name
    );
    for key in COPIED_KEYS {
        if let Some(value) = settings.get(key) {
            conf.push_str(&format!("{key}={value}\n"));
        }
    }
    conf.push_str(&format!(
        "brokerId={slave_id}\n\
         brokerRole=SLAVE\n\
         namesrvAddr={namesrv}\n\
         listenPort={listen_port}\n\
         storePathRootDir={}\n",
        data_dir.display()
    ));
    conf
}

/// Writes `conf` to `path` unless an equal file is there; a different one only with `force`.
fn write_conf(path: &Path, conf: &str, force: bool) -> Result<&'static str> {
    match std::fs::read_to_string(path) {
        Ok(existing) if existing == conf => return Ok("config unchanged"),
        Ok(_) if !force => bail!(
            "{} exists with other settings (edited, or the cluster changed); compare it, then \
             run again with --force to replace it",
            path.display()
        ),
        _ => {}
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, conf).with_context(|| format!("cannot write {}", path.display()))?;
    Ok("config written")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slave_shares_the_layout_and_takes_a_free_id() {
        let group = Group {
            cluster: "DefaultCluster".into(),
            name: "broker-a".into(),
            brokers: BTreeMap::from([(0, "10.0.0.1:10911".to_string())]),
        };
        let settings = BTreeMap::from([
            ("brokerName".to_string(), "broker-a".to_string()),
            ("mappedFileSizeCommitLog".to_string(), "1048576".to_string()),
            ("brokerRole".to_string(), "SYNC_MASTER".to_string()),
            ("listenPort".to_string(), "10911".to_string()),
        ]);
        let conf = slave_conf(
            &group,
            "10.0.0.1:10911",
            &settings,
            group.free_slave_id(),
            "10911",
            Path::new("/data/broker-a"),
            "10.0.0.5:9876",
        );
        assert!(conf.contains("mappedFileSizeCommitLog=1048576\n"));
        assert!(conf.contains("brokerId=1\nbrokerRole=SLAVE\n"));
        assert!(conf.contains("storePathRootDir=/data/broker-a\n"));
        assert!(
            !conf.contains("SYNC_MASTER"),
            "the master's role is not copied"
        );
    }

    #[test]
    fn an_edited_config_is_kept_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/broker-a-skiff-slave.conf");
        assert_eq!(write_conf(&path, "a=1\n", false).unwrap(), "config written");
        assert_eq!(
            write_conf(&path, "a=1\n", false).unwrap(),
            "config unchanged"
        );
        std::fs::write(&path, "a=2\n").unwrap();
        assert!(write_conf(&path, "a=1\n", false)
            .unwrap_err()
            .to_string()
            .contains("--force"));
        assert_eq!(write_conf(&path, "a=1\n", true).unwrap(), "config written");
    }
}
