//! `skiff admin cluster` (mqadmin clusterList) and `skiff admin broker config get|set` (mqadmin
//! getBrokerConfig / updateBrokerConfig).

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use skiff_model::admin::{AdminCommand, AdminReply};
use skiff_model::command::{Reply, Request};

use super::client::{Admin, Master};
use super::output::{table, Shown};
use super::topic::{brokers_json, names, Placement};

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  skiff admin cluster
  skiff admin cluster -c DefaultCluster --json")]
pub struct ClusterArgs {
    /// Only this cluster
    #[arg(short = 'c', long, value_name = "NAME")]
    pub cluster: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BrokerVerb {
    /// Read or change broker settings at runtime (Java's key names).
    #[command(subcommand)]
    Config(ConfigVerb),
}

#[derive(Debug, Subcommand)]
pub enum ConfigVerb {
    /// The settings of the master brokers, or of one broker (mqadmin getBrokerConfig).
    #[command(after_long_help = "\
Examples:
  skiff admin broker config get -b 127.0.0.1:10911
  skiff admin broker config get --key flushDiskType --key brokerPermission --json")]
    Get(GetArgs),
    /// Change settings on the master brokers, or on one broker (mqadmin updateBrokerConfig).
    #[command(after_long_help = "\
Examples:
  Make one broker read-only (brokerPermission 4) while it drains:
    skiff admin broker config set -b 127.0.0.1:10911 brokerPermission=4
  On every master of a cluster:
    skiff admin broker config set -c DefaultCluster deleteWhen=04 fileReservedTime=48")]
    Set(SetArgs),
}

#[derive(Debug, Args)]
pub struct GetArgs {
    #[command(flatten)]
    pub placement: Placement,
    /// Only these keys (repeatable)
    #[arg(short = 'k', long = "key", value_name = "KEY")]
    pub keys: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SetArgs {
    #[command(flatten)]
    pub placement: Placement,
    /// Settings to change, KEY=VALUE with Java's key names
    #[arg(value_name = "KEY=VALUE", required = true, value_parser = setting)]
    pub settings: Vec<(String, String)>,
}

/// A `key=value` that survives the properties body it travels in (no line breaks, no `=` or
/// blanks in the key), with `brokerPermission` checked as Java's `Validators.checkBrokerConfig`.
fn setting(text: &str) -> Result<(String, String), String> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(format!(
            "expected KEY=VALUE, such as deleteWhen=04, not {text:?}"
        ));
    };
    let (key, value) = (key.trim(), value.trim());
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
    {
        return Err(format!(
            "{key:?} is not a setting name (letters, digits, '.' and '_', such as flushDiskType)"
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(format!("the value of {key} contains a control character"));
    }
    if key == "brokerPermission" && !matches!(value, "2" | "4" | "6") {
        return Err(format!(
            "brokerPermission value: {value} is invalid (use 6 read-write, 4 read-only, 2 write-only)"
        ));
    }
    Ok((key.to_string(), value.to_string()))
}

pub async fn run(admin: &Admin, verb: BrokerVerb) -> Result<Shown> {
    match verb {
        BrokerVerb::Config(ConfigVerb::Get(args)) => get(admin, args).await,
        BrokerVerb::Config(ConfigVerb::Set(args)) => set(admin, args).await,
    }
}

pub async fn cluster(admin: &Admin, args: ClusterArgs) -> Result<Shown> {
    let info = admin.cluster_info().await?;
    if let Some(cluster) = &args.cluster {
        if !info.cluster_addr_table.contains_key(cluster) {
            bail!(
                "cluster {cluster} is not known to the name server (it knows: {})",
                super::client::join_or_none(info.cluster_addr_table.keys())
            );
        }
    }
    let mut clusters = Vec::new();
    let mut rows = Vec::new();
    for (cluster, broker_names) in &info.cluster_addr_table {
        if args.cluster.as_ref().is_some_and(|c| c != cluster) {
            continue;
        }
        let mut brokers = Vec::new();
        for name in broker_names {
            let Some(data) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in &data.broker_addrs {
                // A broker that does not answer is listed anyway, as clusterList does.
                let (runtime, error) = match admin.call(addr, &Request::GetBrokerRuntimeInfo).await
                {
                    Ok(Reply::KeyValues(table)) => (table, None),
                    Ok(other) => (BTreeMap::new(), Some(format!("answered {other:?}"))),
                    Err(err) => (BTreeMap::new(), Some(crate::health::describe(&err))),
                };
                if let Some(error) = &error {
                    eprintln!("skiff admin: broker {name} at {addr}: no runtime info: {error}");
                }
                let get = |k: &str| runtime.get(k).cloned();
                rows.push(vec![
                    cluster.clone(),
                    name.clone(),
                    id.to_string(),
                    addr.clone(),
                    get("brokerVersionDesc").unwrap_or_else(|| "(no answer)".to_string()),
                    get("putTps")
                        .and_then(|t| t.split_whitespace().next().map(str::to_string))
                        .unwrap_or_else(|| "-".to_string()),
                    get("msgPutTotalTodayNow").unwrap_or_else(|| "-".to_string()),
                ]);
                brokers.push(json!({
                    "brokerName": name,
                    "brokerId": id,
                    "addr": addr,
                    "answers": error.is_none(),
                    "error": error,
                    "version": get("brokerVersionDesc"),
                    "putTps": get("putTps"),
                    "msgPutTotalTodayNow": get("msgPutTotalTodayNow"),
                }));
            }
        }
        clusters.push(json!({ "cluster": cluster, "brokers": brokers }));
    }
    let text = table(
        &[
            "Cluster",
            "Broker",
            "Id",
            "Address",
            "Version",
            "Put TPS",
            "Put today",
        ],
        rows,
    );
    Ok(Shown::new(json!({ "clusters": clusters }), text))
}

async fn get(admin: &Admin, args: GetArgs) -> Result<Shown> {
    let masters = admin
        .masters(
            args.placement.cluster.as_deref(),
            args.placement.broker.as_deref(),
        )
        .await?;
    let mut brokers = Vec::new();
    let mut rows = Vec::new();
    for master in &masters {
        let mut config = broker_config(admin, master).await?;
        if !args.keys.is_empty() {
            for key in &args.keys {
                if !config.contains_key(key) {
                    bail!("broker {} has no setting {key}", master.name);
                }
            }
            config.retain(|k, _| args.keys.contains(k));
        }
        for (key, value) in &config {
            rows.push(vec![master.name.clone(), key.clone(), value.clone()]);
        }
        brokers.push(json!({
            "brokerName": master.name,
            "addr": master.addr,
            "config": config,
        }));
    }
    let text = table(&["Broker", "Key", "Value"], rows);
    Ok(Shown::new(json!({ "brokers": brokers }), text))
}

/// GET_BROKER_CONFIG: the body is the settings as Java properties text.
/// UPDATE_BROKER_CONFIG: `properties` (`key=value` lines) applied by the broker at `addr`.
pub(crate) async fn update_broker_config(
    admin: &Admin,
    addr: &str,
    properties: &str,
) -> Result<()> {
    let request = Request::Admin(AdminCommand::UpdateBrokerConfig {
        properties: properties.to_string(),
    });
    match admin.call(addr, &request).await? {
        Reply::Success => Ok(()),
        other => bail!("{addr} answered a settings update with {other:?}"),
    }
}

pub(crate) async fn broker_config(
    admin: &Admin,
    master: &Master,
) -> Result<BTreeMap<String, String>> {
    match admin
        .call(&master.addr, &Request::Admin(AdminCommand::GetBrokerConfig))
        .await?
    {
        Reply::Admin(AdminReply::Config { properties, .. }) => Ok(properties.into_iter().collect()),
        other => Err(anyhow!(
            "{} answered its settings with {other:?}",
            master.addr
        )),
    }
}

async fn set(admin: &Admin, args: SetArgs) -> Result<Shown> {
    let masters = admin
        .masters(
            args.placement.cluster.as_deref(),
            args.placement.broker.as_deref(),
        )
        .await?;
    let body: String = args
        .settings
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    for master in &masters {
        update_broker_config(admin, &master.addr, &body).await?;
    }
    let settings: BTreeMap<&str, &str> = args
        .settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let text = format!(
        "updated {} on {}",
        args.settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        names(&masters)
    );
    Ok(Shown::new(
        json!({ "settings": settings, "brokers": brokers_json(&masters) }),
        text,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_must_fit_a_properties_body() {
        assert_eq!(
            setting("deleteWhen=04").unwrap(),
            ("deleteWhen".into(), "04".into())
        );
        assert!(setting("novalue").is_err());
        assert!(setting("a b=1").is_err());
        assert!(setting("k=line\nbrokerPermission=2").is_err());
        assert!(setting("brokerPermission=7")
            .unwrap_err()
            .contains("invalid"));
        assert!(setting("brokerPermission=4").is_ok());
    }
}
