//! The transaction check service (`TransactionalMessageCheckService`): every
//! `transactionCheckInterval` one [`CheckRound`] runs on a blocking thread, because it reads half
//! and op records from the CommitLog. This file is the round's I/O: it loads progress and op
//! records, reads halves, and carries out the verdicts (re-put, CHECK_TRANSACTION_STATE to a
//! producer, discard); the decisions are in [`super::checker`].
//!
//! Owner: the broker. It stops when the broker shuts down; a round in progress ends at the next
//! half, and its progress so far is saved with the consumer offsets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_model::command::Request;
use skiff_model::message::{keys, Properties};
use skiff_model::record::offset_msg_id;
use skiff_model::record::{Record, RecordFields};
use skiff_model::route::perm;
use skiff_model::transaction::{self as tx, keys as tx_keys, CheckTransactionStateRequest};
use skiff_store::{GetMessageStatus, MessageToStore};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::appended;
use super::checker::{CheckConfig, CheckRound, HalfView, Verdict};
use crate::broker::{now_millis, BrokerState};

/// The half queue the check walks: RocketMQ keeps every half in queue 0.
const HALF_QUEUE: i32 = 0;
/// Op records read per store call (`OP_MSG_PULL_NUMS`).
const OP_BATCH: i32 = 32;
/// Op records one round holds in memory at most; beyond that the round only skips resolved halves
/// and the next round, starting further on, reads the rest.
const MAX_OPS_PER_ROUND: usize = 100_000;
/// A round gives up after this long, as Java's `MAX_PROCESS_TIME_LIMIT`, so shutdown and the next
/// round are never held up by a huge backlog.
const MAX_ROUND_TIME: Duration = Duration::from_secs(60);

/// Runs a round every `transactionCheckInterval` until `shutdown`.
pub(in crate::broker) async fn run(state: Arc<BrokerState>, shutdown: CancellationToken) {
    let period = Duration::from_millis(state.config.transaction_check_interval.max(10));
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await; // the first tick is immediate; Java waits one interval first
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let round_state = state.clone();
        let stop = shutdown.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || check_round(&round_state, &stop)).await
        {
            warn!(error = %e, "transaction check round failed");
        }
    }
}

/// One round over the half queue; returns how many halves were sent for checking.
pub(in crate::broker) fn check_round(state: &BrokerState, stop: &CancellationToken) -> usize {
    let store = &state.store;
    let offsets = &state.offsets;
    let began = Instant::now();
    let now = now_millis();
    let progress = |topic: &str| {
        offsets
            .query(tx::SYSTEM_GROUP, topic, HALF_QUEUE)
            .unwrap_or_else(|| store.min_offset_in_queue(topic, HALF_QUEUE))
    };
    let half_progress = progress(tx::HALF_TOPIC);
    let op_progress = progress(tx::OP_TOPIC);
    let half_end = store.max_offset_in_queue(tx::HALF_TOPIC, HALF_QUEUE);
    if half_progress >= half_end {
        return 0;
    }
    let config = CheckConfig {
        transaction_timeout_ms: state.config.transaction_time_out as i64,
        transaction_check_max: state.config.transaction_check_max,
        file_reserved_ms: (state.config.file_reserved_time as i64).saturating_mul(3_600_000),
    };
    let mut round = CheckRound::new(config, now, half_progress, op_progress);
    load_ops(state, &mut round, op_progress);

    let mut checked = 0;
    while let Some(offset) = round.next_half(half_end) {
        if stop.is_cancelled() || began.elapsed() > MAX_ROUND_TIME {
            round.stop();
            break;
        }
        let read = store.get_messages(tx::HALF_TOPIC, HALF_QUEUE, offset, 1, usize::MAX, &|_| true);
        let Some(bytes) = read.messages.first() else {
            match read.status {
                GetMessageStatus::OffsetOverflowOne | GetMessageStatus::NoMessageInQueue => {
                    round.stop()
                }
                // Gone (retention) or unreadable: go on where the store says.
                _ if read.next_begin_offset > offset => round.skip_to(read.next_begin_offset),
                _ => round.stop(),
            }
            continue;
        };
        let Ok(half) = Record::decode(bytes, false) else {
            warn!(offset, "unreadable half message: skipping it");
            round.advance();
            continue;
        };
        let properties = half.parsed_properties();
        let view = HalfView {
            queue_offset: offset,
            born_timestamp: half.born_timestamp,
            store_timestamp: half.store_timestamp,
            check_times: properties.get(tx_keys::TRANSACTION_CHECK_TIMES),
            check_immunity_secs: properties.get(tx_keys::CHECK_IMMUNITY_TIME_IN_SECONDS),
            prepared_queue_offset: properties.get(tx_keys::TRANSACTION_PREPARED_QUEUE_OFFSET),
        };
        let verdict = round.decide(&view, now_millis());
        let done = match verdict {
            Verdict::NotYet => continue,
            Verdict::Resolved => true,
            Verdict::Discard => discard(state, &half, &properties),
            Verdict::RenewImmunity {
                prepared_queue_offset,
                check_times,
            } => {
                let mut renewed = properties.clone();
                renewed.insert(tx_keys::TRANSACTION_CHECK_TIMES, check_times.to_string());
                renewed.insert(
                    tx_keys::TRANSACTION_PREPARED_QUEUE_OFFSET,
                    prepared_queue_offset.to_string(),
                );
                re_put(state, &half, &renewed).is_some()
            }
            Verdict::Check { check_times } => {
                let mut counted = properties.clone();
                counted.insert(tx_keys::TRANSACTION_CHECK_TIMES, check_times.to_string());
                match re_put(state, &half, &counted) {
                    Some(copy) => {
                        ask_producer(state, &half, &counted, copy);
                        checked += 1;
                        true
                    }
                    None => false,
                }
            }
        };
        if done {
            round.advance();
        } else {
            round.stop();
        }
    }
    if round.moved() {
        let (half, op) = round.progress();
        offsets.commit(tx::SYSTEM_GROUP, tx::HALF_TOPIC, HALF_QUEUE, half);
        offsets.commit(tx::SYSTEM_GROUP, tx::OP_TOPIC, HALF_QUEUE, op);
    }
    debug!(checked, progress = ?round.progress(), "transaction check round done");
    checked
}

/// Feeds the round every op record from `from` to the op queue's end (or the round's limit).
fn load_ops(state: &BrokerState, round: &mut CheckRound, from: i64) {
    let mut next = from;
    let mut loaded = 0;
    let end = state.store.max_offset_in_queue(tx::OP_TOPIC, HALF_QUEUE);
    while next < end {
        if loaded >= MAX_OPS_PER_ROUND {
            round.ops_incomplete();
            return;
        }
        let read = state.store.get_messages(
            tx::OP_TOPIC,
            HALF_QUEUE,
            next,
            OP_BATCH,
            usize::MAX,
            &|_| true,
        );
        if read.messages.is_empty() {
            if read.next_begin_offset > next {
                next = read.next_begin_offset;
                continue;
            }
            round.ops_incomplete();
            return;
        }
        for bytes in &read.messages {
            let Ok(op) = Record::decode(bytes, false) else {
                round.ops_incomplete();
                return;
            };
            let is_removal = op.parsed_properties().tags() == Some(tx::REMOVE_TAG);
            let halves = tx::decode_op_body(op.body);
            round.add_op(op.queue_offset, is_removal.then_some(halves.as_slice()));
            next = op.queue_offset + 1;
            loaded += 1;
        }
    }
}

/// Where a re-put copy of a half went.
struct Copy {
    queue_offset: i64,
    physical_offset: i64,
    msg_id: String,
}

/// Appends a copy of `half` with `properties` to the half queue (`renewHalfMessageInner`).
fn re_put(state: &BrokerState, half: &Record, properties: &Properties) -> Option<Copy> {
    let message = MessageToStore::copy_of(
        half,
        tx::HALF_TOPIC.to_string(),
        half.queue_id,
        properties.encode(),
    );
    match state.store.append_messages(vec![message]) {
        Ok(put) => appended(put).into_iter().next().map(|m| Copy {
            queue_offset: m.queue_offset,
            physical_offset: m.physical_offset,
            msg_id: offset_msg_id(state.store_host, m.physical_offset),
        }),
        Err(err) => {
            warn!(%err, "re-putting a half message failed; the next round retries");
            None
        }
    }
}

/// Sends CHECK_TRANSACTION_STATE about `copy` to a producer of the half's group
/// (`AbstractTransactionalMessageCheckListener.sendCheckMessage`). The body is the message with
/// its real topic and queue, encoded as a record, as the client decodes it.
fn ask_producer(state: &BrokerState, half: &Record, properties: &Properties, copy: Copy) {
    let group = properties.get(keys::PRODUCER_GROUP).unwrap_or_default();
    let Some(channel) = state.producers.available_channel(group) else {
        warn!(
            group,
            "Check transaction failed, channel is null: no producer of the group is connected"
        );
        return;
    };
    let real_topic = properties.get(keys::REAL_TOPIC).unwrap_or_default();
    let real_queue = properties
        .get(keys::REAL_QUEUE_ID)
        .and_then(|q| q.parse().ok())
        .unwrap_or(0);
    let encoded_properties = properties.encode();
    let fields = RecordFields {
        queue_id: real_queue,
        queue_offset: copy.queue_offset,
        physical_offset: copy.physical_offset,
        topic: real_topic,
        properties: &encoded_properties,
        ..half.to_fields()
    };
    let mut message = Vec::with_capacity(fields.encoded_len());
    if let Err(err) = fields.encode(&mut message) {
        warn!(%err, "cannot encode a half message for its check");
        return;
    }
    let uniq = properties.uniq_key().map(str::to_string);
    info!(real_topic, uniq_key = ?uniq, queue_offset = copy.queue_offset,
          commit_log_offset = copy.physical_offset, "Check transaction");
    channel.send_oneway(&Request::CheckTransactionState(
        CheckTransactionStateRequest {
            topic: tx::HALF_TOPIC.to_string(),
            tran_state_table_offset: copy.queue_offset,
            commit_log_offset: copy.physical_offset,
            msg_id: uniq.clone(),
            transaction_id: uniq,
            offset_msg_id: copy.msg_id,
            broker_name: state.config.broker_name.clone(),
            message: Bytes::from(message),
        },
    ));
}

/// Puts a half checked too often into `TRANS_CHECK_MAX_TIME_TOPIC`
/// (`DefaultTransactionalMessageCheckListener.resolveDiscardMsg`).
fn discard(state: &BrokerState, half: &Record, properties: &Properties) -> bool {
    let topic =
        state
            .topics
            .create_if_absent(tx::CHECK_MAX_TIME_TOPIC, 1, perm::READ | perm::WRITE);
    let message = MessageToStore::copy_of(half, topic.topic_name, 0, properties.encode());
    match state.store.append_messages(vec![message]) {
        Ok(_) => {
            warn!(
                real_topic = properties.get(keys::REAL_TOPIC).unwrap_or_default(),
                uniq_key = properties.uniq_key().unwrap_or_default(),
                half_offset = half.queue_offset,
                "half message checked too many times: moved to TRANS_CHECK_MAX_TIME_TOPIC"
            );
            true
        }
        Err(err) => {
            warn!(%err, "moving a half message to TRANS_CHECK_MAX_TIME_TOPIC failed");
            false
        }
    }
}
