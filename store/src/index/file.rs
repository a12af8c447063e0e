//! One IndexFile, a hash index from keys to CommitLog offsets (Java's `IndexFile` and
//! `IndexHeader`).
//!
//! ```text
//! header (40 B): beginTimestamp i64 | endTimestamp i64 | beginPhyOffset i64 | endPhyOffset i64
//!                | hashSlotCount i32 | indexCount i32 (starts at 1)
//! slots: maxHashSlotNum × i32, the newest entry number of each slot (0 = empty)
//! entries: maxIndexNum × (keyHash i32 | phyOffset i64 | timeDiff i32 seconds | prevIndex i32)
//! ```
//!
//! One thread writes, many read. Entries are written before the count and then the slot that
//! points at them are published (`Release`); readers load the slot, then the count (`Acquire`)
//! and only follow entries below that count, each older than the last. Slots are only accessed
//! atomically; header fields live in atomics and reach the file on flush.

use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};

use memmap2::{MmapOptions, MmapRaw};
use parking_lot::Mutex;
use skiff_model::java_string_hash;

pub(crate) const HEADER_SIZE: usize = 40;
const SLOT_SIZE: usize = 4;
const ENTRY_SIZE: usize = 20;

/// Bytes of an IndexFile with these counts.
pub(crate) fn file_size(slots: u32, entries: u32) -> usize {
    HEADER_SIZE + slots as usize * SLOT_SIZE + entries as usize * ENTRY_SIZE
}

/// Java's `indexKeyHashMethod`: `abs(hashCode)`, with `abs(MIN_VALUE)` taken as 0.
pub(crate) fn key_hash(key: &str) -> i32 {
    java_string_hash(key).checked_abs().unwrap_or(0)
}

/// Turns readahead off for the whole mapping (`MADV_RANDOM`). Every access is a jump: a put
/// writes one random slot, a query follows a hash chain backwards. With readahead, the first
/// touch of a page of a new (sparse) file zero-fills a whole readahead window of holes
/// (`read_ahead_kb`, 8 MiB on some disks) in one fault, which a kernel without preemption does
/// not interrupt: the indexing thread then held its core for 20 ms and stalled the sends
/// sharing it.
fn no_read_ahead(map: &MmapRaw) -> io::Result<()> {
    map.advise(memmap2::Advice::Random)
}

pub(crate) struct IndexFile {
    path: PathBuf,
    map: MmapRaw,
    slots: u32,
    entries: u32,
    begin_timestamp: AtomicI64,
    end_timestamp: AtomicI64,
    begin_phy_offset: AtomicI64,
    end_phy_offset: AtomicI64,
    hash_slot_count: AtomicI32,
    index_count: AtomicI32,
    /// Makes writers (put, flush) exclusive.
    write: Mutex<()>,
}

impl IndexFile {
    /// A new file; a successor starts its begin/end at the end of the file before it.
    pub(crate) fn create(
        path: PathBuf,
        slots: u32,
        entries: u32,
        end_phy_offset: i64,
        end_timestamp: i64,
    ) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        file.set_len(file_size(slots, entries) as u64)?;
        let map = MmapOptions::new()
            .len(file_size(slots, entries))
            .map_raw(&file)?;
        no_read_ahead(&map)?;
        let index = IndexFile::new(path, map, slots, entries);
        if end_phy_offset > 0 {
            index
                .begin_phy_offset
                .store(end_phy_offset, Ordering::Relaxed);
            index
                .end_phy_offset
                .store(end_phy_offset, Ordering::Relaxed);
        }
        if end_timestamp > 0 {
            index
                .begin_timestamp
                .store(end_timestamp, Ordering::Relaxed);
            index.end_timestamp.store(end_timestamp, Ordering::Relaxed);
        }
        Ok(index)
    }

    /// Maps an existing file and reads its header.
    pub(crate) fn open(path: PathBuf, slots: u32, entries: u32) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        let len = file.metadata()?.len();
        if len != file_size(slots, entries) as u64 {
            return Err(io::Error::other(format!(
                "{} is {len} bytes, expected {} for {slots} slots and {entries} entries",
                path.display(),
                file_size(slots, entries)
            )));
        }
        let map = MmapOptions::new().len(len as usize).map_raw(&file)?;
        no_read_ahead(&map)?;
        let index = IndexFile::new(path, map, slots, entries);
        let header = index.header_bytes();
        let long = |at: usize| i64::from_be_bytes(header[at..at + 8].try_into().expect("8"));
        let int = |at: usize| i32::from_be_bytes(header[at..at + 4].try_into().expect("4"));
        index.begin_timestamp.store(long(0), Ordering::Relaxed);
        index.end_timestamp.store(long(8), Ordering::Relaxed);
        index.begin_phy_offset.store(long(16), Ordering::Relaxed);
        index.end_phy_offset.store(long(24), Ordering::Relaxed);
        index.hash_slot_count.store(int(32), Ordering::Relaxed);
        // A damaged count must never send readers past the file.
        let count = int(36).clamp(1, i32::try_from(entries).unwrap_or(i32::MAX));
        index.index_count.store(count, Ordering::Release);
        Ok(index)
    }

    fn new(path: PathBuf, map: MmapRaw, slots: u32, entries: u32) -> Self {
        IndexFile {
            path,
            map,
            slots,
            entries,
            begin_timestamp: AtomicI64::new(0),
            end_timestamp: AtomicI64::new(0),
            begin_phy_offset: AtomicI64::new(0),
            end_phy_offset: AtomicI64::new(0),
            hash_slot_count: AtomicI32::new(0),
            index_count: AtomicI32::new(1),
            write: Mutex::new(()),
        }
    }

    fn header_bytes(&self) -> &[u8] {
        // SAFETY: the header is only written by `flush`, under `write`, and `open` reads it
        // before the file is shared.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr(), HEADER_SIZE) }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn begin_timestamp(&self) -> i64 {
        self.begin_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn end_timestamp(&self) -> i64 {
        self.end_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn end_phy_offset(&self) -> i64 {
        self.end_phy_offset.load(Ordering::Acquire)
    }

    pub(crate) fn index_count(&self) -> i32 {
        self.index_count.load(Ordering::Acquire)
    }

    pub(crate) fn is_write_full(&self) -> bool {
        self.index_count() as i64 >= i64::from(self.entries)
    }

    /// The slot of `hash`, viewed as an atomic holding a big-endian i32.
    fn slot(&self, hash: i32) -> &AtomicI32 {
        let slot = hash as usize % self.slots as usize;
        // SAFETY: inside the mapping, 4-byte aligned (page-aligned base + 40 + 4 × slot), and
        // slots are never accessed other than through this atomic view.
        unsafe { &*(self.map.as_ptr().add(HEADER_SIZE + slot * SLOT_SIZE) as *const AtomicI32) }
    }

    fn entry_pos(&self, index: i32) -> usize {
        HEADER_SIZE + self.slots as usize * SLOT_SIZE + index as usize * ENTRY_SIZE
    }

    /// Adds `key` → `phy_offset` (`putKey`); false when the file is full.
    pub(crate) fn put_key(&self, key: &str, phy_offset: i64, store_timestamp: i64) -> bool {
        let _write = self.write.lock();
        let count = self.index_count.load(Ordering::Relaxed);
        if i64::from(count) >= i64::from(self.entries) {
            return false;
        }
        let hash = key_hash(key);
        let slot = self.slot(hash);
        let mut previous = i32::from_be(slot.load(Ordering::Relaxed));
        if previous <= 0 || previous > count {
            previous = 0;
        }
        let begin = self.begin_timestamp.load(Ordering::Relaxed);
        let time_diff = if begin <= 0 {
            0
        } else {
            ((store_timestamp - begin) / 1000).clamp(0, i64::from(i32::MAX))
        };
        let mut entry = [0u8; ENTRY_SIZE];
        entry[..4].copy_from_slice(&hash.to_be_bytes());
        entry[4..12].copy_from_slice(&phy_offset.to_be_bytes());
        entry[12..16].copy_from_slice(&(time_diff as i32).to_be_bytes());
        entry[16..].copy_from_slice(&previous.to_be_bytes());
        // SAFETY: entry `count` is unpublished (readers only follow entries below the count
        // they loaded after a slot), and `write` excludes other writers.
        unsafe {
            std::ptr::copy_nonoverlapping(
                entry.as_ptr(),
                self.map.as_mut_ptr().add(self.entry_pos(count)),
                ENTRY_SIZE,
            );
        }
        if count <= 1 {
            self.begin_phy_offset.store(phy_offset, Ordering::Relaxed);
            self.begin_timestamp
                .store(store_timestamp, Ordering::Release);
        }
        if previous == 0 {
            self.hash_slot_count.fetch_add(1, Ordering::Relaxed);
        }
        self.index_count.store(count + 1, Ordering::Release);
        slot.store(count.to_be(), Ordering::Release);
        self.end_phy_offset.store(phy_offset, Ordering::Release);
        self.end_timestamp.store(store_timestamp, Ordering::Release);
        true
    }

    /// `isTimeMatched`: whether `[begin, end]` overlaps the file's time range.
    pub(crate) fn is_time_matched(&self, begin: i64, end: i64) -> bool {
        let (first, last) = (self.begin_timestamp(), self.end_timestamp());
        (begin < first && end > last)
            || (begin >= first && begin <= last)
            || (end >= first && end <= last)
    }

    /// Appends the offsets stored under `key` between `begin` and `end` (`selectPhyOffset`),
    /// newest first, until `out` holds `max`.
    pub(crate) fn select(&self, out: &mut Vec<i64>, key: &str, max: usize, begin: i64, end: i64) {
        let hash = key_hash(key);
        let slot = i32::from_be(self.slot(hash).load(Ordering::Acquire));
        let count = self.index_count();
        if slot <= 0 || slot >= count || count <= 1 {
            return;
        }
        let file_begin = self.begin_timestamp();
        let mut next = slot;
        loop {
            if out.len() >= max {
                break;
            }
            let pos = self.entry_pos(next);
            // SAFETY: `next` is below the count loaded after the slot, so the entry was
            // published and is never written again.
            let entry =
                unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(pos), ENTRY_SIZE) };
            let hash_read = i32::from_be_bytes(entry[..4].try_into().expect("4"));
            let phy_offset = i64::from_be_bytes(entry[4..12].try_into().expect("8"));
            let time_diff = i32::from_be_bytes(entry[12..16].try_into().expect("4"));
            let previous = i32::from_be_bytes(entry[16..].try_into().expect("4"));
            if time_diff < 0 {
                break;
            }
            let time = file_begin + i64::from(time_diff) * 1000;
            if hash_read == hash && time >= begin && time <= end {
                out.push(phy_offset);
            }
            // Strictly older entries only: never loop, never reach an unpublished one.
            if previous <= 0 || previous >= next || time < begin {
                break;
            }
            next = previous;
        }
    }

    /// Unmaps from this process the pages of the entries more than `keep` bytes behind the last
    /// one, or, with `keep` = `None`, of the whole file. Nothing is lost: the mapping is shared and
    /// file-backed, so a query reading there maps the same bytes again. The hash slots of a file
    /// being written stay: every put touches one at random.
    pub(crate) fn release_pages(&self, keep: Option<usize>) -> io::Result<()> {
        use crate::mapped_file::OS_PAGE_SIZE;
        let (from, to) = match keep {
            Some(keep) => (
                self.entry_pos(0).div_ceil(OS_PAGE_SIZE) * OS_PAGE_SIZE,
                self.entry_pos(self.index_count()).saturating_sub(keep) / OS_PAGE_SIZE
                    * OS_PAGE_SIZE,
            ),
            None => (0, self.map.len() / OS_PAGE_SIZE * OS_PAGE_SIZE),
        };
        if from >= to {
            return Ok(());
        }
        // SAFETY: MADV_DONTNEED on a MAP_SHARED file mapping keeps the contents (the zero-fill
        // that makes it unsafe in general applies to private and anonymous mappings only).
        unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
        }
    }

    /// Writes the header into the file and forces everything to disk.
    pub(crate) fn flush(&self) -> io::Result<()> {
        let _write = self.write.lock();
        let mut header = [0u8; HEADER_SIZE];
        header[..8].copy_from_slice(&self.begin_timestamp().to_be_bytes());
        header[8..16].copy_from_slice(&self.end_timestamp().to_be_bytes());
        header[16..24]
            .copy_from_slice(&self.begin_phy_offset.load(Ordering::Acquire).to_be_bytes());
        header[24..32].copy_from_slice(&self.end_phy_offset().to_be_bytes());
        header[32..36].copy_from_slice(&self.hash_slot_count.load(Ordering::Acquire).to_be_bytes());
        header[36..].copy_from_slice(&self.index_count().to_be_bytes());
        // SAFETY: header bytes are only touched here, under `write`.
        unsafe {
            std::ptr::copy_nonoverlapping(header.as_ptr(), self.map.as_mut_ptr(), HEADER_SIZE);
        }
        self.map.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_chain_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("20240101000000000");
        let file = IndexFile::create(path.clone(), 4, 11, 0, 0).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 40 + 16 + 220);
        for i in 0..5 {
            assert!(file.put_key("T#k1", 100 + i, 1_000_000 + i * 1000));
            assert!(file.put_key("T#k2", 200 + i, 1_000_000 + i * 1000));
        }
        assert!(file.is_write_full());
        assert_eq!(file.index_count(), 11);
        assert!(!file.put_key("T#k3", 1, 1));
        assert!(crate::mapped_file::tests::random_read_advised_at(
            file.map.as_ptr() as usize
        ));
        let mut found = Vec::new();
        file.select(&mut found, "T#k1", 64, 0, i64::MAX);
        assert_eq!(found, vec![104, 103, 102, 101, 100]);
        found.clear();
        file.select(&mut found, "T#k2", 2, 0, i64::MAX);
        assert_eq!(found, vec![204, 203]);
        found.clear();
        file.select(&mut found, "T#k1", 64, 1_002_000, 1_003_000);
        assert_eq!(found, vec![103, 102]);
        file.flush().unwrap();
        drop(file);

        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[0..8], &1_000_000_i64.to_be_bytes());
        // The newest k2 entry (number 10) heads its slot, big-endian like every field.
        let slot = 40 + (key_hash("T#k2") as usize % 4) * 4;
        assert_eq!(&bytes[slot..slot + 4], &10_i32.to_be_bytes());
        assert_eq!(&bytes[36..40], &11_i32.to_be_bytes());
        let reopened = IndexFile::open(path, 4, 11).unwrap();
        assert!(
            crate::mapped_file::tests::random_read_advised_at(reopened.map.as_ptr() as usize),
            "no readahead on index files"
        );
        assert_eq!(reopened.end_phy_offset(), 204);
        assert!(reopened.is_write_full());
        let mut found = Vec::new();
        reopened.select(&mut found, "T#k2", 64, 0, i64::MAX);
        assert_eq!(found, vec![204, 203, 202, 201, 200]);
    }

    #[test]
    fn released_pages_keep_every_key() {
        let dir = tempfile::tempdir().unwrap();
        // 1024 slots (one page) and entries over several pages.
        let file =
            IndexFile::create(dir.path().join("20240101000000000"), 1024, 2000, 0, 0).unwrap();
        for i in 0..1500 {
            assert!(file.put_key(&format!("T#k{}", i % 7), i, 1_000_000 + i));
        }
        file.release_pages(Some(0)).unwrap();
        file.release_pages(Some(usize::MAX)).unwrap();
        assert!(file.put_key("T#k0", 1500, 1_001_500));
        file.release_pages(None).unwrap();
        let mut found = Vec::new();
        file.select(&mut found, "T#k0", 1000, 0, i64::MAX);
        let expected: Vec<i64> = std::iter::once(1500)
            .chain((0..1500).rev().filter(|i| i % 7 == 0))
            .collect();
        assert_eq!(found, expected);
    }

    proptest::proptest! {
        /// Whatever the collisions, a key finds exactly its own offsets, newest first.
        #[test]
        fn every_key_finds_its_offsets(keys in proptest::collection::vec(0u8..12, 1..60)) {
            let dir = tempfile::tempdir().unwrap();
            let file = IndexFile::create(dir.path().join("i"), 5, 64, 0, 0).unwrap();
            for (offset, key) in keys.iter().enumerate() {
                let added = file.put_key(&format!("T#{key}"), offset as i64, 1000);
                proptest::prop_assert!(added);
            }
            for key in 0u8..12 {
                let mut found = Vec::new();
                file.select(&mut found, &format!("T#{key}"), 64, 0, i64::MAX);
                let mut expected: Vec<i64> = keys.iter().enumerate()
                    .filter(|(_, k)| **k == key).map(|(o, _)| o as i64).collect();
                expected.reverse();
                // Distinct keys with equal hashes are not told apart (as in Java).
                let same_hash: Vec<i64> = keys.iter().enumerate()
                    .filter(|(_, k)| key_hash(&format!("T#{k}")) == key_hash(&format!("T#{key}")))
                    .map(|(o, _)| o as i64).rev().collect();
                proptest::prop_assert!(found == expected || found == same_hash);
            }
        }
    }

    #[test]
    fn hashes_follow_java() {
        assert_eq!(key_hash("TopicTest#KEY1"), 1656969516);
        assert_eq!(key_hash(""), 0);
    }
}
