//! `skiff admin message`: look messages up by key or id (mqadmin queryMsgByKey, queryMsgById,
//! queryMsgByUniqueKey) and print a topic's messages (mqadmin printMsg).

use anyhow::{anyhow, bail, Result};
use bytes::Bytes;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use skiff_model::command::{
    PullRequest, PullStatus, QueueRef, Reply, Request, SubscriptionExpression,
};
use skiff_model::consumer::EXPRESSION_TYPE_TAG;
use skiff_model::record::{decode_offset_msg_id, Record};

use super::client::Admin;
use super::output::{table, time, Shown};
use super::topic_name;

/// Messages a single pull asks for (the Java consumer's default batch).
const PULL_BATCH: i32 = 32;

#[derive(Debug, Subcommand)]
pub enum MessageVerb {
    /// Find messages by key, by client (unique) id, or by broker message id.
    #[command(after_long_help = "\
Examples:
  By the key a producer set (KEYS):
    skiff admin message query -t orders --key order-42
  By the id the producer got back (the client's unique key):
    skiff admin message query -t orders --key 7F00000100002A9F0000000000000000 --unique
  By the broker's offset message id (from a consumer or the console):
    skiff admin message query --id 7F00000100002A9F0000000000000000")]
    Query(QueryArgs),
    /// Print the messages of a topic, queue by queue, with a progress bar (mqadmin printMsg).
    #[command(after_long_help = "\
Examples:
  skiff admin message print -t orders --max 100
  One hour of messages (UTC), exported for a script:
    skiff admin message print -t orders --begin 2026-12-02T04:00:00Z --end 2026-12-02T05:00:00Z --json > orders.json")]
    Print(PrintArgs),
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Topic to search (needed with --key)
    #[arg(short = 't', long, value_parser = topic_name, required_unless_present = "id")]
    pub topic: Option<String>,
    /// Message key to look up
    #[arg(
        short = 'k',
        long,
        conflicts_with = "id",
        required_unless_present = "id"
    )]
    pub key: Option<String>,
    /// The key is the client's unique message id (what send() returned)
    #[arg(long, requires = "key")]
    pub unique: bool,
    /// A broker (offset) message id
    #[arg(short = 'i', long)]
    pub id: Option<String>,
    /// Most messages to return per broker
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(i32).range(1..=1000))]
    pub max: i32,
}

#[derive(Debug, Args)]
pub struct PrintArgs {
    /// Topic name
    #[arg(short = 't', long, value_parser = topic_name)]
    pub topic: String,
    /// Stop after this many messages (they are held in memory until printed)
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max: u64,
    /// Only messages stored at or after this time (ms since the epoch, or UTC: 2026-12-02T04:00:00Z)
    #[arg(long, value_name = "TIME", value_parser = super::output::parse_time)]
    pub begin: Option<i64>,
    /// Only messages stored before this time (ms since the epoch, or UTC)
    #[arg(long, value_name = "TIME", value_parser = super::output::parse_time)]
    pub end: Option<i64>,
}

pub async fn run(admin: &Admin, verb: MessageVerb) -> Result<Shown> {
    match verb {
        MessageVerb::Query(args) => query(admin, args).await,
        MessageVerb::Print(args) => print(admin, args).await,
    }
}

async fn query(admin: &Admin, args: QueryArgs) -> Result<Shown> {
    let mut records = Vec::new();
    if let Some(id) = &args.id {
        let (addr, offset) = decode_offset_msg_id(id).ok_or_else(|| {
            anyhow!("{id:?} is not a broker message id (32 hex digits: store address and offset)")
        })?;
        let request = Request::ViewMessage {
            commit_log_offset: offset,
        };
        match admin.call(&addr.to_string(), &request).await? {
            Reply::Message(record) => records.push(record),
            other => bail!("{addr} answered a message lookup with {other:?}"),
        }
    } else {
        let (Some(topic), Some(key)) = (&args.topic, &args.key) else {
            bail!("give --topic and --key, or --id");
        };
        for master in admin.topic_masters(topic).await? {
            let request = Request::QueryMessage {
                topic: topic.clone(),
                key: key.clone(),
                max_num: args.max,
                begin_timestamp: 0,
                end_timestamp: i64::MAX,
                unique_key: args.unique,
            };
            match admin.call(&master.addr, &request).await {
                Ok(Reply::QueriedMessages { messages, .. }) => records.extend(messages),
                Ok(other) => bail!("{} answered a query with {other:?}", master.addr),
                // Java answers "not found" as QUERY_NOT_FOUND; other brokers may have it.
                Err(err)
                    if super::client::refused_with(
                        &err,
                        skiff_protocol::remoting::codes::response::QUERY_NOT_FOUND,
                    ) => {}
                Err(err) => return Err(err),
            }
        }
        if records.is_empty() {
            bail!("no message of topic {topic} has the key {key:?}");
        }
    }
    let messages = records.iter().map(describe).collect::<Result<Vec<_>>>()?;
    Ok(shown(messages, None))
}

async fn print(admin: &Admin, args: PrintArgs) -> Result<Shown> {
    let route = admin.route(&args.topic).await?;
    let mut queues = Vec::new();
    for data in &route.queue_datas {
        let Some(addr) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == data.broker_name)
            .and_then(|b| b.broker_addrs.get(&skiff_model::route::MASTER_ID))
        else {
            continue;
        };
        for queue_id in 0..data.read_queue_nums {
            let queue = QueueRef {
                topic: args.topic.clone(),
                queue_id,
                physical: false,
            };
            let min = offset(
                admin,
                addr,
                Request::GetMinOffset {
                    queue: queue.clone(),
                },
            )
            .await?;
            let max = offset(
                admin,
                addr,
                Request::GetMaxOffset {
                    queue: queue.clone(),
                },
            )
            .await?;
            if max > min {
                queues.push((addr.clone(), queue, min, max));
            }
        }
    }
    let total: i64 = queues.iter().map(|(_, _, min, max)| max - min).sum();
    let bar = ProgressBar::new(total.min(args.max as i64) as u64).with_style(
        ProgressStyle::with_template("reading {bar:30} {pos}/{len} messages {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut messages = Vec::new();
    let mut truncated = false;
    'queues: for (addr, queue, min, max) in queues {
        let mut next = min;
        while next < max {
            let request = Request::Pull(PullRequest {
                consumer_group: "TOOLS_CONSUMER".to_string(),
                queue: queue.clone(),
                queue_offset: next,
                max_msg_nums: PULL_BATCH,
                // As printMsg's pull consumer: every tag, the subscription in the request.
                subscription: Some(SubscriptionExpression {
                    expression_type: EXPRESSION_TYPE_TAG.to_string(),
                    expression: "*".to_string(),
                    version: 0,
                }),
                lite: true,
                ..PullRequest::default()
            });
            let Reply::Pulled(pulled) = admin.call(&addr, &request).await? else {
                bail!("{addr} answered a pull with something else");
            };
            if pulled.status != PullStatus::Found || pulled.next_begin_offset <= next {
                // Filtered or moved: go on from where the broker says, or leave the queue.
                if pulled.next_begin_offset > next {
                    next = pulled.next_begin_offset;
                    continue;
                }
                break;
            }
            next = pulled.next_begin_offset;
            for record in &pulled.messages {
                let message = describe(record)?;
                let stored = message["storeTimestamp"].as_i64().unwrap_or(0);
                if args.begin.is_some_and(|b| stored < b) || args.end.is_some_and(|e| stored >= e) {
                    continue;
                }
                if messages.len() as u64 >= args.max {
                    truncated = true;
                    break 'queues;
                }
                messages.push(message);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let note = truncated.then(|| {
        format!(
            "stopped after {} messages (--max); the topic holds {total}",
            args.max
        )
    });
    Ok(shown(messages, note))
}

async fn offset(admin: &Admin, addr: &str, request: Request) -> Result<i64> {
    match admin.call(addr, &request).await? {
        Reply::Offset(offset) => Ok(offset),
        other => bail!("{addr} answered an offset request with {other:?}"),
    }
}

fn shown(messages: Vec<Value>, note: Option<String>) -> Shown {
    let rows = messages
        .iter()
        .map(|m| {
            let text = |k: &str| m[k].as_str().unwrap_or("").to_string();
            vec![
                text("msgId"),
                m["queueId"].to_string(),
                m["queueOffset"].to_string(),
                text("tags"),
                text("keys"),
                time(m["storeTimestamp"].as_i64().unwrap_or(0)),
                abbreviate(&text("body"), 40),
            ]
        })
        .collect();
    let mut text = table(
        &[
            "Message id",
            "Queue",
            "Offset",
            "Tags",
            "Keys",
            "Stored (UTC)",
            "Body",
        ],
        rows,
    );
    if let Some(note) = &note {
        text.push_str(&format!("\n\n{note}"));
    }
    let mut json = json!({ "messages": messages });
    if note.is_some() {
        json["truncated"] = json!(true);
    }
    Shown::new(json, text)
}

/// One stored record as JSON, with Java's `MessageExt` field names.
fn describe(record: &Bytes) -> Result<Value> {
    let r = Record::decode(record, false).map_err(|e| anyhow!("a bad stored message: {e}"))?;
    let properties = r.parsed_properties();
    let map: serde_json::Map<String, Value> = properties
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    Ok(json!({
        "msgId": r.msg_id(),
        "uniqKey": properties.uniq_key(),
        "topic": r.topic,
        "queueId": r.queue_id,
        "queueOffset": r.queue_offset,
        "commitLogOffset": r.physical_offset,
        "tags": properties.tags(),
        "keys": properties.keys().collect::<Vec<_>>().join(" "),
        "bornTimestamp": r.born_timestamp,
        "bornHost": r.born_host.to_string(),
        "storeTimestamp": r.store_timestamp,
        "storeHost": r.store_host.to_string(),
        "reconsumeTimes": r.reconsume_times,
        "sysFlag": r.sys_flag,
        "flag": r.flag,
        "bodyLength": r.body.len(),
        "body": String::from_utf8_lossy(r.body),
        "properties": map,
    }))
}

/// `text` cut to `max` characters (with "..."), newlines shown as spaces: one row per message.
fn abbreviate(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(3)).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_flattened_and_cut() {
        assert_eq!(abbreviate("a\nb", 10), "a b");
        assert_eq!(abbreviate(&"x".repeat(50), 10), "xxxxxxx...");
        assert_eq!(abbreviate("ééééé", 5), "ééééé");
    }
}
