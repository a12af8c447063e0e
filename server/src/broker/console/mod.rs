//! The built-in web console, served next to `/metrics` on the metrics port (issue 9): a page
//! (`/console/`, plain HTML, CSS and JavaScript embedded in the binary) and the JSON it reads
//! (`/api/...`).
//!
//! Pages: the broker and its cluster, topics with their queues and offsets, consumer groups with
//! their lag per queue and connected clients, message lookup (by message id, by key, by queue
//! offset) and the messages in and out per second over the last hour.
//!
//! Reading is open to whoever reaches the metrics port, like `/metrics`. The two write actions
//! (create a topic, reset a group's offsets) need `aclEnable=true` and the access and secret key
//! of an ACL account with `admin: true`, sent as HTTP Basic credentials; without ACL the console
//! is read-only and they answer 403. Writes must also be `Content-Type: application/json`, which
//! a page of another site cannot send without a CORS preflight the console never grants.
//!
//! Every handler here walks tables and reads the store: [`super::metrics_http`] runs them on a
//! blocking thread.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use base64::Engine;
use parking_lot::Mutex;
use serde_json::{json, Value};
use skiff_model::admin::{AdminCommand, AdminReply};
use skiff_model::command::Reply;
use skiff_model::record::{decode_offset_msg_id, Record};
use skiff_model::route::TopicConfig;

use super::{admin, introspect, BrokerState};
use crate::net::Handled;

/// The page, its script and its style sheet.
pub(super) const INDEX_HTML: &str = include_str!("assets/index.html");
pub(super) const CONSOLE_JS: &str = include_str!("assets/console.js");
pub(super) const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// How many topics or groups a list answer holds at most (a filter narrows it).
const LIST_LIMIT: usize = 500;
/// How many messages a lookup answers at most.
const MESSAGES_LIMIT: usize = 32;
/// How much of a body a lookup shows, in characters.
const BODY_CHARS: usize = 4096;
/// Throughput points kept: one hour of 10-second samples.
pub(super) const THROUGHPUT_POINTS: usize = 360;

/// Messages in and out, sampled every 10 s for the last hour (a bounded ring).
pub(crate) struct Throughput {
    started_ms: i64,
    /// `(at_ms, messages put so far, messages got so far)`, oldest first; at most
    /// [`THROUGHPUT_POINTS`] + 1 (rates are differences between neighbours).
    samples: Mutex<VecDeque<(i64, u64, u64)>>,
}

impl Throughput {
    pub(crate) fn new(now_ms: i64) -> Throughput {
        Throughput {
            started_ms: now_ms,
            samples: Mutex::new(VecDeque::with_capacity(THROUGHPUT_POINTS + 1)),
        }
    }

    /// Records the totals at `now_ms` (called every 10 s by the traffic sampler).
    pub(crate) fn sample(&self, now_ms: i64, put: u64, got: u64) {
        let mut samples = self.samples.lock();
        samples.push_back((now_ms, put, got));
        while samples.len() > THROUGHPUT_POINTS + 1 {
            samples.pop_front();
        }
    }

    /// Per-second rates between consecutive samples, and a last one up to `now` from the live
    /// totals; `{t, in, out}` with `t` the end of each interval (ms).
    fn points(&self, now_ms: i64, put: u64, got: u64) -> Vec<Value> {
        let samples = self.samples.lock();
        let mut all: Vec<(i64, u64, u64)> = samples.iter().copied().collect();
        drop(samples);
        if all.last().is_none_or(|last| now_ms > last.0) {
            all.push((now_ms, put, got));
        }
        let mut points: Vec<Value> = all
            .windows(2)
            .filter(|pair| pair[1].0 > pair[0].0)
            .map(|pair| {
                let seconds = (pair[1].0 - pair[0].0) as f64 / 1000.0;
                json!({
                    "t": pair[1].0,
                    "in": pair[1].1.saturating_sub(pair[0].1) as f64 / seconds,
                    "out": pair[1].2.saturating_sub(pair[0].2) as f64 / seconds,
                })
            })
            .collect();
        let excess = points.len().saturating_sub(THROUGHPUT_POINTS);
        points.drain(..excess);
        points
    }
}

/// An API answer: a status code and a JSON body.
#[derive(Debug)]
pub(super) struct ApiAnswer {
    pub(super) status: u16,
    pub(super) body: Value,
}

impl ApiAnswer {
    fn ok(body: Value) -> ApiAnswer {
        ApiAnswer { status: 200, body }
    }

    fn error(status: u16, message: impl Into<String>) -> ApiAnswer {
        ApiAnswer {
            status,
            body: json!({ "error": message.into() }),
        }
    }
}

/// A parsed query string (`a=b&c=d`, percent- and `+`-decoded).
pub(super) struct Query(BTreeMap<String, String>);

impl Query {
    pub(super) fn parse(query: Option<&str>) -> Query {
        let mut map = BTreeMap::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            map.insert(percent_decode(key), percent_decode(value));
        }
        Query(map)
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `GET /api/<path>`.
pub(super) fn get(state: &BrokerState, path: &str, query: &Query) -> ApiAnswer {
    match path {
        "overview" => ApiAnswer::ok(overview(state)),
        "topics" => ApiAnswer::ok(topics(state, query.get("filter"))),
        "topic" => match query.get("name") {
            Some(name) => topic(state, name),
            None => ApiAnswer::error(400, "name the topic: /api/topic?name=..."),
        },
        "groups" => ApiAnswer::ok(groups(state, query.get("filter"))),
        "group" => match query.get("name") {
            Some(name) => group(state, name),
            None => ApiAnswer::error(400, "name the group: /api/group?name=..."),
        },
        "messages" => messages(state, query),
        "throughput" => ApiAnswer::ok(throughput(state)),
        _ => ApiAnswer::error(404, format!("no such API: /api/{path}")),
    }
}

/// `GET /api/cluster`: the brokers of every cluster, as the first name server that answers
/// knows them (GET_BROKER_CLUSTER_INFO, a network call: not on a blocking thread).
pub(super) async fn cluster(state: &BrokerState) -> ApiAnswer {
    match state.name_servers.cluster_info().await {
        Ok((name_server, info)) => {
            let clusters: BTreeMap<&String, Vec<Value>> = info
                .cluster_addr_table
                .iter()
                .map(|(cluster, names)| {
                    let brokers = names
                        .iter()
                        .map(|name| {
                            let addrs = info
                                .broker_addr_table
                                .get(name)
                                .map(|b| b.broker_addrs.clone())
                                .unwrap_or_default();
                            json!({ "name": name, "addresses": addrs })
                        })
                        .collect();
                    (cluster, brokers)
                })
                .collect();
            ApiAnswer::ok(json!({ "nameServer": name_server, "clusters": clusters }))
        }
        Err(error) => ApiAnswer::error(
            502,
            format!("no name server answered GET_BROKER_CLUSTER_INFO: {error}"),
        ),
    }
}

fn overview(state: &BrokerState) -> Value {
    let config = &state.config;
    let runtime = match admin::runtime_info(state) {
        Reply::KeyValues(table) => table,
        _ => BTreeMap::new(),
    };
    let (topics, _) = state.topics.snapshot();
    let system = topics
        .keys()
        .filter(|name| state.topics.is_system_topic(name))
        .count();
    let online = state.consumers.online_groups();
    let now = super::now_millis();
    json!({
        "cluster": config.broker_cluster_name,
        "broker": config.broker_name,
        "brokerId": config.effective_broker_id(),
        "brokerRole": config.broker_role.as_str(),
        "address": state.broker_addr,
        "nameServers": config.namesrv_addr.as_deref().unwrap_or(""),
        "version": env!("CARGO_PKG_VERSION"),
        "startedAt": state.throughput.started_ms,
        "uptimeSeconds": (now - state.throughput.started_ms).max(0) / 1000,
        "aclEnabled": state.acl.is_some(),
        "writable": state.acl.is_some(),
        "topics": topics.len(),
        "userTopics": topics.len() - system,
        "subscriptionGroups": state.groups.count(),
        "onlineGroups": online.len(),
        "onlineConsumers": online.iter().map(|g| g.members).sum::<usize>(),
        "commitLog": {
            "minOffset": state.store.commit_log_min_offset().max(0),
            "maxOffset": state.store.commit_log_max_offset(),
        },
        "runtime": runtime,
    })
}

fn matches(name: &str, filter: Option<&str>) -> bool {
    filter.is_none_or(|f| name.to_lowercase().contains(&f.to_lowercase()))
}

/// `(min, max, last store time)` of every queue, through GET_TOPIC_STATS_INFO's handler.
fn queue_offsets(state: &BrokerState, name: &str) -> Vec<(i32, i64, i64, i64)> {
    match admin::topic_stats(state, name) {
        Reply::TopicStats(table) => table
            .offset_table
            .into_iter()
            .map(|(queue, o)| {
                (
                    queue.queue_id,
                    o.min_offset,
                    o.max_offset,
                    o.last_update_timestamp,
                )
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn topics(state: &BrokerState, filter: Option<&str>) -> Value {
    let (all, _) = state.topics.snapshot();
    let chosen: Vec<&TopicConfig> = all
        .values()
        .filter(|t| matches(&t.topic_name, filter))
        .collect();
    let list: Vec<Value> = chosen
        .iter()
        .take(LIST_LIMIT)
        .map(|t| {
            let queues = queue_offsets(state, &t.topic_name);
            json!({
                "name": t.topic_name,
                "system": state.topics.is_system_topic(&t.topic_name),
                "readQueues": t.read_queue_nums,
                "writeQueues": t.write_queue_nums,
                "perm": t.perm,
                "messages": queues.iter().map(|q| (q.2 - q.1).max(0)).sum::<i64>(),
                "lastUpdate": queues.iter().map(|q| q.3).max().unwrap_or(0),
            })
        })
        .collect();
    json!({
        "total": chosen.len(),
        "truncated": chosen.len() > LIST_LIMIT,
        "topics": list,
    })
}

fn topic(state: &BrokerState, name: &str) -> ApiAnswer {
    let Some(config) = state.topics.get(name) else {
        return ApiAnswer::error(404, format!("no topic {name} on this broker"));
    };
    let queues: Vec<Value> = queue_offsets(state, name)
        .into_iter()
        .map(|(queue_id, min, max, last)| {
            json!({ "queueId": queue_id, "minOffset": min, "maxOffset": max, "lastUpdate": last })
        })
        .collect();
    let mut groups: BTreeSet<String> = state
        .consumers
        .groups_subscribing(name)
        .into_iter()
        .collect();
    groups.extend(state.offsets.groups_of_topic(name));
    ApiAnswer::ok(json!({
        "name": config.topic_name,
        "system": state.topics.is_system_topic(name),
        "readQueues": config.read_queue_nums,
        "writeQueues": config.write_queue_nums,
        "perm": config.perm,
        "order": config.order,
        "attributes": config.attributes,
        "queues": queues,
        "groups": groups,
    }))
}

/// Every group the broker knows: subscription groups, live groups and groups with offsets.
fn group_names(state: &BrokerState) -> BTreeSet<String> {
    let (configs, _) = state.groups.snapshot();
    let mut names: BTreeSet<String> = configs.into_keys().collect();
    names.extend(state.consumers.online_groups().into_iter().map(|g| g.name));
    names.extend(state.offsets.groups());
    names
}

/// Per-queue offsets and lag of `group`, through GET_CONSUME_STATS's handler.
fn lag_rows(state: &BrokerState, group: &str) -> Vec<Value> {
    match admin::consume_stats(state, group, None) {
        Reply::ConsumeStats(stats) => stats
            .offset_table
            .into_iter()
            .map(|(queue, o)| {
                json!({
                    "topic": queue.topic,
                    "queueId": queue.queue_id,
                    "brokerOffset": o.broker_offset,
                    "consumerOffset": o.consumer_offset,
                    "lag": (o.broker_offset - o.consumer_offset).max(0),
                    "lastTimestamp": o.last_timestamp,
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn total_lag(rows: &[Value]) -> i64 {
    rows.iter().filter_map(|r| r["lag"].as_i64()).sum()
}

fn groups(state: &BrokerState, filter: Option<&str>) -> Value {
    let online: BTreeMap<String, _> = state
        .consumers
        .online_groups()
        .into_iter()
        .map(|g| (g.name.clone(), g))
        .collect();
    let chosen: Vec<String> = group_names(state)
        .into_iter()
        .filter(|name| matches(name, filter))
        .collect();
    let list: Vec<Value> = chosen
        .iter()
        .take(LIST_LIMIT)
        .map(|name| {
            let rows = lag_rows(state, name);
            let live = online.get(name);
            json!({
                "name": name,
                "clients": live.map_or(0, |g| g.members),
                "consumeType": live.map(|g| serde_json::to_value(g.consume_type).unwrap_or(Value::Null)),
                "topics": live.map(|g| g.topics.clone()).unwrap_or_else(|| state.offsets.topics_of_group(name)),
                "lag": total_lag(&rows),
            })
        })
        .collect();
    json!({
        "total": chosen.len(),
        "truncated": chosen.len() > LIST_LIMIT,
        "groups": list,
    })
}

fn group(state: &BrokerState, name: &str) -> ApiAnswer {
    if !group_names(state).contains(name) {
        return ApiAnswer::error(404, format!("no consumer group {name} on this broker"));
    }
    let rows = lag_rows(state, name);
    let connections = state.consumers.connections(name);
    let (clients, subscriptions, consume_type, message_model) = match &connections {
        Some(c) => (
            c.connections
                .iter()
                .map(|client| {
                    json!({
                        "clientId": client.client_id,
                        "address": client.client_addr,
                        "language": client.language,
                        "version": client.version,
                    })
                })
                .collect::<Vec<_>>(),
            c.subscriptions
                .values()
                .map(|s| json!({ "topic": s.topic, "expression": s.sub_string, "type": s.expression_type }))
                .collect::<Vec<_>>(),
            serde_json::to_value(c.consume_type).unwrap_or(Value::Null),
            serde_json::to_value(c.message_model).unwrap_or(Value::Null),
        ),
        None => (Vec::new(), Vec::new(), Value::Null, Value::Null),
    };
    ApiAnswer::ok(json!({
        "name": name,
        "online": connections.is_some(),
        "consumeType": consume_type,
        "messageModel": message_model,
        "lag": total_lag(&rows),
        "queues": rows,
        "clients": clients,
        "subscriptions": subscriptions,
    }))
}

/// One stored record as JSON (the fields `skiff admin message print` shows), the body cut to
/// [`BODY_CHARS`] characters.
fn describe(record: &[u8]) -> Option<Value> {
    let r = Record::decode(record, false).ok()?;
    let properties = r.parsed_properties();
    let map: serde_json::Map<String, Value> = properties
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let body = String::from_utf8_lossy(r.body);
    let shown: String = body.chars().take(BODY_CHARS).collect();
    Some(json!({
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
        "bodyLength": r.body.len(),
        "body": shown,
        "bodyTruncated": body.chars().count() > BODY_CHARS,
        "properties": map,
    }))
}

/// `GET /api/messages`: `?id=` (an offset message id, or with `topic=` a client's unique id),
/// `?topic=&key=`, or `?topic=&queue=&offset=`.
fn messages(state: &BrokerState, query: &Query) -> ApiAnswer {
    let topic = query.get("topic");
    let mut found: Vec<Value> = Vec::new();
    if let Some(id) = query.get("id") {
        // An offset message id names its CommitLog offset; a record there must carry the id.
        if let Some((_, offset)) = decode_offset_msg_id(id) {
            if let Some(record) = state.store.read_message(offset) {
                found.extend(describe(&record).filter(|m| m["msgId"].as_str() == Some(id)));
            }
        }
        if found.is_empty() {
            let Some(topic) = topic else {
                return ApiAnswer::error(
                    400,
                    format!("{id} is not an offset message id of this broker; name the topic to look it up as a unique key"),
                );
            };
            let hits = state
                .store
                .query_messages(topic, id, MESSAGES_LIMIT, 0, i64::MAX);
            found.extend(hits.messages.iter().filter_map(|r| describe(r)));
        }
    } else if let Some(key) = query.get("key") {
        let Some(topic) = topic else {
            return ApiAnswer::error(400, "a key lookup needs the topic");
        };
        let hits = state
            .store
            .query_messages(topic, key, MESSAGES_LIMIT, 0, i64::MAX);
        found.extend(hits.messages.iter().filter_map(|r| describe(r)));
    } else if let (Some(topic), Some(queue), Some(offset)) =
        (topic, query.get("queue"), query.get("offset"))
    {
        let (Ok(queue), Ok(offset)) = (queue.parse::<i32>(), offset.parse::<i64>()) else {
            return ApiAnswer::error(400, "queue and offset are numbers");
        };
        if let Some(record) = state
            .store
            .queue_entry(topic, queue, offset)
            .and_then(|e| e.record)
        {
            found.extend(describe(&record));
        }
    } else {
        return ApiAnswer::error(
            400,
            "look up by id (and topic), by topic and key, or by topic, queue and offset",
        );
    }
    found.truncate(MESSAGES_LIMIT);
    ApiAnswer::ok(json!({ "messages": found }))
}

fn throughput(state: &BrokerState) -> Value {
    let (put, got) = state.stats.totals();
    json!({
        "periodSeconds": 10,
        "points": state.throughput.points(super::now_millis(), put, got),
    })
}

/// Whether a write may go ahead: ACL on, and Basic credentials of an admin account.
fn authorize_write(state: &BrokerState, authorization: Option<&str>) -> Result<String, ApiAnswer> {
    let Some(acl) = &state.acl else {
        return Err(ApiAnswer::error(
            403,
            "the console is read-only: write actions need aclEnable=true and the access and \
             secret key of an ACL account with admin: true",
        ));
    };
    let refused = || {
        ApiAnswer::error(
            401,
            "write actions need the access key and secret key of an ACL account with admin: true",
        )
    };
    let encoded = authorization
        .and_then(|h| h.strip_prefix("Basic "))
        .ok_or_else(refused)?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| refused())?;
    let decoded = String::from_utf8(decoded).map_err(|_| refused())?;
    let (access_key, secret_key) = decoded.split_once(':').ok_or_else(refused)?;
    let current = acl.current();
    match current.accounts.get(access_key) {
        Some(account) if account.admin && constant_time_eq(&account.secret_key, secret_key) => {
            Ok(access_key.to_string())
        }
        _ => Err(refused()),
    }
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// What a write asks for, checked and parsed before anything runs.
pub(super) enum Write {
    CreateTopic(TopicConfig),
    ResetOffset(AdminCommand),
}

/// `POST /api/<path>`, before its body is read: an existing write action, an admin account's
/// credentials, and a JSON body; the account's access key.
pub(super) fn check_write(
    state: &BrokerState,
    path: &str,
    authorization: Option<&str>,
    json_content: bool,
) -> Result<String, ApiAnswer> {
    if !matches!(path, "topics" | "reset-offset") {
        return Err(ApiAnswer::error(
            404,
            format!("no such API: POST /api/{path}"),
        ));
    }
    let account = authorize_write(state, authorization)?;
    if !json_content {
        return Err(ApiAnswer::error(415, "send Content-Type: application/json"));
    }
    Ok(account)
}

/// The JSON body of a checked `POST /api/<path>`.
pub(super) fn parse_write(path: &str, body: &[u8]) -> Result<Write, ApiAnswer> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| ApiAnswer::error(400, format!("the body is not JSON: {e}")))?;
    let text = |key: &str| body[key].as_str().map(str::trim).filter(|s| !s.is_empty());
    let number = |key: &str| {
        body[key]
            .as_i64()
            .or_else(|| body[key].as_str()?.trim().parse().ok())
    };
    let write = match path {
        "topics" => {
            let name = text("name").ok_or_else(|| ApiAnswer::error(400, "name the topic"))?;
            let queues = number("queues").unwrap_or(8);
            let queues =
                i32::try_from(queues).map_err(|_| ApiAnswer::error(400, "too many queues"))?;
            let mut config = TopicConfig::new(name, queues);
            if let Some(perm) = number("perm") {
                config.perm = i32::try_from(perm).map_err(|_| ApiAnswer::error(400, "bad perm"))?;
            }
            Write::CreateTopic(config)
        }
        _ => {
            let topic = text("topic").ok_or_else(|| ApiAnswer::error(400, "name the topic"))?;
            let group = text("group").ok_or_else(|| ApiAnswer::error(400, "name the group"))?;
            let queue_id = number("queueId").unwrap_or(-1);
            let offset = number("offset");
            if offset.is_some() && queue_id < 0 {
                return Err(ApiAnswer::error(400, "an offset needs a queueId"));
            }
            // No time: the queues' ends (skip everything), as `mqadmin resetOffsetByTime -s now`.
            let timestamp = number("timestamp").unwrap_or(-1);
            Write::ResetOffset(AdminCommand::ResetOffset {
                topic: topic.to_string(),
                group: group.to_string(),
                timestamp,
                queue_id: i32::try_from(queue_id).unwrap_or(-1),
                offset,
                force: true,
            })
        }
    };
    Ok(write)
}

/// Runs a parsed write (the topic and reset handlers of the remoting API).
pub(super) fn run_write(state: &Arc<BrokerState>, write: Write) -> Handled {
    match write {
        Write::CreateTopic(config) => admin::create_topic(state, config),
        Write::ResetOffset(command) => introspect::handle(state, command),
    }
}

/// A write's reply as an API answer.
pub(super) fn write_answer(reply: Reply) -> ApiAnswer {
    match reply {
        Reply::Success => ApiAnswer::ok(json!({ "ok": true })),
        Reply::Admin(AdminReply::ResetOffsets(queues)) => ApiAnswer::ok(json!({
            "ok": true,
            "offsets": queues
                .into_iter()
                .map(|(q, offset)| json!({ "topic": q.topic, "queueId": q.queue_id, "offset": offset }))
                .collect::<Vec<_>>(),
        })),
        Reply::Error(error) => ApiAnswer::error(400, error.message),
        other => ApiAnswer::error(500, format!("unexpected answer {other:?}")),
    }
}

#[cfg(test)]
mod tests;
