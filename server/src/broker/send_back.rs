//! CONSUMER_SEND_MSG_BACK (`AbstractSendMessageProcessor.consumerSendMsgBack`): a consumer failed
//! a message (RECONSUME_LATER, or an exception), so the broker stores a copy of it to
//! `%RETRY%<group>` behind a delay level that grows with each attempt, or to `%DLQ%<group>` once the
//! message was consumed `maxReconsumeTimes` times. The copy keeps the original's body, flags, born
//! host and time, gets `RETRY_TOPIC` (the first topic), `ORIGIN_MESSAGE_ID` (the first offset
//! message id), `DELAY` and `WAIT=false`, and one more reconsume time. A delayed copy then goes the
//! way of every delayed send ([`super::schedule`]).
//!
//! Answers and remarks are Java's, including the failures: the Go client treats any answer other
//! than an error as "stored", so an unsupported or wrong reply loses messages.

use std::sync::Arc;

use skiff_model::command::{ErrorKind, Reply, SendBackRequest};
use skiff_model::message::{keys, Properties};
use skiff_model::record::{offset_msg_id, Record};
use skiff_model::retry::{self, SendBack, DLQ_NUMS_PER_GROUP};
use skiff_model::route::perm;
use skiff_model::topic;
use skiff_store::{MessageToStore, PutError};

use super::{schedule, BrokerState};
use crate::net::Handled;

/// `FAQUrl.suggestTodo(FAQUrl.SUBSCRIPTION_GROUP_NOT_EXIST)`.
pub(super) const GROUP_NOT_EXIST_TIP: &str =
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

/// Longest group name Java auto-creates (`Validators.CHARACTER_MAX_LENGTH`).
const GROUP_MAX_AUTO_CREATE_LENGTH: usize = 255;

pub(super) fn handle(state: &Arc<BrokerState>, request: SendBackRequest) -> Handled {
    let topics_version = state.topics.version();
    let reply = match store_back(state, &request) {
        Ok(()) => Reply::Success,
        Err(reply) => reply,
    };
    if state.topics.version() == topics_version {
        return Handled::Now(reply);
    }
    // As Java: the name servers know a new retry or DLQ topic before the request is answered.
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        state.name_servers.register(&state).await;
        reply
    }))
}

fn store_back(state: &BrokerState, request: &SendBackRequest) -> Result<(), Reply> {
    let group = request.group.as_str();
    // Java auto-creates only names of legal characters up to 255 long (`isTopicOrGroupIllegal`).
    let legal = group.chars().count() <= GROUP_MAX_AUTO_CREATE_LENGTH
        && group
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'));
    let group_config = legal
        .then(|| state.groups.find_or_create(group))
        .flatten()
        .ok_or_else(|| {
            Reply::error(
                ErrorKind::SubscriptionGroupNotExist,
                format!("subscription group not exist, {group} {GROUP_NOT_EXIST_TIP}"),
            )
        })?;
    if !perm::is_writeable(state.permission()) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!(
                "the broker[{}] sending message is forbidden",
                state.config.advertised_ip()
            ),
        ));
    }
    // A group without retry queues drops what its consumers give up on (Java answers success).
    if group_config.retry_queue_nums <= 0 {
        return Ok(());
    }
    let retry_topic = topic::retry_topic(group);
    let retry_config = state.topics.create_if_absent(
        &retry_topic,
        group_config.retry_queue_nums,
        perm::READ | perm::WRITE,
    );
    if !perm::is_writeable(retry_config.perm) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!("the topic[{retry_topic}] sending message is forbidden"),
        ));
    }
    let look_failed = || {
        Reply::error(
            ErrorKind::SystemError,
            format!("look message by offset failed, {}", request.offset),
        )
    };
    let bytes = state
        .store
        .read_message(request.offset)
        .ok_or_else(look_failed)?;
    let original = Record::decode(&bytes, false).map_err(|_| look_failed())?;

    let mut properties = Properties::decode(&String::from_utf8_lossy(original.properties));
    if !properties.contains(keys::RETRY_TOPIC) {
        properties.insert(keys::RETRY_TOPIC, original.topic);
    }
    properties.insert(keys::WAIT_STORE_MSG_OK, "false");
    let max_reconsume_times = request
        .max_reconsume_times
        .unwrap_or(group_config.retry_max_times);
    let (mut topic_name, mut queue_id) = match retry::send_back(
        original.reconsume_times,
        max_reconsume_times,
        request.delay_level,
    ) {
        SendBack::DeadLetter => {
            if let Some(metrics) = &state.metrics {
                metrics.sent_to_dlq(group, request.origin_topic.as_deref());
            }
            let dlq = topic::dlq_topic(group);
            state
                .topics
                .create_if_absent(&dlq, DLQ_NUMS_PER_GROUP, perm::READ | perm::WRITE);
            properties.insert(keys::DELAY_TIME_LEVEL, "0");
            (dlq, 0)
        }
        SendBack::Retry { delay_level } => {
            properties.insert(keys::DELAY_TIME_LEVEL, delay_level.to_string());
            (retry_topic, random_queue(group_config.retry_queue_nums))
        }
    };
    if properties.get(keys::ORIGIN_MESSAGE_ID).is_none() {
        let id = offset_msg_id(original.store_host, original.physical_offset);
        properties.insert(keys::ORIGIN_MESSAGE_ID, id);
    }
    schedule::to_schedule_topic(
        state.schedule.levels(),
        original.sys_flag,
        &mut topic_name,
        &mut queue_id,
        &mut properties,
    );
    let message = MessageToStore {
        topic: topic_name,
        queue_id,
        flag: original.flag,
        sys_flag: original.sys_flag,
        born_timestamp: original.born_timestamp,
        born_host: original.born_host,
        reconsume_times: original.reconsume_times.saturating_add(1),
        prepared_transaction_offset: 0,
        body: bytes.slice_ref(original.body),
        properties: properties.encode(),
    };
    // `WAIT=false`: Java answers without waiting for a flush.
    state
        .store
        .append_messages(vec![message])
        .map_err(|err| Reply::error(ErrorKind::SystemError, put_status_name(&err)))?;
    state.stats.messages_put(1);
    Ok(())
}

/// Java answers a failed put with the name of its `PutMessageStatus`.
fn put_status_name(err: &PutError) -> &'static str {
    match err {
        PutError::MessageTooLarge { .. } | PutError::InvalidTopic(_) => "MESSAGE_ILLEGAL",
        PutError::PropertiesTooLarge { .. } => "PROPERTIES_SIZE_EXCEEDED",
        PutError::ServiceNotAvailable(_) => "SERVICE_NOT_AVAILABLE",
        PutError::Io(_) => "UNKNOWN_ERROR",
    }
}

fn random_queue(queue_nums: i32) -> i32 {
    if queue_nums <= 1 {
        return 0;
    }
    (rand_u64() % queue_nums as u64) as i32
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_i64(super::now_millis());
    hasher.finish()
}
