//! Administration (`AdminBrokerProcessor`): topics, subscription groups, statistics and runtime
//! information, as `mqadmin`, `DefaultMQAdminExt` and the dashboard use them.

use std::collections::BTreeMap;
use std::sync::Arc;

use skiff_model::admin::AdminReply;
use skiff_model::command::{ErrorKind, Reply};
use skiff_model::consumer::{
    ConsumeStats, MessageQueue, OffsetWrapper, SubscriptionGroupConfig, TopicOffset,
    TopicStatsTable,
};
use skiff_model::route::TopicConfig;
use skiff_model::static_topic::TopicQueueMappingDetail;
use skiff_model::topic;
use skiff_protocol::remoting::SKIFF_VERSION;
use tracing::info;

use super::{traffic, BrokerState};
use crate::net::Handled;

/// The RocketMQ version Skiff answers as (`MQVersion.getVersionDesc`).
const VERSION_DESC: &str = "V5_3_3";

/// UPDATE_AND_CREATE_TOPIC; a changed topic is registered with the name servers before the
/// answer, as Java does, so the admin's next route lookup sees it.
pub(super) fn create_topic(state: &Arc<BrokerState>, config: TopicConfig) -> Handled {
    create_topics(state, vec![config])
}

/// UPDATE_AND_CREATE_TOPIC_LIST (`mqadmin updateTopicList`): every topic is checked first and
/// one refused topic refuses the list, as in Java; then the changed ones are stored and
/// registered together. (Java 5.3.3 answers success at the first unchanged topic and skips the
/// rest of the list; here an unchanged topic is only skipped.)
pub(super) fn create_topics(state: &Arc<BrokerState>, configs: Vec<TopicConfig>) -> Handled {
    for config in &configs {
        if let Err(remark) = check_topic(state, config) {
            return Handled::Now(Reply::error(ErrorKind::InvalidParameter, remark));
        }
    }
    let mut changed = 0;
    for mut config in configs {
        let existing = state.topics.get(&config.topic_name);
        config.attributes =
            apply_attribute_changes(existing.as_ref().map(|t| &t.attributes), &config.attributes);
        if existing.as_ref() == Some(&config) {
            continue;
        }
        info!(topic = %config.topic_name, queues = config.write_queue_nums, perm = config.perm, "topic created or updated");
        state.topics.upsert(config);
        changed += 1;
    }
    if changed == 0 {
        return Handled::Now(Reply::Success);
    }
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        state.name_servers.register_changed(&state).await;
        Reply::Success
    }))
}

/// UPDATE_AND_CREATE_STATIC_TOPIC (`mqadmin updateStaticTopic`, `remappingStaticTopic`): the
/// topic's settings as sent (Java's `updateAndCreateStaticTopic` replaces them) and this broker's
/// part of the mapping, then a registration with the name servers, which put the mapping in the
/// route. The mapping is checked before anything changes (Java stores the settings first and
/// then answers a refused mapping with SYSTEM_ERROR). A broker hosting none of the logical
/// queues gets zero queues, as in Java. Requests for the logical queues are then served by
/// `logical_queues` (sends, pulls, consumer offsets and offset queries).
pub(super) fn create_static_topic(
    state: &Arc<BrokerState>,
    config: TopicConfig,
    mapping: TopicQueueMappingDetail,
    force: bool,
) -> Handled {
    if let Err(remark) = topic::validate_topic(&config.topic_name) {
        return Handled::Now(Reply::error(ErrorKind::InvalidParameter, remark));
    }
    if state.topics.is_system_topic(&config.topic_name) {
        return Handled::Now(Reply::error(
            ErrorKind::InvalidParameter,
            format!(
                "The topic[{}] is conflict with system topic.",
                config.topic_name
            ),
        ));
    }
    let max = state.config.max_topic_queue_nums;
    for (key, value) in [
        ("readQueueNums", config.read_queue_nums),
        ("writeQueueNums", config.write_queue_nums),
    ] {
        if !(0..=max).contains(&value) {
            return Handled::Now(Reply::error(
                ErrorKind::InvalidParameter,
                format!(
                    "{key} {value} of topic {} is out of range [0, {max}] (maxTopicQueueNums)",
                    config.topic_name
                ),
            ));
        }
    }
    if mapping.topic != config.topic_name || mapping.bname != state.config.broker_name {
        return Handled::Now(Reply::error(
            ErrorKind::SystemError,
            format!(
                "the mapping is of topic {} on broker {}, not of {} on {}",
                mapping.topic, mapping.bname, config.topic_name, state.config.broker_name
            ),
        ));
    }
    if let Err(remark) = state.static_topics.update(mapping, force) {
        return Handled::Now(Reply::error(ErrorKind::SystemError, remark));
    }
    info!(topic = %config.topic_name, queues = config.write_queue_nums, "static topic created or updated");
    state.topics.upsert(config);
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        state.name_servers.register_changed(&state).await;
        Reply::Success
    }))
}

/// What `TopicValidator` and Skiff's limits refuse, with Java's remarks.
fn check_topic(state: &BrokerState, config: &TopicConfig) -> Result<(), String> {
    topic::validate_topic(&config.topic_name)?;
    check_queue_nums(state, config)?;
    if state.topics.is_system_topic(&config.topic_name) {
        return Err(format!(
            "The topic[{}] is conflict with system topic.",
            config.topic_name
        ));
    }
    Ok(())
}

/// Queue counts must lie in `1..=maxTopicQueueNums`: every queue costs files, memory and a
/// loop iteration in each stats call (Java 5.3.3 takes any number; 2^31-1 then kills a broker
/// on the next GET_TOPIC_STATS_INFO).
fn check_queue_nums(state: &BrokerState, config: &TopicConfig) -> Result<(), String> {
    let max = state.config.max_topic_queue_nums;
    for (key, value) in [
        ("readQueueNums", config.read_queue_nums),
        ("writeQueueNums", config.write_queue_nums),
    ] {
        if value < 1 || value > max {
            return Err(format!(
                "{key} {value} of topic {} is out of range [1, {max}] (maxTopicQueueNums)",
                config.topic_name
            ));
        }
    }
    Ok(())
}

/// Topic attributes arrive as changes (`AttributeParser`): `+key` sets a value, `-key` removes
/// one; a bare key (from a config file) sets it too.
fn apply_attribute_changes(
    current: Option<&BTreeMap<String, String>>,
    changes: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut attributes = current.cloned().unwrap_or_default();
    for (key, value) in changes {
        if let Some(removed) = key.strip_prefix('-') {
            attributes.remove(removed);
        } else {
            let key = key.strip_prefix('+').unwrap_or(key);
            attributes.insert(key.to_string(), value.clone());
        }
    }
    attributes
}

/// DELETE_TOPIC_IN_BROKER. Java checks only for a blank name; Skiff also refuses names
/// `TopicValidator` would refuse at creation (`../../x`, absolute paths), so that nothing
/// outside the store directory is ever touched. The files go on a blocking thread.
pub(super) fn delete_topic(state: &Arc<BrokerState>, name: &str) -> Handled {
    if name.trim().is_empty() {
        return Handled::Now(Reply::error(
            ErrorKind::InvalidParameter,
            "The specified topic is blank.",
        ));
    }
    if let Err(remark) = topic::validate_topic(name) {
        return Handled::Now(Reply::error(ErrorKind::InvalidParameter, remark));
    }
    if state.topics.is_system_topic(name) {
        return Handled::Now(Reply::error(
            ErrorKind::InvalidParameter,
            format!("The topic[{name}] is conflict with system topic."),
        ));
    }
    state.topics.remove(name);
    state.static_topics.remove(name);
    state.offsets.remove_topic(name);
    state.traffic.remove_topic(name);
    let state = state.clone();
    let name = name.to_string();
    Handled::Later(Box::pin(async move {
        let store = state.store.clone();
        let topic = name.clone();
        match tokio::task::spawn_blocking(move || store.delete_topics(&[&topic])).await {
            Ok(()) => {
                info!(topic = %name, "topic deleted");
                Reply::Success
            }
            Err(e) => Reply::error(ErrorKind::SystemError, format!("deleting {name}: {e}")),
        }
    }))
}

pub(super) fn create_subscription_group(
    state: &BrokerState,
    config: SubscriptionGroupConfig,
) -> Reply {
    create_subscription_groups(state, vec![config])
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP(_LIST): every name is checked before any group is stored.
pub(super) fn create_subscription_groups(
    state: &BrokerState,
    configs: Vec<SubscriptionGroupConfig>,
) -> Reply {
    for config in &configs {
        if let Err(remark) = topic::validate_group(&config.group_name) {
            return Reply::error(ErrorKind::InvalidParameter, remark);
        }
    }
    for config in configs {
        info!(group = %config.group_name, "subscription group created or updated");
        state.groups.upsert(config);
    }
    Reply::Success
}

fn queue(state: &BrokerState, topic: &str, queue_id: i32) -> MessageQueue {
    MessageQueue {
        topic: topic.to_string(),
        broker_name: state.config.broker_name.clone(),
        queue_id,
    }
}

/// How many queues a stats answer lists: a topic persisted with an absurd count (by an older
/// Skiff or a hand-edited `topics.json`) must not make one call allocate gigabytes.
fn stats_queue_count(state: &BrokerState, queues: i32) -> i32 {
    queues.clamp(0, state.config.max_topic_queue_nums)
}

/// GET_TOPIC_STATS_INFO: min/max offset and last store time of every queue of the topic.
pub(super) fn topic_stats(state: &BrokerState, name: &str) -> Reply {
    let Some(config) = state.topics.get(name) else {
        return Reply::error(ErrorKind::TopicNotExist, format!("topic[{name}] not exist"));
    };
    let queues = stats_queue_count(state, config.write_queue_nums.max(config.read_queue_nums));
    let offset_table = (0..queues)
        .map(|queue_id| {
            let min = state.store.min_offset_in_queue(name, queue_id).max(0);
            let max = state.store.max_offset_in_queue(name, queue_id).max(0);
            let last_update_timestamp = if max > 0 {
                state
                    .store
                    .message_store_time(name, queue_id, max - 1)
                    .unwrap_or(0)
            } else {
                0
            };
            (
                queue(state, name, queue_id),
                TopicOffset {
                    min_offset: min,
                    max_offset: max,
                    last_update_timestamp,
                },
            )
        })
        .collect();
    Reply::TopicStats(TopicStatsTable { offset_table })
}

/// GET_CONSUME_STATS: a group's committed and pulled offsets against each queue's end.
pub(super) fn consume_stats(state: &BrokerState, group: &str, topic: Option<&str>) -> Reply {
    let topics = match topic.filter(|t| !t.is_empty()) {
        Some(topic) => vec![topic.to_string()],
        None => state.offsets.topics_of_group(group),
    };
    let mut offset_table = Vec::new();
    let mut consume_tps = 0.0;
    for name in topics {
        let Some(config) = state.topics.get(&name) else {
            continue;
        };
        // A live group that does not subscribe to this topic has no stats for it.
        let subscribes = state.consumers.subscription(group, &name).is_some();
        if !subscribes && state.consumers.subscription_count(group).unwrap_or(0) > 0 {
            continue;
        }
        // `tpsGroupGetNums`: messages per second the group pulled over the last minute.
        consume_tps += state
            .traffic
            .data(traffic::GROUP_GET_NUMS, &format!("{name}@{group}"))
            .map_or(0.0, |data| data.minute.tps);
        // Of a static topic, an offset never committed stays -1, so that the admin tools
        // read the group's offset from an older stretch of the logical queue instead.
        let mapping = state.static_topics.get(&name);
        for queue_id in 0..stats_queue_count(state, config.read_queue_nums) {
            let broker_offset = state.store.max_offset_in_queue(&name, queue_id).max(0);
            let committed = state.offsets.query(group, &name, queue_id);
            let physical_consumer_offset = match &mapping {
                Some(_) => committed.filter(|o| *o >= 0).unwrap_or(-1),
                None => committed.unwrap_or(0).max(0),
            };
            // The tools take the consumer offset of a logical queue's stretch as it is, and
            // compare it with the logical broker offset: it is shown as a logical offset.
            let consumer_offset = match mapping.as_ref().and_then(|m| m.item_here(queue_id)) {
                Some(item) if physical_consumer_offset >= 0 => {
                    item.static_offset_strictly(physical_consumer_offset)
                }
                _ => physical_consumer_offset,
            };
            let pull_offset = state
                .offsets
                .pulled(group, &name, queue_id)
                .unwrap_or(0)
                .max(consumer_offset);
            let last_timestamp = if physical_consumer_offset > 0 {
                state
                    .store
                    .message_store_time(&name, queue_id, physical_consumer_offset - 1)
                    .unwrap_or(0)
            } else {
                0
            };
            offset_table.push((
                queue(state, &name, queue_id),
                OffsetWrapper {
                    broker_offset,
                    consumer_offset,
                    pull_offset,
                    last_timestamp,
                },
            ));
        }
    }
    Reply::ConsumeStats(ConsumeStats {
        offset_table,
        consume_tps,
    })
}

/// GET_BROKER_CONSUME_STATS (`mqadmin brokerConsumeStats`): GET_CONSUME_STATS of every
/// subscription group over the topics it has offsets on, and the broker's total backlog.
pub(super) fn broker_consume_stats(state: &BrokerState, order_only: bool) -> Reply {
    let (groups, _) = state.groups.snapshot();
    let mut total_diff = 0;
    let mut total_inflight_diff = 0;
    let mut stats = Vec::with_capacity(groups.len());
    for group in groups.keys() {
        let mut per_topic = Vec::new();
        for topic in state.offsets.topics_of_group(group) {
            if order_only && !state.topics.get(&topic).is_some_and(|t| t.order) {
                continue;
            }
            let Reply::ConsumeStats(topic_stats) = consume_stats(state, group, Some(&topic)) else {
                continue;
            };
            if topic_stats.offset_table.is_empty() {
                continue;
            }
            for (_, offsets) in &topic_stats.offset_table {
                total_diff += offsets.broker_offset - offsets.consumer_offset;
                total_inflight_diff += offsets.pull_offset - offsets.consumer_offset;
            }
            per_topic.push(topic_stats);
        }
        stats.push((group.clone(), per_topic));
    }
    Reply::Admin(AdminReply::BrokerConsumeStats {
        broker_addr: state.broker_addr.clone(),
        groups: stats,
        total_diff,
        total_inflight_diff,
    })
}

/// GET_BROKER_RUNTIME_INFO: the key/value table `mqadmin brokerStatus` prints.
pub(super) fn runtime_info(state: &BrokerState) -> Reply {
    let mut table = BTreeMap::new();
    let mut put = |key: &str, value: String| {
        table.insert(key.to_string(), value);
    };
    put("brokerVersionDesc", VERSION_DESC.to_string());
    put("brokerVersion", SKIFF_VERSION.to_string());
    put("skiffVersion", env!("CARGO_PKG_VERSION").to_string());
    put("brokerActive", "true".to_string());
    for (key, value) in state.stats.runtime_info() {
        put(key, value);
    }
    // Skiff has no request thread pools: nothing queues in front of a handler.
    for key in [
        "sendThreadPoolQueueSize",
        "sendThreadPoolQueueHeadWaitTimeMills",
        "pullThreadPoolQueueSize",
        "pullThreadPoolQueueHeadWaitTimeMills",
        "pageCacheLockTimeMills",
    ] {
        put(key, "0".to_string());
    }
    put(
        "pullRequestsHeld",
        state.pull_holds.held_count().to_string(),
    );
    for (key, value) in state.store.runtime_info() {
        put(&key, value);
    }
    for (key, value) in state.schedule.runtime_info() {
        put(&key, value);
    }
    Reply::KeyValues(table)
}
