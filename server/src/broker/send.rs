//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (`SendMessageProcessor`).
//!
//! Checks come first and answer at once, with the response codes and remarks the Java broker
//! uses: topic name rules, forbidden system topics, auto-creation from the template topic, queue
//! id range, retry-topic bookkeeping. Then the messages get their broker-side properties
//! (`UNIQ_KEY` when missing, `CLUSTER`) and go to the store; the reply waits for the flush the
//! configuration promises.

use super::metrics::MessageType;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use skiff_model::command::{ErrorKind, Reply, SendRequest, SendResult, SendStatus};
use skiff_model::message::{keys, sys_flag, Message, Properties};
use skiff_model::record::offset_msg_id;
use skiff_model::retry::{self, DLQ_NUMS_PER_GROUP};
use skiff_model::route::{perm, TopicConfig, TopicFilterType};
use skiff_model::topic;
use skiff_store::{MessageToStore, Put, PutError, PutResult, PutStatus};

use super::ha::acks::ReplicaAcks;
use super::logical_queues::{not_leader, Addressed, LogicalQueue};
use super::timer;
use super::transaction;
use super::uniq_id::UniqIdGenerator;
use super::{core, now_millis, schedule, send_back, BrokerState};
use crate::config::BrokerRole;
use crate::net::{Handled, RequestContext};

pub(super) fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext,
    mut request: SendRequest,
) -> Handled {
    // A static topic's logical queue: the message goes to the leader's physical queue here.
    let logical = match state
        .static_topics
        .address_send(&request.topic, request.queue_id)
    {
        Addressed::Physical => None,
        Addressed::NotLeader { here } => {
            return Handled::Now(not_leader(&request.topic, request.queue_id, &here))
        }
        Addressed::Logical(queue) => {
            request.queue_id = queue.leader().queue_id;
            Some(queue)
        }
    };
    // Only with metrics on: the labels the send is counted under once stored.
    let counted = state.metrics.as_ref().and_then(|_| {
        let first = request.messages.first()?;
        Some((request.topic.clone(), MessageType::of(&first.properties)))
    });
    let prepared = match prepare(state, ctx, request) {
        Ok(prepared) => prepared,
        Err(reply) => return Handled::Now(reply),
    };
    // Appended here, on the connection's reader, so sends keep their arrival order; only what
    // must wait (a new topic's registration, a sync flush) runs on a task of its own.
    let replicas = replicas_to_wait_for(state, &prepared.messages);
    let put = match core::append(state, prepared.messages) {
        Ok(put) => put,
        Err(err) => return Handled::Now(put_error_reply(&err)),
    };
    let reply = ReplyParts {
        topic: prepared.topic,
        queue_id: prepared.queue_id,
        transaction_id: prepared.transaction_id,
        counted,
        logical,
    };
    match (put, prepared.created_topic, replicas) {
        (Put::Done(result), false, None) => Handled::Now(reply.sent(state, result, true)),
        (put, created_topic, replicas) => {
            let state = state.clone();
            Handled::Later(Box::pin(async move {
                if created_topic {
                    // As Java: the name servers know a new topic before its first send is answered.
                    state.name_servers.register_changed(&state).await;
                }
                let stored = match &put {
                    Put::Done(result) => &result.messages,
                    Put::AwaitFlush(wait) => wait.messages(),
                };
                let end = stored
                    .iter()
                    .map(|m| m.physical_offset + i64::from(m.size))
                    .max()
                    .unwrap_or(0);
                // The flush and the slaves are waited for together, as Java's
                // `handleDiskFlushAndHA` does.
                let replicated = async {
                    match &replicas {
                        Some(acks) => {
                            let timeout = Duration::from_millis(state.config.slave_timeout);
                            acks.wait_for(end, timeout).await
                        }
                        None => true,
                    }
                };
                let flushed = async {
                    match put {
                        Put::Done(result) => result,
                        Put::AwaitFlush(wait) => wait.wait().await,
                    }
                };
                let (result, replicated) = tokio::join!(flushed, replicated);
                reply.sent(&state, result, replicated)
            }))
        }
    }
}

/// Java's `needHandleHA`: a SYNC_MASTER with `inSyncReplicas` ≥ 2 answers a send only once
/// enough slaves hold it, unless the message says `WAIT=false`.
fn replicas_to_wait_for(
    state: &BrokerState,
    messages: &[MessageToStore],
) -> Option<Arc<ReplicaAcks>> {
    let acks = state.replicas.as_ref().filter(|acks| acks.waits())?;
    if state.config.broker_role != BrokerRole::SyncMaster {
        return None;
    }
    let waits = messages
        .first()
        .is_none_or(|m| Properties::find(&m.properties, keys::WAIT_STORE_MSG_OK) != Some("false"));
    waits.then(|| acks.clone())
}

/// What the reply to a stored send needs besides the store's answer.
struct ReplyParts {
    /// The topic sent to, for the traffic statistics.
    topic: String,
    queue_id: i32,
    transaction_id: Option<String>,
    /// Topic and type for `rocketmq_messages_in_total` (metrics on).
    counted: Option<(String, MessageType)>,
    /// The logical queue sent to, whose id and offsets the reply shows.
    logical: Option<LogicalQueue>,
}

impl ReplyParts {
    /// `replicated`: the slaves a SYNC_MASTER waits for hold the messages (always true
    /// otherwise); when they do not, FLUSH_SLAVE_TIMEOUT overrides the flush status, as in Java.
    fn sent(self, state: &BrokerState, result: PutResult, replicated: bool) -> Reply {
        let bytes: u64 = result.messages.iter().map(|m| m.size.max(0) as u64).sum();
        let count = result.messages.len() as u64;
        state.traffic.messages_put(&self.topic, count, bytes);
        if let (Some(metrics), Some((topic, kind))) = (&state.metrics, &self.counted) {
            metrics.messages_in(topic, *kind, count, bytes);
        }
        let mut queue_offset = result.messages.first().map_or(0, |m| m.queue_offset);
        let mut queue_id = self.queue_id;
        if let Some(logical) = &self.logical {
            queue_id = logical.global_id;
            queue_offset = logical.sent_offset(queue_offset);
        }
        Reply::Sent(SendResult {
            status: match result.status {
                _ if !replicated => SendStatus::FlushSlaveTimeout,
                PutStatus::Ok => SendStatus::Ok,
                PutStatus::FlushDiskTimeout => SendStatus::FlushDiskTimeout,
            },
            msg_ids: result
                .messages
                .iter()
                .map(|m| offset_msg_id(state.store_host, m.physical_offset))
                .collect(),
            queue_id,
            queue_offset,
            transaction_id: self.transaction_id,
            region_id: state.config.region_id.clone(),
            trace_on: state.config.trace_on,
        })
    }
}

/// What goes to the store, and what the reply needs besides the store's answer.
struct Prepared {
    /// The topic the client sent to (what the statistics count under).
    topic: String,
    messages: Vec<MessageToStore>,
    queue_id: i32,
    transaction_id: Option<String>,
    /// The send created a topic (auto-create, retry or DLQ topic).
    created_topic: bool,
}

fn prepare(
    state: &BrokerState,
    ctx: &RequestContext,
    request: SendRequest,
) -> Result<Prepared, Reply> {
    let config = &state.config;
    if !perm::is_writeable(state.permission()) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!(
                "the broker[{}] sending message is forbidden",
                state.broker_addr
            ),
        ));
    }
    if let Err(remark) = topic::validate_topic(&request.topic) {
        return Err(Reply::error(ErrorKind::InvalidParameter, remark));
    }
    if topic::is_not_allowed_send_topic(&request.topic) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!("Sending message to topic[{}] is forbidden.", request.topic),
        ));
    }
    if request.batch {
        if request.topic.len() > i8::MAX as usize {
            return Err(Reply::error(
                ErrorKind::MessageIllegal,
                format!("message topic length too long {}", request.topic.len()),
            ));
        }
        if topic::is_retry_topic(&request.topic) {
            return Err(Reply::error(
                ErrorKind::MessageIllegal,
                format!(
                    "batch request does not support retry group {}",
                    request.topic
                ),
            ));
        }
    }
    // Java 5.x fails on a missing body with a system error; clients never send one.
    if request.messages.is_empty() || request.messages.iter().any(|m| m.body.is_empty()) {
        return Err(Reply::error(
            ErrorKind::SystemError,
            "the message body is empty",
        ));
    }
    let topics_version = state.topics.version();
    let mut topic_config = find_or_create_topic(state, &request)?;
    if !perm::is_writeable(topic_config.perm) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!("the topic[{}] sending message is forbidden", request.topic),
        ));
    }
    let valid_ids = topic_config
        .write_queue_nums
        .max(topic_config.read_queue_nums);
    if request.queue_id >= valid_ids {
        return Err(Reply::error(
            ErrorKind::InvalidParameter,
            format!(
                "request queueId[{}] is illegal, topic:[{}] writeQueueNums:[{}] readQueueNums:[{}] Producer: {}",
                request.queue_id,
                request.topic,
                topic_config.write_queue_nums,
                topic_config.read_queue_nums,
                ctx.channel.peer()
            ),
        ));
    }
    let mut topic_name = request.topic.clone();
    let mut queue_id = if request.queue_id < 0 {
        random_queue(topic_config.write_queue_nums)
    } else {
        request.queue_id
    };
    let mut messages = request.messages;

    // A consumer (or the client's fallback) sending a failed message back to %RETRY%group:
    // past the retry limit it goes to the group's dead-letter topic instead, and so does every
    // message of a group that holds live queue locks (an orderly group), as Java's
    // `handleRetryAndDLQ`: the orderly client sends back only what it has given up on.
    if topic::is_retry_topic(&topic_name) {
        let group = &topic_name[topic::RETRY_GROUP_TOPIC_PREFIX.len()..];
        let Some(group_config) = state.groups.find_or_create(group) else {
            return Err(Reply::error(
                ErrorKind::SubscriptionGroupNotExist,
                format!(
                    "subscription group not exist, {group} {}",
                    send_back::GROUP_NOT_EXIST_TIP
                ),
            ));
        };
        let max_reconsume_times = request
            .max_reconsume_times
            .unwrap_or(group_config.retry_max_times);
        let orderly = !state.locks.is_lock_all_expired(group, now_millis());
        if orderly
            || retry::retry_send_goes_to_dead_letters(request.reconsume_times, max_reconsume_times)
        {
            topic_name = topic::dlq_topic(group);
            queue_id = random_queue(DLQ_NUMS_PER_GROUP);
            topic_config = state.topics.create_if_absent(
                &topic_name,
                DLQ_NUMS_PER_GROUP,
                perm::READ | perm::WRITE,
            );
            for message in &mut messages {
                message.properties.insert(keys::DELAY_TIME_LEVEL, "-1");
            }
        }
    }

    let mut flags = request.sys_flag;
    if topic_config.topic_filter_type == TopicFilterType::MultiTag {
        flags |= sys_flag::MULTI_TAGS;
    }
    // The first phase of a transaction: stored as a half message until the producer decides.
    let prepared = !request.batch
        && transaction::is_prepared(&messages[0].properties, request.reconsume_times);
    if prepared {
        if config.reject_transaction_message {
            let ip = state.broker_addr.rsplit_once(':').map_or("", |(ip, _)| ip);
            return Err(Reply::error(
                ErrorKind::NoPermission,
                format!("the broker[{ip}] sending transaction message is forbidden"),
            ));
        }
        state.topics.create_if_absent(
            skiff_model::transaction::HALF_TOPIC,
            1,
            perm::READ | perm::WRITE,
        );
    }

    // A delayed send waits in SCHEDULE_TOPIC_XXXX; the reply names the queue it was sent to.
    let reply_queue_id = queue_id;
    if !request.batch {
        schedule::to_schedule_topic(
            state.schedule.levels(),
            flags,
            &mut topic_name,
            &mut queue_id,
            &mut messages[0].properties,
        );
    }

    let born_host = ctx.channel.peer();
    let now = now_millis();
    let transaction_id = (!request.batch)
        .then(|| messages[0].properties.uniq_key().map(str::to_string))
        .flatten();
    let to_store = messages
        .into_iter()
        .map(|message: Message| {
            let mut properties = message.properties;
            core::stamp(state, &mut properties, now);
            let (topic, queue_id) = timer::redirect(
                &state.config,
                request.batch,
                flags,
                &mut properties,
                &topic_name,
                queue_id,
                now,
            )?;
            let mut to_store = MessageToStore {
                topic,
                queue_id,
                flag: message.flag,
                sys_flag: flags,
                born_timestamp: request.born_timestamp,
                born_host,
                reconsume_times: request.reconsume_times,
                prepared_transaction_offset: 0,
                body: message.body,
                properties: String::new(),
            };
            if prepared {
                transaction::into_half(&mut to_store, &mut properties);
            }
            to_store.properties = properties.encode();
            Ok(to_store)
        })
        .collect::<Result<_, Reply>>()?;
    Ok(Prepared {
        topic: request.topic,
        messages: to_store,
        queue_id: reply_queue_id,
        transaction_id,
        created_topic: state.topics.version() != topics_version,
    })
}

fn find_or_create_topic(state: &BrokerState, request: &SendRequest) -> Result<TopicConfig, Reply> {
    if let Some(found) = state.topics.get(&request.topic) {
        return Ok(found);
    }
    let created = request.auto_create.as_ref().and_then(|auto| {
        state
            .topics
            .create_from_template(&request.topic, &auto.template_topic, auto.queue_nums, 0)
    });
    let created = created.or_else(|| {
        topic::is_retry_topic(&request.topic).then(|| {
            state
                .topics
                .create_if_absent(&request.topic, 1, perm::READ | perm::WRITE)
        })
    });
    created.ok_or_else(|| {
        Reply::error(
            ErrorKind::TopicNotExist,
            format!(
                "topic[{}] not exist, apply first please! (create it with an admin tool, or enable autoCreateTopicEnable)",
                request.topic
            ),
        )
    })
}

/// The reply for a store refusal, with the Java broker's codes and remarks.
fn put_error_reply(err: &PutError) -> Reply {
    match err {
        PutError::MessageTooLarge { .. }
        | PutError::PropertiesTooLarge { .. }
        | PutError::InvalidTopic(_) => Reply::error(ErrorKind::MessageIllegal, err.to_string()),
        PutError::ServiceNotAvailable(_) => {
            Reply::error(ErrorKind::ServiceNotAvailable, err.to_string())
        }
        PutError::Io(_) => Reply::error(ErrorKind::SystemError, err.to_string()),
    }
}

fn random_queue(queue_nums: i32) -> i32 {
    use std::hash::{BuildHasher, Hasher};
    if queue_nums <= 1 {
        return 0;
    }
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_i64(now_millis());
    (hasher.finish() % queue_nums as u64) as i32
}

pub(super) fn uniq_id_generator(broker_addr: &str) -> &'static UniqIdGenerator {
    static GENERATOR: OnceLock<UniqIdGenerator> = OnceLock::new();
    GENERATOR.get_or_init(|| {
        let ip = broker_addr
            .rsplit_once(':')
            .and_then(|(ip, _)| ip.parse::<IpAddr>().ok())
            .and_then(|ip| match ip {
                IpAddr::V4(v4) => Some(v4),
                IpAddr::V6(_) => None,
            })
            .unwrap_or(Ipv4Addr::LOCALHOST);
        UniqIdGenerator::new(ip)
    })
}
