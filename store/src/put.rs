//! The put path: encode outside the lock, then under the put lock assign queue offsets, physical
//! offsets and the store timestamp, copy into the CommitLog and append the ConsumeQueue entries.
//!
//! Per call there is one lock hold, one memcpy per segment touched and one per queue; the
//! encoding buffer is reused per thread, so a put allocates only its result.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_model::record::{Record, RecordFields, MAX_PROPERTIES_LEN, QUEUE_OFFSET_POS};

use crate::commit_log::{PendingRecord, END_FILE_MIN_BLANK_LENGTH};
use crate::consume_queue::{ConsumeQueue, CqEntry};
use crate::dispatch::{has_queue_entry, property, tags_code, SCHEDULE_TOPIC};
use crate::error::PutError;
use crate::message_store::Shared;
use crate::stats::Stats;

/// One message to append. Properties are already encoded (`name 0x01 value 0x02` …).
#[derive(Debug, Clone)]
pub struct MessageToStore {
    pub topic: String,
    pub queue_id: i32,
    pub flag: i32,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: Bytes,
    pub properties: String,
}

impl MessageToStore {
    /// A copy of a stored record for `topic` and `queue_id` with `properties`: how the broker's
    /// services move a message on (a delayed or timer message to its real topic, a half to its
    /// topic or to the discard topic, a popped message to its retry topic). Fields a service
    /// changes besides these are set with struct update syntax.
    pub fn copy_of(record: &Record<'_>, topic: String, queue_id: i32, properties: String) -> Self {
        MessageToStore {
            topic,
            queue_id,
            flag: record.flag,
            sys_flag: record.sys_flag,
            born_timestamp: record.born_timestamp,
            born_host: record.born_host,
            reconsume_times: record.reconsume_times,
            prepared_transaction_offset: 0,
            body: Bytes::copy_from_slice(record.body),
            properties,
        }
    }
}

/// Where one message went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendedMessage {
    pub physical_offset: i64,
    /// Queue offset (0 for prepared and rolled-back transaction messages, which get no entry).
    pub queue_offset: i64,
    pub size: i32,
    pub store_timestamp: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutStatus {
    Ok,
    /// Sync flush did not confirm within `sync_flush_timeout_ms`; the messages are stored.
    FlushDiskTimeout,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    pub status: PutStatus,
    pub messages: Vec<AppendedMessage>,
}

/// What an append did, for the caller to finish (wait for flush).
pub(crate) struct Appended {
    pub messages: Vec<AppendedMessage>,
    /// End of the last record written.
    pub end_offset: i64,
}

#[derive(Default)]
struct Scratch {
    buf: Vec<u8>,
    records: Vec<PendingRecord>,
    /// Tag code per record, when it does not depend on the store time.
    tags: Vec<Option<i64>>,
    queue_offsets: Vec<i64>,
    physical_offsets: Vec<i64>,
    groups: Vec<Group>,
    /// Encoded ConsumeQueue entries, group after group.
    entries: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Buffers larger than this are not kept between puts.
const MAX_KEPT_BUFFER: usize = 8 * 1024 * 1024;

/// A queue the batch goes to.
struct Group {
    queue: Arc<ConsumeQueue>,
    first_offset: i64,
    count: usize,
}

impl Group {
    fn holds(&self, message: &MessageToStore) -> bool {
        self.queue.queue_id() == message.queue_id && self.queue.topic() == message.topic
    }
}

pub(crate) fn append(shared: &Shared, messages: &[MessageToStore]) -> Result<Appended, PutError> {
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let result = append_with(shared, messages, &mut scratch);
        // Keep no queue alive from here, and no huge buffer.
        scratch.groups.clear();
        if scratch.buf.capacity() > MAX_KEPT_BUFFER {
            scratch.buf = Vec::new();
        }
        result
    })
}

fn append_with(
    shared: &Shared,
    messages: &[MessageToStore],
    scratch: &mut Scratch,
) -> Result<Appended, PutError> {
    encode(shared, messages, scratch)?;
    let Scratch {
        buf,
        records,
        tags,
        queue_offsets,
        physical_offsets,
        groups,
        entries,
    } = scratch;

    let guard = shared.commit_log.lock();
    let locked_at = Instant::now();
    shared.check_writable()?;
    let store_timestamp = shared.env.clock.now_ms();
    groups.clear();
    queue_offsets.clear();
    for (message, record) in messages.iter().zip(records.iter()) {
        if !has_queue_entry(message.sys_flag) {
            queue_offsets.push(0);
            continue;
        }
        let group = match groups.iter().position(|g| g.holds(message)) {
            Some(index) => &mut groups[index],
            None => {
                let queue = shared
                    .queues
                    .get_or_create(&guard, &message.topic, message.queue_id)
                    .map_err(|e| PutError::InvalidTopic(e.to_string()))?;
                let first_offset = queue.max_offset();
                groups.push(Group {
                    queue,
                    first_offset,
                    count: 0,
                });
                groups.last_mut().expect("just pushed")
            }
        };
        let queue_offset = group.first_offset + group.count as i64;
        group.count += 1;
        queue_offsets.push(queue_offset);
        let at = record.start + QUEUE_OFFSET_POS;
        buf[at..at + 8].copy_from_slice(&queue_offset.to_be_bytes());
    }
    for group in groups.iter() {
        group
            .queue
            .prepare(group.first_offset, group.count)
            .map_err(|e| shared.write_error(e))?;
    }
    let prepared_at = Instant::now();
    shared
        .commit_log
        .append(&guard, buf, records, store_timestamp, physical_offsets)
        .map_err(|e| shared.write_error(e))?;
    let written_at = Instant::now();

    // ConsumeQueue entries: one append per queue.
    for group in groups.iter() {
        entries.clear();
        let mut last_end = 0;
        for (i, message) in messages.iter().enumerate() {
            if !has_queue_entry(message.sys_flag) || !group.holds(message) {
                continue;
            }
            let tags_code = tags[i].unwrap_or_else(|| {
                tags_code(
                    &message.topic,
                    &message.properties,
                    store_timestamp,
                    &shared.delays,
                )
            });
            let entry = CqEntry {
                offset: physical_offsets[i],
                size: records[i].len as i32,
                tags_code,
            };
            entries.extend_from_slice(&entry.encode());
            last_end = entry.offset + records[i].len as i64;
        }
        if let Err(e) = group.queue.append(group.first_offset, entries) {
            // The records are in the CommitLog; recovery will rebuild the entries. Stop taking
            // writes rather than hand out queue offsets twice.
            shared.mark_consume_queue_error();
            tracing::error!(topic = group.queue.topic(), queue_id = group.queue.queue_id(), error = %e, "consume queue append failed");
            return Err(PutError::Io(e));
        }
        group.queue.set_max_physic_offset(last_end);
    }
    if !groups.is_empty() {
        shared.checkpoint.set_logics_msg_timestamp(store_timestamp);
    }
    Stats::add(&shared.stats.put_message_times_total, messages.len() as u64);
    Stats::add(&shared.stats.put_message_size_total, buf.len() as u64);
    drop(guard);
    report_slow_hold(locked_at, prepared_at, written_at);

    for group in groups.iter() {
        let end = group.first_offset + group.count as i64;
        if group.queue.wants_ahead(end) {
            shared.cq_allocator.request(&group.queue);
        }
        shared.notify_arrival(&group.queue, end);
    }
    let messages = records
        .iter()
        .zip(physical_offsets.iter())
        .zip(queue_offsets.iter())
        .map(
            |((record, physical_offset), queue_offset)| AppendedMessage {
                physical_offset: *physical_offset,
                queue_offset: *queue_offset,
                size: record.len as i32,
                store_timestamp,
            },
        )
        .collect::<Vec<_>>();
    let end_offset = messages
        .last()
        .map_or(0, |m| m.physical_offset + i64::from(m.size));
    Ok(Appended {
        messages,
        end_offset,
    })
}

/// Logs a put that held the lock long, with where the time went (every other sender waited
/// that long): `debug` from 1 ms (`RUST_LOG=skiff_store::put=debug` to find latency tails),
/// `warn` from 500 ms as Java's "putMessage in lock cost time" does.
fn report_slow_hold(locked_at: Instant, prepared_at: Instant, written_at: Instant) {
    let held = locked_at.elapsed();
    if held < Duration::from_millis(1) {
        return;
    }
    let us = |d: Duration| d.as_micros() as u64;
    let (queues_us, commit_log_us) = (us(prepared_at - locked_at), us(written_at - prepared_at));
    let consume_queues_us = us(held.saturating_sub(written_at - locked_at));
    if held >= Duration::from_millis(500) {
        tracing::warn!(
            held_ms = held.as_millis() as u64,
            queues_us,
            commit_log_us,
            consume_queues_us,
            "a put held the commit log lock for long; check the disk"
        );
    } else {
        tracing::debug!(
            held_us = us(held),
            queues_us,
            commit_log_us,
            consume_queues_us,
            "slow put under the commit log lock"
        );
    }
}

/// Validates and encodes every record into the scratch buffer (offsets and store time zero).
fn encode(
    shared: &Shared,
    messages: &[MessageToStore],
    scratch: &mut Scratch,
) -> Result<(), PutError> {
    scratch.buf.clear();
    scratch.records.clear();
    scratch.tags.clear();
    let config = &shared.config;
    let segment_limit = config.commit_log_file_size as usize - END_FILE_MIN_BLANK_LENGTH;
    for message in messages {
        check_topic(&message.topic)?;
        if message.properties.len() > MAX_PROPERTIES_LEN {
            return Err(PutError::PropertiesTooLarge {
                len: message.properties.len(),
            });
        }
        let fields = RecordFields {
            queue_id: message.queue_id,
            flag: message.flag,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: message.sys_flag,
            born_timestamp: message.born_timestamp,
            born_host: message.born_host,
            store_timestamp: 0,
            store_host: config.store_host,
            reconsume_times: message.reconsume_times,
            prepared_transaction_offset: message.prepared_transaction_offset,
            body: &message.body,
            topic: &message.topic,
            properties: &message.properties,
        };
        let len = fields.encoded_len();
        let max = config.max_message_size.min(segment_limit);
        if len > max {
            return Err(PutError::MessageTooLarge { size: len, max });
        }
        let start = scratch.buf.len();
        fields
            .encode(&mut scratch.buf)
            .map_err(|e| PutError::InvalidTopic(e.to_string()))?;
        scratch.records.push(PendingRecord { start, len });
        let tags = (message.topic != SCHEDULE_TOPIC)
            .then(|| tags_code(&message.topic, &message.properties, 0, &shared.delays));
        scratch.tags.push(tags);
    }
    Ok(())
}

/// Topics become directory names: refuse what could escape `consumequeue/` (or is longer than
/// a file name may be).
fn check_topic(topic: &str) -> Result<(), PutError> {
    if !crate::consume_queue::is_storable_topic(topic) {
        return Err(PutError::InvalidTopic(format!(
            "the topic {topic:?} cannot be stored"
        )));
    }
    Ok(())
}

/// Whether the put waits for sync flush: the first message's `WAIT` property (default true),
/// parsed as Java's `Boolean.parseBoolean`.
pub(crate) fn wants_flush_wait(messages: &[MessageToStore]) -> bool {
    messages.first().is_none_or(|m| {
        property(&m.properties, skiff_model::message::keys::WAIT_STORE_MSG_OK)
            .is_none_or(|v| v.eq_ignore_ascii_case("true"))
    })
}
