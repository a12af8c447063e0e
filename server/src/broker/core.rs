//! The broker's typed core: what every protocol front (RocketMQ remoting, Kafka) does to a queue,
//! in one place, with no wire type in sight.
//!
//! - [`stamp`]: the properties the broker adds to every message it stores (its unique id when the
//!   client gave none, region, trace switch, cluster), as Java's `buildMsgContext`;
//! - [`append`]: a batch to one queue, on the caller's thread (so a connection's appends keep
//!   their order), counted in the statistics; what is left is the flush wait the configuration
//!   promises;
//! - [`queue_range`]: a queue's offsets, from its minimum (the log start) to its maximum (the
//!   next offset to be written);
//! - [`wait_any`]: the first arrival beyond an offset on any of several queues, or a timeout (long
//!   polling of a multi-partition Kafka fetch; a RocketMQ pull holds one queue the same way).

use std::time::Duration;

use skiff_model::message::{keys, Properties};
use skiff_store::{MessageToStore, Put, PutError};

use super::{send, BrokerState};

/// Adds the broker's own properties to a message about to be stored.
pub(super) fn stamp(state: &BrokerState, properties: &mut Properties, now_ms: i64) {
    if properties.uniq_key().is_none() {
        let ids = send::uniq_id_generator(&state.broker_addr);
        properties.insert(keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, ids.next(now_ms));
    }
    // As Java's `buildMsgContext`: every stored message names the broker's region and trace
    // switch, whatever the client put there.
    properties.insert(keys::MSG_REGION, state.config.region_id.clone());
    properties.insert(keys::TRACE_ON, state.config.trace_on.to_string());
    properties.insert(keys::CLUSTER, state.config.broker_cluster_name.clone());
}

/// Appends `messages` (one queue's batch: consecutive queue offsets) and counts them.
pub(super) fn append(state: &BrokerState, messages: Vec<MessageToStore>) -> Result<Put, PutError> {
    let count = messages.len() as u64;
    let put = state.store.append_messages(messages)?;
    state.stats.messages_put(count);
    Ok(put)
}

/// The offsets of a queue: (minimum, maximum); the maximum is the next offset to be written.
pub(super) fn queue_range(state: &BrokerState, topic: &str, queue_id: i32) -> (i64, i64) {
    (
        state.store.min_offset_in_queue(topic, queue_id),
        state.store.max_offset_in_queue(topic, queue_id),
    )
}

/// Waits until a message beyond the offset arrives on any of `queues` ((topic, queue id,
/// offset)), or `timeout` passes, or the broker shuts down.
pub(super) async fn wait_any(
    state: &BrokerState,
    queues: &[(String, i32, i64)],
    timeout: Duration,
) {
    let holds: Vec<_> = queues
        .iter()
        .map(|(topic, queue_id, offset)| state.pull_holds.hold(topic, *queue_id, *offset))
        .collect();
    // A message may have come between the caller's read and the holds.
    let arrived = queues.iter().any(|(topic, queue_id, offset)| {
        state.store.max_offset_in_queue(topic, *queue_id) > *offset
    });
    if arrived || holds.is_empty() {
        return;
    }
    let _ = tokio::time::timeout(timeout, futures::future::select_all(holds)).await;
}
