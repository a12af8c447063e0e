//! POP consumption (`PopMessageProcessor`, `AckMessageProcessor`,
//! `ChangeInvisibleTimeProcessor`, `PopReviveService`, `NotificationProcessor`,
//! `PeekMessageProcessor`): the thin shell around the pure [`state`] machine.
//!
//! A pop reads the queues like a pull, writes a checkpoint record to the revive log
//! (`rmq_sys_REVIVE_LOG_<cluster>`, one queue per `reviveQueueNum`) and moves the group's offset
//! past what it read; the checkpoint guarantees the messages come back. Acks and changes of
//! invisible time are records of the same log. The revive task (every `reviveInterval`) sends the
//! un-acked messages of expired checkpoints to the POP retry topic `%RETRY%<group>_<topic>` with
//! their reconsume times raised, then writes an ack for them. On start the log is replayed from
//! the revive progress saved in `consumerOffset.json` (group `CID_RMQ_SYS_REVIVE_GROUP`), so
//! un-acked messages survive restart and `kill -9`, and acked ones stay acked.
//!
//! Pops, acks and revives are serialized by one mutex: each holds it while it reads the queue
//! and appends its record, so the state always matches the log order.

mod assignment;
mod holds;
mod log;
pub(crate) mod state;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use skiff_model::command::{ErrorKind, Reply};
use skiff_model::consumer::{SubscriptionData, EXPRESSION_TYPE_TAG};
use skiff_model::message::keys;
use skiff_model::pop::{
    self as model, AckRequest, BatchAck, ExtraInfo, InitMode, NotificationRequest, PeekRequest,
    PopCommand, PopReply, PopRequest, PopResult, PopStatus, ORDER_REVIVE_QUEUE,
};
use skiff_model::record::Record;
use skiff_model::route::perm;
use skiff_store::{GetMessageStatus, MessageToStore};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{now_millis, BrokerState};
use crate::net::{Handled, RequestContext};
pub(crate) use assignment::RequestModeManager;
use holds::PopHolds;
use state::{CkKey, OrderAck, OrderLocks, PopRecord, PopState, QueueKey};

/// Most messages one pop returns (Java refuses more than 32).
const MAX_POP_NUMS: i32 = 32;
/// Bytes one pop reads per queue at most (at least one message is always read).
const MAX_POP_BYTES: usize = 256 * 1024;
/// Checkpoints revived per pass, so one pass never holds the lock long.
const REVIVE_BATCH: usize = 256;
/// `PopMessageRequestHeader.isTimeoutTooMuch`: a request older than its poll time plus this.
const LATE_REQUEST_MS: i64 = 500;

/// POP state and the services around it, owned by the broker.
pub(crate) struct PopService {
    inner: Mutex<Inner>,
    holds: PopHolds,
    pub modes: RequestModeManager,
    revive_topic: String,
    ck_counter: AtomicU64,
}

#[derive(Default)]
struct Inner {
    state: PopState,
    order: OrderLocks,
}

impl PopService {
    pub fn new(config: &crate::config::BrokerConfig) -> Self {
        PopService {
            inner: Mutex::new(Inner::default()),
            holds: PopHolds::default(),
            modes: RequestModeManager::load(config),
            revive_topic: model::revive_topic(&config.broker_cluster_name),
            ck_counter: AtomicU64::new(0),
        }
    }

    /// A message was stored: wake pops and notifications held on its topic.
    pub fn notify_arrival(&self, topic: &str) {
        self.holds.notify(topic);
    }

    /// Releases held pops so they are answered before connections close.
    pub fn shutdown(&self) {
        self.holds.shutdown();
    }
}

pub(super) fn handle(
    state: &Arc<BrokerState>,
    ctx: &RequestContext,
    command: PopCommand,
) -> Handled {
    match command {
        PopCommand::Pop(request) => pop(state, ctx, request),
        PopCommand::Peek(request) => Handled::Now(peek(state, &request)),
        PopCommand::Ack(request) => Handled::Now(ack(state, ctx, &request)),
        PopCommand::BatchAck { acks, .. } => Handled::Now(batch_ack(state, &acks)),
        PopCommand::ChangeInvisibleTime(request) => {
            Handled::Now(change_invisible_time(state, ctx, &request))
        }
        PopCommand::Notification(request) => notification(state, ctx, request),
        PopCommand::QueryAssignment(query) => Handled::Now(assignment::query(state, &query)),
        PopCommand::SetRequestMode(setting) => assignment::set_mode(state, setting),
    }
}

/// The revive log topic exists with `reviveQueueNum` queues, and its records since the saved
/// progress are replayed into the state. Runs before the broker serves.
pub(super) fn recover(state: &BrokerState) {
    let queue_nums = state.config.revive_queue_num;
    state.topics.create_if_absent(
        &state.pop.revive_topic,
        queue_nums,
        perm::READ | perm::WRITE,
    );
    let mut inner = state.pop.inner.lock();
    let mut replayed = 0usize;
    for qid in 0..queue_nums {
        let topic = &state.pop.revive_topic;
        let mut offset = state
            .offsets
            .query(model::REVIVE_GROUP, topic, qid)
            .unwrap_or(0)
            .max(state.store.min_offset_in_queue(topic, qid));
        let max = state.store.max_offset_in_queue(topic, qid);
        while offset < max {
            let found = state
                .store
                .get_messages(topic, qid, offset, 32, usize::MAX, &|_| true);
            if found.messages.is_empty() {
                offset = found.next_begin_offset.max(offset + 1);
                continue;
            }
            for bytes in &found.messages {
                let Ok(record) = Record::decode(bytes, false) else {
                    continue;
                };
                let properties = record.parsed_properties();
                match log::decode(properties.tags(), record.body, qid) {
                    Some(pop_record) => {
                        if let PopRecord::Checkpoint { key, offsets, .. } = &pop_record {
                            // The group's offset was moved past every pop; the saved offsets
                            // may be older than the log after a kill -9.
                            if let Some(last) = offsets.iter().max() {
                                catch_up_offset(state, key, last + 1);
                            }
                        }
                        inner.state.apply(pop_record, qid, record.queue_offset);
                        replayed += 1;
                    }
                    None => warn!(
                        topic,
                        queue = qid,
                        offset = record.queue_offset,
                        "skipping a revive log message that is no POP record"
                    ),
                }
            }
            offset = found.next_begin_offset;
        }
        inner.state.log_ends_at(qid, max);
    }
    let in_flight = inner.state.in_flight_count();
    drop(inner);
    if replayed > 0 {
        info!(replayed, in_flight, "POP revive log replayed");
    }
}

fn catch_up_offset(state: &BrokerState, key: &CkKey, next: i64) {
    let current = state.offsets.query(&key.group, &key.topic, key.queue_id);
    if current.is_none_or(|c| c < next) {
        state
            .offsets
            .commit(&key.group, &key.topic, key.queue_id, next);
    }
}

/// Every `reviveInterval`: re-send what expired, then save the progress.
pub(super) async fn revive_periodically(state: Arc<BrokerState>, shutdown: CancellationToken) {
    let period = Duration::from_millis(state.config.revive_interval.max(10));
    let mut ticker = tokio::time::interval(period);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {
                let state = state.clone();
                // Reads of cold messages and appends: off the async workers.
                let _ = tokio::task::spawn_blocking(move || revive_due(&state, now_millis())).await;
            }
        }
    }
}

/// Re-sends the un-acked messages of every checkpoint due at `now` (`PopReviveService`).
fn revive_due(state: &BrokerState, now: i64) {
    let mut inner = state.pop.inner.lock();
    let due = inner.state.due(now, REVIVE_BATCH);
    for revive in due {
        for &offset in &revive.offsets {
            if let Err(e) = revive_one(state, &revive.key, offset) {
                warn!(group = %revive.key.group, topic = %revive.key.topic, queue = revive.key.queue_id, offset, "cannot revive a POP message, will retry: {e}");
                return;
            }
        }
        let record = PopRecord::Ack {
            key: revive.key,
            offsets: revive.offsets,
        };
        if let Err(reply) = append_record(state, &mut inner.state, record, revive.revive_qid) {
            warn!("cannot write the revive ack, will retry: {reply:?}");
            return;
        }
    }
    for qid in 0..state.config.revive_queue_num {
        let progress = inner.state.progress(qid);
        let topic = &state.pop.revive_topic;
        // Only a change marks the offsets dirty (they are written when dirty).
        if state.offsets.query(model::REVIVE_GROUP, topic, qid) != Some(progress) {
            state
                .offsets
                .commit(model::REVIVE_GROUP, topic, qid, progress);
        }
    }
}

/// Sends one un-acked message to the group's POP retry topic (`reviveRetry`).
fn revive_one(state: &BrokerState, key: &CkKey, offset: i64) -> Result<(), String> {
    let found = state
        .store
        .get_messages(&key.topic, key.queue_id, offset, 1, usize::MAX, &|_| true);
    let Some(bytes) = found.messages.first() else {
        // Gone (retention removed it): nothing to revive, as Java drops it too.
        return Ok(());
    };
    let record = Record::decode(bytes, false).map_err(|e| e.to_string())?;
    if record.queue_offset != offset {
        return Ok(());
    }
    let retry_topic = if skiff_model::topic::is_retry_topic(&key.topic) {
        key.topic.clone()
    } else {
        model::pop_retry_topic(&key.topic, &key.group)
    };
    state
        .topics
        .create_if_absent(&retry_topic, 1, perm::READ | perm::WRITE);
    let mut properties = record.parsed_properties();
    if record.reconsume_times == 0 || properties.get(keys::POP_FIRST_POP_TIME).is_none() {
        properties.insert(keys::POP_FIRST_POP_TIME, key.pop_time.to_string());
    }
    properties.remove(keys::POP_CK);
    let message = MessageToStore {
        reconsume_times: record.reconsume_times.saturating_add(1),
        ..MessageToStore::copy_of(&record, retry_topic, 0, properties.encode())
    };
    state
        .store
        .append_messages(vec![message])
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Appends a record to the revive log and applies it.
fn append_record(
    state: &BrokerState,
    pop_state: &mut PopState,
    record: PopRecord,
    revive_qid: i32,
) -> Result<(), Reply> {
    let (body, properties) = log::encode(&record, &state.config.broker_name);
    let message = MessageToStore {
        topic: state.pop.revive_topic.clone(),
        queue_id: revive_qid,
        flag: 0,
        sys_flag: 0,
        born_timestamp: now_millis(),
        born_host: state.store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::from(body),
        properties,
    };
    // Every revive-log write holds the POP lock, so the record lands at the queue's max offset.
    let log_offset = state
        .store
        .max_offset_in_queue(&state.pop.revive_topic, revive_qid);
    // A sync-flush wait is not awaited: the record is in the page cache, which a process kill
    // does not lose, and a pop must not wait for the disk on every checkpoint.
    if let Err(e) = state.store.append_messages(vec![message]) {
        return Err(Reply::error(
            ErrorKind::SystemError,
            format!("cannot write the POP revive log: {e}"),
        ));
    }
    pop_state.apply(record, revive_qid, log_offset);
    Ok(())
}

// ---------------------------------------------------------------- pop

fn pop(state: &Arc<BrokerState>, ctx: &RequestContext, request: PopRequest) -> Handled {
    let now = now_millis();
    let filter = match check_pop(state, ctx, &request, now) {
        Ok(filter) => filter,
        Err(reply) => return Handled::Now(reply),
    };
    let retry_topic = model::pop_retry_topic(&request.topic, &request.consumer_group);
    // Registered before reading, so an arrival between the read and the wait is not missed.
    let wait =
        (request.poll_time > 0).then(|| state.pop.holds.hold(&[&request.topic, &retry_topic]));
    let result = pop_once(state, &request, &filter);
    let Some(wait) = wait.filter(|_| result.status != PopStatus::Found) else {
        return Handled::Now(Reply::pop(PopReply::Popped(result)));
    };
    let Some(wait) = wait else {
        return Handled::Now(Reply::pop(PopReply::Popped(PopResult {
            status: PopStatus::PollingFull,
            ..result
        })));
    };
    let state = state.clone();
    // Answer a little before the client's own timeout (`pollTime` + its margin).
    let deadline = Duration::from_millis(request.poll_time.clamp(0, 60_000) as u64);
    Handled::Later(Box::pin(async move {
        let _ = tokio::time::timeout(deadline, wait).await;
        Reply::pop(PopReply::Popped(pop_once(&state, &request, &filter)))
    }))
}

/// The checks of `PopMessageProcessor.processRequest`, in its order.
fn check_pop(
    state: &BrokerState,
    ctx: &RequestContext,
    request: &PopRequest,
    now: i64,
) -> Result<SubscriptionData, Reply> {
    let ip = &state.config.advertised_ip();
    if now - request.born_time - request.poll_time > LATE_REQUEST_MS {
        return Err(Reply::error(
            ErrorKind::PollingTimeout,
            format!("the broker[{ip}] pop message is timeout too much"),
        ));
    }
    if !perm::is_readable(state.permission()) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!("the broker[{ip}] pop message is forbidden"),
        ));
    }
    if request.max_msg_nums > MAX_POP_NUMS {
        return Err(Reply::error(
            ErrorKind::InvalidParameter,
            format!("the broker[{ip}] pop message's num is greater than 32"),
        ));
    }
    let topic = &request.topic;
    let Some(config) = state.topics.get(topic) else {
        return Err(Reply::error(
            ErrorKind::TopicNotExist,
            format!("topic[{topic}] not exist, apply first please!"),
        ));
    };
    if !perm::is_readable(config.perm) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!("the topic[{topic}] peeking message is forbidden"),
        ));
    }
    if request.queue_id >= config.read_queue_nums {
        return Err(Reply::error(
            ErrorKind::InvalidParameter,
            format!(
                "queueId[{}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}] consumer:[/{}]",
                request.queue_id,
                config.read_queue_nums,
                ctx.channel.peer()
            ),
        ));
    }
    check_group(state, &request.consumer_group)?;
    let expression_type = request
        .expression_type
        .as_deref()
        .unwrap_or(EXPRESSION_TYPE_TAG);
    if expression_type != EXPRESSION_TYPE_TAG {
        return Err(Reply::error(
            ErrorKind::SubscriptionParseFailed,
            "parse the consumer's subscription failed",
        ));
    }
    Ok(SubscriptionData::from_expression(
        topic,
        EXPRESSION_TYPE_TAG,
        request.expression.as_deref().unwrap_or("*"),
        0,
    ))
}

fn check_group(state: &BrokerState, group: &str) -> Result<(), Reply> {
    let Some(config) = state.groups.find_or_create(group) else {
        return Err(Reply::error(
            ErrorKind::SubscriptionGroupNotExist,
            format!("subscription group [{group}] does not exist"),
        ));
    };
    if !config.consume_enable {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!("subscription group no permission, {group}"),
        ));
    }
    Ok(())
}

/// What one pop collected over the queues it read.
struct Collected {
    messages: Vec<Bytes>,
    start_offset_info: Vec<String>,
    msg_offset_info: Vec<String>,
    order_count_info: Vec<String>,
    rest_num: i64,
}

fn pop_once(state: &BrokerState, request: &PopRequest, filter: &SubscriptionData) -> PopResult {
    let pop_time = now_millis();
    let revive_qid = if request.order {
        ORDER_REVIVE_QUEUE
    } else {
        let n = state.config.revive_queue_num.max(1) as u64;
        (state.pop.ck_counter.fetch_add(1, Ordering::Relaxed) % n) as i32
    };
    let random = (pop_time.rem_euclid(100)) as i32;
    let retry_first = random < state.config.pop_from_retry_probability as i32;
    let retry_topic = model::pop_retry_topic(&request.topic, &request.consumer_group);
    let mut got = Collected {
        messages: Vec::new(),
        start_offset_info: Vec::new(),
        msg_offset_info: Vec::new(),
        order_count_info: Vec::new(),
        rest_num: 0,
    };
    let mut inner = state.pop.inner.lock();
    let ctx = PopContext {
        state,
        request,
        filter,
        pop_time,
        revive_qid,
    };
    if retry_first && !request.order {
        ctx.pop_topic(&mut inner, &retry_topic, true, random, &mut got);
    }
    if request.queue_id < 0 {
        ctx.pop_topic(&mut inner, &request.topic, false, random, &mut got);
    } else {
        ctx.pop_queue(
            &mut inner,
            &request.topic,
            request.queue_id,
            false,
            &mut got,
        );
    }
    if !retry_first && !request.order && (got.messages.len() as i32) < request.max_msg_nums {
        ctx.pop_topic(&mut inner, &retry_topic, true, random, &mut got);
    }
    drop(inner);
    state.stats.messages_got(got.messages.len() as u64);
    PopResult {
        status: if got.messages.is_empty() {
            PopStatus::NotFound
        } else {
            PopStatus::Found
        },
        pop_time,
        invisible_time: request.invisible_time,
        revive_qid,
        rest_num: got.rest_num,
        start_offset_info: got.start_offset_info.join(";"),
        msg_offset_info: got.msg_offset_info.join(";"),
        order_count_info: request.order.then(|| got.order_count_info.join(";")),
        messages: got.messages,
    }
}

struct PopContext<'a> {
    state: &'a BrokerState,
    request: &'a PopRequest,
    filter: &'a SubscriptionData,
    pop_time: i64,
    revive_qid: i32,
}

impl PopContext<'_> {
    fn pop_topic(
        &self,
        inner: &mut Inner,
        topic: &str,
        retry: bool,
        random: i32,
        got: &mut Collected,
    ) {
        let Some(config) = self.state.topics.get(topic) else {
            return;
        };
        let n = config.read_queue_nums.max(0);
        for i in 0..n {
            let queue_id = (random + i) % n;
            self.pop_queue(inner, topic, queue_id, retry, got);
        }
    }

    /// `popMsgFromQueue`.
    fn pop_queue(
        &self,
        inner: &mut Inner,
        topic: &str,
        queue_id: i32,
        retry: bool,
        got: &mut Collected,
    ) {
        let state = self.state;
        let group = &self.request.consumer_group;
        let mut offset = pop_offset(state, group, topic, queue_id, self.request.init_mode);
        let queue_key: QueueKey = (group.clone(), topic.to_string(), queue_id);
        let max_offset = state.store.max_offset_in_queue(topic, queue_id);
        if self.request.order
            && inner.order.is_blocked(
                &queue_key,
                self.request.attempt_id.as_deref(),
                self.pop_time,
            )
        {
            return;
        }
        let wanted = self.request.max_msg_nums.max(1) - got.messages.len() as i32;
        if wanted <= 0 {
            got.rest_num += (max_offset - offset).max(0);
            return;
        }
        let read = |offset: i64| {
            state
                .store
                .get_messages(topic, queue_id, offset, wanted, MAX_POP_BYTES, &|code| {
                    retry || self.filter.matches_tags_code(code)
                })
        };
        let mut found = read(offset);
        if matches!(
            found.status,
            GetMessageStatus::OffsetTooSmall
                | GetMessageStatus::OffsetOverflowBadly
                | GetMessageStatus::OffsetFoundNull
        ) {
            // The saved offset is outside the queue: start again where the store says.
            offset = found.next_begin_offset;
            state.offsets.commit(group, topic, queue_id, offset);
            found = read(offset);
        }
        got.rest_num += (found.max_offset - found.next_begin_offset).max(0);
        if found.messages.is_empty() {
            if matches!(
                found.status,
                GetMessageStatus::NoMatchedMessage | GetMessageStatus::MessageWasRemoving
            ) && found.next_begin_offset > offset
            {
                // Nothing matched the filter: nothing to come back, move on.
                state
                    .offsets
                    .commit(group, topic, queue_id, found.next_begin_offset);
            }
            return;
        }
        let offsets: Vec<i64> = found
            .messages
            .iter()
            .map(|m| Record::decode(m, false).map_or(-1, |r| r.queue_offset))
            .collect();
        let mark = model::retry_mark(topic);
        if self.request.order {
            let counts = inner.order.popped(
                queue_key,
                self.pop_time,
                self.request.invisible_time,
                &offsets,
                self.request.attempt_id.clone(),
            );
            // As `ConsumerOrderInfoManager.update`: an entry per offset popped before, then the
            // queue's least count (what older clients read).
            let mut least = i32::MAX;
            for (o, count) in counts {
                if count > 0 {
                    got.order_count_info
                        .push(format!("{mark} qo{queue_id}%{o} {count}"));
                }
                least = least.min(count);
            }
            got.order_count_info
                .push(format!("{mark} {queue_id} {least}"));
        } else {
            let record = PopRecord::Checkpoint {
                key: CkKey {
                    group: group.clone(),
                    topic: topic.to_string(),
                    queue_id,
                    start_offset: offset,
                    pop_time: self.pop_time,
                },
                invisible_time: self.request.invisible_time,
                revive_qid: self.revive_qid,
                offsets: offsets.clone(),
            };
            if let Err(reply) = append_record(state, &mut inner.state, record, self.revive_qid) {
                warn!("POP checkpoint not written, messages stay in the queue: {reply:?}");
                return;
            }
            state
                .offsets
                .commit(group, topic, queue_id, found.next_begin_offset);
        }
        got.start_offset_info
            .push(format!("{mark} {queue_id} {offset}"));
        got.msg_offset_info.push(format!(
            "{mark} {queue_id} {}",
            offsets
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ));
        for message in found.messages {
            if retry {
                got.messages.push(self.as_origin_topic(&message, offset));
            } else {
                got.messages.push(message);
            }
        }
    }

    /// A retried message as the client expects it (`popResponseReturnActualRetryTopic` off): the
    /// origin topic, and its `POP_CK` already set (the client cannot build it from the topic).
    fn as_origin_topic(&self, message: &Bytes, start_offset: i64) -> Bytes {
        let Ok(record) = Record::decode(message, false) else {
            return message.clone();
        };
        let mut properties = record.parsed_properties();
        if properties.get(keys::POP_CK).is_none() {
            let info = ExtraInfo {
                ck_offset: start_offset,
                pop_time: self.pop_time,
                invisible_time: self.request.invisible_time,
                revive_qid: self.revive_qid,
                retry_mark: model::retry_mark(record.topic).to_string(),
                broker_name: self.state.config.broker_name.clone(),
                queue_id: record.queue_id,
                queue_offset: Some(record.queue_offset),
            };
            properties.insert(keys::POP_CK, info.to_string());
        }
        let encoded = properties.encode();
        let mut fields = record.to_fields();
        fields.topic = &self.request.topic;
        fields.properties = &encoded;
        let mut out = BytesMut::with_capacity(fields.encoded_len());
        match fields.encode(&mut out) {
            Ok(()) => out.freeze(),
            Err(_) => message.clone(),
        }
    }
}

/// Where a group pops a queue from: its offset, or where a new group starts (`getInitOffset`).
fn pop_offset(state: &BrokerState, group: &str, topic: &str, queue_id: i32, init: InitMode) -> i64 {
    if let Some(offset) = state.offsets.query(group, topic, queue_id) {
        if offset >= 0 {
            return offset;
        }
    }
    let min = state.store.min_offset_in_queue(topic, queue_id);
    let offset = if init == InitMode::Min || skiff_model::topic::is_retry_topic(topic) {
        min
    } else if min <= 0 && state.store.is_in_memory(topic, queue_id, 0) {
        // `initPopOffsetByCheckMsgInMem`: a queue whose first message is still in memory is
        // read from its start.
        0
    } else {
        (state.store.max_offset_in_queue(topic, queue_id) - 1).max(0)
    };
    state.offsets.commit(group, topic, queue_id, offset);
    offset
}

// ---------------------------------------------------------------- peek

fn peek(state: &BrokerState, request: &PeekRequest) -> Reply {
    let topic = &request.queue.topic;
    let Some(config) = state.topics.get(topic) else {
        return Reply::error(
            ErrorKind::TopicNotExist,
            format!("topic[{topic}] not exist, apply first please!"),
        );
    };
    if request.queue.queue_id >= config.read_queue_nums {
        return Reply::error(
            ErrorKind::InvalidParameter,
            format!(
                "queueId[{}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}]",
                request.queue.queue_id, config.read_queue_nums
            ),
        );
    }
    if let Err(reply) = check_group(state, &request.consumer_group) {
        return reply;
    }
    let queues: Vec<i32> = if request.queue.queue_id < 0 {
        (0..config.read_queue_nums).collect()
    } else {
        vec![request.queue.queue_id]
    };
    let mut messages = Vec::new();
    for queue_id in queues {
        let wanted = request.max_msg_nums.clamp(1, MAX_POP_NUMS) - messages.len() as i32;
        if wanted <= 0 {
            break;
        }
        let offset = state
            .offsets
            .query(&request.consumer_group, topic, queue_id)
            .unwrap_or_else(|| state.store.min_offset_in_queue(topic, queue_id));
        let found =
            state
                .store
                .get_messages(topic, queue_id, offset, wanted, MAX_POP_BYTES, &|_| true);
        messages.extend(found.messages);
    }
    Reply::pop(PopReply::Peeked(messages))
}

// ---------------------------------------------------------------- ack and change

/// The checks an ack and a change of invisible time share: the queue exists and the offset is in
/// it; then the parsed `extraInfo`.
fn check_ack(
    state: &BrokerState,
    ctx: &RequestContext,
    request: &AckRequest,
    change: bool,
) -> Result<ExtraInfo, Reply> {
    let topic = &request.queue.topic;
    let queue_id = request.queue.queue_id;
    let Some(config) = state.topics.get(topic) else {
        return Err(Reply::error(
            ErrorKind::TopicNotExist,
            format!("topic[{topic}] not exist, apply first please!"),
        ));
    };
    if queue_id < 0 || queue_id >= config.read_queue_nums {
        return Err(Reply::error(
            ErrorKind::MessageIllegal,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}] consumer:[/{}]",
                config.read_queue_nums,
                ctx.channel.peer()
            ),
        ));
    }
    let min = state.store.min_offset_in_queue(topic, queue_id);
    let max = state.store.max_offset_in_queue(topic, queue_id);
    let out_of_range = if change {
        request.offset < min || request.offset >= max
    } else {
        request.offset < min || request.offset > max
    };
    if out_of_range {
        return Err(Reply::error(
            ErrorKind::NoMessage,
            format!(
                "offset is illegal, key:{topic}@{queue_id}, commit:{}, store:{min}~{max}",
                request.offset
            ),
        ));
    }
    // Java's ExtraInfoUtil throws on a malformed handle; the remoting layer answers
    // SYSTEM_ERROR with the exception's text. The fields are checked in the order Java reads
    // them: an ack reads the broker name first, a change first asks whether it is orderly.
    let order: &[usize] = if change {
        &[3, 0, 1, 2, 5, 4, 6]
    } else {
        &[5, 3, 0, 1, 2, 4, 6]
    };
    ExtraInfo::parse_checking(&request.extra_info, order).map_err(|e| {
        Reply::error(
            ErrorKind::SystemError,
            if e.starts_with("java.") {
                e
            } else {
                format!("java.lang.IllegalArgumentException: {e}")
            },
        )
    })
}

fn ack(state: &BrokerState, ctx: &RequestContext, request: &AckRequest) -> Reply {
    let info = match check_ack(state, ctx, request, false) {
        Ok(info) => info,
        Err(reply) => return reply,
    };
    if info.is_order() {
        return ack_orderly(state, ctx, request, info.pop_time);
    }
    let key = CkKey {
        group: request.consumer_group.clone(),
        topic: request.queue.topic.clone(),
        queue_id: request.queue.queue_id,
        start_offset: info.ck_offset,
        pop_time: info.pop_time,
    };
    ack_offsets(state, key, info.revive_qid, vec![request.offset])
}

/// Acks what is in flight of a checkpoint. An ack that names no live checkpoint is answered
/// with success and not written, as Java's revive would ignore it.
fn ack_offsets(state: &BrokerState, key: CkKey, revive_qid: i32, offsets: Vec<i64>) -> Reply {
    let mut inner = state.pop.inner.lock();
    let live: Vec<i64> = offsets
        .into_iter()
        .filter(|o| inner.state.is_in_flight(&key, *o))
        .collect();
    if live.is_empty() {
        return Reply::Success;
    }
    match append_record(
        state,
        &mut inner.state,
        PopRecord::Ack { key, offsets: live },
        revive_qid,
    ) {
        Ok(()) => Reply::Success,
        Err(reply) => reply,
    }
}

fn ack_orderly(
    state: &BrokerState,
    ctx: &RequestContext,
    request: &AckRequest,
    pop_time: i64,
) -> Reply {
    let group = &request.consumer_group;
    let topic = &request.queue.topic;
    let queue_id = request.queue.queue_id;
    let old = state.offsets.query(group, topic, queue_id).unwrap_or(-1);
    if request.offset < old {
        return Reply::Success;
    }
    let key: QueueKey = (group.clone(), topic.clone(), queue_id);
    let mut inner = state.pop.inner.lock();
    match inner.order.ack(&key, request.offset, pop_time) {
        OrderAck::Commit(next) => {
            if next > old {
                state.offsets.commit(group, topic, queue_id, next);
            }
            drop(inner);
            state.pop.holds.notify(topic);
            Reply::Success
        }
        OrderAck::Pending => Reply::Success,
        OrderAck::Illegal => Reply::error(
            ErrorKind::MessageIllegal,
            format!(
                "offset is illegal, key:{topic}@{group}@{queue_id}, old:{old}, commit:{}, next:-1, /{}",
                request.offset,
                ctx.channel.peer()
            ),
        ),
    }
}

fn batch_ack(state: &BrokerState, acks: &[BatchAck]) -> Reply {
    if acks.is_empty() {
        return Reply::error(ErrorKind::NoMessage, "");
    }
    for ack in acks {
        let topic = model::real_topic(&ack.topic, &ack.consumer_group, &ack.retry);
        let min = state.store.min_offset_in_queue(&topic, ack.queue_id);
        let max = state.store.max_offset_in_queue(&topic, ack.queue_id);
        let offsets: Vec<i64> = ack
            .offset_diffs
            .iter()
            .map(|d| ack.start_offset.saturating_add(i64::from(*d)))
            .filter(|o| *o >= min && *o <= max)
            .collect();
        if ack.revive_queue_id == ORDER_REVIVE_QUEUE {
            let key: QueueKey = (ack.consumer_group.clone(), topic.clone(), ack.queue_id);
            let mut inner = state.pop.inner.lock();
            for offset in offsets {
                if let OrderAck::Commit(next) = inner.order.ack(&key, offset, ack.pop_time) {
                    let old = state
                        .offsets
                        .query(&key.0, &topic, ack.queue_id)
                        .unwrap_or(-1);
                    if next > old {
                        state.offsets.commit(&key.0, &topic, ack.queue_id, next);
                    }
                }
            }
            continue;
        }
        let key = CkKey {
            group: ack.consumer_group.clone(),
            topic,
            queue_id: ack.queue_id,
            start_offset: ack.start_offset,
            pop_time: ack.pop_time,
        };
        if let Reply::Error(e) = ack_offsets(state, key, ack.revive_queue_id, offsets) {
            return Reply::Error(e);
        }
    }
    Reply::Success
}

fn change_invisible_time(state: &BrokerState, ctx: &RequestContext, request: &AckRequest) -> Reply {
    let info = match check_ack(state, ctx, request, true) {
        Ok(info) => info,
        Err(reply) => return reply,
    };
    let invisible_time = request.invisible_time.unwrap_or(0);
    let now = now_millis();
    let group = &request.consumer_group;
    let topic = &request.queue.topic;
    let queue_id = request.queue.queue_id;
    if info.is_order() {
        let key: QueueKey = (group.clone(), topic.clone(), queue_id);
        let visible_at = now.saturating_add(invisible_time);
        let old = state.offsets.query(group, topic, queue_id).unwrap_or(-1);
        if request.offset >= old {
            state
                .pop
                .inner
                .lock()
                .order
                .change_visible_at(&key, info.pop_time, visible_at);
        }
        return Reply::pop(PopReply::InvisibleTimeChanged {
            pop_time: info.pop_time,
            invisible_time: visible_at.saturating_sub(info.pop_time),
            revive_qid: info.revive_qid,
        });
    }
    let old_key = CkKey {
        group: group.clone(),
        topic: topic.clone(),
        queue_id,
        start_offset: info.ck_offset,
        pop_time: info.pop_time,
    };
    let mut inner = state.pop.inner.lock();
    // Only a message still in flight gets a new checkpoint: one already acked or revived must
    // not come back because of a late change.
    if inner.state.is_in_flight(&old_key, request.offset) {
        let revive_qid = info.revive_qid;
        let new_ck = PopRecord::Checkpoint {
            key: CkKey {
                group: group.clone(),
                topic: topic.clone(),
                queue_id,
                start_offset: request.offset,
                pop_time: now,
            },
            invisible_time,
            revive_qid,
            offsets: vec![request.offset],
        };
        let ack_old = PopRecord::Ack {
            key: old_key,
            offsets: vec![request.offset],
        };
        for record in [new_ck, ack_old] {
            if let Err(reply) = append_record(state, &mut inner.state, record, revive_qid) {
                return reply;
            }
        }
    }
    Reply::pop(PopReply::InvisibleTimeChanged {
        pop_time: now,
        invisible_time,
        revive_qid: info.revive_qid,
    })
}

// ---------------------------------------------------------------- notification

fn notification(
    state: &Arc<BrokerState>,
    ctx: &RequestContext,
    request: NotificationRequest,
) -> Handled {
    let topic = &request.topic;
    let Some(config) = state.topics.get(topic) else {
        return Handled::Now(Reply::error(
            ErrorKind::TopicNotExist,
            format!("topic[{topic}] not exist, apply first please!"),
        ));
    };
    if request.queue_id >= config.read_queue_nums {
        return Handled::Now(Reply::error(
            ErrorKind::InvalidParameter,
            format!(
                "queueId[{}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}] consumer:[/{}]",
                request.queue_id,
                config.read_queue_nums,
                ctx.channel.peer()
            ),
        ));
    }
    if let Err(reply) = check_group(state, &request.consumer_group) {
        return Handled::Now(reply);
    }
    let retry_topic = model::pop_retry_topic(topic, &request.consumer_group);
    let wait = (request.poll_time > 0).then(|| state.pop.holds.hold(&[topic, &retry_topic]));
    if has_message(state, &request) {
        return Handled::Now(notified(true, false));
    }
    let Some(wait) = wait else {
        return Handled::Now(notified(false, false));
    };
    let Some(wait) = wait else {
        return Handled::Now(notified(false, true));
    };
    let state = state.clone();
    let deadline = Duration::from_millis(request.poll_time.clamp(0, 60_000) as u64);
    Handled::Later(Box::pin(async move {
        let _ = tokio::time::timeout(deadline, wait).await;
        notified(has_message(&state, &request), false)
    }))
}

fn notified(has_msg: bool, polling_full: bool) -> Reply {
    Reply::pop(PopReply::Notified {
        has_msg,
        polling_full,
    })
}

/// Whether a pop by the group would find something (ignoring filters, as Java's notification).
fn has_message(state: &BrokerState, request: &NotificationRequest) -> bool {
    let group = &request.consumer_group;
    let backlog = |topic: &str, queue_id: i32| {
        let max = state.store.max_offset_in_queue(topic, queue_id);
        let at = state
            .offsets
            .query(group, topic, queue_id)
            .unwrap_or_else(|| state.store.min_offset_in_queue(topic, queue_id));
        max > at
    };
    let queues = |topic: &str| state.topics.get(topic).map_or(0, |c| c.read_queue_nums);
    let retry = model::pop_retry_topic(&request.topic, group);
    if (0..queues(&retry)).any(|q| backlog(&retry, q)) {
        return true;
    }
    if request.queue_id >= 0 {
        backlog(&request.topic, request.queue_id)
    } else {
        (0..queues(&request.topic)).any(|q| backlog(&request.topic, q))
    }
}
