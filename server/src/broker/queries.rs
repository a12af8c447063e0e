//! Offset and time lookups that need more than one store call, and those of a static topic's
//! logical queues, whose stretches may live on other broker groups (asked with `lo=false`, as
//! Java's `rewriteRequestForStaticTopic` of each processor does).

use std::sync::Arc;

use skiff_model::command::{BoundaryType, ErrorKind, QueueRef, Reply, Request};
use skiff_model::static_topic::LogicQueueMappingItem;

use super::logical_queues::{
    not_leader, not_leader_for_min_offset, undecided, Addressed, LogicalQueue,
};
use super::BrokerState;
use crate::net::Handled;

/// QUERY_CONSUMER_OFFSET (`ConsumerManageProcessor.queryConsumerOffset`). Of a logical queue
/// never remapped, the offset of its one physical queue; of a remapped one, the newest stretch
/// with a committed offset, asked for the older ones where they live.
pub(super) fn query_consumer_offset(
    state: &Arc<BrokerState>,
    group: &str,
    queue: &QueueRef,
    set_zero_if_not_found: bool,
) -> Handled {
    let logical = match logical_queue(state, queue, not_leader, || {
        query_physical(state, group, queue, set_zero_if_not_found)
    }) {
        Ok(logical) => logical,
        Err(answer) => return answer,
    };
    if let [only] = logical.items.as_slice() {
        if only.logic_offset == 0 {
            let physical = physical_queue(&logical, only);
            return Handled::Now(
                match query_physical(state, group, &physical, set_zero_if_not_found) {
                    Reply::Offset(offset) => Reply::Offset(only.static_offset_strictly(offset)),
                    other => other,
                },
            );
        }
    }
    let (state, group) = (state.clone(), group.to_string());
    Handled::Later(Box::pin(async move {
        for item in logical.items.iter().rev() {
            let physical = physical_queue(&logical, item);
            let committed = if logical.is_here(item) {
                state
                    .offsets
                    .query(&group, &physical.topic, physical.queue_id)
                    .filter(|offset| *offset >= 0)
            } else {
                let request = Request::QueryConsumerOffset {
                    group: group.clone(),
                    queue: physical,
                    set_zero_if_not_found: false,
                };
                match state.forwarder.call(&state, &item.bname, &request).await {
                    Ok(Reply::Offset(offset)) => Some(offset),
                    Ok(Reply::Error(err)) if err.kind == ErrorKind::QueryNotFound => None,
                    Ok(_) => return unknown_remote_error(),
                    Err(remark) => return Reply::error(ErrorKind::SystemError, remark),
                }
            };
            if let Some(offset) = committed {
                return Reply::Offset(item.static_offset_strictly(offset));
            }
        }
        Reply::error(
            ErrorKind::QueryNotFound,
            "Not found, maybe this group consumer boot first",
        )
    }))
}

/// The logical queue `queue` names here, or the answer when it names none: `physical()` for a
/// plain queue (or a static topic's queue asked with `lo=false`), `not_leader`'s remark for a
/// logical queue led elsewhere.
fn logical_queue(
    state: &BrokerState,
    queue: &QueueRef,
    not_leader: fn(&str, i32, &str) -> Reply,
    physical: impl FnOnce() -> Reply,
) -> Result<LogicalQueue, Handled> {
    match state.static_topics.address(queue) {
        Addressed::Physical => Err(Handled::Now(physical())),
        Addressed::NotLeader { here } => Err(Handled::Now(not_leader(
            &queue.topic,
            queue.queue_id,
            &here,
        ))),
        Addressed::Logical(logical) => Ok(logical),
    }
}

/// QUERY_CONSUMER_OFFSET of a physical queue.
///
/// With no committed offset the Java broker answers 0 — not QUERY_NOT_FOUND — when the queue still
/// starts at offset 0 and its first message is still in the page cache, so a brand-new group on a
/// young queue reads it from the beginning whatever its `ConsumeFromWhere` says, while a new group
/// on a long backlog starts where its `ConsumeFromWhere` says. Clients depend on that. Unless the
/// request says `setZeroIfNotFound=false`.
fn query_physical(
    state: &BrokerState,
    group: &str,
    queue: &QueueRef,
    set_zero_if_not_found: bool,
) -> Reply {
    if let Some(offset) = state
        .offsets
        .query(group, &queue.topic, queue.queue_id)
        .filter(|o| *o >= 0)
    {
        return Reply::Offset(offset);
    }
    if !set_zero_if_not_found {
        return Reply::error(
            ErrorKind::QueryNotFound,
            "Not found, do not set to zero, maybe this group boot first",
        );
    }
    let min = state
        .store
        .min_offset_in_queue(&queue.topic, queue.queue_id);
    let max = state
        .store
        .max_offset_in_queue(&queue.topic, queue.queue_id);
    if min <= 0 && max > 0 {
        return Reply::Offset(0);
    }
    Reply::error(
        ErrorKind::QueryNotFound,
        "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
    )
}

/// UPDATE_CONSUMER_OFFSET: of a logical queue, committed as the physical offset of the stretch
/// holding it, where that stretch lives.
pub(super) fn update_consumer_offset(
    state: &Arc<BrokerState>,
    group: &str,
    queue: &QueueRef,
    offset: i64,
) -> Handled {
    let logical = match logical_queue(state, queue, not_leader, || {
        state
            .offsets
            .commit(group, &queue.topic, queue.queue_id, offset);
        Reply::Success
    }) {
        Ok(logical) => logical,
        Err(answer) => return answer,
    };
    let Some(at) = logical.locate(offset) else {
        return Handled::Now(undecided(&logical));
    };
    if logical.is_here(&at.item) {
        state
            .offsets
            .commit(group, &logical.topic, at.item.queue_id, at.physical_offset);
        return Handled::Now(Reply::Success);
    }
    let request = Request::UpdateConsumerOffset {
        group: group.to_string(),
        queue: physical_queue(&logical, &at.item),
        offset: at.physical_offset,
    };
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        match state.forwarder.call(&state, &at.item.bname, &request).await {
            Ok(Reply::Success) => Reply::Success,
            Ok(_) => unknown_remote_error(),
            Err(remark) => Reply::error(ErrorKind::SystemError, remark),
        }
    }))
}

/// GET_MAX_OFFSET: of a logical queue, the end of its newest decided stretch.
pub(super) fn max_offset(state: &Arc<BrokerState>, queue: &QueueRef) -> Handled {
    let logical = match logical_queue(state, queue, not_leader, || {
        Reply::Offset(
            state
                .store
                .max_offset_in_queue(&queue.topic, queue.queue_id),
        )
    }) {
        Ok(logical) => logical,
        Err(answer) => return answer,
    };
    let Some(item) = logical.newest_decided().cloned() else {
        return Handled::Now(undecided(&logical));
    };
    let request = Request::GetMaxOffset {
        queue: physical_queue(&logical, &item),
    };
    ask_offset(state, logical, item, request, |item, offset| {
        item.static_offset_strictly(offset)
    })
}

/// GET_MIN_OFFSET: of a logical queue, the start of its earliest stretch.
pub(super) fn min_offset(state: &Arc<BrokerState>, queue: &QueueRef) -> Handled {
    let logical = match logical_queue(state, queue, not_leader_for_min_offset, || {
        Reply::Offset(
            state
                .store
                .min_offset_in_queue(&queue.topic, queue.queue_id),
        )
    }) {
        Ok(logical) => logical,
        Err(answer) => return answer,
    };
    let Some(item) = logical.earliest().cloned() else {
        return Handled::Now(undecided(&logical));
    };
    let request = Request::GetMinOffset {
        queue: physical_queue(&logical, &item),
    };
    ask_offset(state, logical, item, request, |item, offset| {
        item.static_offset_loosely(offset)
    })
}

/// SEARCH_OFFSET_BY_TIMESTAMP. Of a logical queue, Java's loop over its stretches, oldest
/// first, is kept as it is: a hit here ends it, a hit elsewhere is overwritten by a later
/// stretch's answer, and a later stretch here that has nothing leaves its raw (physical) answer.
pub(super) fn search_offset(
    state: &Arc<BrokerState>,
    queue: &QueueRef,
    timestamp: i64,
    boundary: BoundaryType,
) -> Handled {
    let logical = match logical_queue(state, queue, not_leader, || {
        Reply::Offset(state.store.offset_by_time(
            &queue.topic,
            queue.queue_id,
            timestamp,
            store_boundary(boundary),
        ))
    }) {
        Ok(logical) => logical,
        Err(answer) => return answer,
    };
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        let mut offset = -1;
        for item in logical.items.iter().filter(|item| item.logic_offset >= 0) {
            let physical = physical_queue(&logical, item);
            if logical.is_here(item) {
                offset = state.store.offset_by_time(
                    &physical.topic,
                    physical.queue_id,
                    timestamp,
                    store_boundary(boundary),
                );
                if offset > 0 {
                    offset = item.static_offset_strictly(offset);
                    break;
                }
                continue;
            }
            let request = Request::SearchOffsetByTimestamp {
                queue: physical,
                timestamp,
                boundary,
            };
            let found = match state.forwarder.call(&state, &item.bname, &request).await {
                Ok(Reply::Offset(found)) => found,
                Ok(_) => return unknown_remote_error(),
                Err(remark) => return Reply::error(ErrorKind::SystemError, remark),
            };
            if found >= 0 && !(item.end_decided() && found >= item.end_offset) {
                offset = item.static_offset_strictly(found);
            }
        }
        Reply::Offset(offset)
    }))
}

/// GET_EARLIEST_MSG_STORETIME: -1 for an empty queue, as Java answers; of a logical queue, its
/// earliest stretch's.
pub(super) fn earliest_store_time(state: &Arc<BrokerState>, queue: &QueueRef) -> Handled {
    let logical = match logical_queue(state, queue, not_leader, || earliest_physical(state, queue))
    {
        Ok(logical) => logical,
        Err(answer) => return answer,
    };
    let Some(item) = logical.earliest().cloned() else {
        return Handled::Now(undecided(&logical));
    };
    let physical = physical_queue(&logical, &item);
    if logical.is_here(&item) {
        return Handled::Now(earliest_physical(state, &physical));
    }
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        let request = Request::GetEarliestMsgStoreTime { queue: physical };
        match state.forwarder.call(&state, &item.bname, &request).await {
            Ok(reply @ Reply::Timestamp(_)) => reply,
            Ok(_) => unknown_remote_error(),
            Err(remark) => Reply::error(ErrorKind::SystemError, remark),
        }
    }))
}

/// The store's name for a search's boundary.
fn store_boundary(boundary: BoundaryType) -> skiff_store::Boundary {
    match boundary {
        BoundaryType::Lower => skiff_store::Boundary::Lower,
        BoundaryType::Upper => skiff_store::Boundary::Upper,
    }
}

fn earliest_physical(state: &BrokerState, queue: &QueueRef) -> Reply {
    Reply::Timestamp(
        state
            .store
            .earliest_message_time(&queue.topic, queue.queue_id)
            .unwrap_or(-1),
    )
}

/// The physical queue of `item` (asked with `lo=false` where it lives).
fn physical_queue(logical: &LogicalQueue, item: &LogicQueueMappingItem) -> QueueRef {
    QueueRef {
        topic: logical.topic.clone(),
        queue_id: item.queue_id,
        physical: true,
    }
}

/// An offset of `item`'s physical queue (`request`, read here or asked where it lives), made
/// logical by `convert`.
fn ask_offset(
    state: &Arc<BrokerState>,
    logical: LogicalQueue,
    item: LogicQueueMappingItem,
    request: Request,
    convert: fn(&LogicQueueMappingItem, i64) -> i64,
) -> Handled {
    if logical.is_here(&item) {
        let queue = physical_queue(&logical, &item);
        let offset = match request {
            Request::GetMinOffset { .. } => state
                .store
                .min_offset_in_queue(&queue.topic, queue.queue_id),
            _ => state
                .store
                .max_offset_in_queue(&queue.topic, queue.queue_id),
        };
        return Handled::Now(Reply::Offset(convert(&item, offset)));
    }
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        match state.forwarder.call(&state, &item.bname, &request).await {
            Ok(Reply::Offset(offset)) => Reply::Offset(convert(&item, offset)),
            Ok(_) => unknown_remote_error(),
            Err(remark) => Reply::error(ErrorKind::SystemError, remark),
        }
    }))
}

/// What Java answers when the other broker group refused a request passed on to it.
fn unknown_remote_error() -> Reply {
    Reply::error(ErrorKind::SystemError, "unknown remote error")
}

/// QUERY_MESSAGE (`QueryMessageProcessor.queryMessage`): by message key or, for
/// `queryMsgByUniqueKey`, by the client's unique id; both live in the IndexFile as `topic#key`.
pub(super) fn query_message(
    state: &BrokerState,
    topic: &str,
    key: &str,
    max_num: i32,
    (begin_timestamp, end_timestamp): (i64, i64),
    unique_key: bool,
) -> Reply {
    // A unique-key lookup asks for `defaultQueryMaxNum`, whatever the client said.
    let max_num = if unique_key {
        state.config.default_query_max_num
    } else {
        max_num.max(0) as usize
    };
    let found = state
        .store
        .query_messages(topic, key, max_num, begin_timestamp, end_timestamp);
    if found.messages.is_empty() {
        return Reply::error(
            ErrorKind::QueryNotFound,
            "can not find message, maybe time range not correct",
        );
    }
    Reply::QueriedMessages {
        messages: found.messages,
        index_last_update_timestamp: found.index_last_update_timestamp,
        index_last_update_phyoffset: found.index_last_update_phyoffset,
    }
}

/// VIEW_MESSAGE_BY_ID: the record at a CommitLog offset.
pub(super) fn view_message(state: &BrokerState, commit_log_offset: i64) -> Reply {
    match state.store.read_message(commit_log_offset) {
        Some(record) => Reply::Message(record),
        None => Reply::error(
            ErrorKind::SystemError,
            format!("can not find message by the offset, {commit_log_offset}"),
        ),
    }
}
