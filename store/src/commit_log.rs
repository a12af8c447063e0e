//! The CommitLog: every record of every topic, appended to 20-digit-named segments (Java's
//! `CommitLog`).
//!
//! A record never spans segments: when one (plus 8 bytes) does not fit in the rest of a segment,
//! the writer fills the end with a blank (`i32 remaining` + `BLANK_MAGIC`) and moves to the next
//! segment. Appends happen under the put lock; reads take no lock and hand out zero-copy slices.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::{Mutex, MutexGuard};
use skiff_model::record::{
    store_timestamp_pos, Record, BLANK_MAGIC, MAGIC_V1, MAGIC_V2, PHYSICAL_OFFSET_POS, SYS_FLAG_POS,
};

use crate::allocate::Allocator;
use crate::error::StoreError;
use crate::file_queue::{in_steps, FileQueue, ReadAheadMark};
use crate::mapped_file::MappedFile;

/// Room always left at the end of a segment for the blank (`END_FILE_MIN_BLANK_LENGTH`).
pub(crate) const END_FILE_MIN_BLANK_LENGTH: usize = 8;

/// How far past the write position pages are kept mapped for writing: at 100 MB/s of appends,
/// 40 ms of margin for a flush thread that runs at least every few milliseconds under load.
const POPULATE_AHEAD: usize = 4 * 1024 * 1024;
/// What one `madvise` call populates (16 pages, tens of microseconds). A kernel built without
/// preemption does not switch threads inside a call, and the flush thread shares a core with the
/// network thread: one 4 MiB call held that core for 4–5 ms and set the p99.9 send latency.
/// Between calls, on the way back to user space, the scheduler can run the network thread.
const POPULATE_STEP: usize = 64 * 1024;
/// The most one round populates: ahead of 100 MB/s of appends at a round every 2.5 ms or sooner
/// (the flush threads run one after every few pages written under load).
const POPULATE_ROUND: usize = 256 * 1024;
/// What the writer leaves behind is released once this much is due, by one `madvise` call per
/// step: unmapping a step of dirty pages is short enough not to hold the core the network
/// thread shares (see [`POPULATE_STEP`]).
const RELEASE_STEP: i64 = 1024 * 1024;
/// How far past a cold read the page cache is asked to read ahead: a consumer catching up at
/// 250 MB/s reads this in about 60 ms, and a disk at 1 GB/s fetches it in about 15 ms, so its next
/// read finds its pages cached instead of waiting for them in a page fault.
const COLD_READ_AHEAD: i64 = 16 * 1024 * 1024;
/// What one `MADV_WILLNEED` call asks for: the kernel reads at most the larger of the device's
/// largest request and its readahead window per call (512 KiB with common defaults) and drops
/// the rest without a word.
const READ_AHEAD_STEP: i64 = 512 * 1024;

/// Proof that the caller holds the put lock.
pub(crate) type PutGuard<'a> = MutexGuard<'a, ()>;

pub(crate) struct CommitLog {
    pub(crate) files: FileQueue,
    put_lock: Mutex<()>,
    allocator: Arc<Allocator>,
    /// `dataReadAheadEnable`: full segments get normal readahead, or none.
    read_ahead: AtomicBool,
    /// End of the range populated ahead of the writer (`i64::MAX` once the kernel refused, and
    /// on a slave): written by the flush thread, read by puts to know when to wake it.
    populated: AtomicI64,
    /// Below this offset the writer's pages were released by [`CommitLog::release_behind_writer`]
    /// (the flush thread's alone); -1 before its first call.
    released_behind_writer: AtomicI64,
    /// The span of CommitLog offsets that reads far behind the writer mapped since
    /// [`CommitLog::release_cold_reads`] last ran.
    cold_read_span: Mutex<Option<(i64, i64)>>,
    /// What [`CommitLog::read_ahead_of_cold_read`] asked the kernel to read.
    cold_read_ahead: ReadAheadMark,
    /// Offset of the last record written, -1 when there is none (a slave compares its last
    /// record with the master's before it streams on).
    last_record: AtomicI64,
}

/// A record ready to be written: where it sits in the batch buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingRecord {
    pub start: usize,
    pub len: usize,
}

/// What reading at an offset found.
pub(crate) enum Checked<'a> {
    Record(Record<'a>),
    /// The end-of-segment blank: continue at the next segment.
    Blank,
    /// Not a valid record: the end of the data (or corruption).
    Invalid,
}

impl CommitLog {
    /// The CommitLog of the recovered `files`, whose last record starts at `last_record`.
    ///
    /// `populate` is false on a slave: it appends with `pwrite`
    /// ([`crate::mapped_file::MappedFile::append_written`]), and pages populated ahead of it
    /// would be zeroed by the kernel only for the write to fill them again.
    pub(crate) fn new(
        files: FileQueue,
        allocator: Arc<Allocator>,
        last_record: Option<i64>,
        populate: bool,
    ) -> Self {
        allocator.request(files.current().map_or(0, |f| f.end()));
        CommitLog {
            files,
            put_lock: Mutex::new(()),
            allocator,
            read_ahead: AtomicBool::new(true),
            populated: AtomicI64::new(if populate { 0 } else { i64::MAX }),
            released_behind_writer: AtomicI64::new(-1),
            cold_read_span: Mutex::new(None),
            cold_read_ahead: ReadAheadMark::default(),
            last_record: AtomicI64::new(last_record.unwrap_or(-1)),
        }
    }

    /// Turns readahead on the segments' pages on or off (Java's `scanFileAndSetReadMode`), for
    /// the segments there are and those to come. The range ahead of the writer keeps none
    /// whatever the setting (see [`MappedFile::populate_for_write`]).
    pub(crate) fn set_read_ahead(&self, enabled: bool) -> io::Result<()> {
        self.read_ahead.store(enabled, Ordering::Relaxed);
        let current = self.files.current().map(|f| f.from());
        for file in self.files.snapshot().iter() {
            let len = if Some(file.from()) == current {
                file.readable()
            } else {
                file.size()
            };
            file.advise_read_ahead(enabled, len)?;
        }
        Ok(())
    }

    pub(crate) fn load(
        dir: &std::path::Path,
        segment_size: u64,
        fs: &crate::fs::Fs,
    ) -> Result<FileQueue, StoreError> {
        FileQueue::load(dir, segment_size, fs)
    }

    pub(crate) fn lock(&self) -> PutGuard<'_> {
        self.put_lock.lock()
    }

    pub(crate) fn segment_size(&self) -> usize {
        self.files.file_size()
    }

    /// First offset still stored, or -1 when there are no segments.
    pub(crate) fn min_offset(&self) -> i64 {
        self.files.min_offset()
    }

    /// Offset the next record will be written at (end of the published data).
    pub(crate) fn max_offset(&self) -> i64 {
        self.files.max_offset()
    }

    /// Whether no segment holds a byte (there may be an empty one).
    pub(crate) fn is_empty(&self) -> bool {
        self.files.current().is_none_or(|f| f.readable() == 0)
    }

    /// The last record written: its offset and bytes.
    pub(crate) fn last_record(&self) -> Option<(i64, Bytes)> {
        let offset = self.last_record.load(Ordering::Acquire);
        let record = self.read_record(offset)?;
        Some((offset, record))
    }

    /// Published bytes from `from` up to `max` of them, inside `from`'s segment, zero-copy;
    /// `None` outside `[min_offset, max_offset)`.
    pub(crate) fn data(&self, from: i64, max: usize) -> Option<Bytes> {
        if from < self.min_offset() || from >= self.max_offset() {
            return None;
        }
        let file = self.files.find(from)?;
        let pos = (from - file.from()) as usize;
        let len = file.readable().checked_sub(pos)?.min(max);
        file.slice(pos, len)
    }

    pub(crate) fn flushed_where(&self) -> i64 {
        self.files.flushed_where()
    }

    /// Whether a put that ended at `end` should wake the flush thread to populate: the
    /// populated range ahead of the writer is down to half its length (or to the segment's end).
    pub(crate) fn wants_populate(&self, end: i64) -> bool {
        let want = (end + (POPULATE_AHEAD / 2) as i64).min(self.roll_next_file(end));
        want > self.populated.load(Ordering::Relaxed)
    }

    /// Keeps the pages just past the write position mapped for writing (see
    /// [`MappedFile::populate_for_write`]); the flush thread calls it after each round and when
    /// a put says [`CommitLog::wants_populate`], so page faults move off the put path. Only the
    /// flush thread calls it. Once the kernel refused, and on a slave, it does nothing.
    pub(crate) fn populate_ahead(&self) {
        let populated = self.populated.load(Ordering::Relaxed);
        if populated == i64::MAX {
            return;
        }
        let mut ahead = populated;
        let supported = self.populate_from(&mut ahead);
        self.populated
            .store(if supported { ahead } else { i64::MAX }, Ordering::Relaxed);
    }

    fn populate_from(&self, ahead: &mut i64) -> bool {
        let Some(file) = self.files.current() else {
            return true;
        };
        if *ahead > 0 && *ahead <= file.from() {
            // The writer moved on to a new segment: the one populated before is full.
            if let Some(previous) = self.files.find(*ahead - 1) {
                let read_ahead = self.read_ahead.load(Ordering::Relaxed);
                if let Err(e) = previous.advise_read_ahead(read_ahead, previous.size()) {
                    tracing::debug!(error = %e, "no readahead advice for a full CommitLog segment");
                }
            }
            *ahead = file.from() + 1;
        }
        let write = file.from() + file.readable() as i64;
        let want = (write + POPULATE_AHEAD as i64).min(file.end());
        let mut start = (*ahead).max(write);
        // Whole steps only, except for the segment's last piece; a few per round, so that the
        // group commit thread's next flush does not wait behind a 4 MiB top-up.
        let round_end = start + POPULATE_ROUND as i64;
        while start < want.min(round_end)
            && (want - start >= POPULATE_STEP as i64 || want == file.end())
        {
            let end = (start + POPULATE_STEP as i64).min(want);
            let (from, to) = ((start - file.from()) as usize, (end - file.from()) as usize);
            if let Err(e) = file.populate_for_write(from, to) {
                tracing::debug!(error = %e, "not populating CommitLog pages ahead of the writer");
                return false;
            }
            start = end;
            *ahead = start;
        }
        true
    }

    /// Unmaps the pages the writer left more than `keep` bytes behind since the last call, once
    /// they are [`RELEASE_STEP`] or more: the flush thread calls it as often as it populates
    /// ahead, so that a writer at hundreds of MB/s does not hold a second's worth of written
    /// pages until [`CommitLog::release_cold_pages`]. Only the range new since the last call is
    /// touched (the full sweep stays once a second).
    pub(crate) fn release_behind_writer(&self, keep: i64) {
        let cutoff = self.max_offset() - keep;
        let from = self.released_behind_writer.load(Ordering::Relaxed);
        if from < 0 {
            // What lies below the end at start was not written by this process's writer: the
            // sweep once a second covers it.
            self.released_behind_writer
                .store(cutoff.max(0), Ordering::Relaxed);
            return;
        }
        if cutoff - from < RELEASE_STEP {
            return;
        }
        let release = |a, b| self.files.release_pages_between(a, b);
        if let Err(e) = in_steps(from, cutoff, RELEASE_STEP, release) {
            tracing::debug!(error = %e, "cannot release CommitLog pages");
        }
        self.released_behind_writer.store(cutoff, Ordering::Relaxed);
    }

    /// A read mapped `[from, to)` of data more than the resident tail behind the writer.
    pub(crate) fn note_cold_read(&self, from: i64, to: i64) {
        let mut span = self.cold_read_span.lock();
        *span = Some(match *span {
            Some((a, b)) => (a.min(from), b.max(to)),
            None => (from, to),
        });
    }

    /// Unmaps what reads noted by [`CommitLog::note_cold_read`] mapped, as far as it lies more
    /// than `keep` bytes behind the write position: a few `madvise` calls, however long the log.
    /// Returns the end of the span those reads covered.
    pub(crate) fn release_cold_reads(&self, keep: i64) -> Option<i64> {
        let (from, end) = self.cold_read_span.lock().take()?;
        let to = end.min(self.max_offset() - keep);
        if to > from {
            if let Err(e) = self.files.release_pages_between(from, to) {
                tracing::debug!(error = %e, "cannot release CommitLog pages");
            }
        }
        Some(end)
    }

    /// Asks the kernel to read the [`COLD_READ_AHEAD`] bytes after `end`, where a cold read
    /// stopped, into the page cache without mapping them, as far as they lie more than `keep`
    /// bytes behind the write position (the tail is mapped and cached). Only what earlier calls
    /// did not ask for is asked, once a step of it is new, so a consumer reading on pays for each
    /// page once. Nothing is asked with readahead off (`dataReadAheadEnable=false`: reads are
    /// scattered).
    pub(crate) fn read_ahead_of_cold_read(&self, end: i64, keep: i64) {
        if !self.read_ahead.load(Ordering::Relaxed) {
            return;
        }
        let until = (end + COLD_READ_AHEAD).min(self.max_offset() - keep);
        let asked = self.cold_read_ahead.ask(
            &self.files,
            end,
            until,
            COLD_READ_AHEAD,
            READ_AHEAD_STEP,
            READ_AHEAD_STEP,
        );
        if let Err(e) = asked {
            tracing::debug!(error = %e, "cannot read CommitLog pages ahead");
        }
    }

    /// Unmaps CommitLog pages more than `keep` bytes behind the write position (see
    /// [`MappedFile::release_pages`]), so the broker's resident set is the pages in use, not
    /// every page written or read since start (Java's `swapMap` does the same for cold files).
    /// Consumers of old data map what they read again, at a minor fault per page.
    pub(crate) fn release_cold_pages(&self, keep: i64) {
        if let Err(e) = self.files.release_pages_below(self.max_offset() - keep) {
            tracing::debug!(error = %e, "cannot release CommitLog pages");
        }
    }

    /// Start of the segment after the one holding `offset` (`rollNextFile`).
    pub(crate) fn roll_next_file(&self, offset: i64) -> i64 {
        let size = self.segment_size() as i64;
        offset + size - offset % size
    }

    /// Writes the encoded records of `buf` in order, giving each its physical offset and the
    /// store timestamp (queue offsets are already in place). Segments the batch needs are created
    /// before anything is written, so an I/O error leaves nothing half-written. Returns each
    /// record's physical offset.
    pub(crate) fn append(
        &self,
        _guard: &PutGuard<'_>,
        buf: &mut [u8],
        records: &[PendingRecord],
        store_timestamp: i64,
        offsets: &mut Vec<i64>,
    ) -> io::Result<()> {
        let segment_size = self.segment_size();
        let first = match self.files.current() {
            Some(last) => last,
            None => self.new_segment(0)?,
        };
        let mut pos = segment_size - first.free();
        // A segment made by the allocator is reserved whole; one recovered at start is reserved
        // here, once, before anything is written.
        first.reserve(segment_size)?;
        offsets.clear();
        let total: usize = records.iter().map(|r| r.len).sum();
        if total + END_FILE_MIN_BLANK_LENGTH <= segment_size - pos {
            // The common case: the whole batch fits the current segment.
            for record in records {
                offsets.push(first.from() + pos as i64);
                patch(buf, record, first.from() + pos as i64, store_timestamp);
                pos += record.len;
            }
            let chunk = records.first().map_or(0..0, |r| r.start..r.start + total);
            write_chunk(&first, &buf[chunk], store_timestamp)?;
            self.note_last_record(offsets);
            return Ok(());
        }
        // Plan which segment and position each record gets, making segments as needed.
        let mut segments: Vec<Arc<MappedFile>> = vec![first];
        let mut placement = Vec::with_capacity(records.len());
        for record in records {
            if record.len + END_FILE_MIN_BLANK_LENGTH > segment_size - pos {
                let next = self.next_segment(segments.last().expect("one segment"))?;
                segments.push(next);
                pos = 0;
            }
            let segment = segments.len() - 1;
            offsets.push(segments[segment].from() + pos as i64);
            placement.push(segment);
            pos += record.len;
        }
        // Write: patch the offsets in, copy one contiguous chunk per segment, seal full segments.
        let mut chunk_start = records.first().map_or(0, |r| r.start);
        let mut chunk_end = chunk_start;
        let mut current = 0;
        for ((record, segment), offset) in records.iter().zip(&placement).zip(offsets.iter()) {
            if *segment != current {
                write_chunk(
                    &segments[current],
                    &buf[chunk_start..chunk_end],
                    store_timestamp,
                )?;
                seal(&segments[current]);
                current = *segment;
                chunk_start = record.start;
            }
            patch(buf, record, *offset, store_timestamp);
            chunk_end = record.start + record.len;
        }
        write_chunk(
            &segments[current],
            &buf[chunk_start..chunk_end],
            store_timestamp,
        )?;
        self.note_last_record(offsets);
        Ok(())
    }

    fn note_last_record(&self, offsets: &[i64]) {
        if let Some(last) = offsets.last() {
            self.last_record.store(*last, Ordering::Release);
        }
    }

    /// Writes a slave's replicated bytes (`parts`, one after another) at `offset`, the end of
    /// the CommitLog or, when it is empty, a segment start. The caller checked them: whole
    /// records inside one segment, maybe ending in its blank, which fills the segment (the next
    /// bytes then go to the next one).
    /// `last` is the offset and store timestamp of the last record among them. An I/O error
    /// writes nothing (blocks are allocated first).
    pub(crate) fn append_replicated(
        &self,
        _guard: &PutGuard<'_>,
        offset: i64,
        parts: &[&[u8]],
        last: Option<(i64, i64)>,
    ) -> io::Result<()> {
        let segment = self.segment_at(offset)?;
        segment.append_written(parts)?.ok_or_else(|| {
            io::Error::other("commit log segment has no room for replicated bytes")
        })?;
        if let Some((offset, store_timestamp)) = last {
            segment.set_store_timestamp(store_timestamp);
            self.last_record.store(offset, Ordering::Release);
        }
        Ok(())
    }

    /// The segment replicated bytes at `offset` go to: the one being written, the next one when
    /// that is full, or on an empty CommitLog a new one starting at `offset`, which replaces
    /// the empty segments left from before (a slave may start anywhere in the master's history).
    fn segment_at(&self, offset: i64) -> io::Result<Arc<MappedFile>> {
        match self.files.current() {
            Some(current) if current.from() <= offset && offset < current.end() => Ok(current),
            Some(current) if current.readable() > 0 => self.next_segment(&current),
            _ => {
                let empty = self.files.snapshot().len();
                let segment = self.new_segment(offset)?;
                self.files.remove_first(empty)?;
                Ok(segment)
            }
        }
    }

    fn next_segment(&self, current: &Arc<MappedFile>) -> io::Result<Arc<MappedFile>> {
        match self.files.find(current.end()) {
            Some(next) => Ok(next),
            None => self.new_segment(current.end()),
        }
    }

    /// The segment starting at `from`: the pre-allocated one if ready, else made now. Either
    /// way the one after it is requested from the allocator.
    fn new_segment(&self, from: i64) -> io::Result<Arc<MappedFile>> {
        let segment = self.allocator.take_or_create(from)?;
        self.files.push_file(Arc::clone(&segment));
        self.allocator.request(segment.end());
        Ok(segment)
    }

    /// Deletes the oldest segments (never the one being written, at most `batch_max`) that are
    /// older than `reserved_ms`, or whatever their age when `clean_at_once`
    /// (`deleteExpiredFile`). Returns how many went.
    pub(crate) fn delete_expired(
        &self,
        now: i64,
        reserved_ms: i64,
        clean_at_once: bool,
        batch_max: usize,
    ) -> io::Result<usize> {
        let files = self.files.snapshot();
        let candidates = &files[..files.len().saturating_sub(1)];
        let expired = candidates
            .iter()
            .take_while(|f| clean_at_once || now >= f.last_modified_ms() + reserved_ms)
            .take(batch_max)
            .count();
        drop(files);
        self.files.remove_first(expired)
    }

    /// The record bytes `[offset, offset + size)` as a zero-copy slice.
    pub(crate) fn get(&self, offset: i64, size: i32) -> Option<Bytes> {
        let file = self.files.find(offset)?;
        file.slice((offset - file.from()) as usize, usize::try_from(size).ok()?)
    }

    /// A copy of the `size` bytes at `offset`, split off `buf`, or with `nowait` of as many of
    /// them as the page cache holds (see [`MappedFile::copy`]); `Ok(None)` where
    /// [`CommitLog::get`] has nothing.
    pub(crate) fn copy(
        &self,
        offset: i64,
        size: usize,
        buf: &mut BytesMut,
        nowait: bool,
    ) -> io::Result<Option<Bytes>> {
        let Some(file) = self.files.find(offset) else {
            return Ok(None);
        };
        let pos = (offset - file.from()) as usize;
        if pos.saturating_add(size) > file.readable() {
            return Ok(None);
        }
        match file.copy(pos, size, buf, nowait) {
            Ok(record) => Ok(Some(record)),
            // Retention deleted the segment before this read first opened it.
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The whole record starting at `offset`, if one does.
    pub(crate) fn read_record(&self, offset: i64) -> Option<Bytes> {
        let file = self.files.find(offset)?;
        let pos = (offset - file.from()) as usize;
        let head = file.read(pos, 8)?;
        let size = i32::from_be_bytes(head[..4].try_into().ok()?);
        let magic = i32::from_be_bytes(head[4..8].try_into().ok()?);
        if size <= 0 || !matches!(magic, MAGIC_V1 | MAGIC_V2) {
            return None;
        }
        file.slice(pos, size as usize)
    }

    /// Store timestamp of the record at `offset` of `size` bytes, or -1 if it is not stored
    /// (`pickupStoreTimestamp`).
    pub(crate) fn pickup_store_timestamp(&self, offset: i64, size: i32) -> i64 {
        if offset < self.min_offset() || offset + i64::from(size) > self.max_offset() {
            return -1;
        }
        let Some(file) = self.files.find(offset) else {
            return -1;
        };
        let pos = (offset - file.from()) as usize;
        let Some(flag) = file.read(pos + SYS_FLAG_POS, 4) else {
            return -1;
        };
        let flag = i32::from_be_bytes(flag.try_into().expect("4 bytes"));
        file.read(pos + store_timestamp_pos(flag), 8)
            .map_or(-1, |t| i64::from_be_bytes(t.try_into().expect("8 bytes")))
    }
}

/// Writes a record's physical offset and the store timestamp into its encoded bytes.
fn patch(buf: &mut [u8], record: &PendingRecord, offset: i64, store_timestamp: i64) {
    let bytes = &mut buf[record.start..record.start + record.len];
    bytes[PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8].copy_from_slice(&offset.to_be_bytes());
    let flag = i32::from_be_bytes(bytes[SYS_FLAG_POS..SYS_FLAG_POS + 4].try_into().expect("4"));
    let at = store_timestamp_pos(flag);
    bytes[at..at + 8].copy_from_slice(&store_timestamp.to_be_bytes());
}

fn write_chunk(segment: &MappedFile, chunk: &[u8], store_timestamp: i64) -> io::Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    segment
        .append(chunk)?
        .ok_or_else(|| io::Error::other("commit log segment has no room for a planned write"))?;
    segment.set_store_timestamp(store_timestamp);
    Ok(())
}

/// Fills the rest of a segment with the blank (`i32 remaining`, `BLANK_MAGIC`).
fn seal(segment: &MappedFile) {
    let remaining = segment.free();
    if remaining >= END_FILE_MIN_BLANK_LENGTH {
        let mut blank = [0u8; END_FILE_MIN_BLANK_LENGTH];
        blank[..4].copy_from_slice(&(remaining as i32).to_be_bytes());
        blank[4..].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
        segment.append_and_seal(&blank);
    } else {
        segment.append_and_seal(&[]);
    }
}

/// Decodes what lies at `pos` of `file` as recovery does (`checkMessageAndReturnSize`).
pub(crate) fn check_at(file: &MappedFile, pos: usize, check_crc: bool) -> Checked<'_> {
    let Some(bytes) = file.read_from(pos) else {
        return Checked::Invalid;
    };
    if bytes.len() >= 8 && i32::from_be_bytes(bytes[4..8].try_into().expect("4")) == BLANK_MAGIC {
        return Checked::Blank;
    }
    match Record::decode(bytes, check_crc) {
        Ok(record) => Checked::Record(record),
        Err(_) => Checked::Invalid,
    }
}
