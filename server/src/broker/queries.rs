//! Offset and time lookups that need more than one store call.

use skiff_model::command::{ErrorKind, QueueRef, Reply};

use super::BrokerState;

/// QUERY_CONSUMER_OFFSET (`ConsumerManageProcessor.queryConsumerOffset`).
///
/// With no committed offset the Java broker answers 0 — not QUERY_NOT_FOUND — when the queue still
/// starts at offset 0 and its first message is still in the page cache, so a brand-new group on a
/// young queue reads it from the beginning whatever its `ConsumeFromWhere` says, while a new group
/// on a long backlog starts where its `ConsumeFromWhere` says. Clients depend on that.
pub(super) fn query_consumer_offset(state: &BrokerState, group: &str, queue: &QueueRef) -> Reply {
    if let Some(offset) = state
        .offsets
        .query(group, &queue.topic, queue.queue_id)
        .filter(|o| *o >= 0)
    {
        return Reply::Offset(offset);
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

/// GET_EARLIEST_MSG_STORETIME: -1 for an empty queue, as Java answers.
pub(super) fn earliest_store_time(state: &BrokerState, queue: &QueueRef) -> Reply {
    Reply::Timestamp(
        state
            .store
            .earliest_message_time(&queue.topic, queue.queue_id)
            .unwrap_or(-1),
    )
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
