//! The read side: pulls (`DefaultMessageStore.getMessage`), offsets and store times. Nothing here
//! takes a lock; messages come back as zero-copy slices of the mapped segments, or, for reads far
//! behind the writer, as copies read with `pread` (see [`Copier`]).

use bytes::{Bytes, BytesMut};

use crate::commit_log::CommitLog;
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
    /// Counts a pull in the statistics (`getFoundTps`, `getMissTps`).
    pub(crate) fn count_pull(&self, result: &GetMessagesResult) {
        if result.status == GetMessageStatus::Found {
            Stats::add(&self.stats.get_message_times_total_found, 1);
            Stats::add(
                &self.stats.get_message_transferred_msg_count,
                result.messages.len() as u64,
            );
        } else {
            Stats::add(&self.stats.get_message_times_total_miss, 1);
        }
    }

    /// A pull from `offset`; with a [`Copier`], of copies of the records.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn get_messages_inner(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        max_total_bytes: usize,
        filter: &dyn Fn(i64) -> bool,
        mut copy: Option<&mut Copier>,
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
                    let mut entries = file.read_from(pos).unwrap_or_default();
                    let limits = Limits {
                        max_msg_nums: max_msg_nums.max(0) as usize,
                        max_pull_size: max_total_bytes.clamp(100, MAX_PULL_MSG_SIZE),
                        max_filter_bytes: (self.config.max_filter_message_size)
                            .max(max_msg_nums.max(0) as usize * ENTRY_SIZE),
                    };
                    if let Some(copier) = copy.as_deref_mut() {
                        copier.expect(limits.max_pull_size);
                    }
                    if let Some(copier) = copy.as_deref_mut().filter(|c| c.nowait) {
                        // The loop reads at most max_filter_bytes of entries, plus one.
                        let wanted = entries.len().min(limits.max_filter_bytes + ENTRY_SIZE);
                        let cached = file.cached_len(pos, wanted) / ENTRY_SIZE * ENTRY_SIZE;
                        if cached == 0 {
                            copier.missed = true;
                            return result;
                        }
                        entries = &entries[..cached];
                    }
                    let cold = self.collect(
                        &mut result,
                        entries,
                        offset,
                        max_offset,
                        max_offset_py,
                        &limits,
                        filter,
                        copy,
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
    /// read data the store keeps unmapped (a consumer far behind). With a [`Copier`] the records
    /// are copies, and a failed copy ends the read before its record.
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
        mut copy: Option<&mut Copier>,
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
            let record = match copy.as_deref_mut() {
                None => self.commit_log.get(entry.offset, entry.size),
                Some(copier) => {
                    let run = || {
                        // Within what `is_batch_full` lets this read take.
                        let config = &self.config;
                        let (max_bytes, max_count) = if in_memory {
                            (
                                config.max_transfer_bytes_on_message_in_memory,
                                config.max_transfer_count_on_message_in_memory,
                            )
                        } else {
                            (
                                config.max_transfer_bytes_on_message_in_disk,
                                config.max_transfer_count_on_message_in_disk,
                            )
                        };
                        let count = (limits.max_msg_nums.min(max_count))
                            .saturating_sub(result.messages.len());
                        let bytes = limits.max_pull_size.min(max_bytes).saturating_sub(total);
                        run_end(&entries[k * ENTRY_SIZE..], count, bytes)
                    };
                    match copier.copy(&self.commit_log, entry.offset, entry.size, run) {
                        Some(record) => record,
                        None => {
                            result.next_begin_offset = queue_offset;
                            break;
                        }
                    }
                }
            };
            match record {
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

/// Copies a cold read's records out of the page cache with `pread` instead of mapping them (a
/// consumer far behind): no page faults, nothing to unmap afterwards, and with `nowait`
/// (`RWF_NOWAIT`) no wait for the disk, so an async worker can serve a consumer catching up whose
/// pages the store's read-ahead brought in. Records that lie back to back in the CommitLog (a
/// batch sent to one queue) are read by one call, into buffers of [`Copier::CHUNK`] shared by
/// the read's records.
#[derive(Debug)]
pub(crate) struct Copier {
    buf: BytesMut,
    nowait: bool,
    /// The read's byte limit, to size the buffer.
    max_bytes: usize,
    /// The last run read, from CommitLog offset `staged_from`.
    staged: Bytes,
    staged_from: i64,
    /// Where the page cache was found not to hold the next page (`nowait`).
    uncached_from: i64,
    /// A copy failed (`nowait`: a page is not cached); the read stopped before its record.
    pub(crate) missed: bool,
}

impl Copier {
    /// What a buffer holds at least: a pull's worth of small records, below the allocator's
    /// threshold for a mapping of its own (128 KiB), whose pages each allocation would fault in.
    const CHUNK: usize = 64 * 1024;

    pub(crate) fn new(nowait: bool) -> Self {
        Copier {
            buf: BytesMut::new(),
            nowait,
            max_bytes: 0,
            staged: Bytes::new(),
            staged_from: 0,
            uncached_from: i64::MAX,
            missed: false,
        }
    }

    fn expect(&mut self, max_bytes: usize) {
        self.max_bytes = max_bytes;
    }

    /// The record `[offset, offset + size)`: `Some(None)` if the store no longer has it, `None`
    /// if the copy failed (or, `nowait`, the page cache does not hold all of it). `run_end` says
    /// where the records back to back with it end.
    fn copy(
        &mut self,
        commit_log: &CommitLog,
        offset: i64,
        size: i32,
        run_end: impl FnOnce() -> i64,
    ) -> Option<Option<Bytes>> {
        let Ok(len) = usize::try_from(size) else {
            return Some(None);
        };
        let end = offset + len as i64;
        let staged_end = self.staged_from + self.staged.len() as i64;
        if offset >= self.staged_from && end <= staged_end {
            let at = (offset - self.staged_from) as usize;
            return Some(Some(self.staged.slice(at..at + len)));
        }
        if end > self.uncached_from {
            self.missed = true;
            return None;
        }
        let run = usize::try_from(run_end().max(end) - offset).unwrap_or(len);
        if self.buf.capacity() < run {
            self.buf.reserve(run.max(self.max_bytes.min(Self::CHUNK)));
        }
        match commit_log.copy(offset, run, &mut self.buf, self.nowait) {
            Ok(Some(copied)) => {
                if copied.len() < run {
                    self.uncached_from = offset + copied.len() as i64;
                }
                self.staged = copied;
                self.staged_from = offset;
                if self.staged.len() >= len {
                    return Some(Some(self.staged.slice(..len)));
                }
            }
            Ok(None) => return Some(None),
            Err(e) => tracing::warn!(offset, error = %e, "cannot read a CommitLog record"),
        }
        self.missed = true;
        None
    }
}

/// The CommitLog offset where the run of records back to back that starts with the first of
/// `entries` ends, within `max_count` records and `max_bytes` (the first always counts).
fn run_end(entries: &[u8], max_count: usize, max_bytes: usize) -> i64 {
    let mut units = entries.chunks_exact(ENTRY_SIZE).map(CqEntry::decode);
    let Some(first) = units.next() else {
        return 0;
    };
    let mut end = first.offset + i64::from(first.size.max(0));
    for entry in units.take(max_count.saturating_sub(1)) {
        let next = end + i64::from(entry.size.max(0));
        if entry.offset != end || entry.size <= 0 || (next - first.offset) as usize > max_bytes {
            break;
        }
        end = next;
    }
    end
}

struct Limits {
    max_msg_nums: usize,
    max_pull_size: usize,
    max_filter_bytes: usize,
}
