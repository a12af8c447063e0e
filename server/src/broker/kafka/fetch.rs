//! Fetch and ListOffsets: a partition's offsets are its queue's, dense from the queue's minimum
//! offset (the log start) to its maximum (the high watermark, the next offset to be written).
//!
//! A fetch reads each partition's messages from its offset, within the partition's and the
//! request's byte limits (always at least one record, as KIP-74 asks, so a record larger than the
//! limits cannot stall a consumer), and sends them as one uncompressed record batch per partition.
//! An offset outside [log start, high watermark] is OFFSET_OUT_OF_RANGE; at the high watermark
//! the partition is just empty. When fewer than `minBytes` are found the fetch is held until a
//! message arrives on one of its partitions or `maxWaitMs` passes (at most
//! `brokerSuspendMaxTimeMillis`), then read again.
//!
//! A consumer catching up (a cold fetch) is answered, then its next fetch is read ahead
//! ([`ReadAhead`]): the Java consumer sends no fetch to a broker while it still holds records from
//! it, so without this the broker idles while the client works through an answer, and the client
//! idles while the broker reads the next one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use skiff_model::keyed::KeyedRecord;
use skiff_model::record::Record;
use skiff_protocol::compression::decompressed_body;
use skiff_protocol::kafka::records::{self, BATCH_HEADER_LEN};
use skiff_protocol::kafka::schema::fetch_response::{FetchableTopicResponse, PartitionData};
use skiff_protocol::kafka::schema::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use skiff_protocol::kafka::schema::{
    FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse,
};
use skiff_protocol::kafka::{error, Response};

use super::metadata::partitions;
use super::Answer;
use crate::broker::{core, BrokerState};

/// The largest body a compressed RocketMQ message is undone to (RocketMQ clients refuse bodies
/// over 4 MiB before compressing them; a bomb beyond this stays compressed).
const MAX_BODY: usize = 64 << 20;

/// Messages read from the store per call; a fetch reads again until its byte limit.
const READ_BATCH: i32 = 256;

pub(super) fn handle(
    state: &Arc<BrokerState>,
    ahead: &Arc<ReadAhead>,
    request: FetchRequest,
) -> Answer {
    let cold = request.topics.iter().any(|topic| {
        topic.partitions.iter().any(|p| {
            state
                .store
                .is_cold_read(&topic.topic.0, p.partition, p.fetch_offset)
        })
    });
    if cold {
        return read_cold(state, ahead.clone(), request);
    }
    // Caught up: what was read ahead is not what this consumer reads now.
    ahead.clear();
    let (response, found) = read(state, &request).counted(state);
    let max_wait = u64::try_from(request.max_wait_ms)
        .unwrap_or(0)
        .min(state.config.broker_suspend_max_time_millis);
    let satisfied = found >= usize::try_from(request.min_bytes).unwrap_or(0).max(1);
    if satisfied || max_wait == 0 || has_errors(&response) {
        return Answer::Now(Response::Fetch(response));
    }
    // Held on every partition; read again at the first arrival or at the deadline.
    let queues: Vec<(String, i32, i64)> = request
        .topics
        .iter()
        .flat_map(|topic| {
            let name = topic.topic.0.to_string();
            topic
                .partitions
                .iter()
                .map(move |p| (name.clone(), p.partition, p.fetch_offset))
        })
        .collect();
    let state = state.clone();
    Answer::Later(Box::pin(async move {
        core::wait_any(&state, &queues, Duration::from_millis(max_wait)).await;
        Response::Fetch(read(&state, &request).counted(&state).0)
    }))
}

/// A fetch of data far behind the writer (a consumer catching up): read through the mapping on a
/// blocking thread, bounded as cold RocketMQ pulls are (`pull::read_cold`, which copies from the
/// page cache instead: copies of fetches this large cost more than the faults), so its page
/// faults stall no tokio worker; answered from what was read ahead when that matches. Cold data
/// exists, so it is not held.
fn read_cold(state: &Arc<BrokerState>, ahead: Arc<ReadAhead>, request: FetchRequest) -> Answer {
    let state = state.clone();
    Answer::Later(Box::pin(async move {
        let prepared = match ahead.take(&request) {
            Some(prepared) => prepared.await.ok(),
            None => None,
        };
        let answered = match prepared.and_then(|read| read.still_true(&state, &request)) {
            Some(read) => Some(read),
            None => {
                let permit = Arc::clone(&state.cold_reads).acquire_owned().await;
                let (state, request) = (state.clone(), request.clone());
                tokio::task::spawn_blocking(move || {
                    let _permit = permit;
                    let read = read(&state, &request);
                    // The records are encoded into the response: the cold pages can go at once.
                    state.store.release_cold_read_pages();
                    read
                })
                .await
                .ok()
            }
        };
        let Some(read) = answered else {
            let mut response = FetchResponse::default();
            response.error_code = error::UNKNOWN_SERVER_ERROR;
            return Response::Fetch(response);
        };
        if let Some(next) = read.next_request(&request) {
            ahead.prepare(&state, next, read.found);
        }
        Response::Fetch(read.counted(&state).0)
    }))
}

/// Bytes of fetch answers a broker may hold read ahead, over all its connections.
pub(super) const READ_AHEAD_BYTES: usize = 64 << 20;

/// How long an answer read ahead may wait for its fetch: a consumer catching up asks again
/// within milliseconds; one that went quiet gets a fresh read.
const READ_AHEAD_TTL: Duration = Duration::from_secs(1);

/// A connection's next fetch, read ahead: the same partitions from where the last answer ended,
/// with the same limits, read on a blocking thread while the client processes that answer. Used
/// only when the fetch asks exactly that and every partition would read the same now (its batch
/// was cut by its byte limit, or its high watermark has not moved), so an answer from it is the
/// one a fresh read gives. Bounded by [`READ_AHEAD_BYTES`] per broker, one read per connection,
/// and the cold-read permits (none is waited for).
pub(super) struct ReadAhead {
    next: parking_lot::Mutex<Option<Prepared>>,
    /// The broker's [`READ_AHEAD_BYTES`], shared by its connections.
    budget: Arc<tokio::sync::Semaphore>,
}

struct Prepared {
    request: FetchRequest,
    made: Instant,
    read: tokio::task::JoinHandle<Read>,
}

impl ReadAhead {
    pub(super) fn new(budget: Arc<tokio::sync::Semaphore>) -> Self {
        ReadAhead {
            next: parking_lot::Mutex::default(),
            budget,
        }
    }

    /// The read prepared for `request`, if that is what was predicted and it is fresh; any other
    /// prepared read is dropped.
    fn take(&self, request: &FetchRequest) -> Option<tokio::task::JoinHandle<Read>> {
        let prepared = self.next.lock().take()?;
        (prepared.made.elapsed() < READ_AHEAD_TTL && same_reads(&prepared.request, request))
            .then_some(prepared.read)
    }

    fn clear(&self) {
        self.next.lock().take();
    }

    /// Reads `request` ahead, holding `bytes` of the budget (the size of the answer before it),
    /// for [`READ_AHEAD_TTL`] at most.
    fn prepare(self: &Arc<Self>, state: &Arc<BrokerState>, request: FetchRequest, bytes: usize) {
        let Ok(bytes) = u32::try_from(bytes.max(1)) else {
            return;
        };
        let Ok(held) = Arc::clone(&self.budget).try_acquire_many_owned(bytes) else {
            return;
        };
        let Ok(permit) = Arc::clone(&state.cold_reads).try_acquire_owned() else {
            return;
        };
        let (state, predicted) = (state.clone(), request.clone());
        let read = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut read = read(&state, &predicted);
            state.store.release_cold_read_pages();
            read.held = Some(held);
            read
        });
        let made = Instant::now();
        *self.next.lock() = Some(Prepared {
            request,
            made,
            read,
        });
        // A consumer that stops fetching does not keep its share of the budget.
        let ahead = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(READ_AHEAD_TTL).await;
            if let Some(ahead) = ahead.upgrade() {
                let mut next = ahead.next.lock();
                if next.as_ref().is_some_and(|p| p.made == made) {
                    next.take();
                }
            }
        });
    }
}

/// Whether two fetches read the same: the same partitions in the same order, from the same
/// offsets, within the same limits.
fn same_reads(a: &FetchRequest, b: &FetchRequest) -> bool {
    a.max_bytes == b.max_bytes
        && a.topics.len() == b.topics.len()
        && a.topics.iter().zip(&b.topics).all(|(x, y)| {
            x.topic == y.topic
                && x.partitions.len() == y.partitions.len()
                && x.partitions.iter().zip(&y.partitions).all(|(p, q)| {
                    p.partition == q.partition
                        && p.fetch_offset == q.fetch_offset
                        && p.partition_max_bytes == q.partition_max_bytes
                })
        })
}

/// A fetch's answer as read, before its records are counted as sent.
struct Read {
    response: FetchResponse,
    /// Record bytes found.
    found: usize,
    /// Records in the answer.
    records: u64,
    /// Per partition of the answer, in order: whether its batch stopped at the byte limit (a
    /// later read from the same offset finds the same records).
    full: Vec<bool>,
    /// The share of [`READ_AHEAD_BYTES`] an answer read ahead holds until it is sent.
    held: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Read {
    /// Counts the records as sent; the response and the record bytes found.
    fn counted(self, state: &BrokerState) -> (FetchResponse, usize) {
        if self.records > 0 {
            state.stats.messages_got(self.records);
        }
        (self.response, self.found)
    }

    /// The fetch that follows this answer: each partition from where its batch ended. `None`
    /// when some partition had an error or nothing is left to read.
    fn next_request(&self, request: &FetchRequest) -> Option<FetchRequest> {
        let mut next = request.clone();
        let mut more = false;
        let answers = self.response.responses.iter().flat_map(|t| &t.partitions);
        let asked = next.topics.iter_mut().flat_map(|t| t.partitions.iter_mut());
        for (asked, answer) in asked.zip(answers) {
            if answer.error_code != error::NONE || answer.partition_index != asked.partition {
                return None;
            }
            let records = answer
                .records
                .as_deref()
                .map_or(0, records::batch_record_count);
            asked.fetch_offset += i64::from(records);
            more |= asked.fetch_offset < answer.high_watermark;
        }
        more.then_some(next)
    }

    /// This answer to `request`, read ahead, as a fresh read would give it now: `None` when some
    /// partition would read differently (its batch did not fill its limit and more records came,
    /// its offset left the log, or the topic no longer has it); the offsets the answer reports
    /// are the queues' current ones.
    fn still_true(mut self, state: &BrokerState, request: &FetchRequest) -> Option<Read> {
        let asked = request.topics.iter().flat_map(|t| {
            let name = t.topic.0.to_string();
            t.partitions
                .iter()
                .map(move |p| (name.clone(), p.fetch_offset))
        });
        let answers = self
            .response
            .responses
            .iter_mut()
            .flat_map(|t| &mut t.partitions);
        for (((name, offset), answer), full) in asked.zip(answers).zip(&self.full) {
            let index = answer.partition_index;
            let known = state
                .topics
                .get(&name)
                .is_some_and(|c| (0..partitions(&c)).contains(&index));
            let (log_start, high_watermark) = core::queue_range(state, &name, index);
            let moved = high_watermark != answer.high_watermark && !full;
            if !known
                || answer.error_code != error::NONE
                || moved
                || !(log_start..=high_watermark).contains(&offset)
            {
                return None;
            }
            answer.high_watermark = high_watermark;
            answer.last_stable_offset = high_watermark;
            answer.log_start_offset = log_start;
        }
        self.held = None;
        Some(self)
    }
}

fn has_errors(response: &FetchResponse) -> bool {
    response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .any(|p| p.error_code != error::NONE)
}

/// Reads every partition of the fetch.
fn read(state: &BrokerState, request: &FetchRequest) -> Read {
    let mut budget = usize::try_from(request.max_bytes).unwrap_or(0);
    let mut found = 0;
    let mut records = 0;
    let mut full = Vec::new();
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let name = topic.topic.0.to_string();
        let config = state.topics.get(&name);
        let partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let index = p.partition;
                let known = config
                    .as_ref()
                    .is_some_and(|c| (0..partitions(c)).contains(&index));
                if !known {
                    full.push(false);
                    return PartitionData::default()
                        .with_partition_index(index)
                        .with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION)
                        .with_high_watermark(-1)
                        .with_last_stable_offset(-1)
                        .with_log_start_offset(-1);
                }
                let (log_start, high_watermark) = core::queue_range(state, &name, index);
                let data = PartitionData::default()
                    .with_partition_index(index)
                    .with_high_watermark(high_watermark)
                    // No transactions: everything below the high watermark is stable.
                    .with_last_stable_offset(high_watermark)
                    .with_log_start_offset(log_start)
                    .with_aborted_transactions(Some(Vec::new()))
                    .with_preferred_read_replica((-1).into());
                if p.fetch_offset < log_start || p.fetch_offset > high_watermark {
                    full.push(false);
                    return data.with_error_code(error::OFFSET_OUT_OF_RANGE);
                }
                // KIP-74: the first record goes out even past the limits.
                let limit = usize::try_from(p.partition_max_bytes)
                    .unwrap_or(0)
                    .min(budget);
                let (batch, count, filled) =
                    read_partition(state, &name, index, p.fetch_offset, high_watermark, limit);
                found += batch.len();
                records += count;
                full.push(filled);
                budget = budget.saturating_sub(batch.len());
                data.with_records(Some(batch))
            })
            .collect();
        topics.push(
            FetchableTopicResponse::default()
                .with_topic(topic.topic.clone())
                .with_partitions(partitions),
        );
    }
    let mut response = FetchResponse::default();
    response.responses = topics;
    Read {
        response,
        found,
        records,
        full,
        held: None,
    }
}

/// The records of a queue from `offset`, as one batch of at most `limit` bytes (one record at
/// least), or nothing at the high watermark; also how many records, and whether the batch
/// stopped because the next record would pass `limit`.
fn read_partition(
    state: &BrokerState,
    topic: &str,
    queue_id: i32,
    offset: i64,
    high_watermark: i64,
    limit: usize,
) -> (Bytes, u64, bool) {
    let mut full = false;
    let mut records: Vec<KeyedRecord> = Vec::new();
    let mut size = BATCH_HEADER_LEN;
    let mut next = offset;
    let mut base_timestamp = 0;
    'reading: while next < high_watermark {
        let result =
            state
                .store
                .get_messages(topic, queue_id, next, READ_BATCH, limit.max(1), &|_| true);
        if result.messages.is_empty() {
            break;
        }
        for message in &result.messages {
            let Ok(stored) = Record::decode(message, false) else {
                break 'reading;
            };
            // Offsets in a batch are consecutive from its base.
            if stored.queue_offset != next {
                break 'reading;
            }
            // A RocketMQ producer's compressed body reads as what it sent.
            let body = match decompressed_body(stored.sys_flag, stored.body, MAX_BODY) {
                Some(body) => Bytes::from(body),
                None => message.slice_ref(stored.body),
            };
            let record = KeyedRecord::from_stored(stored.born_timestamp, body, stored.properties);
            if records.is_empty() {
                base_timestamp = record.timestamp;
            }
            let len = records::encoded_record_len(
                &record,
                next - offset,
                record.timestamp.wrapping_sub(base_timestamp),
            );
            if !records.is_empty() && size + len > limit {
                full = true;
                break 'reading;
            }
            size += len;
            records.push(record);
            next += 1;
        }
    }
    if records.is_empty() {
        return (Bytes::new(), 0, false);
    }
    let mut out = BytesMut::with_capacity(size);
    records::encode_batch(&mut out, offset, &records);
    (out.freeze(), records.len() as u64, full)
}

/// ListOffsets: -2 is the log start, -1 the high watermark, -3 the last record (whose timestamp
/// Skiff takes as the largest), and a time the first record at or after it.
pub(super) fn list_offsets(state: &Arc<BrokerState>, request: ListOffsetsRequest) -> Answer {
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let name = topic.name.0.to_string();
            let config = state.topics.get(&name);
            let partitions = topic
                .partitions
                .into_iter()
                .map(|p| {
                    let index = p.partition_index;
                    let answer = ListOffsetsPartitionResponse::default()
                        .with_partition_index(index)
                        .with_leader_epoch(-1);
                    let known = config
                        .as_ref()
                        .is_some_and(|c| (0..partitions(c)).contains(&index));
                    if !known {
                        return answer
                            .with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION)
                            .with_timestamp(-1)
                            .with_offset(-1);
                    }
                    let (offset, timestamp) = match p.timestamp {
                        -2 => (core::queue_range(state, &name, index).0, -1),
                        -1 => (core::queue_range(state, &name, index).1, -1),
                        -3 => last_record(state, &name, index),
                        time => first_at_or_after(state, &name, index, time),
                    };
                    answer.with_offset(offset).with_timestamp(timestamp)
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    let mut response = ListOffsetsResponse::default();
    response.topics = topics;
    Answer::Now(Response::ListOffsets(response))
}

/// The record timestamp (born time) at `offset`, if the record is there.
fn timestamp_at(state: &BrokerState, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
    let entry = state.store.queue_entry(topic, queue_id, offset)?;
    let record = entry.record?;
    Record::decode(&record, false)
        .ok()
        .map(|r| r.born_timestamp)
}

fn last_record(state: &BrokerState, topic: &str, queue_id: i32) -> (i64, i64) {
    let end = core::queue_range(state, topic, queue_id).1;
    match timestamp_at(state, topic, queue_id, end - 1) {
        Some(timestamp) if end > 0 => (end - 1, timestamp),
        _ => (-1, -1),
    }
}

/// The first offset whose record's timestamp is at or after `time`, and that timestamp; (-1, -1)
/// when none is. A binary search over the queue: exact when producers' timestamps grow with the
/// offsets, as one producer's do.
fn first_at_or_after(state: &BrokerState, topic: &str, queue_id: i32, time: i64) -> (i64, i64) {
    let (mut low, mut high) = core::queue_range(state, topic, queue_id);
    // Invariant: every offset below `low` is before `time`; `high` is at or after it (or the end).
    while low < high {
        let middle = low + (high - low) / 2;
        match timestamp_at(state, topic, queue_id, middle) {
            Some(timestamp) if timestamp < time => low = middle + 1,
            Some(_) => high = middle,
            // A hole (deleted data): search above it.
            None => low = middle + 1,
        }
    }
    match timestamp_at(state, topic, queue_id, low) {
        Some(timestamp) => (low, timestamp),
        None => (-1, -1),
    }
}
