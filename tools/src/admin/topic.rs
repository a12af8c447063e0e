//! `skiff admin topic`: mqadmin's topicList, updateTopic, deleteTopic, topicRoute and topicStatus.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use skiff_model::command::{Reply, Request};
use skiff_model::route::{perm, TopicConfig, DEFAULT_QUEUE_NUMS};
use skiff_protocol::fastjson;
use skiff_protocol::remoting::RemotingCommand;

use super::client::{not_supported, Admin, Master};
use super::output::{table, time, Shown};
use super::topic_name;

/// QUERY_TOPIC_CONSUME_BY_WHO (`RequestCode`): which groups consume a topic on a broker.
const QUERY_TOPIC_CONSUME_BY_WHO: i32 = 300;

#[derive(Debug, Subcommand)]
pub enum TopicVerb {
    /// Every topic the name server has a route for (mqadmin topicList).
    #[command(after_long_help = "Example:\n  skiff admin topic list --json")]
    List,
    /// Create a topic, or change its queues and permissions (mqadmin updateTopic).
    #[command(after_long_help = "\
Examples:
  On every master broker the name server lists, 8 queues:
    skiff admin topic create -t orders --queues 8
  On one cluster only, read-only, ordered:
    skiff admin topic create -t audit -c DefaultCluster --perm 4 --order")]
    Create(CreateArgs),
    /// Delete a topic from its brokers and the name servers (mqadmin deleteTopic).
    #[command(after_long_help = "Example:\n  skiff admin topic delete -t orders")]
    Delete(DeleteArgs),
    /// Which brokers serve a topic, with how many queues (mqadmin topicRoute).
    #[command(after_long_help = "Example:\n  skiff admin topic route -t orders --json")]
    Route(TopicArg),
    /// Per-queue offsets of a topic and, with --groups, who consumes it (mqadmin topicStatus).
    #[command(after_long_help = "Example:\n  skiff admin topic stats -t orders --groups")]
    Stats(StatsArgs),
}

#[derive(Debug, Args)]
pub struct TopicArg {
    /// Topic name
    #[arg(short = 't', long, value_parser = topic_name)]
    pub topic: String,
}

/// Where a change goes: one broker, one cluster's masters, or every master.
#[derive(Debug, Args)]
pub struct Placement {
    /// Only this broker (IP:PORT)
    #[arg(short = 'b', long, value_name = "ADDR", conflicts_with = "cluster")]
    pub broker: Option<String>,
    /// Only the master brokers of this cluster
    #[arg(short = 'c', long, value_name = "NAME")]
    pub cluster: Option<String>,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Topic name
    #[arg(short = 't', long, value_parser = topic_name)]
    pub topic: String,
    #[command(flatten)]
    pub placement: Placement,
    /// Read and write queues per broker
    #[arg(long, default_value_t = DEFAULT_QUEUE_NUMS, value_parser = clap::value_parser!(i32).range(1..=1024))]
    pub queues: i32,
    /// Read queues, if not --queues
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=1024))]
    pub read_queues: Option<i32>,
    /// Write queues, if not --queues
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=1024))]
    pub write_queues: Option<i32>,
    /// Permission: 6 read-write, 4 read-only, 2 write-only
    #[arg(long, default_value_t = perm::READ | perm::WRITE, value_parser = parse_perm)]
    pub perm: i32,
    /// An ordered topic
    #[arg(long)]
    pub order: bool,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Topic name
    #[arg(short = 't', long, value_parser = topic_name)]
    pub topic: String,
    /// Only the master brokers of this cluster [default: the brokers of the topic's route]
    #[arg(short = 'c', long, value_name = "NAME")]
    pub cluster: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Topic name
    #[arg(short = 't', long, value_parser = topic_name)]
    pub topic: String,
    /// Also ask each broker which consumer groups consume the topic
    #[arg(long)]
    pub groups: bool,
}

fn parse_perm(text: &str) -> Result<i32, String> {
    match text.parse::<i32>() {
        Ok(p @ (2 | 4 | 6)) => Ok(p),
        _ => Err(format!(
            "{text:?} is not a topic permission: use 6 (read-write), 4 (read-only) or 2 (write-only)"
        )),
    }
}

pub async fn run(admin: &Admin, verb: TopicVerb) -> Result<Shown> {
    match verb {
        TopicVerb::List => list(admin).await,
        TopicVerb::Create(args) => create(admin, args).await,
        TopicVerb::Delete(args) => delete(admin, args).await,
        TopicVerb::Route(args) => route(admin, &args.topic).await,
        TopicVerb::Stats(args) => stats(admin, args).await,
    }
}

async fn list(admin: &Admin) -> Result<Shown> {
    let Reply::TopicList(mut topics) = admin.namesrv(&Request::GetAllTopicList).await? else {
        bail!("the name server answered the topic list with something else");
    };
    topics.sort();
    let text = topics.join("\n");
    Ok(Shown::new(json!({ "topics": topics }), text))
}

async fn create(admin: &Admin, args: CreateArgs) -> Result<Shown> {
    let masters = admin
        .masters(
            args.placement.cluster.as_deref(),
            args.placement.broker.as_deref(),
        )
        .await?;
    let config = TopicConfig {
        read_queue_nums: args.read_queues.unwrap_or(args.queues),
        write_queue_nums: args.write_queues.unwrap_or(args.queues),
        perm: args.perm,
        order: args.order,
        ..TopicConfig::new(&args.topic, args.queues)
    };
    for master in &masters {
        admin
            .call(&master.addr, &Request::CreateTopic(config.clone()))
            .await?;
    }
    let text = format!(
        "topic {} ({} read / {} write queues, perm {}) created on {}",
        config.topic_name,
        config.read_queue_nums,
        config.write_queue_nums,
        config.perm,
        names(&masters)
    );
    Ok(Shown::new(
        json!({
            "topic": config.topic_name,
            "readQueueNums": config.read_queue_nums,
            "writeQueueNums": config.write_queue_nums,
            "perm": config.perm,
            "order": config.order,
            "brokers": brokers_json(&masters),
        }),
        text,
    ))
}

async fn delete(admin: &Admin, args: DeleteArgs) -> Result<Shown> {
    let masters = match &args.cluster {
        Some(cluster) => admin.masters(Some(cluster), None).await?,
        None => admin.topic_masters(&args.topic).await?,
    };
    for master in &masters {
        let request = Request::DeleteTopicInBroker {
            topic: args.topic.clone(),
        };
        admin.call(&master.addr, &request).await?;
    }
    // As deleteTopic does: then every name server forgets the route.
    for namesrv in admin.namesrvs() {
        let request = Request::DeleteTopicInNamesrv {
            topic: args.topic.clone(),
            cluster_name: args.cluster.clone(),
        };
        admin.call(namesrv, &request).await?;
    }
    let text = format!(
        "topic {} deleted from {} and the name servers",
        args.topic,
        names(&masters)
    );
    Ok(Shown::new(
        json!({ "topic": args.topic, "brokers": brokers_json(&masters) }),
        text,
    ))
}

async fn route(admin: &Admin, topic: &str) -> Result<Shown> {
    let route = admin.route(topic).await?;
    let mut rows = Vec::new();
    for queues in &route.queue_datas {
        let addr = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == queues.broker_name)
            .and_then(|b| b.broker_addrs.get(&skiff_model::route::MASTER_ID))
            .cloned()
            .unwrap_or_else(|| "-".to_string());
        rows.push(vec![
            queues.broker_name.clone(),
            addr,
            queues.read_queue_nums.to_string(),
            queues.write_queue_nums.to_string(),
            queues.perm.to_string(),
        ]);
    }
    let text = table(
        &["Broker", "Address", "Read queues", "Write queues", "Perm"],
        rows,
    );
    Ok(Shown::new(serde_json::to_value(&route)?, text))
}

async fn stats(admin: &Admin, args: StatsArgs) -> Result<Shown> {
    let masters = admin.topic_masters(&args.topic).await?;
    let mut queues = Vec::new();
    let mut rows = Vec::new();
    let mut groups = std::collections::BTreeSet::new();
    for master in &masters {
        let request = Request::GetTopicStats {
            topic: args.topic.clone(),
        };
        let Reply::TopicStats(table) = admin.call(&master.addr, &request).await? else {
            bail!("{} answered topic stats with something else", master.addr);
        };
        for (queue, offsets) in table.offset_table {
            rows.push(vec![
                queue.broker_name.clone(),
                queue.queue_id.to_string(),
                offsets.min_offset.to_string(),
                offsets.max_offset.to_string(),
                time(offsets.last_update_timestamp),
            ]);
            queues.push(json!({
                "brokerName": queue.broker_name,
                "queueId": queue.queue_id,
                "minOffset": offsets.min_offset,
                "maxOffset": offsets.max_offset,
                "lastUpdateTimestamp": offsets.last_update_timestamp,
            }));
        }
        if args.groups {
            groups.extend(consumed_by(admin, master, &args.topic).await?);
        }
    }
    let mut text = table(
        &[
            "Broker",
            "Queue",
            "Min offset",
            "Max offset",
            "Last updated (UTC)",
        ],
        rows,
    );
    let mut json = json!({ "topic": args.topic, "queues": queues });
    if args.groups {
        let groups: Vec<String> = groups.into_iter().collect();
        text.push_str(&format!(
            "\n\nConsumer groups: {}",
            if groups.is_empty() {
                "none".to_string()
            } else {
                groups.join(", ")
            }
        ));
        json["groups"] = json!(groups);
    }
    Ok(Shown::new(json, text))
}

/// QUERY_TOPIC_CONSUME_BY_WHO on one broker: the body is a `GroupList`.
async fn consumed_by(admin: &Admin, master: &Master, topic: &str) -> Result<Vec<String>> {
    let mut frame = RemotingCommand::request(QUERY_TOPIC_CONSUME_BY_WHO, 0);
    frame.set_ext("topic", topic);
    let response = match admin.call_frame(&master.addr, frame).await {
        Ok(response) => response,
        Err(err) if not_supported(&err) => {
            return Err(err.context(format!(
                "broker {} cannot tell which groups consume a topic",
                master.name
            )))
        }
        Err(err) => return Err(err),
    };
    #[derive(serde::Deserialize, Default)]
    #[serde(rename_all = "camelCase", default)]
    struct GroupList {
        group_list: Vec<String>,
    }
    let list: GroupList = fastjson::from_slice(&response.body.to_bytes())
        .map_err(|e| anyhow::anyhow!("{} sent a bad group list: {e}", master.addr))?;
    Ok(list.group_list)
}

pub fn names(masters: &[Master]) -> String {
    masters
        .iter()
        .map(|m| format!("{} ({})", m.name, m.addr))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn brokers_json(masters: &[Master]) -> serde_json::Value {
    masters
        .iter()
        .map(|m| json!({ "brokerName": m.name, "addr": m.addr }))
        .collect()
}
