//! An ordered run of equally sized [`MappedFile`]s named by their start offset (Java's
//! `MappedFileQueue`): the CommitLog's segments, or one ConsumeQueue's files.
//!
//! Readers take a lock-free snapshot of the list (`arc_swap`); changes to the list (a new file
//! at the end, old files leaving at the front) are serialized by a mutex and published as a new
//! snapshot. Readers holding an old snapshot or a [`bytes::Bytes`] keep unlinked files mapped.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use crate::error::StoreError;
use crate::fs::Fs;
use crate::mapped_file::{file_name, MappedFile};

pub(crate) type Files = Vec<Arc<MappedFile>>;

/// Calls `each` on `[from, to)` cut into pieces of at most `step` bytes, in order, up to the
/// first error: one `madvise` call per piece.
pub(crate) fn in_steps(
    from: i64,
    to: i64,
    step: i64,
    mut each: impl FnMut(i64, i64) -> io::Result<()>,
) -> io::Result<()> {
    let mut start = from;
    while start < to {
        let end = (start + step).min(to);
        each(start, end)?;
        start = end;
    }
    Ok(())
}

/// How far ahead of its readers a [`FileQueue`]'s pages were asked for (`MADV_WILLNEED`), so
/// that a reader going on asks for each page once. One mark per window of readers, up to
/// [`READ_AHEAD_WINDOWS`]: the consumers of a topic's queues read the CommitLog at places that
/// drift apart, and with one mark each of them took the others' window for none and asked for
/// its whole window again on every pull (the kernel's walk of those cached pages was 42 % of a
/// backlog consume's profile, which used three times the CPU per message it uses now).
#[derive(Default)]
pub(crate) struct ReadAheadMark(Mutex<Vec<(i64, i64)>>);

/// Readers far apart whose windows (`[begin, asked until)`) are each remembered; one more
/// replaces the furthest behind.
const READ_AHEAD_WINDOWS: usize = 16;

impl ReadAheadMark {
    /// Asks the kernel to read `[from, until)` of `files` into the page cache, less what earlier
    /// calls asked for, in calls of at most `step` bytes; nothing while less than `min_new`
    /// bytes would be new (a reader going on a little at a time asks once per `min_new`).
    /// `reach` is how far past a read callers ask (`until` is at most `from + reach`): a read
    /// starting inside a window asked before goes on from that window's end.
    pub(crate) fn ask(
        &self,
        files: &FileQueue,
        from: i64,
        until: i64,
        reach: i64,
        min_new: i64,
        step: i64,
    ) -> io::Result<()> {
        match self.claim(from, until, reach, min_new) {
            Some(start) => in_steps(start, until, step, |a, b| files.will_need_between(a, b)),
            None => Ok(()),
        }
    }

    /// Where the part of `[from, until)` not yet asked for starts, marked as asked now; `None`
    /// while it is shorter than `min_new`.
    fn claim(&self, from: i64, until: i64, reach: i64, min_new: i64) -> Option<i64> {
        let mut windows = self.0.lock();
        // The window this reader asked before (it may have read past its end since), or one it
        // trails by less than two reaches: pages further behind may have left the cache since.
        let found = windows
            .iter_mut()
            .find(|w| w.0 <= from && from <= w.1 + reach && w.1 - from <= 2 * reach);
        let window = match found {
            Some(window) => window,
            None => {
                if windows.len() == READ_AHEAD_WINDOWS {
                    let behind = (0..windows.len())
                        .min_by_key(|&i| windows[i].1)
                        .unwrap_or(0);
                    windows.swap_remove(behind);
                }
                windows.push((from, from));
                windows.last_mut()?
            }
        };
        let start = window.1.max(from);
        if until - start < min_new.max(1) {
            return None;
        }
        window.1 = until;
        Some(start)
    }
}

pub(crate) struct FileQueue {
    dir: PathBuf,
    file_size: usize,
    files: ArcSwap<Files>,
    /// Serializes changes of the list.
    change: Mutex<()>,
    /// Offset up to which everything is on disk.
    flushed_where: AtomicI64,
    fs: Fs,
}

impl FileQueue {
    /// Maps every file of `dir` (created if missing), in name order. A trailing empty file is
    /// deleted; any other file of the wrong size fails the load, as in Java.
    pub(crate) fn load(dir: &Path, file_size: u64, fs: &Fs) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))? {
            let entry = entry.map_err(|e| StoreError::io(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
            if is_file {
                if let Ok(offset) = name.parse::<i64>() {
                    names.push((offset, entry.path()));
                }
            }
        }
        names.sort();
        let mut files = Vec::with_capacity(names.len());
        let count = names.len();
        for (i, (offset, path)) in names.into_iter().enumerate() {
            let len = fs::metadata(&path)
                .map_err(|e| StoreError::io(&path, e))?
                .len();
            if len == 0 && i + 1 == count {
                fs::remove_file(&path).map_err(|e| StoreError::io(&path, e))?;
                continue;
            }
            if len != file_size {
                return Err(StoreError::FileSizeMismatch {
                    path,
                    actual: len,
                    expected: file_size,
                });
            }
            let file = MappedFile::open(path.clone(), offset, file_size as usize, fs)
                .map_err(|e| StoreError::io(&path, e))?;
            files.push(Arc::new(file));
        }
        let flushed = files.last().map_or(0, |f| f.end());
        Ok(FileQueue {
            dir: dir.to_path_buf(),
            file_size: file_size as usize,
            files: ArcSwap::from_pointee(files),
            change: Mutex::new(()),
            flushed_where: AtomicI64::new(flushed),
            fs: Arc::clone(fs),
        })
    }

    /// A queue with no files yet; its directory is created with the first file.
    pub(crate) fn empty(dir: PathBuf, file_size: u64, fs: &Fs) -> Self {
        FileQueue {
            dir,
            file_size: file_size as usize,
            files: ArcSwap::from_pointee(Vec::new()),
            change: Mutex::new(()),
            flushed_where: AtomicI64::new(0),
            fs: Arc::clone(fs),
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn file_size(&self) -> usize {
        self.file_size
    }

    pub(crate) fn snapshot(&self) -> Arc<Files> {
        self.files.load_full()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.files.load().is_empty()
    }

    pub(crate) fn last(&self) -> Option<Arc<MappedFile>> {
        self.files.load().last().cloned()
    }

    /// Unmaps from this process the pages of every file below `cutoff` (see
    /// [`MappedFile::release_pages`]): the bytes stay in the file and the page cache, and a
    /// later read maps them again at a minor fault.
    pub(crate) fn release_pages_below(&self, cutoff: i64) -> io::Result<()> {
        for file in self.snapshot().iter() {
            if file.from() >= cutoff {
                break;
            }
            file.release_pages((cutoff - file.from()) as usize)?;
        }
        Ok(())
    }

    /// [`FileQueue::release_pages_below`] of `[from, to)` only: what lies in files below `from`
    /// is left as it is.
    pub(crate) fn release_pages_between(&self, from: i64, to: i64) -> io::Result<()> {
        self.each_part(from, to, MappedFile::release_range)
    }

    /// [`MappedFile::will_need`] over the files holding `[from, to)`.
    pub(crate) fn will_need_between(&self, from: i64, to: i64) -> io::Result<()> {
        self.each_part(from, to, MappedFile::will_need)
    }

    /// Calls `each` with every file holding part of `[from, to)` and that part's bounds in the
    /// file (the end may pass the file's size: each call clips it).
    fn each_part(
        &self,
        from: i64,
        to: i64,
        each: impl Fn(&MappedFile, usize, usize) -> io::Result<()>,
    ) -> io::Result<()> {
        for file in self.snapshot().iter() {
            if file.from() >= to {
                break;
            }
            if file.end() <= from {
                continue;
            }
            let start = (from - file.from()).max(0) as usize;
            each(file, start, (to - file.from()) as usize)?;
        }
        Ok(())
    }

    /// Start of the first file, or -1 if there is none (Java's `getMinOffset`).
    pub(crate) fn min_offset(&self) -> i64 {
        self.files.load().first().map_or(-1, |f| f.from())
    }

    /// The file being written: the last one holding data, else the first. Files after it are
    /// empty, made ahead of time by a writer.
    pub(crate) fn current(&self) -> Option<Arc<MappedFile>> {
        let files = self.files.load();
        files
            .iter()
            .rev()
            .find(|f| f.readable() > 0)
            .or(files.first())
            .cloned()
    }

    /// End of the published bytes, or 0 (Java's `getMaxOffset`).
    pub(crate) fn max_offset(&self) -> i64 {
        self.current().map_or(0, |f| f.from() + f.readable() as i64)
    }

    /// The file holding `offset`.
    pub(crate) fn find(&self, offset: i64) -> Option<Arc<MappedFile>> {
        find_in(&self.files.load(), offset, self.file_size)
    }

    /// Creates the file starting at `from` and appends it to the list. Its blocks are allocated
    /// ahead of the writer a step at a time ([`MappedFile::reserve`]).
    pub(crate) fn create_file(&self, from: i64) -> io::Result<Arc<MappedFile>> {
        let _change = self.change.lock();
        let file = Arc::new(self.make_file(from)?);
        self.publish_with(|files| files.push(Arc::clone(&file)));
        Ok(file)
    }

    /// Creates the file starting at `from` without adding it to the list.
    fn make_file(&self, from: i64) -> io::Result<MappedFile> {
        let path = self.dir.join(file_name(from));
        MappedFile::create(path, from, self.file_size, &self.fs, false)
    }

    /// Appends a file made elsewhere (pre-allocated) to the list.
    pub(crate) fn push_file(&self, file: Arc<MappedFile>) {
        let _change = self.change.lock();
        self.publish_with(|files| files.push(file));
    }

    /// Unlinks the first `count` files (never the last one) and drops them from the list.
    pub(crate) fn remove_first(&self, count: usize) -> io::Result<usize> {
        let _change = self.change.lock();
        let files = self.files.load_full();
        let count = count.min(files.len().saturating_sub(1));
        for file in &files[..count] {
            match fs::remove_file(file.path()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        self.publish_with(|files| {
            files.drain(..count);
        });
        Ok(count)
    }

    /// Unlinks every file.
    pub(crate) fn destroy(&self) -> io::Result<()> {
        let _change = self.change.lock();
        for file in self.files.load().iter() {
            match fs::remove_file(file.path()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        self.publish_with(Vec::clear);
        self.flushed_where.store(0, Ordering::Release);
        let _ = fs::remove_dir(&self.dir);
        Ok(())
    }

    fn publish_with(&self, change: impl FnOnce(&mut Files)) {
        let mut files = Files::clone(&self.files.load());
        change(&mut files);
        self.files.store(Arc::new(files));
    }

    /// Makes `offset` the end of the content: later files are deleted, the file holding it is cut
    /// there (Java's `truncateDirtyFiles`, but the cut tail is zeroed too). Recovery only.
    pub(crate) fn truncate(&mut self, offset: i64) -> io::Result<()> {
        let files = Arc::try_unwrap(self.files.swap(Arc::new(Vec::new())))
            .unwrap_or_else(|shared| Files::clone(&shared));
        let mut kept = Vec::with_capacity(files.len());
        for mut file in files {
            if file.end() <= offset {
                kept.push(file);
            } else if file.from() <= offset {
                let exclusive = Arc::get_mut(&mut file)
                    .ok_or_else(|| io::Error::other("a file being recovered is in use"))?;
                exclusive.truncate((offset - exclusive.from()) as usize)?;
                kept.push(file);
            } else {
                fs::remove_file(file.path())?;
            }
        }
        self.files.store(Arc::new(kept));
        self.flushed_where.store(offset, Ordering::Release);
        Ok(())
    }

    pub(crate) fn flushed_where(&self) -> i64 {
        self.flushed_where.load(Ordering::Acquire)
    }

    /// Flushes every file from the flushed position on. `least_pages` applies to the file being
    /// written; full files are always flushed. Returns the new flushed offset.
    pub(crate) fn flush(&self, least_pages: usize) -> io::Result<i64> {
        let files = self.files.load();
        let mut flushed_where = self.flushed_where();
        let start = files.partition_point(|f| f.end() <= flushed_where);
        for file in &files[start..] {
            let flushed = file.flush(least_pages)?;
            flushed_where = flushed_where.max(file.from() + flushed as i64);
            if flushed < file.size() {
                break;
            }
        }
        self.flushed_where
            .fetch_max(flushed_where, Ordering::AcqRel);
        Ok(self.flushed_where())
    }
}

fn find_in(files: &Files, offset: i64, file_size: usize) -> Option<Arc<MappedFile>> {
    let first = files.first()?;
    if offset < first.from() {
        return None;
    }
    let index = ((offset - first.from()) / file_size as i64) as usize;
    match files.get(index) {
        Some(file) if file.from() <= offset && offset < file.end() => Some(Arc::clone(file)),
        // Files are contiguous in practice; fall back to a search if one is missing.
        _ => files
            .iter()
            .find(|f| f.from() <= offset && offset < f.end())
            .cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_find_truncate() {
        let dir = tempfile::tempdir().unwrap();
        let queue = FileQueue::load(dir.path(), 100, &crate::fs::real()).unwrap();
        assert_eq!(queue.min_offset(), -1);
        assert_eq!(queue.max_offset(), 0);
        let a = queue.create_file(0).unwrap();
        a.append(&[1; 100]).unwrap();
        let b = queue.create_file(100).unwrap();
        b.append(&[2; 40]).unwrap();
        assert_eq!(queue.max_offset(), 140);
        assert_eq!(queue.find(99).unwrap().from(), 0);
        assert_eq!(queue.find(100).unwrap().from(), 100);
        assert!(queue.find(200).is_none());
        assert_eq!(queue.flush(0).unwrap(), 140);
        drop((a, b));

        let mut reloaded = FileQueue::load(dir.path(), 100, &crate::fs::real()).unwrap();
        assert_eq!(reloaded.max_offset(), 200);
        reloaded.truncate(50).unwrap();
        assert_eq!(reloaded.max_offset(), 50);
        assert_eq!(reloaded.snapshot().len(), 1);
        assert!(!dir.path().join(file_name(100)).exists());
    }

    /// Resident KiB of this process's mappings of `path` (`/proc/self/smaps`).
    fn resident_kib(path: &Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let name = path.to_str().unwrap();
        let mut mine = false;
        let mut total = 0;
        for line in smaps.lines() {
            if line.contains('-') && !line.starts_with(|c: char| c.is_ascii_uppercase()) {
                mine = line.ends_with(name);
            } else if mine && line.starts_with("Rss:") {
                total += line
                    .split_whitespace()
                    .nth(1)
                    .unwrap()
                    .parse::<u64>()
                    .unwrap();
            }
        }
        total
    }

    #[test]
    fn released_pages_leave_the_resident_set_but_keep_their_bytes() {
        use crate::mapped_file::OS_PAGE_SIZE;
        let dir = tempfile::tempdir().unwrap();
        let size = 8 * OS_PAGE_SIZE;
        let queue = FileQueue::load(dir.path(), size as u64, &crate::fs::real()).unwrap();
        let a = queue.create_file(0).unwrap();
        let b = queue.create_file(size as i64).unwrap();
        let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        a.append(&bytes).unwrap();
        b.append(&bytes[..3 * OS_PAGE_SIZE]).unwrap();
        let path_a = dir.path().join(file_name(0));
        assert_eq!(resident_kib(&path_a), 32);
        // Not flushed yet: dirty pages must survive being unmapped. The cutoff is mid-page in
        // the second file: its first page goes, the partial one stays.
        queue
            .release_pages_below(size as i64 + OS_PAGE_SIZE as i64 + 100)
            .unwrap();
        assert_eq!(resident_kib(&path_a), 0);
        assert_eq!(resident_kib(&dir.path().join(file_name(size as i64))), 8);
        assert_eq!(a.read(0, size), Some(&bytes[..]));
        assert_eq!(
            b.read(0, 3 * OS_PAGE_SIZE),
            Some(&bytes[..3 * OS_PAGE_SIZE])
        );
        b.append(b"more").unwrap();
        assert_eq!(
            queue.flush(0).unwrap(),
            (size + 3 * OS_PAGE_SIZE + 4) as i64
        );
        assert_eq!(std::fs::read(&path_a).unwrap(), bytes);
        // A cutoff before the first file releases nothing.
        queue.release_pages_below(-1).unwrap();
    }

    #[test]
    fn wrong_sizes_fail_the_load() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(file_name(0)), [0u8; 10]).unwrap();
        fs::write(dir.path().join(file_name(10)), []).unwrap();
        assert!(matches!(
            FileQueue::load(dir.path(), 100, &crate::fs::real()),
            Err(StoreError::FileSizeMismatch { actual: 10, .. })
        ));
        fs::write(dir.path().join(file_name(0)), [0u8; 100]).unwrap();
        let queue = FileQueue::load(dir.path(), 100, &crate::fs::real()).unwrap();
        assert_eq!(queue.snapshot().len(), 1);
        assert!(!dir.path().join(file_name(10)).exists());
    }

    #[test]
    fn readers_drifting_apart_each_ask_for_their_pages_once() {
        const MIB: i64 = 1024 * 1024;
        let (reach, min_new) = (16 * MIB, MIB / 2);
        let marks = ReadAheadMark::default();
        // Two consumers 100 MiB apart, each reading 32 KiB at a time, alternately.
        let (mut a, mut b) = (0, 100 * MIB);
        let mut asked = 0;
        for _ in 0..2_000 {
            for reader in [&mut a, &mut b] {
                *reader += 32 * 1024;
                if let Some(start) = marks.claim(*reader, *reader + reach, reach, min_new) {
                    asked += *reader + reach - start;
                }
            }
        }
        // Each asks its first window whole, then only what its reads add (125 MiB in all), not
        // a whole window per read as with one mark (about 63 GiB).
        assert!(asked <= 2 * reach + 2 * 2_000 * 32 * 1024, "asked {asked}");
        // A reader within a window already asked, behind its mark, asks nothing.
        assert_eq!(marks.claim(a - MIB, a - MIB + reach, reach, min_new), None);
        // A third reader far from both gets a window of its own.
        assert_eq!(
            marks.claim(500 * MIB, 516 * MIB, reach, min_new),
            Some(500 * MIB)
        );
        assert_eq!(marks.claim(500 * MIB, 516 * MIB, reach, min_new), None);
    }
}
