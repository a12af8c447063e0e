//! Produce: each partition's record batches become messages of the queue with that id, appended
//! under one store lock so that a batch's records get consecutive offsets, and on the
//! connection's reader so that batches keep their arrival order.
//!
//! The answer waits for what the broker's flush mode promises (`SYNC_FLUSH`: the disk), whatever
//! `acks` (1 or -1) says: with one replica both mean "stored as the broker stores". `acks=0`
//! gets no answer. Errors are per partition, with Kafka's codes. An idempotent producer's batch
//! is checked against its sequence state first (`idempotence`): a duplicate is answered with its
//! original offset and not stored again.

use std::net::SocketAddr;
use std::sync::Arc;

use futures::future::join_all;
use skiff_model::message::Properties;
use skiff_model::route::perm;
use skiff_model::topic;
use skiff_protocol::kafka::records::{self, RecordsError};
use skiff_protocol::kafka::schema::produce_response::{
    PartitionProduceResponse, TopicProduceResponse,
};
use skiff_protocol::kafka::schema::{ProduceRequest, ProduceResponse};
use skiff_protocol::kafka::{error, Response, StrBytes};
use skiff_store::{MessageToStore, Put, PutError, PutStatus};

use parking_lot::Mutex;

use super::idempotence::{last_sequence, Check, Sequences};
use super::metadata::partitions;
use super::Answer;
use crate::broker::{core, now_millis, BrokerState};

/// Most bytes one batch may decompress to.
const MAX_UNCOMPRESSED_BATCH: usize = 64 << 20;

/// One partition's outcome: known now, or once the store has flushed.
enum Outcome {
    Done(PartitionProduceResponse),
    Flushing(i32, skiff_store::FlushWait),
}

pub(super) fn handle(
    state: &Arc<BrokerState>,
    sequences: &Mutex<Sequences>,
    peer: SocketAddr,
    request: ProduceRequest,
) -> Answer {
    let acks = request.acks;
    let mut topics = Vec::with_capacity(request.topic_data.len());
    for data in request.topic_data {
        let name = data.name.0.to_string();
        let outcomes: Vec<Outcome> = data
            .partition_data
            .into_iter()
            .map(|partition| {
                if !matches!(acks, -1..=1) {
                    return Outcome::Done(failed(partition.index, error::INVALID_REQUIRED_ACKS));
                }
                append(
                    state,
                    sequences,
                    peer,
                    &name,
                    partition.index,
                    partition.records,
                )
            })
            .collect();
        topics.push((data.name, outcomes));
    }
    if acks == 0 {
        return Answer::Nothing;
    }
    let flushing = topics
        .iter()
        .any(|(_, outcomes)| outcomes.iter().any(|o| matches!(o, Outcome::Flushing(..))));
    if !flushing {
        let topics = topics
            .into_iter()
            .map(|(name, outcomes)| {
                let partitions = outcomes
                    .into_iter()
                    .map(|outcome| match outcome {
                        Outcome::Done(response) => response,
                        Outcome::Flushing(..) => unreachable!("checked above"),
                    })
                    .collect();
                TopicProduceResponse::default()
                    .with_name(name)
                    .with_partition_responses(partitions)
            })
            .collect();
        return Answer::Now(response(topics));
    }
    let state = state.clone();
    Answer::Later(Box::pin(async move {
        let mut answered = Vec::with_capacity(topics.len());
        for (name, outcomes) in topics {
            let partitions = join_all(outcomes.into_iter().map(|outcome| async {
                match outcome {
                    Outcome::Done(response) => response,
                    Outcome::Flushing(index, wait) => {
                        let result = wait.wait().await;
                        let base = result.messages.first().map_or(0, |m| m.queue_offset);
                        match result.status {
                            PutStatus::Ok => stored(&state, &name.0, index, base),
                            // Stored, not on disk in time: the producer retries (at least once).
                            PutStatus::FlushDiskTimeout => failed(index, error::REQUEST_TIMED_OUT),
                        }
                    }
                }
            }))
            .await;
            answered.push(
                TopicProduceResponse::default()
                    .with_name(name)
                    .with_partition_responses(partitions),
            );
        }
        response(answered)
    }))
}

fn response(topics: Vec<TopicProduceResponse>) -> Response {
    let mut response = ProduceResponse::default();
    response.responses = topics;
    Response::Produce(response)
}

fn failed(index: i32, code: i16) -> PartitionProduceResponse {
    PartitionProduceResponse::default()
        .with_index(index)
        .with_error_code(code)
        .with_base_offset(-1)
        .with_log_append_time_ms(-1)
        .with_log_start_offset(-1)
}

fn stored(
    state: &BrokerState,
    topic: &str,
    index: i32,
    base_offset: i64,
) -> PartitionProduceResponse {
    PartitionProduceResponse::default()
        .with_index(index)
        .with_base_offset(base_offset)
        // CreateTime topics: the records keep the producer's timestamps.
        .with_log_append_time_ms(-1)
        .with_log_start_offset(core::queue_range(state, topic, index).0)
}

fn append(
    state: &BrokerState,
    sequences: &Mutex<Sequences>,
    peer: SocketAddr,
    topic: &str,
    index: i32,
    records: Option<bytes::Bytes>,
) -> Outcome {
    let refused = |code| Outcome::Done(failed(index, code));
    if !perm::is_writeable(state.permission()) {
        return refused(error::NOT_ENOUGH_REPLICAS);
    }
    if topic::is_not_allowed_send_topic(topic) {
        return refused(error::TOPIC_AUTHORIZATION_FAILED);
    }
    let Some(config) = state.topics.get(topic) else {
        return refused(error::UNKNOWN_TOPIC_OR_PARTITION);
    };
    if !(0..partitions(&config)).contains(&index) {
        return refused(error::UNKNOWN_TOPIC_OR_PARTITION);
    }
    if !perm::is_writeable(config.perm) {
        return refused(error::TOPIC_AUTHORIZATION_FAILED);
    }
    let batch = match records::decode_batches(records.unwrap_or_default(), MAX_UNCOMPRESSED_BATCH) {
        // As Kafka's LogValidator: a v3+ produce carries exactly one batch per partition.
        Ok(batches) if batches.len() != 1 => Err(RecordsError::Invalid(
            "a produce request must carry one record batch per partition",
        )),
        Ok(mut batches) => Ok(batches.remove(0)),
        Err(err) => Err(err),
    };
    let batch = match batch {
        Ok(batch) => batch,
        Err(err) => {
            let code = match err {
                RecordsError::Corrupt(_) => error::CORRUPT_MESSAGE,
                RecordsError::Magic(_) => error::UNSUPPORTED_FOR_MESSAGE_FORMAT,
                RecordsError::Compression(_) => error::UNSUPPORTED_COMPRESSION_TYPE,
                RecordsError::Invalid(_) => error::INVALID_RECORD,
                RecordsError::TooLarge(_) => error::MESSAGE_TOO_LARGE,
            };
            let mut response = failed(index, code);
            response.error_message = Some(StrBytes::from_string(err.to_string()));
            return Outcome::Done(response);
        }
    };
    // An idempotent producer's batch: checked and appended under the sequence lock, so that two
    // connections of one producer cannot both pass the check.
    let idempotent = (batch.producer_id >= 0).then(|| {
        let last = last_sequence(batch.base_sequence, batch.last_offset_delta);
        (
            (batch.producer_id, topic.to_string(), index),
            batch.producer_epoch,
            batch.base_sequence,
            last,
        )
    });
    let mut sequence_lock = None;
    if let Some((key, epoch, first, last)) = &idempotent {
        let held = sequences.lock();
        match held.check(key, *epoch, *first, *last) {
            Check::Append => sequence_lock = Some(held),
            Check::Duplicate(base) => return Outcome::Done(stored(state, topic, index, base)),
            Check::Refuse(code) => return refused(code),
        }
    }
    let now = now_millis();
    let messages: Vec<MessageToStore> = batch
        .records
        .into_iter()
        .map(|record| {
            let mut properties = Properties::new();
            record.to_properties(&mut properties);
            core::stamp(state, &mut properties, now);
            MessageToStore {
                topic: topic.to_string(),
                queue_id: index,
                flag: 0,
                sys_flag: 0,
                born_timestamp: record.timestamp,
                born_host: peer,
                reconsume_times: 0,
                prepared_transaction_offset: 0,
                body: record.body(),
                properties: properties.encode(),
            }
        })
        .collect();
    let count = messages.len() as u64;
    let bytes: u64 = messages.iter().map(|m| m.body.len() as u64).sum();
    let put = match core::append(state, messages) {
        Ok(put) => put,
        Err(err) => {
            let code = match err {
                PutError::MessageTooLarge { .. } | PutError::PropertiesTooLarge { .. } => {
                    error::MESSAGE_TOO_LARGE
                }
                PutError::InvalidTopic(_) => error::INVALID_TOPIC_EXCEPTION,
                PutError::ServiceNotAvailable(_) | PutError::Io(_) => error::KAFKA_STORAGE_ERROR,
            };
            let mut response = failed(index, code);
            response.error_message = Some(StrBytes::from_string(err.to_string()));
            return Outcome::Done(response);
        }
    };
    state.traffic.messages_put(topic, count, bytes);
    let appended = match &put {
        Put::Done(result) => result.messages.first(),
        Put::AwaitFlush(wait) => wait.messages().first(),
    };
    let base = appended.map_or(0, |m| m.queue_offset);
    if let (Some(mut held), Some((key, epoch, first, last))) = (sequence_lock, idempotent) {
        held.record(key, epoch, (first, last, base), now);
    }
    match put {
        Put::Done(_) => Outcome::Done(stored(state, topic, index, base)),
        Put::AwaitFlush(wait) => Outcome::Flushing(index, wait),
    }
}
