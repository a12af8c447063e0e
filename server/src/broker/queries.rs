//! Offset and time lookups that need more than one store call.

use skiff_model::command::{ErrorKind, QueueRef, Reply};

use super::BrokerState;

/// QUERY_CONSUMER_OFFSET (`ConsumerManageProcessor.queryConsumerOffset`).
///
/// With no committed offset the Java broker answers 0 — not QUERY_NOT_FOUND — when the queue still
/// starts at offset 0 and has messages, so a brand-new group on a young queue reads it from the
/// beginning whatever its `ConsumeFromWhere` says. Clients depend on that.
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
