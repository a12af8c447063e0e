//! The read side: pulls (`DefaultMessageStore.getMessage`), offsets and store times. Nothing here
//! takes a lock; messages come back as zero-copy slices of the mapped segments.

use bytes::Bytes;

use crate::consume_queue::{self, Boundary, CqEntry, ENTRY_SIZE};
use crate::message_store::Shared;
use crate::stats::Stats;

/// Largest pull, whatever the caller asks (`MAX_PULL_MSG_SIZE`).
const MAX_PULL_MSG_SIZE: usize = 128 * 1024 * 1024;

/// Outcome of a pull (`GetMessageStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetMessageStatus {
    Found,
    /// Entries were there but the filter took none of them.
    NoMatchedMessage,
    /// The entries point at CommitLog data that was deleted.
    MessageWasRemoving,
    /// The ConsumeQueue file for the offset is gone.
    OffsetFoundNull,
    /// The offset is past the queue's max offset.
    OffsetOverflowBadly,
    /// The offset equals the max offset: nothing new yet.
    OffsetOverflowOne,
    /// The offset is below the queue's min offset.
    OffsetTooSmall,
    /// Kept for the broker's mapping; this store (like Java's 4.9+ and 5.x, which create the
    /// queue on lookup) answers `NoMessageInQueue` for an unknown queue.
    NoMatchedLogicQueue,
    /// The queue is empty.
    NoMessageInQueue,
}

/// What a pull found. `next_begin_offset`, `min_offset` and `max_offset` are computed as Java
/// computes them for a master.
#[derive(Debug, Clone)]
pub struct GetMessagesResult {
    pub status: GetMessageStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    /// Whole records, back to back as a pull response carries them.
    pub messages: Vec<Bytes>,
}

/// One ConsumeQueue entry with the record it points at.
#[derive(Debug, Clone)]
pub struct QueueEntry {
    pub physical_offset: i64,
    /// The tag code; in `SCHEDULE_TOPIC_XXXX` the time the message is due.
    pub tags_code: i64,
    /// `None` when the CommitLog data was deleted.
    pub record: Option<Bytes>,
}

impl GetMessagesResult {
    fn empty(status: GetMessageStatus, next_begin_offset: i64) -> Self {
        GetMessagesResult {
            status,
            next_begin_offset,
            min_offset: 0,
            max_offset: 0,
            messages: Vec::new(),
        }
    }

    /// Bytes of all messages.
    pub fn total_bytes(&self) -> usize {
        self.messages.iter().map(Bytes::len).sum()
    }
}

impl Shared {
    pub(crate) fn get_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        max_total_bytes: usize,
        filter: &dyn Fn(i64) -> bool,
    ) -> GetMessagesResult {
        let result = self.get_messages_inner(
            topic,
            queue_id,
            offset,
            max_msg_nums,
            max_total_bytes,
            filter,
        );
        if result.status == GetMessageStatus::Found {
            Stats::add(&self.stats.get_message_times_total_found, 1);
            Stats::add(
                &self.stats.get_message_transferred_msg_count,
                result.messages.len() as u64,
            );
        } else {
            Stats::add(&self.stats.get_message_times_total_miss, 1);
        }
        result
    }

    pub(crate) fn get_messages_inner(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        max_total_bytes: usize,
        filter: &dyn Fn(i64) -> bool,
    ) -> GetMessagesResult {
        use GetMessageStatus::*;
        let max_offset_py = self.commit_log.max_offset();
        let Some(queue) = self.queues.get(topic, queue_id) else {
            return GetMessagesResult::empty(NoMessageInQueue, 0);
        };
        let min_offset = queue.min_offset();
        let max_offset = queue.max_offset();
        let mut result = GetMessagesResult {
            status: NoMessageInQueue,
            next_begin_offset: offset,
            min_offset,
            max_offset,
            messages: Vec::new(),
        };
        if max_offset == 0 {
            result.next_begin_offset = 0;
        } else if offset < min_offset {
            result.status = OffsetTooSmall;
            result.next_begin_offset = min_offset;
        } else if offset == max_offset {
            result.status = OffsetOverflowOne;
        } else if offset > max_offset {
            result.status = OffsetOverflowBadly;
            result.next_begin_offset = max_offset;
        } else {
            // Java walks `travelCqFileNumWhenGetMessage` (1) ConsumeQueue files: the one holding
            // the offset.
            result.status = NoMatchedMessage;
            match queue.locate(offset) {
                None => {
                    result.status = OffsetFoundNull;
                    result.next_begin_offset = queue.roll_next_file(offset);
                }
                Some((file, pos)) => {
                    let entries = file.read_from(pos).unwrap_or_default();
                    let limits = Limits {
                        max_msg_nums: max_msg_nums.max(0) as usize,
                        max_pull_size: max_total_bytes.clamp(100, MAX_PULL_MSG_SIZE),
                        max_filter_bytes: (self.config.max_filter_message_size)
                            .max(max_msg_nums.max(0) as usize * ENTRY_SIZE),
                    };
                    let cold = self.collect(
                        &mut result,
                        entries,
                        offset,
                        max_offset,
                        max_offset_py,
                        &limits,
                        filter,
                    );
                    if cold {
                        queue.read_ahead(result.next_begin_offset);
                    }
                }
            }
        }
        result
    }

    /// The inner loop of `getMessage` over one ConsumeQueue file's entries. Returns whether it
    /// read data the store keeps unmapped (a consumer far behind).
    #[allow(clippy::too_many_arguments)]
    fn collect(
        &self,
        result: &mut GetMessagesResult,
        entries: &[u8],
        offset: i64,
        max_offset: i64,
        max_offset_py: i64,
        limits: &Limits,
        filter: &dyn Fn(i64) -> bool,
    ) -> bool {
        let mut total = 0usize;
        let mut next_phy_file_start = i64::MIN;
        // What this read maps of data the store keeps unmapped, for `release_cold_read_pages`.
        let cold_below = max_offset_py - self.config.commit_log_resident_tail as i64;
        let mut cold: Option<(i64, i64)> = None;
        for (k, unit) in entries.chunks_exact(ENTRY_SIZE).enumerate() {
            if result.next_begin_offset >= max_offset {
                break;
            }
            let queue_offset = offset + k as i64;
            let entry = CqEntry::decode(unit);
            let size = entry.size.max(0) as usize;
            if (queue_offset - offset) as usize * ENTRY_SIZE >= limits.max_filter_bytes {
                break;
            }
            let in_memory = max_offset_py - entry.offset <= self.memory_budget;
            if self.is_batch_full(size, limits, total, result.messages.len(), in_memory) {
                break;
            }
            if total >= limits.max_pull_size {
                break;
            }
            result.next_begin_offset = queue_offset + 1;
            if next_phy_file_start != i64::MIN && entry.offset < next_phy_file_start {
                continue;
            }
            if !filter(entry.tags_code) {
                if total == 0 {
                    result.status = GetMessageStatus::NoMatchedMessage;
                }
                continue;
            }
            match self.commit_log.get(entry.offset, entry.size) {
                None => {
                    if total == 0 {
                        result.status = GetMessageStatus::MessageWasRemoving;
                    }
                    next_phy_file_start = self.commit_log.roll_next_file(entry.offset);
                }
                Some(message) => {
                    if entry.offset < cold_below {
                        let end = entry.offset + message.len() as i64;
                        cold = Some(cold.map_or((entry.offset, end), |(a, b)| {
                            (a.min(entry.offset), b.max(end))
                        }));
                    }
                    total += message.len();
                    result.messages.push(message);
                    result.status = GetMessageStatus::Found;
                    next_phy_file_start = i64::MIN;
                }
            }
        }
        if let Some((from, to)) = cold {
            self.commit_log.note_cold_read(from, to);
        }
        cold.is_some()
    }

    /// `isTheBatchFull`: the first message always goes; then count and byte caps apply, tighter
    /// when the data is probably not in the page cache.
    fn is_batch_full(
        &self,
        size: usize,
        limits: &Limits,
        total: usize,
        count: usize,
        in_memory: bool,
    ) -> bool {
        if total == 0 || count == 0 {
            return false;
        }
        if count + 1 > limits.max_msg_nums || total + size > limits.max_pull_size {
            return true;
        }
        let config = &self.config;
        if in_memory {
            total + size > config.max_transfer_bytes_on_message_in_memory
                || count
                    > config
                        .max_transfer_count_on_message_in_memory
                        .saturating_sub(1)
        } else {
            total + size > config.max_transfer_bytes_on_message_in_disk
                || count
                    > config
                        .max_transfer_count_on_message_in_disk
                        .saturating_sub(1)
        }
    }

    pub(crate) fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.queues
            .get(topic, queue_id)
            .map_or(0, |q| q.max_offset())
    }

    pub(crate) fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.queues
            .get(topic, queue_id)
            .map_or(0, |q| q.min_offset())
    }

    pub(crate) fn offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
        boundary: Boundary,
    ) -> i64 {
        let Some(queue) = self.queues.get(topic, queue_id) else {
            return 0;
        };
        let store_time =
            |offset: i64, size: i32| self.commit_log.pickup_store_timestamp(offset, size);
        queue.offset_by_time(
            timestamp,
            boundary,
            self.commit_log.min_offset(),
            &store_time,
        )
    }

    /// Store time of the entry at `queue_offset`, if both the entry and its record exist.
    pub(crate) fn queue_entry(
        &self,
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
    ) -> Option<QueueEntry> {
        let entry = self.queues.get(topic, queue_id)?.get(queue_offset)?;
        Some(QueueEntry {
            physical_offset: entry.offset,
            tags_code: entry.tags_code,
            record: self.commit_log.get(entry.offset, entry.size),
        })
    }

    pub(crate) fn message_store_time(
        &self,
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
    ) -> Option<i64> {
        let entry = self.queues.get(topic, queue_id)?.get(queue_offset)?;
        let time = self
            .commit_log
            .pickup_store_timestamp(entry.offset, entry.size);
        (time >= 0).then_some(time)
    }

    /// Whether the message at `queue_offset` is recent enough to be in the page cache
    /// (`checkInMemByConsumeOffset`: within `accessMessageInMemoryMaxRatio` of RAM behind the
    /// CommitLog head). False when the queue has no such message.
    pub(crate) fn is_in_memory(&self, topic: &str, queue_id: i32, queue_offset: i64) -> bool {
        let Some(entry) = self
            .queues
            .get(topic, queue_id)
            .and_then(|queue| queue.get(queue_offset))
        else {
            return false;
        };
        self.commit_log.max_offset() - entry.offset <= self.memory_budget
    }

    /// Whether a read from `queue_offset` touches pages the store keeps unmapped: CommitLog
    /// pages more than `commitLogResidentTail` behind the writer, or the queue's own entries
    /// behind its resident tail. The entry is read only when it lies in that mapped tail, so
    /// answering never waits on the disk.
    pub(crate) fn is_cold_read(&self, topic: &str, queue_id: i32, queue_offset: i64) -> bool {
        let Some(queue) = self.queues.get(topic, queue_id) else {
            return false;
        };
        let tail = self.config.commit_log_resident_tail as i64;
        if queue.is_released(queue_offset, consume_queue::resident_tail(tail)) {
            return true;
        }
        queue
            .get(queue_offset)
            .is_some_and(|entry| self.commit_log.max_offset() - entry.offset > tail)
    }

    /// How far behind the CommitLog's end the record at `queue_offset` starts, if the queue has
    /// an entry there. Reading the entry touches one ConsumeQueue page, nothing of the CommitLog.
    pub(crate) fn bytes_behind_writer(
        &self,
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
    ) -> Option<i64> {
        let entry = self.queues.get(topic, queue_id)?.get(queue_offset)?;
        Some(self.commit_log.max_offset() - entry.offset)
    }

    pub(crate) fn earliest_message_time(&self, topic: &str, queue_id: i32) -> Option<i64> {
        let queue = self.queues.get(topic, queue_id)?;
        self.message_store_time(topic, queue_id, queue.min_offset())
    }

    pub(crate) fn read_message(&self, physical_offset: i64) -> Option<Bytes> {
        if physical_offset < self.commit_log.min_offset() {
            return None;
        }
        self.commit_log.read_record(physical_offset)
    }
}

struct Limits {
    max_msg_nums: usize,
    max_pull_size: usize,
    max_filter_bytes: usize,
}
