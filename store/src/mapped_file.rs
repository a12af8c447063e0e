//! One fixed-size file, memory-mapped, appended to by one writer and read by many threads without
//! locks (Java's `DefaultMappedFile`).
//!
//! # Soundness
//!
//! The mapping is shared mutable memory, so the rules that make it sound are spelled out here and
//! enforced by this module alone:
//!
//! * Bytes below `readable` are complete and never change while the file is shared (`&self`).
//!   Readers only form slices inside `[0, readable)`, loading `readable` with `Acquire`.
//! * Appends write at `write_pos >= readable`, under the `write_pos` mutex (so two appenders can
//!   never overlap), then publish the new end with a `Release` store to `readable`.
//! * Anything that rewrites published bytes (recovery's truncation) takes `&mut self`, so no
//!   reader and no [`Bytes`] handed out can exist at that moment.
//!
//! Other processes writing the same files would break the first rule; the store's `lock` file
//! keeps another broker out (see `dir.rs`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use memmap2::{MmapOptions, MmapRaw};
use parking_lot::Mutex;

use crate::fs::{allocate_path, Fs};

/// Page size used for "least pages" flush decisions, as Java's `OS_PAGE_SIZE`.
pub(crate) const OS_PAGE_SIZE: usize = 4096;

/// The 20-digit, zero-padded file name of the file starting at `offset` (`UtilAll.offset2FileName`).
pub(crate) fn file_name(offset: i64) -> String {
    format!("{offset:020}")
}

pub(crate) struct MappedFile {
    path: PathBuf,
    /// Offset of the file's first byte in its queue (the number in its name).
    from: i64,
    map: MmapRaw,
    /// Where the next append goes; the mutex makes appends exclusive.
    write_pos: Mutex<usize>,
    /// End of the published bytes.
    readable: AtomicUsize,
    /// End of the bytes known to be on disk.
    flushed: AtomicUsize,
    /// Store timestamp of the last CommitLog record appended, published after `readable`.
    store_timestamp: AtomicI64,
    /// Bytes from the start whose blocks are known to be allocated on disk: appends never write
    /// past it, so a full disk is an error at reservation, never a SIGBUS in the memcpy.
    reserved: AtomicUsize,
    fs: Fs,
    /// The file opened for `pwrite`, on first use ([`MappedFile::append_written`]).
    writer: OnceLock<File>,
    /// The file opened for `pread`, on first use ([`MappedFile::copy`]): CommitLog segments
    /// only, so the many ConsumeQueue files hold no descriptor.
    reader: OnceLock<File>,
}

/// How much of a file to allocate ahead of its writer at a time, when not all at once.
pub(crate) const RESERVE_STEP: usize = 64 * 1024;
/// What one `msync` writes back at most. Starting writeback of 20 MiB (an async flush every
/// 500 ms at 40 MB/s) took 4–5 ms of CPU in one call that a kernel without preemption does not
/// interrupt, and the network thread sharing the core waited that long; between calls of 1 MiB
/// it runs while the flush thread waits for the device.
const SYNC_STEP: usize = 1024 * 1024;

impl MappedFile {
    /// Creates (or adopts an empty) file of `size` zero bytes and maps it. Nothing is readable.
    /// With `reserve_all` every block is allocated now (CommitLog segments, made off the put
    /// lock); otherwise blocks are allocated in [`RESERVE_STEP`]s ahead of the writer (small
    /// ConsumeQueue files, of which there are many).
    pub(crate) fn create(
        path: PathBuf,
        from: i64,
        size: usize,
        fs: &Fs,
        reserve_all: bool,
    ) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        let len = file.metadata()?.len();
        if len == 0 {
            file.set_len(size as u64)?;
        } else if len != size as u64 {
            return Err(io::Error::other(format!(
                "{} exists with {len} bytes, expected {size}",
                path.display()
            )));
        }
        let mut reserved = 0;
        if reserve_all {
            if let Err(e) = fs.allocate(&path, &file, 0, size as u64) {
                drop(file);
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
            reserved = size;
        }
        let map = MmapOptions::new().len(size).map_raw(&file)?;
        if !reserve_all {
            // The put path writes these (ConsumeQueues) without populating ahead: with
            // readahead, its first fault would zero-fill a readahead window of unwritten blocks
            // (`read_ahead_kb`, 8 MiB on some disks: the whole file) under the put lock, in one
            // call a kernel without preemption does not interrupt. Consumers read the entries
            // back while they are in the page cache.
            map.advise(memmap2::Advice::Random)?;
        }
        let file = Self::new(path, from, map, 0, fs);
        file.reserved.store(reserved, Ordering::Release);
        Ok(file)
    }

    /// Maps an existing file, which must be `size` bytes. Everything is readable until recovery
    /// says otherwise (Java's `MappedFileQueue.load`).
    /// Nothing counts as reserved: the first append past the recovered end allocates again
    /// (a no-op for blocks a previous run allocated).
    pub(crate) fn open(path: PathBuf, from: i64, size: usize, fs: &Fs) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        let map = MmapOptions::new().len(size).map_raw(&file)?;
        Ok(Self::new(path, from, map, size, fs))
    }

    fn new(path: PathBuf, from: i64, map: MmapRaw, position: usize, fs: &Fs) -> Self {
        MappedFile {
            path,
            from,
            map,
            write_pos: Mutex::new(position),
            readable: AtomicUsize::new(position),
            flushed: AtomicUsize::new(position),
            store_timestamp: AtomicI64::new(0),
            reserved: AtomicUsize::new(0),
            fs: Arc::clone(fs),
            writer: OnceLock::new(),
            reader: OnceLock::new(),
        }
    }

    /// Makes sure the blocks of `[0, end)` are allocated (at least [`RESERVE_STEP`] more at a
    /// time), so that an append below `end` cannot fault. Fails with ENOSPC on a full disk.
    pub(crate) fn reserve(&self, end: usize) -> io::Result<()> {
        let end = end.min(self.size());
        let reserved = self.reserved.load(Ordering::Acquire);
        if end <= reserved {
            return Ok(());
        }
        let target = end
            .max(reserved + RESERVE_STEP)
            .div_ceil(OS_PAGE_SIZE)
            .saturating_mul(OS_PAGE_SIZE)
            .min(self.size());
        allocate_path(
            &*self.fs,
            &self.path,
            reserved as u64,
            (target - reserved) as u64,
        )?;
        self.reserved.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes from the start whose blocks are allocated on disk.
    pub(crate) fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Acquire)
    }

    pub(crate) fn from(&self) -> i64 {
        self.from
    }

    pub(crate) fn size(&self) -> usize {
        self.map.len()
    }

    /// Queue offset just past the file.
    pub(crate) fn end(&self) -> i64 {
        self.from + self.size() as i64
    }

    pub(crate) fn readable(&self) -> usize {
        self.readable.load(Ordering::Acquire)
    }

    pub(crate) fn flushed(&self) -> usize {
        self.flushed.load(Ordering::Acquire)
    }

    /// Bytes still free for appends.
    pub(crate) fn free(&self) -> usize {
        self.size() - *self.write_pos.lock()
    }

    /// The published bytes `[pos, pos + len)`, or `None` if not all of them are published.
    pub(crate) fn read(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.readable() {
            return None;
        }
        // SAFETY: `pos..end` lies inside the mapping (readable <= size) and below `readable`,
        // which no one writes while `&self` lives (module rules).
        Some(unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(pos), len) })
    }

    /// All published bytes from `pos`.
    pub(crate) fn read_from(&self, pos: usize) -> Option<&[u8]> {
        let readable = self.readable();
        if pos >= readable {
            return None;
        }
        self.read(pos, readable - pos)
    }

    /// A zero-copy handle on `[pos, pos + len)` that keeps the mapping alive.
    pub(crate) fn slice(self: &Arc<Self>, pos: usize, len: usize) -> Option<Bytes> {
        self.read(pos, len)?;
        Some(Bytes::from_owner(MappedSlice {
            file: Arc::clone(self),
            pos,
            len,
        }))
    }

    /// Copies the published bytes `[pos, pos + len)` into `buf`'s spare capacity with `pread`
    /// and returns them, split off `buf` (so the records of one read share one allocation):
    /// nothing is mapped, so the process's resident set does not grow and no page is unmapped
    /// afterwards. With `nowait` (`preadv2` with `RWF_NOWAIT`) it never waits for the disk, so an
    /// async worker can call it: it returns the bytes up to the first page the page cache does
    /// not hold, fewer than `len` then (the kernel starts reading that page), and fewer too on
    /// any error (a kernel before 4.14 has no `RWF_NOWAIT`): the caller then reads on a blocking
    /// thread, with a plain `pread` that reports the error.
    pub(crate) fn copy(
        &self,
        pos: usize,
        len: usize,
        buf: &mut BytesMut,
        nowait: bool,
    ) -> io::Result<Bytes> {
        if pos.checked_add(len).is_none_or(|end| end > self.readable()) {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let file = match self.reader.get() {
            Some(file) => file,
            None => {
                // Reads need not update the file's access time (a write to its inode); only
                // its owner may ask that.
                let file = OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOATIME)
                    .open(&self.path)
                    .or_else(|_| File::open(&self.path))?;
                self.reader.get_or_init(|| file)
            }
        };
        buf.clear();
        buf.reserve(len);
        let mut done = 0;
        while done < len {
            let spare = &mut buf.spare_capacity_mut()[done..len];
            let at = (pos + done) as libc::off_t;
            let iov = libc::iovec {
                iov_base: spare.as_mut_ptr().cast(),
                iov_len: spare.len(),
            };
            // SAFETY: `iov` describes `spare`, writable capacity of `buf` that nothing else
            // borrows during the call; the kernel writes at most `iov_len` bytes into it.
            let read = unsafe {
                if nowait {
                    libc::preadv2(file.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT)
                } else {
                    libc::pread(file.as_raw_fd(), iov.iov_base, iov.iov_len, at)
                }
            };
            match read {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n if n > 0 => done += n as usize,
                _ => {
                    let e = io::Error::last_os_error();
                    match e.kind() {
                        io::ErrorKind::Interrupted => {}
                        _ if nowait => break,
                        _ => return Err(e),
                    }
                }
            }
        }
        // SAFETY: the loop filled `[0, done)` of the spare capacity.
        unsafe { buf.set_len(done) };
        Ok(buf.split().freeze())
    }

    /// Appends `data` and publishes it. Returns the position it was written at, `Ok(None)` if it
    /// does not fit, or the error of allocating its blocks (nothing written).
    pub(crate) fn append(&self, data: &[u8]) -> io::Result<Option<usize>> {
        let mut write_pos = self.write_pos.lock();
        let pos = *write_pos;
        if data.len() > self.size() - pos {
            return Ok(None);
        }
        self.reserve(pos + data.len())?;
        // SAFETY: `pos..pos + len` is inside the mapping and at or above `readable`, so no reader
        // can see it yet; the mutex excludes other appenders.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.map.as_mut_ptr().add(pos),
                data.len(),
            );
        }
        *write_pos = pos + data.len();
        self.readable.store(*write_pos, Ordering::Release);
        Ok(Some(pos))
    }

    /// [`MappedFile::append`] through `pwrite` rather than the mapping, for the large chunks a
    /// slave appends: a page the write covers whole is filled by the copy, where a first touch
    /// through the mapping has the kernel zero it first (the blocks are allocated, unwritten).
    /// The page cache is one, so readers of the mapping see the bytes; `msync` flushes them.
    /// `parts` are written one after another as one append (readers see all or none of them),
    /// so a chunk received in pieces is not first copied into one buffer.
    pub(crate) fn append_written(&self, parts: &[&[u8]]) -> io::Result<Option<usize>> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut write_pos = self.write_pos.lock();
        let pos = *write_pos;
        if len > self.size() - pos {
            return Ok(None);
        }
        self.reserve(pos + len)?;
        let writer = match self.writer.get() {
            Some(file) => file,
            None => {
                let file = OpenOptions::new().write(true).open(&self.path)?;
                self.writer.get_or_init(|| file)
            }
        };
        // A failed write leaves bytes past `readable` only: the next append overwrites them.
        write_all_vectored_at(writer, parts, pos as u64)?;
        *write_pos = pos + len;
        self.readable.store(*write_pos, Ordering::Release);
        Ok(Some(pos))
    }

    /// Appends `data` (a CommitLog end-of-file blank) and declares the whole file written, as
    /// Java does: the rest of the file is dead space.
    pub(crate) fn append_and_seal(&self, data: &[u8]) -> bool {
        let mut write_pos = self.write_pos.lock();
        let pos = *write_pos;
        if data.len() > self.size() - pos || self.reserve(pos + data.len()).is_err() {
            return false;
        }
        // SAFETY: as in `append`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.map.as_mut_ptr().add(pos),
                data.len(),
            );
        }
        *write_pos = self.size();
        self.readable.store(self.size(), Ordering::Release);
        true
    }

    /// Records the store timestamp of the record just appended; call after `append` so that a
    /// reader who sees the timestamp also sees the record as published.
    pub(crate) fn set_store_timestamp(&self, timestamp: i64) {
        self.store_timestamp.store(timestamp, Ordering::Release);
    }

    pub(crate) fn store_timestamp(&self) -> i64 {
        self.store_timestamp.load(Ordering::Acquire)
    }

    /// Makes `[pos, size)` zero and the end of the file's content: recovery cuts a torn tail so
    /// that nothing past it can ever be mistaken for data again.
    pub(crate) fn truncate(&mut self, pos: usize) -> io::Result<()> {
        let size = self.size();
        let pos = pos.min(size);
        if pos < size && !self.punch_hole(pos, size) {
            // The file system cannot punch holes: write zeros, but only over pages that hold
            // something, so a sparse tail stays sparse.
            let mut page_start = pos;
            while page_start < size {
                let page_end = ((page_start / OS_PAGE_SIZE) + 1) * OS_PAGE_SIZE;
                let page_end = page_end.min(size);
                // SAFETY: `&mut self`: nobody else can read or write the mapping now.
                let page = unsafe {
                    std::slice::from_raw_parts_mut(
                        self.map.as_mut_ptr().add(page_start),
                        page_end - page_start,
                    )
                };
                if page.iter().any(|b| *b != 0) {
                    page.fill(0);
                }
                page_start = page_end;
            }
            self.map.flush_range(pos, size - pos)?;
        }
        *self.write_pos.get_mut() = pos;
        self.readable.store(pos, Ordering::Release);
        self.flushed.store(pos, Ordering::Release);
        Ok(())
    }

    /// Prepares a fresh, unshared, fully reserved file for fast appends: every page is faulted
    /// in (Java's `warmMappedFile`).
    pub(crate) fn warm(&mut self) {
        for page in (0..self.size()).step_by(OS_PAGE_SIZE) {
            // SAFETY: `&mut self` on a file nobody reads yet; the byte is zero already.
            unsafe { std::ptr::write_volatile(self.map.as_mut_ptr().add(page), 0) };
        }
    }

    /// Unmaps the pages of `[0, to)` from this process (`MADV_DONTNEED`). The mapping is shared
    /// and file-backed, so nothing is lost: dirty pages stay dirty in the page cache, and a later
    /// read maps the same bytes again. Only the broker's resident set shrinks.
    pub(crate) fn release_pages(&self, to: usize) -> io::Result<()> {
        self.release_range(0, to)
    }

    /// [`MappedFile::release_pages`] of the whole pages in `[from, to)`.
    pub(crate) fn release_range(&self, from: usize, to: usize) -> io::Result<()> {
        let from = from.div_ceil(OS_PAGE_SIZE) * OS_PAGE_SIZE;
        let to = (to / OS_PAGE_SIZE * OS_PAGE_SIZE).min(self.size());
        if to <= from {
            return Ok(());
        }
        // SAFETY: MADV_DONTNEED on a MAP_SHARED file mapping keeps the contents (the zero-fill
        // that makes it unsafe in general applies to private and anonymous mappings only), so
        // slices handed out of this mapping keep reading the same bytes.
        unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
        }
    }

    /// Starts reading `[from, to)` into the page cache (`MADV_WILLNEED`) and returns without
    /// waiting for the disk or mapping anything: the process's resident set does not grow.
    pub(crate) fn will_need(&self, from: usize, to: usize) -> io::Result<()> {
        let from = from / OS_PAGE_SIZE * OS_PAGE_SIZE;
        let to = to.min(self.size());
        if from >= to {
            return Ok(());
        }
        self.map
            .advise_range(memmap2::Advice::WillNeed, from, to - from)
    }

    /// How many bytes from `pos` (at most `len`) lie in pages the page cache holds now
    /// (`mincore`), up to the first page it does not hold: reading them maps pages, at worst a
    /// minor fault each, and never waits for the disk. 0 when the kernel cannot tell.
    pub(crate) fn cached_len(&self, pos: usize, len: usize) -> usize {
        /// Pages asked about per call: the answer vector stays on the stack.
        const CHUNK: usize = 64;
        let end = pos.saturating_add(len).min(self.size());
        let mut page = pos / OS_PAGE_SIZE * OS_PAGE_SIZE;
        while page < end {
            let pages = (end - page).div_ceil(OS_PAGE_SIZE).min(CHUNK);
            let mut resident = [0u8; CHUNK];
            // SAFETY: `[page, page + pages * OS_PAGE_SIZE)` starts page-aligned inside the
            // mapping and ends at or before the page holding `size - 1` rounded up, which the
            // mapping covers; mincore only writes one byte per page into `resident`.
            let answered = unsafe {
                libc::mincore(
                    self.map.as_mut_ptr().add(page).cast(),
                    pages * OS_PAGE_SIZE,
                    resident.as_mut_ptr(),
                )
            };
            if answered != 0 {
                return page.saturating_sub(pos);
            }
            let held = resident[..pages].iter().take_while(|r| *r & 1 == 1).count();
            page += held * OS_PAGE_SIZE;
            if held < pages {
                return page.saturating_sub(pos);
            }
        }
        end - pos.min(end)
    }

    /// Maps `[from, to)` writable ahead of the writer without touching the bytes
    /// (`MADV_POPULATE_WRITE`), so the append that later writes there takes no page fault, and no
    /// kernel zeroing, under the put lock. Fails on kernels before 5.14.
    ///
    /// The range is marked `MADV_RANDOM` first: past the write position there is nothing to read
    /// ahead, and a fault there would otherwise zero-fill a whole readahead window of unwritten
    /// blocks (`read_ahead_kb`, 8 MiB on some disks) in one call the kernel does not preempt.
    /// [`MappedFile::advise_read_ahead`] undoes it once the segment is full.
    pub(crate) fn populate_for_write(&self, from: usize, to: usize) -> io::Result<()> {
        let from = from / OS_PAGE_SIZE * OS_PAGE_SIZE;
        let to = to.min(self.size());
        if from >= to {
            return Ok(());
        }
        self.map
            .advise_range(memmap2::Advice::Random, from, to - from)?;
        let populated = self
            .map
            .advise_range(memmap2::Advice::PopulateWrite, from, to - from);
        if populated.is_err() {
            // Callers stop populating for good, so nothing would restore readahead later.
            let _ = self.advise_read_ahead(true, self.size());
        }
        populated
    }

    /// Normal readahead (`MADV_NORMAL`) over the first `len` bytes, for consumers that read
    /// them back from disk later (after [`MappedFile::populate_for_write`]), or none
    /// (`MADV_RANDOM`: Java's `dataReadAheadEnable=false`, for consumers whose reads are scattered
    /// and would pull in pages nobody reads).
    pub(crate) fn advise_read_ahead(&self, enabled: bool, len: usize) -> io::Result<()> {
        let len = (len.min(self.size()) / OS_PAGE_SIZE) * OS_PAGE_SIZE;
        if len == 0 {
            return Ok(());
        }
        let advice = if enabled {
            memmap2::Advice::Normal
        } else {
            memmap2::Advice::Random
        };
        self.map.advise_range(advice, 0, len)
    }

    /// Deallocates `[pos, size)` so it reads back as zeros; false if the file system refused.
    fn punch_hole(&self, pos: usize, size: usize) -> bool {
        use rustix::fs::{fallocate, FallocateFlags};
        let Ok(file) = OpenOptions::new().write(true).open(&self.path) else {
            return false;
        };
        // Whole pages only; the partial first page is zeroed through the mapping.
        let first_full_page = pos.div_ceil(OS_PAGE_SIZE) * OS_PAGE_SIZE;
        if first_full_page < size {
            let flags = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
            let len = (size - first_full_page) as u64;
            if fallocate(&file, flags, first_full_page as u64, len).is_err() {
                return false;
            }
        }
        let head_end = first_full_page.min(size);
        if head_end > pos {
            // SAFETY: recovery holds `&mut self` on the only handle (see `truncate`).
            unsafe {
                std::ptr::write_bytes(self.map.as_mut_ptr().add(pos), 0, head_end - pos);
            }
            if self.map.flush_range(pos, head_end - pos).is_err() {
                return false;
            }
        }
        true
    }

    /// Flushes published bytes to disk if at least `least_pages` dirty pages accumulated (or the
    /// file is full, or `least_pages == 0` and anything is dirty). Returns the flushed position.
    pub(crate) fn flush(&self, least_pages: usize) -> io::Result<usize> {
        let flushed = self.flushed();
        let readable = self.readable();
        let able = if readable == self.size() {
            readable > flushed
        } else if least_pages > 0 {
            readable / OS_PAGE_SIZE - flushed / OS_PAGE_SIZE >= least_pages
        } else {
            readable > flushed
        };
        if able {
            let mut from = flushed;
            while from < readable {
                let to = (from + SYNC_STEP).min(readable);
                self.fs.sync_map(&self.path, &self.map, from, to - from)?;
                self.flushed.store(to, Ordering::Release);
                from = to;
            }
        }
        Ok(self.flushed())
    }
}

impl MappedFile {
    /// Last modification time of the file in ms since the epoch: retention's measure of age,
    /// as Java's `File.lastModified`.
    pub(crate) fn last_modified_ms(&self) -> i64 {
        std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64)
    }
}

/// Owner of a zero-copy [`Bytes`] over a mapped file.
struct MappedSlice {
    file: Arc<MappedFile>,
    pos: usize,
    len: usize,
}

impl AsRef<[u8]> for MappedSlice {
    fn as_ref(&self) -> &[u8] {
        // Checked readable when the slice was made, and published bytes never shrink while shared.
        self.file.read(self.pos, self.len).unwrap_or_default()
    }
}

/// `parts` written one after another from `offset`, in as few `pwritev` calls as the kernel
/// allows (one per part would cost a system call and the file system's per-write work each).
fn write_all_vectored_at(file: &File, parts: &[&[u8]], mut offset: u64) -> io::Result<()> {
    use std::io::IoSlice;
    // The kernel takes at most IOV_MAX (1024) slices per call.
    const MAX_SLICES: usize = 1024;
    let mut parts: Vec<&[u8]> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    let mut first = 0;
    while first < parts.len() {
        let slices: Vec<IoSlice<'_>> = parts[first..]
            .iter()
            .take(MAX_SLICES)
            .map(|p| IoSlice::new(p))
            .collect();
        let mut written = match rustix::io::pwritev(file, &slices, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        offset += written as u64;
        while written > 0 {
            let part = &mut parts[first];
            if written < part.len() {
                *part = &part[written..];
                break;
            }
            written -= part.len();
            first += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn releasing_pages_keeps_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = Arc::new(
            MappedFile::create(
                dir.path().join(file_name(0)),
                0,
                4 * OS_PAGE_SIZE,
                &crate::fs::real(),
                false,
            )
            .unwrap(),
        );
        let record = vec![7u8; OS_PAGE_SIZE + 10];
        assert_eq!(file.append(&record).unwrap(), Some(0));
        let slice = file.slice(0, record.len()).unwrap();
        // Not flushed yet: the dirty pages must survive being unmapped, a range as the whole.
        file.release_range(1, OS_PAGE_SIZE + 10).unwrap(); // no whole page inside: nothing
        file.release_range(OS_PAGE_SIZE, 2 * OS_PAGE_SIZE).unwrap();
        assert_eq!(&slice[..], &record[..]);
        file.release_pages(2 * OS_PAGE_SIZE + 1).unwrap();
        assert_eq!(&slice[..], &record[..]);
        assert_eq!(file.read(0, record.len()), Some(&record[..]));
        assert_eq!(file.append(b"next").unwrap(), Some(record.len()));
        file.flush(0).unwrap();
        let on_disk = std::fs::read(file.path()).unwrap();
        assert_eq!(&on_disk[..record.len()], &record[..]);
        assert_eq!(&on_disk[record.len()..record.len() + 4], b"next");
    }

    fn random_read_advised(file: &MappedFile) -> bool {
        random_read_advised_at(file.map.as_ptr() as usize)
    }

    /// Whether the kernel holds `MADV_RANDOM` (`rr` in smaps' VmFlags) for the mapping holding
    /// address `start`.
    pub(crate) fn random_read_advised_at(start: usize) -> bool {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            if let Some((lo, hi)) = range.filter(|_| !line.starts_with("VmFlags")) {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = lo <= start && start < hi;
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.split_whitespace().any(|f| f == "rr");
                }
            }
        }
        panic!("mapping not found in /proc/self/smaps");
    }

    #[test]
    fn populating_ahead_changes_no_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        let file = MappedFile::create(path.clone(), 0, 4 * OS_PAGE_SIZE, &crate::fs::real(), true)
            .unwrap();
        assert_eq!(file.append(b"hello").unwrap(), Some(0));
        // From mid-page to past the end: rounded down to the page, clipped to the file.
        if file.populate_for_write(3, 10 * OS_PAGE_SIZE).is_err() {
            return; // a kernel before 5.14; the flush threads then skip it
        }
        assert_eq!(file.readable(), 5);
        assert!(
            random_read_advised(&file),
            "no readahead ahead of the writer"
        );
        assert_eq!(file.append(b" world").unwrap(), Some(5));
        file.advise_read_ahead(true, file.size()).unwrap();
        assert!(!random_read_advised(&file), "readahead back once full");
        file.flush(0).unwrap();
        drop(file);
        let mut expected = b"hello world".to_vec();
        expected.resize(4 * OS_PAGE_SIZE, 0);
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn a_flush_larger_than_one_step_goes_in_steps_and_reaches_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        let size = 3 * SYNC_STEP;
        let file = MappedFile::create(path.clone(), 0, size, &crate::fs::real(), true).unwrap();
        let data: Vec<u8> = (0..SYNC_STEP * 5 / 2).map(|i| (i % 251) as u8).collect();
        assert_eq!(file.append(&data).unwrap(), Some(0));
        assert_eq!(file.flush(0).unwrap(), data.len());
        assert_eq!(file.flushed(), data.len());
        drop(file);
        assert_eq!(&std::fs::read(&path).unwrap()[..data.len()], &data[..]);
    }

    #[test]
    fn files_written_without_populating_have_no_readahead() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        let file =
            MappedFile::create(path, 0, 4 * OS_PAGE_SIZE, &crate::fs::real(), false).unwrap();
        assert!(random_read_advised(&file), "a ConsumeQueue file");
    }

    #[test]
    fn readahead_turned_off_and_on_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        let file = MappedFile::create(path, 0, 4 * OS_PAGE_SIZE, &crate::fs::real(), true).unwrap();
        assert!(!random_read_advised(&file), "the kernel's default");
        file.advise_read_ahead(false, file.size()).unwrap();
        assert!(random_read_advised(&file), "dataReadAheadEnable=false");
        // Less than a page advises nothing.
        file.advise_read_ahead(true, OS_PAGE_SIZE - 1).unwrap();
        assert!(random_read_advised(&file));
        file.advise_read_ahead(true, file.size()).unwrap();
        assert!(!random_read_advised(&file));
    }

    #[test]
    fn append_publish_read_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(8192));
        let file = Arc::new(
            MappedFile::create(path.clone(), 8192, 8192, &crate::fs::real(), false).unwrap(),
        );
        assert_eq!(file.read(0, 1), None);
        assert_eq!(file.append(b"hello").unwrap(), Some(0));
        assert_eq!(file.append(b" world").unwrap(), Some(5));
        assert_eq!(file.read(0, 11), Some(&b"hello world"[..]));
        assert_eq!(file.read(0, 12), None);
        let bytes = file.slice(6, 5).unwrap();
        assert_eq!(&bytes[..], b"world");
        assert_eq!(file.append(&vec![1u8; 9000]).unwrap(), None);
        assert_eq!(file.flush(0).unwrap(), 11);
        drop(file);
        // The Bytes keeps the mapping alive after the file handle is gone.
        assert_eq!(&bytes[..], b"world");

        let reopened = MappedFile::open(path, 8192, 8192, &crate::fs::real()).unwrap();
        assert_eq!(reopened.readable(), 8192);
        assert_eq!(reopened.read(0, 11), Some(&b"hello world"[..]));
        assert_eq!(std::fs::metadata(reopened.path()).unwrap().len(), 8192);
        assert_eq!(file_name(8192), "00000000000000008192");
    }

    #[test]
    fn truncate_zeroes_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        let mut file =
            MappedFile::create(path.clone(), 0, 3 * OS_PAGE_SIZE, &crate::fs::real(), false)
                .unwrap();
        file.append(&vec![7u8; 3 * OS_PAGE_SIZE - 10])
            .unwrap()
            .unwrap();
        file.truncate(100).unwrap();
        assert_eq!(file.readable(), 100);
        assert_eq!(file.free(), 3 * OS_PAGE_SIZE - 100);
        drop(file);
        let content = std::fs::read(&path).unwrap();
        assert!(content[..100].iter().all(|b| *b == 7));
        assert!(content[100..].iter().all(|b| *b == 0));
    }

    #[test]
    fn seal_publishes_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = MappedFile::create(
            dir.path().join(file_name(0)),
            0,
            64,
            &crate::fs::real(),
            false,
        )
        .unwrap();
        file.append(&[1; 50]).unwrap().unwrap();
        assert!(file.append_and_seal(&[2; 8]));
        assert_eq!(file.readable(), 64);
        assert_eq!(file.append(&[3]).unwrap(), None);
    }
}

#[cfg(test)]
mod fault_tests {
    use super::*;
    use crate::fs::{Fault, FaultyFs, FileOp};

    #[test]
    fn a_full_disk_refuses_the_append_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let faulty = FaultyFs::new();
        let fs: Fs = faulty.clone();
        let file = MappedFile::create(
            dir.path().join(file_name(0)),
            0,
            4 * RESERVE_STEP,
            &fs,
            false,
        )
        .unwrap();
        file.append(&[1; 10]).unwrap().unwrap();
        faulty.inject(FileOp::Allocate, "", Fault::Errno(libc::ENOSPC), None);
        // Inside the first reserved step: no allocation needed.
        assert_eq!(file.append(&[2; 10]).unwrap(), Some(10));
        let err = file.append(&vec![3; RESERVE_STEP]).unwrap_err();
        assert!(crate::fs::is_disk_full(&err));
        assert_eq!(file.readable(), 20);
        faulty.clear();
        assert_eq!(file.append(&vec![3; RESERVE_STEP]).unwrap(), Some(20));
        // A segment reserved whole is refused at creation, and leaves no file behind.
        faulty.inject(FileOp::Allocate, "", Fault::Errno(libc::ENOSPC), None);
        let path = dir.path().join(file_name(1 << 20));
        assert!(MappedFile::create(path.clone(), 1 << 20, 1 << 20, &fs, true).is_err());
        assert!(!path.exists());
    }

    #[test]
    fn an_msync_error_reaches_the_flusher_and_keeps_the_flushed_mark() {
        let dir = tempfile::tempdir().unwrap();
        let faulty = FaultyFs::new();
        let fs: Fs = faulty.clone();
        let file = MappedFile::create(dir.path().join(file_name(0)), 0, 8192, &fs, true).unwrap();
        file.append(b"abc").unwrap().unwrap();
        faulty.inject(FileOp::SyncMap, "", Fault::Errno(libc::EIO), Some(1));
        assert_eq!(file.flush(0).unwrap_err().raw_os_error(), Some(libc::EIO));
        assert_eq!(file.flushed(), 0);
        assert_eq!(file.flush(0).unwrap(), 3);
    }
}
