//! One ConsumeQueue: the index of one topic-queue into the CommitLog (Java's `ConsumeQueue`).
//!
//! Files live in `consumequeue/<topic>/<queueId>/<20-digit byte offset>`, each
//! `consume_queue_file_entries * 20` bytes. Entry `n` of the queue sits at byte `n * 20`:
//!
//! ```text
//! 0 commitlog offset i64 | 8 record size i32 | 12 tags code i64
//! ```
//!
//! An entry is valid when offset >= 0 and size > 0; the first invalid (all-zero) entry ends the
//! queue. A queue whose first entry is not 0 is padded before it with `(0, i32::MAX, 0)`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use crate::error::StoreError;
use crate::file_queue::{FileQueue, ReadAheadMark};
use crate::fs::Fs;
use crate::mapped_file::{MappedFile, RESERVE_STEP};

/// Where a search by store time lands when the time falls between, or on several, messages
/// (Java's `BoundaryType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Boundary {
    /// The first message stored at or after the time.
    #[default]
    Lower,
    /// The last message stored at or before the time.
    Upper,
}

/// Bytes per entry (`CQ_STORE_UNIT_SIZE`).
pub(crate) const ENTRY_SIZE: usize = 20;
const UNIT: i64 = ENTRY_SIZE as i64;
/// Size field of the placeholder entries before a queue's first real entry.
const PAD_SIZE: i32 = i32::MAX;
/// Bytes of the file being written whose blocks the allocation thread keeps allocated past the
/// writer (13,107 entries), so that the put path does not call `fallocate` itself.
const RESERVE_AHEAD: usize = 4 * RESERVE_STEP;

/// One decoded entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CqEntry {
    pub offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

impl CqEntry {
    pub(crate) fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut out = [0u8; ENTRY_SIZE];
        out[..8].copy_from_slice(&self.offset.to_be_bytes());
        out[8..12].copy_from_slice(&self.size.to_be_bytes());
        out[12..].copy_from_slice(&self.tags_code.to_be_bytes());
        out
    }

    /// Decodes the entry at the start of `bytes` (at least 20 bytes).
    pub(crate) fn decode(bytes: &[u8]) -> Self {
        CqEntry {
            offset: i64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")),
            size: i32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes")),
            tags_code: i64::from_be_bytes(bytes[12..20].try_into().expect("8 bytes")),
        }
    }

    fn is_valid(&self) -> bool {
        self.offset >= 0 && self.size > 0
    }

    fn is_padding(&self) -> bool {
        self.size == PAD_SIZE
    }

    const PADDING: CqEntry = CqEntry {
        offset: 0,
        size: PAD_SIZE,
        tags_code: 0,
    };
}

/// What [`ConsumeQueue::put`] did with an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Put {
    Appended,
    /// The queue already has an entry at that offset.
    Duplicate,
    /// Entries before it are missing (only with [`Gaps::Refuse`]).
    Gap,
}

/// How [`ConsumeQueue::put`] treats an entry beyond the queue's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gaps {
    /// Report it: the missing entries may still come (first recovery pass).
    Refuse,
    /// The missing entries' records are gone: pad the hole with placeholders so queue offsets
    /// stay aligned with the records' QUEUEOFFSET.
    Pad,
}

pub(crate) struct ConsumeQueue {
    topic: String,
    queue_id: i32,
    files: FileQueue,
    /// Byte offset of the first entry pointing at data that still exists.
    min_logic_offset: AtomicI64,
    /// End (offset + size) of the record of the last entry; -1 when empty.
    max_physic_offset: AtomicI64,
    /// Set while the allocation thread has a request for this queue.
    ahead_requested: AtomicBool,
    /// What [`ConsumeQueue::read_ahead`] asked the kernel to read.
    read_ahead: ReadAheadMark,
}

/// How far past a cold read a queue's entries are read ahead: 3,276 entries, a few pulls' worth.
/// The mapping has no readahead of its own (`MADV_RANDOM`, see `MappedFile`), so without this
/// every 4 KiB of entries the page cache dropped is one disk read in a page fault.
const READ_AHEAD: i64 = 64 * 1024;

/// The bytes of entries a queue keeps mapped behind its last entry for `commitLogResidentTail`
/// bytes of CommitLog: an entry is 20 bytes, a message hundreds.
pub(crate) fn resident_tail(commit_log_resident_tail: i64) -> i64 {
    commit_log_resident_tail / 64
}

/// Whether `topic` can name a directory under the ConsumeQueue root without escaping it: the
/// store's own guard, whatever the callers validated (Java's `TopicValidator` is stricter).
pub(crate) fn is_storable_topic(topic: &str) -> bool {
    !topic.is_empty()
        && topic.len() <= 255
        && topic != "."
        && topic != ".."
        && !topic.contains(['/', '\\', '\0'])
}

/// `<root>/<topic>`, or an error if the topic could name something outside `root`.
pub(crate) fn topic_dir(root: &Path, topic: &str) -> io::Result<PathBuf> {
    if !is_storable_topic(topic) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the topic {topic:?} cannot name a consume queue directory"),
        ));
    }
    Ok(root.join(topic))
}

impl ConsumeQueue {
    /// Maps the queue's files (creating its directory if missing).
    pub(crate) fn load(
        root: &Path,
        topic: &str,
        queue_id: i32,
        file_size: u64,
        fs: &Fs,
    ) -> Result<Self, StoreError> {
        let dir = topic_dir(root, topic)
            .map_err(|e| StoreError::io(root, e))?
            .join(queue_id.to_string());
        let files = FileQueue::load(&dir, file_size, fs)?;
        let min = files.min_offset().max(0);
        Ok(ConsumeQueue {
            topic: topic.to_string(),
            queue_id,
            files,
            min_logic_offset: AtomicI64::new(min),
            max_physic_offset: AtomicI64::new(-1),
            ahead_requested: AtomicBool::new(false),
            read_ahead: ReadAheadMark::default(),
        })
    }

    /// A new queue with no files (nothing touches the disk until its first entry).
    pub(crate) fn new_empty(
        root: &Path,
        topic: &str,
        queue_id: i32,
        file_size: u64,
        fs: &Fs,
    ) -> io::Result<Self> {
        let dir = topic_dir(root, topic)?.join(queue_id.to_string());
        Ok(ConsumeQueue {
            topic: topic.to_string(),
            queue_id,
            files: FileQueue::empty(dir, file_size, fs),
            min_logic_offset: AtomicI64::new(0),
            max_physic_offset: AtomicI64::new(-1),
            ahead_requested: AtomicBool::new(false),
            read_ahead: ReadAheadMark::default(),
        })
    }

    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }

    pub(crate) fn queue_id(&self) -> i32 {
        self.queue_id
    }

    /// Next queue offset to be written (`getMaxOffsetInQueue`).
    pub(crate) fn max_offset(&self) -> i64 {
        self.files.max_offset() / UNIT
    }

    /// First queue offset whose entry points at existing data (`getMinOffsetInQueue`).
    pub(crate) fn min_offset(&self) -> i64 {
        self.min_logic_offset.load(Ordering::Acquire) / UNIT
    }

    pub(crate) fn max_physic_offset(&self) -> i64 {
        self.max_physic_offset.load(Ordering::Acquire)
    }

    fn entries_per_file(&self) -> i64 {
        self.files.file_size() as i64 / UNIT
    }

    /// The queue offset that starts the file after the one holding `offset` (`rollNextFile`).
    pub(crate) fn roll_next_file(&self, offset: i64) -> i64 {
        let per_file = self.entries_per_file();
        offset + per_file - offset % per_file
    }

    /// Makes sure the files for entries `[offset, offset + count)` exist, so that a following
    /// [`ConsumeQueue::put`] of those entries cannot fail. The writer calls this before it writes
    /// the CommitLog records the entries will point at.
    pub(crate) fn prepare(&self, offset: i64, count: usize) -> io::Result<()> {
        let end = (offset + count as i64) * UNIT;
        let file_size = self.files.file_size() as i64;
        let mut from = match self.files.last() {
            Some(last) => last.end(),
            None => (offset * UNIT) / file_size * file_size,
        };
        if self.files.is_empty() {
            // A queue's first file is made by its first put: the queue did not exist before.
            std::fs::create_dir_all(self.files.dir())?;
            self.files.create_file(from)?;
            from += file_size;
        }
        while from < end {
            self.add_file(from)?;
            from += file_size;
        }
        // Allocate the entries' blocks now, before the CommitLog is written: a full disk then
        // refuses the put cleanly instead of failing (or faulting) after it.
        let mut at = offset * UNIT;
        while at < end {
            let file = self
                .files
                .find(at)
                .ok_or_else(|| io::Error::other("consume queue file missing"))?;
            let upto = end.min(file.end());
            file.reserve((upto - file.from()) as usize)?;
            at = upto;
        }
        Ok(())
    }

    /// Adds a new file starting at `from` to the queue. The next file is not made ahead of the
    /// writer, as CommitLog segments are: a Java broker opening the store after `kill -9` would
    /// take an empty file past the queue's end for part of the queue and lose its place in it (a
    /// Java pull of such a store went unanswered), and Java itself makes ConsumeQueue files only
    /// when it writes into them.
    fn add_file(&self, from: i64) -> io::Result<()> {
        self.files.create_file(from).map(|_| ())
    }

    /// Whether the allocation thread should work on this queue, now that it ends at `offset`:
    /// the writer is near the end of the blocks allocated in its file. True at most once until
    /// the thread has run ([`ConsumeQueue::make_ahead`]); cheap, called after every put.
    pub(crate) fn wants_ahead(&self, offset: i64) -> bool {
        if self.ahead_requested.load(Ordering::Acquire) {
            return false;
        }
        let Some(last) = self.files.last() else {
            return false;
        };
        let Ok(pos) = usize::try_from(offset * UNIT - last.from()) else {
            // Still writing an earlier file: the last one is already made.
            return false;
        };
        let size = last.size();
        let low_reserve = last.reserved() < (pos + RESERVE_AHEAD / 2).min(size);
        low_reserve && !self.ahead_requested.swap(true, Ordering::AcqRel)
    }

    /// The allocation thread's work for this queue (asked for by [`ConsumeQueue::wants_ahead`]):
    /// allocates the blocks of the file being written [`RESERVE_AHEAD`] past the writer. Errors (a
    /// full disk) are the thread's to log: the writer then does the same work itself and refuses
    /// the put.
    pub(crate) fn make_ahead(&self) -> io::Result<()> {
        let result = self.make_ahead_now();
        self.ahead_requested.store(false, Ordering::Release);
        result
    }

    fn make_ahead_now(&self) -> io::Result<()> {
        let Some(last) = self.files.last() else {
            return Ok(());
        };
        let Ok(pos) = usize::try_from(self.files.max_offset() - last.from()) else {
            return Ok(());
        };
        let size = last.size();
        if pos < size {
            last.reserve(pos + RESERVE_AHEAD)?;
        }
        Ok(())
    }

    /// Writes the entry for queue offset `offset` (recovery). Entries below the end are
    /// duplicates. Past the end it is a gap, handled as `gaps` says; when padding, an empty queue
    /// simply starts at `offset` (earlier slots become padding, as Java's `fillPreBlank`).
    pub(crate) fn put(&self, offset: i64, entry: CqEntry, gaps: Gaps) -> io::Result<Put> {
        let max = self.max_offset();
        if offset < max {
            return Ok(Put::Duplicate);
        }
        if offset > max {
            match gaps {
                Gaps::Refuse => return Ok(Put::Gap),
                Gaps::Pad if max == 0 => {
                    // Nothing written yet: start the queue where its first entry belongs.
                    if !self.files.is_empty() {
                        self.files.destroy()?;
                    }
                    self.prepare(offset, 1)?;
                    let file = self
                        .files
                        .find(offset * UNIT)
                        .ok_or_else(|| io::Error::other("consume queue file missing"))?;
                    self.fill(&file, (offset * UNIT - file.from()) as usize / ENTRY_SIZE)?;
                    self.min_logic_offset
                        .store(offset * UNIT, Ordering::Release);
                }
                Gaps::Pad => {
                    tracing::error!(
                        topic = %self.topic, queue_id = self.queue_id, from = max, to = offset,
                        "consume queue entries are missing and their records are gone; padding the hole"
                    );
                    for missing in max..offset {
                        self.append(missing, &CqEntry::PADDING.encode())?;
                    }
                }
            }
        }
        self.append(offset, &entry.encode())?;
        if !entry.is_padding() {
            self.max_physic_offset
                .fetch_max(entry.offset + i64::from(entry.size), Ordering::AcqRel);
        }
        Ok(Put::Appended)
    }

    /// Appends already encoded consecutive entries starting at `offset` (== the queue's end).
    /// The live path batches a whole put into one call.
    pub(crate) fn append(&self, offset: i64, entries: &[u8]) -> io::Result<()> {
        debug_assert_eq!(offset, self.max_offset());
        self.prepare(offset, entries.len() / ENTRY_SIZE)?;
        let mut byte_offset = offset * UNIT;
        let mut rest = entries;
        while !rest.is_empty() {
            let file = self
                .files
                .find(byte_offset)
                .ok_or_else(|| io::Error::other("consume queue file missing"))?;
            let room = (file.end() - byte_offset) as usize;
            let (now, later) = rest.split_at(room.min(rest.len()));
            file.append(now)?
                .ok_or_else(|| io::Error::other("consume queue file out of place"))?;
            byte_offset += now.len() as i64;
            rest = later;
        }
        Ok(())
    }

    /// Notes the end of the last record this queue points at (live path, after `append`).
    pub(crate) fn set_max_physic_offset(&self, end: i64) {
        self.max_physic_offset.fetch_max(end, Ordering::AcqRel);
    }

    fn fill(&self, file: &MappedFile, entries: usize) -> io::Result<()> {
        let padding = CqEntry::PADDING.encode();
        let mut block = Vec::with_capacity(entries * ENTRY_SIZE);
        for _ in 0..entries {
            block.extend_from_slice(&padding);
        }
        file.append(&block)?
            .map(|_| ())
            .ok_or_else(|| io::Error::other("consume queue file out of place"))
    }

    /// The file holding entry `offset` and the byte position of the entry in it, if the entry is
    /// at or above the min offset and written (`getIndexBuffer`).
    pub(crate) fn locate(&self, offset: i64) -> Option<(Arc<MappedFile>, usize)> {
        let byte_offset = offset.checked_mul(UNIT)?;
        if offset < 0 || byte_offset < self.min_logic_offset.load(Ordering::Acquire) {
            return None;
        }
        let file = self.files.find(byte_offset)?;
        let pos = (byte_offset - file.from()) as usize;
        if pos >= file.readable() {
            return None;
        }
        Some((file, pos))
    }

    /// Asks the kernel to read the entries from queue offset `offset` on into the page cache
    /// (`MADV_WILLNEED`: no wait, nothing mapped), [`READ_AHEAD`] bytes at a time: a consumer far
    /// behind calls it after each read, and it asks again once half of that is consumed.
    pub(crate) fn read_ahead(&self, offset: i64) {
        let Some(start) = offset.checked_mul(UNIT) else {
            return;
        };
        let until = (start + READ_AHEAD).min(self.files.max_offset());
        let asked = self.read_ahead.ask(
            &self.files,
            start,
            until,
            READ_AHEAD,
            READ_AHEAD / 2,
            READ_AHEAD,
        );
        if let Err(e) = asked {
            tracing::debug!(error = %e, "cannot read ConsumeQueue entries ahead");
        }
    }

    /// The entry at queue offset `offset`.
    pub(crate) fn get(&self, offset: i64) -> Option<CqEntry> {
        let (file, pos) = self.locate(offset)?;
        file.read(pos, ENTRY_SIZE).map(CqEntry::decode)
    }

    /// The entry at `offset` regardless of the min offset (recovery and min-offset search).
    fn get_raw(&self, offset: i64) -> Option<CqEntry> {
        let file = self.files.find(offset * UNIT)?;
        let pos = (offset * UNIT - file.from()) as usize;
        file.read(pos, ENTRY_SIZE).map(CqEntry::decode)
    }

    /// Finds the end of the valid entries, scanning the last three files as Java does, and cuts
    /// the queue there.
    pub(crate) fn recover(&mut self) -> io::Result<()> {
        let files = self.files.snapshot();
        if files.is_empty() {
            return Ok(());
        }
        let first_scanned = files.len().saturating_sub(3);
        let mut end = 0;
        let mut max_physic = -1;
        'files: for file in &files[first_scanned..] {
            end = file.from();
            let bytes = file.read(0, file.size()).unwrap_or_default();
            for unit in bytes.chunks_exact(ENTRY_SIZE) {
                let entry = CqEntry::decode(unit);
                if !entry.is_valid() {
                    break 'files;
                }
                if !entry.is_padding() {
                    max_physic = entry.offset + i64::from(entry.size);
                }
                end += UNIT;
            }
        }
        drop(files);
        self.files.truncate(end)?;
        self.max_physic_offset.store(max_physic, Ordering::Release);
        Ok(())
    }

    /// Cuts every entry pointing at or past `phy_offset`, the end of the valid CommitLog
    /// (`truncateDirtyLogicFiles`).
    pub(crate) fn truncate_dirty(&mut self, phy_offset: i64) -> io::Result<()> {
        let max = self.max_offset();
        let first = self.files.min_offset().max(0) / UNIT;
        // Entries point at increasing offsets (padding points at 0), so the dirty ones are a suffix.
        let (mut low, mut high) = (first, max);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.get_raw(mid) {
                Some(entry) if entry.offset < phy_offset || entry.is_padding() => low = mid + 1,
                _ => high = mid,
            }
        }
        if low < max {
            self.files.truncate(low * UNIT)?;
            let max_physic = (low > first)
                .then(|| self.get_raw(low - 1))
                .flatten()
                .filter(|e| !e.is_padding())
                .map_or(-1, |e| e.offset + i64::from(e.size));
            self.max_physic_offset.store(max_physic, Ordering::Release);
        }
        if self.min_logic_offset.load(Ordering::Acquire) > low * UNIT {
            self.min_logic_offset.store(low * UNIT, Ordering::Release);
        }
        Ok(())
    }

    /// Moves the min offset to the first entry pointing at or past `min_phy_offset`, the
    /// CommitLog's first byte (`correctMinOffset`). Padding never counts as valid.
    pub(crate) fn correct_min_offset(&self, min_phy_offset: i64) {
        let max = self.max_offset();
        let current = self.min_logic_offset.load(Ordering::Acquire) / UNIT;
        let first = (self.files.min_offset().max(0) / UNIT).max(current);
        let (mut low, mut high) = (first, max);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.get_raw(mid) {
                Some(entry) if entry.offset < min_phy_offset || entry.is_padding() => low = mid + 1,
                _ => high = mid,
            }
        }
        self.min_logic_offset
            .fetch_max(low * UNIT, Ordering::AcqRel);
    }

    /// Deletes files (never the last) whose entries all point below `min_phy_offset`, then
    /// moves the min offset (`deleteExpiredFile`).
    pub(crate) fn delete_expired(&self, min_phy_offset: i64) -> io::Result<()> {
        let files = self.files.snapshot();
        let expired = files[..files.len().saturating_sub(1)]
            .iter()
            .take_while(|f| {
                f.read(f.size() - ENTRY_SIZE, ENTRY_SIZE)
                    .map(CqEntry::decode)
                    .is_some_and(|last| last.offset < min_phy_offset)
            })
            .count();
        drop(files);
        self.files.remove_first(expired)?;
        self.correct_min_offset(min_phy_offset);
        Ok(())
    }

    pub(crate) fn flush(&self, least_pages: usize) -> io::Result<()> {
        self.files.flush(least_pages).map(|_| ())
    }

    /// Whether the entry at queue offset `offset` lies in the part [`Self::release_cold_pages`]
    /// with this `keep` unmaps: reading it may wait on the disk.
    pub(crate) fn is_released(&self, offset: i64, keep: i64) -> bool {
        offset.saturating_mul(UNIT) < self.files.max_offset() - keep
    }

    /// Unmaps the queue's pages more than `keep` bytes behind its last entry (see
    /// [`FileQueue::release_pages_below`]); a short queue is left alone, without a system call.
    pub(crate) fn release_cold_pages(&self, keep: i64) -> io::Result<()> {
        let end = self.files.max_offset();
        if end <= keep {
            return Ok(());
        }
        self.files.release_pages_below(end - keep)
    }

    /// Deletes the queue's files and directory.
    pub(crate) fn destroy(&self) -> io::Result<()> {
        self.files.destroy()
    }

    /// The queue offset for `timestamp` (`getOffsetInQueueByTime`), given a way to read a
    /// record's store time (-1 when the record is gone). Clamped to `[min, max]`.
    pub(crate) fn offset_by_time(
        &self,
        timestamp: i64,
        boundary: Boundary,
        min_phy_offset: i64,
        store_time: &dyn Fn(i64, i32) -> i64,
    ) -> i64 {
        let found = self
            .file_by_time(timestamp, boundary, store_time)
            .map_or(0, |file| {
                self.search_file_by_time(&file, timestamp, boundary, min_phy_offset, store_time)
            });
        found.max(self.min_offset()).min(self.max_offset())
    }

    /// The file to search (`getConsumeQueueMappedFileByTime`).
    fn file_by_time(
        &self,
        timestamp: i64,
        boundary: Boundary,
        store_time: &dyn Fn(i64, i32) -> i64,
    ) -> Option<Arc<MappedFile>> {
        let files = self.files.snapshot();
        let time_at = |file: &MappedFile, pos: usize| {
            // Unknown (-1) unless a positive store time is found, as Java's cached file times.
            file.read(pos, ENTRY_SIZE)
                .map(CqEntry::decode)
                .map(|e| store_time(e.offset, e.size))
                .filter(|t| *t > 0)
                .unwrap_or(-1)
        };
        match boundary {
            Boundary::Lower => {
                for (i, file) in files.iter().enumerate() {
                    if i + 1 == files.len() {
                        return Some(Arc::clone(file));
                    }
                    if time_at(file, file.size() - ENTRY_SIZE) >= timestamp {
                        return Some(Arc::clone(file));
                    }
                }
                None
            }
            Boundary::Upper => files
                .iter()
                .rev()
                .find(|file| time_at(file, 0) <= timestamp)
                .cloned(),
        }
    }

    /// Binary search of one file by store time (`binarySearchInQueueByTime`).
    fn search_file_by_time(
        &self,
        file: &MappedFile,
        timestamp: i64,
        boundary: Boundary,
        min_phy_offset: i64,
        store_time: &dyn Fn(i64, i32) -> i64,
    ) -> i64 {
        let min_logic = self.min_logic_offset.load(Ordering::Acquire);
        let unit = ENTRY_SIZE as i64;
        let low_start = if min_logic > file.from() {
            min_logic - file.from()
        } else {
            0
        };
        let range = file.readable();
        let Some(bytes) = file.read(0, range) else {
            return 0;
        };
        if range < ENTRY_SIZE {
            return 0;
        }
        let entry_at = |pos: i64| CqEntry::decode(&bytes[pos as usize..]);
        let ceiling = range as i64 - unit;
        let floor = low_start;
        let (mut low, mut high) = (low_start, ceiling);
        let from = file.from();

        let last = entry_at(ceiling);
        if store_time(last.offset, last.size) < timestamp {
            return match boundary {
                Boundary::Lower => (from + ceiling + unit) / unit,
                Boundary::Upper => (from + ceiling) / unit,
            };
        }
        if floor > ceiling {
            return from / unit;
        }
        let first = entry_at(floor);
        if store_time(first.offset, first.size) > timestamp {
            return match boundary {
                Boundary::Lower => from / unit,
                Boundary::Upper => 0,
            };
        }
        let (mut target, mut left, mut right) = (-1_i64, -1_i64, -1_i64);
        while high >= low {
            let mid = (low + high) / (2 * unit) * unit;
            let entry = entry_at(mid);
            if entry.offset < min_phy_offset {
                low = mid + unit;
                left = mid;
                continue;
            }
            let time = store_time(entry.offset, entry.size);
            if time < 0 {
                return 0;
            } else if time == timestamp {
                target = mid;
                break;
            } else if time > timestamp {
                high = mid - unit;
                right = mid;
            } else {
                low = mid + unit;
                left = mid;
            }
        }
        let offset = if target != -1 {
            // Neighbours may share the timestamp: walk to the first (lower) or last (upper).
            let mut at = target;
            loop {
                let next = match boundary {
                    Boundary::Lower => at - unit,
                    Boundary::Upper => at + unit,
                };
                if next < floor || next > ceiling {
                    break;
                }
                let entry = entry_at(next);
                if store_time(entry.offset, entry.size) != timestamp {
                    break;
                }
                at = next;
            }
            at
        } else {
            match boundary {
                Boundary::Lower => right,
                Boundary::Upper => left,
            }
        };
        (from + offset) / unit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(offset: i64) -> CqEntry {
        CqEntry {
            offset,
            size: 10,
            tags_code: offset * 7,
        }
    }

    fn queue(dir: &Path) -> ConsumeQueue {
        ConsumeQueue::load(dir, "T", 0, 5 * ENTRY_SIZE as u64, &crate::fs::real()).unwrap()
    }

    #[test]
    fn entries_round_trip_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let cq = queue(dir.path());
        assert_eq!(cq.max_offset(), 0);
        for i in 0..12 {
            assert_eq!(
                cq.put(i, entry(i * 10), Gaps::Refuse).unwrap(),
                Put::Appended
            );
        }
        assert_eq!(cq.put(3, entry(30), Gaps::Refuse).unwrap(), Put::Duplicate);
        assert_eq!(cq.put(20, entry(200), Gaps::Refuse).unwrap(), Put::Gap);
        assert_eq!(cq.max_offset(), 12);
        assert_eq!(cq.min_offset(), 0);
        assert_eq!(cq.get(7), Some(entry(70)));
        assert_eq!(cq.get(12), None);
        assert_eq!(cq.max_physic_offset(), 120);
        assert_eq!(cq.roll_next_file(7), 10);
        let mut batch = Vec::new();
        for i in 12..14 {
            batch.extend_from_slice(&entry(i * 10).encode());
        }
        cq.append(12, &batch).unwrap();
        assert_eq!(cq.get(13), Some(entry(130)));
        assert!(dir.path().join("T/0/00000000000000000200").exists());
    }

    #[test]
    fn an_empty_queue_may_start_late() {
        let dir = tempfile::tempdir().unwrap();
        let cq = queue(dir.path());
        assert_eq!(cq.put(7, entry(500), Gaps::Refuse).unwrap(), Put::Gap);
        assert_eq!(cq.put(7, entry(500), Gaps::Pad).unwrap(), Put::Appended);
        assert_eq!(cq.min_offset(), 7);
        assert_eq!(cq.max_offset(), 8);
        assert_eq!(cq.get(6), None);
        assert_eq!(cq.get_raw(6), Some(CqEntry::PADDING));
        assert_eq!(cq.get_raw(5), Some(CqEntry::PADDING));
        assert_eq!(cq.get(7), Some(entry(500)));
        assert!(!dir.path().join("T/0/00000000000000000000").exists());
        assert_eq!(cq.put(9, entry(600), Gaps::Pad).unwrap(), Put::Appended);
        assert_eq!(cq.get(8), Some(CqEntry::PADDING));
        assert_eq!(cq.get(9), Some(entry(600)));
    }

    #[test]
    fn recover_truncate_and_min_offset() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cq = queue(dir.path());
            for i in 0..8 {
                cq.put(i, entry(i * 10), Gaps::Refuse).unwrap();
            }
            cq.flush(0).unwrap();
        }
        let mut cq = queue(dir.path());
        assert_eq!(cq.max_offset(), 10);
        cq.recover().unwrap();
        assert_eq!(cq.max_offset(), 8);
        assert_eq!(cq.max_physic_offset(), 80);
        cq.truncate_dirty(50).unwrap();
        assert_eq!(cq.max_offset(), 5);
        assert_eq!(cq.max_physic_offset(), 50);
        cq.correct_min_offset(25);
        assert_eq!(cq.min_offset(), 3);
        cq.correct_min_offset(0);
        assert_eq!(cq.min_offset(), 3);
        cq.correct_min_offset(1000);
        assert_eq!(cq.min_offset(), 5);
        cq.truncate_dirty(0).unwrap();
        assert_eq!(cq.max_offset(), 0);
        assert_eq!(cq.min_offset(), 0);
    }

    #[test]
    fn offset_by_time_follows_java() {
        let dir = tempfile::tempdir().unwrap();
        let cq = queue(dir.path());
        // Store times: offsets 0..3 at t=100, 3..5 at t=300, 5..7 at t=400.
        let times = [100, 100, 100, 300, 300, 400, 400];
        for (i, _) in times.iter().enumerate() {
            cq.put(i as i64, entry(i as i64 * 10), Gaps::Refuse)
                .unwrap();
        }
        let store_time = |offset: i64, _size: i32| times[(offset / 10) as usize];
        let lower = |t| cq.offset_by_time(t, Boundary::Lower, 0, &store_time);
        let upper = |t| cq.offset_by_time(t, Boundary::Upper, 0, &store_time);
        assert_eq!(lower(100), 0);
        assert_eq!(upper(100), 2);
        assert_eq!(lower(200), 3);
        assert_eq!(upper(200), 2);
        assert_eq!(lower(300), 3);
        assert_eq!(upper(300), 4);
        assert_eq!(lower(50), 0);
        assert_eq!(upper(50), 0);
        assert_eq!(lower(500), 7);
        assert_eq!(upper(500), 6);
        assert_eq!(lower(400), 5);
        assert_eq!(upper(400), 6);
    }
}

#[cfg(test)]
mod ahead_tests {
    use super::*;
    use crate::fs::{Fault, FaultyFs, FileOp};
    use crate::mapped_file::file_name;

    const PER_FILE: i64 = 16;

    fn queue(dir: &Path, fs: &Fs) -> ConsumeQueue {
        ConsumeQueue::new_empty(dir, "T", 0, (PER_FILE as usize * ENTRY_SIZE) as u64, fs).unwrap()
    }

    fn append(cq: &ConsumeQueue, offset: i64) {
        let entry = CqEntry {
            offset: offset * 100,
            size: 100,
            tags_code: 0,
        };
        cq.append(offset, &entry.encode()).unwrap();
    }

    fn next_path(dir: &Path, file: i64) -> PathBuf {
        dir.join("T/0")
            .join(file_name(file * PER_FILE * ENTRY_SIZE as i64))
    }

    #[test]
    fn blocks_are_allocated_ahead_and_no_file_is_made_past_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let cq = queue(dir.path(), &crate::fs::real());
        for offset in 0..PER_FILE {
            append(&cq, offset);
            if cq.wants_ahead(offset + 1) {
                // What the allocation thread does when asked.
                cq.make_ahead().unwrap();
            }
        }
        assert!(
            cq.files.snapshot()[0].reserved() > 0,
            "the blocks are allocated"
        );
        // A Java broker opening this store after kill -9 must find no empty file past the end.
        assert!(!next_path(dir.path(), 1).exists());
        assert!(!cq.ahead_requested.load(Ordering::Acquire));
        append(&cq, PER_FILE);
        assert_eq!(cq.files.snapshot().len(), 2);
        assert_eq!(cq.get(PER_FILE).map(|e| e.offset), Some(PER_FILE * 100));
    }

    #[test]
    fn without_the_thread_the_writer_makes_the_file_itself() {
        let dir = tempfile::tempdir().unwrap();
        let cq = queue(dir.path(), &crate::fs::real());
        for offset in 0..PER_FILE * 2 + 3 {
            append(&cq, offset);
            let _ = cq.wants_ahead(offset + 1);
        }
        assert_eq!(cq.files.snapshot().len(), 3);
        assert_eq!(cq.max_offset(), PER_FILE * 2 + 3);
        assert_eq!(cq.get(PER_FILE * 2).map(|e| e.offset), Some(PER_FILE * 200));
    }

    #[test]
    fn a_full_disk_fails_the_roll_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let faulty = FaultyFs::new();
        let fs: Fs = faulty.clone();
        let cq = queue(dir.path(), &fs);
        append(&cq, 0);
        faulty.inject(
            FileOp::Allocate,
            "consumequeue",
            Fault::Errno(libc::ENOSPC),
            None,
        );
        faulty.inject(FileOp::Allocate, "T", Fault::Errno(libc::ENOSPC), None);
        for offset in 1..PER_FILE {
            append(&cq, offset);
            if cq.wants_ahead(offset + 1) {
                let err = cq.make_ahead().unwrap_err();
                assert!(crate::fs::is_disk_full(&err));
            }
        }
        let entry = CqEntry {
            offset: PER_FILE * 100,
            size: 100,
            tags_code: 0,
        };
        let err = cq.append(PER_FILE, &entry.encode()).unwrap_err();
        assert!(crate::fs::is_disk_full(&err), "{err}");
        assert!(!faulty.fired().is_empty());
        assert_eq!(
            cq.max_offset(),
            PER_FILE,
            "nothing past the full file was written"
        );
        faulty.clear();
        cq.append(PER_FILE, &entry.encode()).unwrap();
        assert_eq!(cq.max_offset(), PER_FILE + 1);
    }

    #[test]
    fn a_deleted_queue_gets_nothing_allocated() {
        let dir = tempfile::tempdir().unwrap();
        let cq = queue(dir.path(), &crate::fs::real());
        for offset in 0..PER_FILE - 1 {
            append(&cq, offset);
        }
        cq.destroy().unwrap();
        cq.make_ahead().unwrap();
        assert!(!dir.path().join("T/0").exists());
    }
}
