//! `skiff admin group`: consumer groups, their progress, and offset resets (mqadmin
//! updateSubGroup, deleteSubGroup, consumerProgress, resetOffsetByTime).

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use skiff_model::command::{BoundaryType, QueueRef, Reply, Request};
use skiff_model::consumer::{MessageQueue, SubscriptionGroupConfig};
use skiff_protocol::fastjson;
use skiff_protocol::remoting::codes::response;
use skiff_protocol::remoting::RemotingCommand;

use super::client::{not_supported, refused_with, Admin, Master};
use super::output::{table, time, Shown};
use super::topic::{brokers_json, names, Placement};
use super::{group_name, topic_name};

/// Request codes (`RequestCode`) the command model has no variant for.
const GET_ALL_SUBSCRIPTIONGROUP_CONFIG: i32 = 201;
const DELETE_SUBSCRIPTIONGROUP: i32 = 207;
const INVOKE_BROKER_TO_RESET_OFFSET: i32 = 222;

#[derive(Debug, Subcommand)]
pub enum GroupVerb {
    /// The subscription groups of the master brokers (as the Dashboard lists them).
    #[command(after_long_help = "Example:\n  skiff admin group list -c DefaultCluster")]
    List(Placement),
    /// Create a consumer group, or change its settings (mqadmin updateSubGroup).
    #[command(after_long_help = "\
Examples:
  skiff admin group create -g billing
  skiff admin group create -g billing-orderly --orderly --retry-max-times 3 -c DefaultCluster")]
    Create(CreateArgs),
    /// Delete a consumer group, and with --clean-offset its committed offsets (mqadmin deleteSubGroup).
    #[command(after_long_help = "Example:\n  skiff admin group delete -g billing --clean-offset")]
    Delete(DeleteArgs),
    /// Committed offsets and lag of a group, per queue (mqadmin consumerProgress).
    #[command(after_long_help = "\
Examples:
  skiff admin group progress -g billing
  skiff admin group progress -g billing -t orders --json")]
    Progress(ProgressArgs),
    /// Move a group's offsets on a topic to a point in time (mqadmin resetOffsetByTime).
    #[command(after_long_help = "\
Examples:
  Replay everything still stored:
    skiff admin group reset-offset -g billing -t orders --timestamp earliest
  Skip the backlog:
    skiff admin group reset-offset -g billing -t orders --timestamp now
  From a time (UTC, or ms since the epoch):
    skiff admin group reset-offset -g billing -t orders --timestamp 2026-12-02T04:00:00Z

The broker moves the offsets and tells the group's live consumers (INVOKE_BROKER_TO_RESET_OFFSET). \
When no consumer of the group is online, or the broker does not know that request, the offsets \
are found per queue (SEARCH_OFFSET_BY_TIMESTAMP) and committed one by one, as mqadmin's \
old-style reset does; consumers started later read from there.")]
    ResetOffset(ResetArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Group name
    #[arg(short = 'g', long, value_parser = group_name)]
    pub group: String,
    #[command(flatten)]
    pub placement: Placement,
    /// Consume in order (one queue at a time per consumer)
    #[arg(long)]
    pub orderly: bool,
    /// Retries before a message goes to the group's dead-letter topic
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(i32).range(-1..=1000))]
    pub retry_max_times: i32,
    /// Refuse broadcast consumption
    #[arg(long)]
    pub no_broadcast: bool,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Group name
    #[arg(short = 'g', long, value_parser = group_name)]
    pub group: String,
    #[command(flatten)]
    pub placement: Placement,
    /// Also delete the group's committed offsets
    #[arg(long)]
    pub clean_offset: bool,
}

#[derive(Debug, Args)]
pub struct ProgressArgs {
    /// Group name
    #[arg(short = 'g', long, value_parser = group_name)]
    pub group: String,
    /// Only this topic
    #[arg(short = 't', long, value_parser = topic_name)]
    pub topic: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResetArgs {
    /// Group name
    #[arg(short = 'g', long, value_parser = group_name)]
    pub group: String,
    /// Topic name
    #[arg(short = 't', long, value_parser = topic_name)]
    pub topic: String,
    /// Where to: `earliest`, `now`, ms since the epoch, or a UTC time (2026-12-02T04:00:00Z)
    #[arg(short = 's', long, value_parser = parse_timestamp)]
    pub timestamp: i64,
}

/// `earliest` (0), `now`, ms since the epoch or a UTC time.
fn parse_timestamp(text: &str) -> Result<i64, String> {
    match text {
        "earliest" => Ok(0),
        "now" => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)),
        _ => super::output::parse_time(text),
    }
}

pub async fn run(admin: &Admin, verb: GroupVerb) -> Result<Shown> {
    match verb {
        GroupVerb::List(placement) => list(admin, placement).await,
        GroupVerb::Create(args) => create(admin, args).await,
        GroupVerb::Delete(args) => delete(admin, args).await,
        GroupVerb::Progress(args) => progress(admin, args).await,
        GroupVerb::ResetOffset(args) => reset(admin, args).await,
    }
}

async fn list(admin: &Admin, placement: Placement) -> Result<Shown> {
    let masters = admin
        .masters(placement.cluster.as_deref(), placement.broker.as_deref())
        .await?;
    // Group -> (settings, brokers that have it).
    let mut groups: BTreeMap<String, (Value, Vec<String>)> = BTreeMap::new();
    for master in &masters {
        let frame = RemotingCommand::request(GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 0);
        let response = admin.call_frame(&master.addr, frame).await?;
        let body = fastjson::parse_slice(&response.body.to_bytes())
            .map_err(|e| anyhow!("{} sent a bad group table: {e}", master.addr))?;
        let Some(table) = body
            .get("subscriptionGroupTable")
            .and_then(Value::as_object)
        else {
            bail!(
                "{} sent a group table without subscriptionGroupTable",
                master.addr
            );
        };
        for (name, config) in table {
            let config: SubscriptionGroupConfig = fastjson::from_value(config.clone())
                .map_err(|e| anyhow!("{} sent a bad config for group {name}: {e}", master.addr))?;
            let entry = groups
                .entry(name.clone())
                .or_insert_with(|| (group_json(&config), Vec::new()));
            entry.1.push(master.name.clone());
        }
    }
    let mut rows = Vec::new();
    let mut list = Vec::new();
    for (name, (mut config, brokers)) in groups {
        rows.push(vec![
            name.clone(),
            config["consumeMessageOrderly"].to_string(),
            config["consumeBroadcastEnable"].to_string(),
            config["retryMaxTimes"].to_string(),
            brokers.join(","),
        ]);
        config["brokers"] = json!(brokers);
        list.push(config);
    }
    let text = table(
        &["Group", "Orderly", "Broadcast", "Max retries", "Brokers"],
        rows,
    );
    Ok(Shown::new(json!({ "groups": list }), text))
}

fn group_json(config: &SubscriptionGroupConfig) -> Value {
    json!({
        "group": config.group_name,
        "consumeEnable": config.consume_enable,
        "consumeMessageOrderly": config.consume_message_orderly,
        "consumeBroadcastEnable": config.consume_broadcast_enable,
        "retryMaxTimes": config.retry_max_times,
    })
}

async fn create(admin: &Admin, args: CreateArgs) -> Result<Shown> {
    let masters = admin
        .masters(
            args.placement.cluster.as_deref(),
            args.placement.broker.as_deref(),
        )
        .await?;
    let config = SubscriptionGroupConfig {
        consume_message_orderly: args.orderly,
        retry_max_times: args.retry_max_times,
        consume_broadcast_enable: !args.no_broadcast,
        ..SubscriptionGroupConfig::new(&args.group)
    };
    for master in &masters {
        let request = Request::CreateSubscriptionGroup(config.clone());
        admin.call(&master.addr, &request).await?;
    }
    let mut json = group_json(&config);
    json["brokers"] = brokers_json(&masters);
    let text = format!("group {} created on {}", args.group, names(&masters));
    Ok(Shown::new(json, text))
}

async fn delete(admin: &Admin, args: DeleteArgs) -> Result<Shown> {
    let masters = admin
        .masters(
            args.placement.cluster.as_deref(),
            args.placement.broker.as_deref(),
        )
        .await?;
    for master in &masters {
        let mut frame = RemotingCommand::request(DELETE_SUBSCRIPTIONGROUP, 0);
        frame.set_ext("groupName", &args.group);
        frame.set_ext("cleanOffset", args.clean_offset);
        admin.call_frame(&master.addr, frame).await?;
    }
    let text = format!("group {} deleted from {}", args.group, names(&masters));
    Ok(Shown::new(
        json!({
            "group": args.group,
            "cleanOffset": args.clean_offset,
            "brokers": brokers_json(&masters),
        }),
        text,
    ))
}

async fn progress(admin: &Admin, args: ProgressArgs) -> Result<Shown> {
    let masters = admin.masters(None, None).await?;
    let mut queues = Vec::new();
    let mut rows = Vec::new();
    let (mut lag, mut tps) = (0i64, 0f64);
    for master in &masters {
        let request = Request::GetConsumeStats {
            group: args.group.clone(),
            topic: args.topic.clone(),
        };
        let stats = match admin.call(&master.addr, &request).await {
            Ok(Reply::ConsumeStats(stats)) => stats,
            Ok(_) => bail!("{} answered consume stats with something else", master.addr),
            // A broker that never saw the group has nothing to add; others may.
            Err(err) if refused_with(&err, response::SUBSCRIPTION_GROUP_NOT_EXIST) => continue,
            Err(err) => return Err(err),
        };
        tps += stats.consume_tps;
        for (queue, offsets) in stats.offset_table {
            let diff = offsets.broker_offset - offsets.consumer_offset.max(0);
            lag += diff;
            rows.push(vec![
                queue.topic.clone(),
                queue.broker_name.clone(),
                queue.queue_id.to_string(),
                offsets.broker_offset.to_string(),
                offsets.consumer_offset.to_string(),
                diff.to_string(),
                time(offsets.last_timestamp),
            ]);
            queues.push(json!({
                "topic": queue.topic,
                "brokerName": queue.broker_name,
                "queueId": queue.queue_id,
                "brokerOffset": offsets.broker_offset,
                "consumerOffset": offsets.consumer_offset,
                "diff": diff,
                "lastTimestamp": offsets.last_timestamp,
            }));
        }
    }
    if queues.is_empty() {
        bail!(
            "group {} has no committed offsets{} on any broker (it may never have consumed)",
            args.group,
            args.topic
                .as_ref()
                .map(|t| format!(" on topic {t}"))
                .unwrap_or_default()
        );
    }
    let mut text = table(
        &[
            "Topic",
            "Broker",
            "Queue",
            "Broker offset",
            "Consumer offset",
            "Diff",
            "Last consumed (UTC)",
        ],
        rows,
    );
    text.push_str(&format!("\n\nConsume TPS: {tps:.2}\nDiff total: {lag}"));
    Ok(Shown::new(
        json!({
            "group": args.group,
            "consumeTps": tps,
            "diffTotal": lag,
            "queues": queues,
        }),
        text,
    ))
}

async fn reset(admin: &Admin, args: ResetArgs) -> Result<Shown> {
    let masters = admin.topic_masters(&args.topic).await?;
    let mut moved: Vec<(MessageQueue, i64)> = Vec::new();
    let mut modes = Vec::new();
    for master in &masters {
        match reset_by_broker(admin, master, &args).await {
            Ok(offsets) => {
                moved.extend(offsets);
                modes.push("broker");
            }
            Err(err)
                if refused_with(&err, response::CONSUMER_NOT_ONLINE) || not_supported(&err) =>
            {
                moved.extend(reset_directly(admin, master, &args).await?);
                modes.push("direct");
            }
            Err(err) => return Err(err),
        }
    }
    moved.sort();
    let rows = moved
        .iter()
        .map(|(q, offset)| {
            vec![
                q.broker_name.clone(),
                q.queue_id.to_string(),
                offset.to_string(),
            ]
        })
        .collect();
    let mode = if modes.contains(&"direct") {
        "direct"
    } else {
        "broker"
    };
    let mut text = table(&["Broker", "Queue", "New offset"], rows);
    text.push_str(&format!(
        "\n\n{} queue(s) of {} reset for group {} to {}{}",
        moved.len(),
        args.topic,
        args.group,
        if args.timestamp == 0 {
            "the earliest message".to_string()
        } else {
            time(args.timestamp)
        },
        if mode == "direct" {
            " (no consumer online: committed directly)"
        } else {
            ""
        }
    ));
    let queues: Vec<Value> = moved
        .iter()
        .map(|(q, offset)| {
            json!({ "brokerName": q.broker_name, "queueId": q.queue_id, "offset": offset })
        })
        .collect();
    Ok(Shown::new(
        json!({
            "group": args.group,
            "topic": args.topic,
            "timestamp": args.timestamp,
            "mode": mode,
            "queues": queues,
        }),
        text,
    ))
}

/// INVOKE_BROKER_TO_RESET_OFFSET: the broker moves the offsets and tells live consumers.
async fn reset_by_broker(
    admin: &Admin,
    master: &Master,
    args: &ResetArgs,
) -> Result<Vec<(MessageQueue, i64)>> {
    let mut frame = RemotingCommand::request(INVOKE_BROKER_TO_RESET_OFFSET, 0);
    frame.set_ext("topic", &args.topic);
    frame.set_ext("group", &args.group);
    frame.set_ext("timestamp", args.timestamp);
    frame.set_ext("isForce", true);
    // Java sends -1 for "no explicit offset: search by timestamp".
    frame.set_ext("offset", -1);
    let response = admin.call_frame(&master.addr, frame).await?;
    parse_reset_body(&response.body.to_bytes())
        .map_err(|e| anyhow!("{} sent a bad reset answer: {e}", master.addr))
}

/// `ResetOffsetBody`: `{"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset,..}}`.
fn parse_reset_body(body: &[u8]) -> Result<Vec<(MessageQueue, i64)>, String> {
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let value = fastjson::parse_slice(body).map_err(|e| e.to_string())?;
    let Some(table) = value.get("offsetTable").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut offsets = Vec::with_capacity(table.len());
    for (key, offset) in table {
        let queue: MessageQueue =
            fastjson::from_str(key).map_err(|e| format!("queue {key}: {e}"))?;
        let offset = offset
            .as_i64()
            .ok_or_else(|| format!("offset of {key} is not a number"))?;
        offsets.push((queue, offset));
    }
    Ok(offsets)
}

/// mqadmin's old-style reset: per queue, the offset at the time, committed for the group. Many
/// queues make this long, so it shows a progress bar.
async fn reset_directly(
    admin: &Admin,
    master: &Master,
    args: &ResetArgs,
) -> Result<Vec<(MessageQueue, i64)>> {
    let request = Request::GetTopicStats {
        topic: args.topic.clone(),
    };
    let Reply::TopicStats(stats) = admin.call(&master.addr, &request).await? else {
        bail!("{} answered topic stats with something else", master.addr);
    };
    let bar = ProgressBar::new(stats.offset_table.len() as u64).with_style(
        ProgressStyle::with_template("{prefix} {bar:30} {pos}/{len} queues {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("resetting on {}", master.name));
    let mut moved = Vec::new();
    for (queue, _) in stats.offset_table {
        let queue_ref = QueueRef {
            topic: queue.topic.clone(),
            queue_id: queue.queue_id,
            physical: false,
        };
        let search = Request::SearchOffsetByTimestamp {
            queue: queue_ref.clone(),
            timestamp: args.timestamp,
            boundary: BoundaryType::Lower,
        };
        let Reply::Offset(offset) = admin.call(&master.addr, &search).await? else {
            bail!(
                "{} answered an offset search with something else",
                master.addr
            );
        };
        let update = Request::UpdateConsumerOffset {
            group: args.group.clone(),
            queue: queue_ref,
            offset,
        };
        admin.call(&master.addr, &update).await?;
        moved.push((queue, offset));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_bodies_have_queue_keys() {
        let body = br#"{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:7,{"brokerName":"b","queueId":0,"topic":"T"}:3}}"#;
        let mut offsets = parse_reset_body(body).unwrap();
        offsets.sort();
        assert_eq!(offsets[0].0.queue_id, 0);
        assert_eq!(offsets[0].1, 3);
        assert_eq!(offsets[1].1, 7);
        assert!(parse_reset_body(b"").unwrap().is_empty());
        assert!(parse_reset_body(br#"{"offsetTable":{{"x":1}:"y"}}"#).is_err());
    }

    #[test]
    fn timestamps_take_words_or_millis() {
        assert_eq!(parse_timestamp("earliest"), Ok(0));
        assert_eq!(parse_timestamp("1796256000000"), Ok(1_796_256_000_000));
        assert!(parse_timestamp("now").unwrap() > 1_700_000_000_000);
        assert!(parse_timestamp("-5").is_err());
        assert!(parse_timestamp("yesterday").is_err());
        assert_eq!(parse_timestamp("2026-12-03"), Ok(1_796_256_000_000));
    }
}
