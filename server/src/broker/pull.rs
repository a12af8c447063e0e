//! PULL_MESSAGE and LITE_PULL_MESSAGE (`PullMessageProcessor`).
//!
//! A pull is checked (group, topic, queue, subscription), its piggybacked commit offset is
//! recorded, and the queue is read with the subscription's tag filter, then its SQL92 expression
//! over each record's properties (see `property_filter`). When nothing is there and
//! the client allows it, the pull is held (long polling) until a message arrives on the queue or
//! the suspend timeout passes, and then read once more.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use skiff_model::command::{
    ErrorKind, PullRequest, PullResult, PullStatus, QueueRef, Reply, Request,
};
use skiff_model::consumer::{ConsumeType, SubscriptionData};
use skiff_model::filter::Selector;
use skiff_model::record;
use skiff_model::route::{perm, TopicConfig, MASTER_ID};
use skiff_store::{GetMessageStatus, GetMessagesResult};

use super::logical_queues::{not_leader_for_pull, undecided, Addressed, Located, LogicalQueue};
use super::property_filter::{self, is_tag_type};
use super::BrokerState;
use crate::net::{Handled, RequestContext};

/// Most bytes one pull returns (`maxTransferBytesOnMessageInMemory`); at least one message is
/// always returned, however large.
const MAX_TRANSFER_BYTES: usize = 256 * 1024;
/// Most messages one pull returns (`maxTransferCountOnMessageInMemory`).
const MAX_TRANSFER_COUNT: i32 = 32;
/// How long a throttled pull consumer's cold pull is held (`ColdDataPullRequestHoldService`
/// holds at least 3 s and checks every 5 s).
const COLD_HOLD: Duration = Duration::from_secs(3);
/// Most queue reads one SQL92-filtered pull makes (up to 32 entries each, so 2,048 entries; Java
/// scans up to `maxFilterMessageCount`, 16,000).
const MAX_FILTER_ROUNDS: usize = 64;

pub(super) fn handle(
    state: &Arc<BrokerState>,
    _ctx: &RequestContext,
    mut request: PullRequest,
) -> Handled {
    let topic = match check_access(state, &request) {
        Ok(topic) => topic,
        Err(reply) => return Handled::Now(reply),
    };
    let queue = match state.static_topics.address(&request.queue) {
        Addressed::Physical => return read_queue(state, &topic, request, None),
        Addressed::NotLeader { here } => {
            return Handled::Now(not_leader_for_pull(
                &request.queue.topic,
                request.queue.queue_id,
                &here,
            ))
        }
        Addressed::Logical(queue) => queue,
    };
    let Some(at) = queue.locate(request.queue_offset) else {
        return Handled::Now(undecided(&queue));
    };
    // The piggybacked commit is a logical offset too: kept where it lives, if that is here
    // (Java stores it unconverted under the physical queue read, a value later read back
    // wrong once a queue was remapped).
    if let Some(commit) = request.commit_offset.take() {
        if let Some(kept) = queue.locate(commit).filter(|c| queue.is_here(&c.item)) {
            state.offsets.commit(
                &request.consumer_group,
                &queue.topic,
                kept.item.queue_id,
                kept.physical_offset,
            );
        }
    }
    request.queue = QueueRef {
        topic: queue.topic.clone(),
        queue_id: at.item.queue_id,
        physical: true,
    };
    request.queue_offset = at.physical_offset;
    if queue.is_here(&at.item) {
        return read_queue(
            state,
            &topic,
            request,
            Some(Arc::new(Logical { queue, at })),
        );
    }
    // An older stretch on another broker group: ask it, at once (no hold, no commit there).
    request.suspend_timeout_millis = None;
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        let bname = at.item.bname.clone();
        match state
            .forwarder
            .call(&state, &bname, &Request::Pull(request))
            .await
        {
            Ok(Reply::Pulled(result)) => Reply::Pulled(queue.present_pull(&at, result)),
            Ok(_) => Reply::error(
                ErrorKind::SystemError,
                "org.apache.rocketmq.remoting.rpc.RpcException: unexpected remote response code",
            ),
            Err(remark) => Reply::error(ErrorKind::SystemError, remark),
        }
    }))
}

/// A pull of a logical queue read here: its queue, and where in it the read is.
struct Logical {
    queue: LogicalQueue,
    at: Located,
}

/// Reads (or holds) a physical queue of this broker; `logical` presents the answer as the
/// logical queue's.
fn read_queue(
    state: &Arc<BrokerState>,
    topic: &TopicConfig,
    request: PullRequest,
    logical: Option<Arc<Logical>>,
) -> Handled {
    let filter = match check(state, topic, &request) {
        Ok(filter) => Filter { logical, ..filter },
        Err(reply) => return Handled::Now(reply),
    };
    if let Some(offset) = request.commit_offset {
        state.offsets.commit(
            &request.consumer_group,
            &request.queue.topic,
            request.queue.queue_id,
            offset,
        );
    }
    if state
        .cold_read_control
        .must_throttle(&request.consumer_group)
        && state.store.is_in_cold_area(
            &request.queue.topic,
            request.queue.queue_id,
            request.queue_offset,
        )
    {
        return throttle_cold_read(state, request, filter);
    }
    if state.store.is_cold_read(
        &request.queue.topic,
        request.queue.queue_id,
        request.queue_offset,
    ) {
        return read_cold(state, request, filter);
    }
    let result = read(state, &request, &filter, Records::Mapped);
    let Some(timeout) = hold_time(state, &request, &result) else {
        return Handled::Now(Reply::Pulled(result));
    };
    let wakeup = state.pull_holds.hold(
        &request.queue.topic,
        request.queue.queue_id,
        request.queue_offset,
    );
    // A message may have arrived between the read and the hold: check before sleeping.
    let arrived_meanwhile = state
        .store
        .max_offset_in_queue(&request.queue.topic, request.queue.queue_id)
        > request.queue_offset;
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        if !arrived_meanwhile {
            // Any outcome (arrival, shutdown, timeout) means: read again and answer.
            let _ = tokio::time::timeout(timeout, wakeup).await;
        }
        Reply::Pulled(read(&state, &request, &filter, Records::Mapped))
    }))
}

/// A pull of data far behind the writer (a lagging or catching-up consumer): its page faults,
/// major ones if the page cache dropped the data, would stall a tokio worker and every
/// connection on it. Its records are copied out of the page cache (`pread`, nothing mapped):
/// here on the worker when the page cache holds them (the store reads ahead of such a
/// consumer), else on a blocking thread, at most `pullMessageThreadPoolNums` at once (Java serves
/// pulls from a thread pool of that size). Cold data exists, so such a pull is never held.
fn read_cold(state: &Arc<BrokerState>, request: PullRequest, filter: Filter) -> Handled {
    if let Some(result) = read_cached(state, &request, &filter) {
        state.store.release_cold_read_pages();
        return Handled::Now(Reply::Pulled(result));
    }
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        let permit = Arc::clone(&state.cold_reads).acquire_owned().await;
        let read = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let result = read(&state, &request, &filter, Records::Copied);
            state.store.release_cold_read_pages();
            result
        });
        match read.await {
            Ok(result) => Reply::Pulled(result),
            Err(e) => Reply::error(ErrorKind::SystemError, format!("pull failed: {e}")),
        }
    }))
}

/// A pull of cold data by a group past its cold-read threshold (see `cold_read`), as Java's
/// `PullMessageProcessor` throttles it: a push consumer is answered SYSTEM_BUSY (it retries
/// later); a pull consumer's request is held [`COLD_HOLD`] and then answered with one message.
fn throttle_cold_read(
    state: &Arc<BrokerState>,
    mut request: PullRequest,
    filter: Filter,
) -> Handled {
    let consume_type = state.consumers.consume_type(&request.consumer_group);
    if consume_type == Some(ConsumeType::ConsumePassively) {
        return Handled::Now(Reply::error(
            ErrorKind::SystemBusy,
            "This consumer group is reading cold data. It has been flow control",
        ));
    }
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        tokio::time::sleep(COLD_HOLD).await;
        request.max_msg_nums = 1;
        match read_cold(&state, request, filter) {
            Handled::Now(reply) => reply,
            Handled::Later(reply) => reply.await,
        }
    }))
}

/// Adds the bytes of the records in `messages` that lie in the cold area to `group`'s account.
fn account_cold_bytes(state: &BrokerState, group: &str, messages: &[Bytes]) {
    if !state.cold_read_control.enabled() || messages.is_empty() {
        return;
    }
    let cold_end = state.store.cold_area_end();
    let cold: usize = messages
        .iter()
        .filter(|m| record::physical_offset(m).is_some_and(|offset| offset < cold_end))
        .map(Bytes::len)
        .sum();
    state
        .cold_read_control
        .record(group, cold as i64, super::now_millis());
}

/// How long to hold a pull that found nothing, if it may be held at all.
fn hold_time(state: &BrokerState, request: &PullRequest, result: &PullResult) -> Option<Duration> {
    if result.status != PullStatus::NoNewMessage {
        return None;
    }
    let requested = request.suspend_timeout_millis?;
    let millis = if state.config.long_polling_enable {
        // The client picks the time; the broker bounds it (10^12 ms was once accepted).
        requested.min(state.config.broker_suspend_max_time_millis)
    } else {
        state.config.short_polling_time_mills
    };
    Some(Duration::from_millis(millis))
}

/// What a pull filters with: the subscription's tag codes, and its compiled SQL92 expression;
/// and, for a static topic, how its answer is presented.
struct Filter {
    subscription: SubscriptionData,
    selector: Option<Arc<Selector>>,
    logical: Option<Arc<Logical>>,
}

/// The first checks of `PullMessageProcessor.processRequest`, made before a static topic's
/// logical queue is looked up: the broker and topic are readable, the group may consume; the
/// topic's settings on success.
fn check_access(state: &BrokerState, request: &PullRequest) -> Result<TopicConfig, Reply> {
    let topic_name = &request.queue.topic;
    if !perm::is_readable(state.permission()) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!(
                "the broker[{}] pulling message is forbidden",
                state.broker_addr
            ),
        ));
    }
    let Some(group) = state.groups.find_or_create(&request.consumer_group) else {
        return Err(Reply::error(
            ErrorKind::SubscriptionGroupNotExist,
            format!(
                "subscription group [{}] does not exist (create it, or enable autoCreateSubscriptionGroup)",
                request.consumer_group
            ),
        ));
    };
    if !group.consume_enable {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!(
                "subscription group no permission, {}",
                request.consumer_group
            ),
        ));
    }
    let Some(topic) = state.topics.get(topic_name) else {
        return Err(Reply::error(
            ErrorKind::TopicNotExist,
            format!("topic[{topic_name}] not exist, apply first please!"),
        ));
    };
    if !perm::is_readable(topic.perm) {
        return Err(Reply::error(
            ErrorKind::NoPermission,
            format!("the topic[{topic_name}] pulling message is forbidden"),
        ));
    }
    Ok(topic)
}

/// The rest of `PullMessageProcessor.processRequest`'s checks, in its order, on the physical
/// queue read here; what to filter with on success.
fn check(state: &BrokerState, topic: &TopicConfig, request: &PullRequest) -> Result<Filter, Reply> {
    let topic_name = &request.queue.topic;
    let queue_id = request.queue.queue_id;
    if queue_id < 0 || queue_id >= topic.read_queue_nums {
        return Err(Reply::error(
            ErrorKind::InvalidParameter,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic_name}] topicConfig.readQueueNums:[{}]",
                topic.read_queue_nums
            ),
        ));
    }

    let mut selector = None;
    let subscription = match &request.subscription {
        Some(inline) => {
            let subscription = SubscriptionData::from_expression(
                topic_name,
                &inline.expression_type,
                &inline.expression,
                inline.version,
            );
            if !is_tag_type(&subscription.expression_type) {
                let compiled = (!subscription.sub_string.is_empty())
                    .then(|| state.selectors.compile(&subscription.sub_string).ok())
                    .flatten();
                let Some(compiled) = compiled else {
                    return Err(Reply::error(
                        ErrorKind::SubscriptionParseFailed,
                        "parse the consumer's subscription failed",
                    ));
                };
                selector = Some(compiled);
            }
            subscription
        }
        None => {
            if state
                .consumers
                .subscription_count(&request.consumer_group)
                .is_none()
            {
                return Err(Reply::error(
                    ErrorKind::SubscriptionNotExist,
                    "the consumer's group info not exist",
                ));
            }
            let Some(subscription) = state
                .consumers
                .subscription(&request.consumer_group, topic_name)
            else {
                return Err(Reply::error(
                    ErrorKind::SubscriptionNotExist,
                    "the consumer's subscription not exist",
                ));
            };
            if subscription.sub_version < request.sub_version {
                return Err(Reply::error(
                    ErrorKind::SubscriptionNotLatest,
                    "the consumer's subscription not latest",
                ));
            }
            if !is_tag_type(&subscription.expression_type) {
                match state.selectors.compile(&subscription.sub_string) {
                    Ok(compiled) => selector = Some(compiled),
                    Err(_) => {
                        return Err(Reply::error(
                            ErrorKind::FilterDataNotExist,
                            "The broker's consumer filter data is not exist!Your expression may be wrong!",
                        ))
                    }
                }
            }
            subscription
        }
    };
    if !is_tag_type(&subscription.expression_type) && !state.config.enable_property_filter {
        return Err(property_filter::not_supported(
            &subscription.expression_type,
        ));
    }
    Ok(Filter {
        subscription,
        selector,
        logical: None,
    })
}

/// Which member of the broker group the consumer should pull from next, and the status a slave
/// answers (`composeResponseHeader`): with `slaveReadEnable`, a consumer whose pull reads beyond
/// the memory Java budgets (`accessMessageInMemoryMaxRatio`) is sent to the group's
/// `whichBrokerWhenConsumeSlowly`, others to the group's `brokerId`; a slave otherwise sends the
/// consumer back to the master and, having nothing to give, answers PULL_RETRY_IMMEDIATELY
/// rather than holding the pull.
fn suggest_broker(
    state: &BrokerState,
    request: &PullRequest,
    status: PullStatus,
    found: &GetMessagesResult,
) -> (PullStatus, i64) {
    let on_slave = state.config.effective_broker_id() != MASTER_ID;
    // Only where a suggestion can differ from the master: most pulls skip the lookup.
    let slow = (state.config.slave_read_enable || on_slave)
        && status == PullStatus::Found
        && !state.store.is_in_memory(
            &request.queue.topic,
            request.queue.queue_id,
            found.next_begin_offset - 1,
        );
    let mut suggest = MASTER_ID;
    if state.config.slave_read_enable {
        if let Some(group) = state.groups.find_or_create(&request.consumer_group) {
            suggest = if slow {
                group.which_broker_when_consume_slowly
            } else {
                group.broker_id
            };
        }
    }
    if on_slave && !slow {
        let status = match status {
            PullStatus::Found => PullStatus::Found,
            _ => PullStatus::NoMatchedMessage,
        };
        return (status, MASTER_ID);
    }
    (status, suggest)
}

/// Reads the queue and turns the store's answer into a pull result (`composeResponseHeader`).
/// An operator's reset of the group's offset on the queue comes first: the pull is answered
/// OFFSET_MOVED to the reset offset, which makes the client start there (Java's `OFFSET_RESET`).
fn read(
    state: &BrokerState,
    request: &PullRequest,
    filter: &Filter,
    records: Records,
) -> PullResult {
    if let Some(moved) = offset_reset(state, request) {
        return moved;
    }
    let get = |offset: i64, count: i32, bytes: usize| {
        let queue = &request.queue;
        let filter = |tags_code| filter.subscription.matches_tags_code(tags_code);
        let store = &state.store;
        match records {
            Records::Mapped => {
                store.get_messages(&queue.topic, queue.queue_id, offset, count, bytes, &filter)
            }
            Records::Copied => store.get_copied_messages(
                &queue.topic,
                queue.queue_id,
                offset,
                count,
                bytes,
                &filter,
            ),
        }
    };
    let (max_count, max_bytes) = limits(request);
    let found = get(request.queue_offset, max_count, max_bytes);
    compose(state, request, filter, found, &|offset, count, bytes| {
        Some(get(offset, count, bytes))
    })
}

/// How a pull's records come out of the store.
#[derive(Clone, Copy)]
enum Records {
    /// Slices of the mapped CommitLog (the pages near the writer, which stay mapped).
    Mapped,
    /// Copies (a read far behind the writer, on a blocking thread).
    Copied,
}

/// [`read`] of copies of what the page cache holds, for a cold pull on the async worker: `None`
/// when the first record is not there (see `MessageStore::get_cached_messages`).
fn read_cached(state: &BrokerState, request: &PullRequest, filter: &Filter) -> Option<PullResult> {
    if let Some(moved) = offset_reset(state, request) {
        return Some(moved);
    }
    let get = |offset: i64, count: i32, bytes: usize| {
        state.store.get_cached_messages(
            &request.queue.topic,
            request.queue.queue_id,
            offset,
            count,
            bytes,
            &|tags_code| filter.subscription.matches_tags_code(tags_code),
        )
    };
    let (max_count, max_bytes) = limits(request);
    let found = get(request.queue_offset, max_count, max_bytes)?;
    Some(compose(state, request, filter, found, &get))
}

/// The pull's message count and byte limits, within the broker's.
fn limits(request: &PullRequest) -> (i32, usize) {
    let max_count = request.max_msg_nums.clamp(1, MAX_TRANSFER_COUNT);
    let max_bytes = request
        .max_msg_bytes
        .filter(|b| *b > 0)
        .map_or(MAX_TRANSFER_BYTES, |b| (b as usize).min(MAX_TRANSFER_BYTES));
    (max_count, max_bytes)
}

/// The OFFSET_MOVED answer to a pull of a queue whose offset an operator reset for the group.
fn offset_reset(state: &BrokerState, request: &PullRequest) -> Option<PullResult> {
    let queue = &request.queue;
    let reset = state
        .offsets
        .take_reset(&request.consumer_group, &queue.topic, queue.queue_id)?;
    Some(PullResult {
        status: PullStatus::OffsetMoved,
        next_begin_offset: reset,
        min_offset: state
            .store
            .min_offset_in_queue(&queue.topic, queue.queue_id),
        max_offset: state
            .store
            .max_offset_in_queue(&queue.topic, queue.queue_id),
        suggest_which_broker_id: MASTER_ID,
        messages: Vec::new(),
        offset_delta: None,
    })
}

/// Turns the store's answer `found` into the pull's result; `get` reads more of the queue when an
/// SQL92 filter left the pull short (`None`: no more now).
fn compose(
    state: &BrokerState,
    request: &PullRequest,
    filter: &Filter,
    mut found: GetMessagesResult,
    get: &dyn Fn(i64, i32, usize) -> Option<GetMessagesResult>,
) -> PullResult {
    let (max_count, max_bytes) = limits(request);
    if let Some(selector) = &filter.selector {
        // Like Java's getMessage, keep scanning the queue (up to MAX_FILTER_ROUNDS reads) until
        // the pull has max_count matching messages, so that a selective filter does not cost a
        // round trip per 32 entries.
        property_filter::retain_matching(selector, &mut found.messages);
        let mut rounds = 1;
        while rounds < MAX_FILTER_ROUNDS
            && matches!(
                found.status,
                GetMessageStatus::Found | GetMessageStatus::NoMatchedMessage
            )
            && found.messages.len() < max_count as usize
            && found.next_begin_offset < found.max_offset
        {
            let used: usize = found.messages.iter().map(Bytes::len).sum();
            if used >= max_bytes {
                break;
            }
            let Some(mut more) = get(
                found.next_begin_offset,
                max_count - found.messages.len() as i32,
                max_bytes - used,
            ) else {
                break;
            };
            if !matches!(
                more.status,
                GetMessageStatus::Found | GetMessageStatus::NoMatchedMessage
            ) {
                break;
            }
            property_filter::retain_matching(selector, &mut more.messages);
            found.messages.append(&mut more.messages);
            found.next_begin_offset = more.next_begin_offset;
            found.max_offset = more.max_offset;
            rounds += 1;
        }
        found.status = if found.messages.is_empty() {
            if found.status == GetMessageStatus::Found {
                GetMessageStatus::NoMatchedMessage
            } else {
                found.status
            }
        } else {
            GetMessageStatus::Found
        };
    }
    let status = match found.status {
        GetMessageStatus::Found => PullStatus::Found,
        GetMessageStatus::MessageWasRemoving | GetMessageStatus::NoMatchedMessage => {
            PullStatus::NoMatchedMessage
        }
        GetMessageStatus::NoMatchedLogicQueue | GetMessageStatus::NoMessageInQueue => {
            if request.queue_offset != 0 {
                PullStatus::OffsetMoved
            } else {
                PullStatus::NoNewMessage
            }
        }
        GetMessageStatus::OffsetFoundNull | GetMessageStatus::OffsetOverflowOne => {
            PullStatus::NoNewMessage
        }
        GetMessageStatus::OffsetOverflowBadly | GetMessageStatus::OffsetTooSmall => {
            PullStatus::OffsetMoved
        }
    };
    state.offsets.record_pull(
        &request.consumer_group,
        &request.queue.topic,
        request.queue.queue_id,
        found.next_begin_offset,
    );
    state.stats.messages_got(found.messages.len() as u64);
    account_cold_bytes(state, &request.consumer_group, &found.messages);
    let bytes: usize = found.messages.iter().map(Bytes::len).sum();
    state.traffic.messages_got(
        &request.consumer_group,
        &request.queue.topic,
        found.messages.len() as u64,
        bytes as u64,
    );
    if let Some(metrics) = &state.metrics {
        metrics.messages_out(
            &request.consumer_group,
            &request.queue.topic,
            found.messages.len() as u64,
            bytes as u64,
        );
    }
    let (status, suggest_which_broker_id) = suggest_broker(state, request, status, &found);
    let result = PullResult {
        status,
        next_begin_offset: found.next_begin_offset,
        min_offset: found.min_offset,
        max_offset: found.max_offset,
        suggest_which_broker_id,
        messages: found.messages,
        offset_delta: None,
    };
    match &filter.logical {
        Some(logical) => logical.queue.present_pull(&logical.at, result),
        None => result,
    }
}
