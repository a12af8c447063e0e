//! The broker's resident set: the CommitLog pages the writer leaves behind, and those a lagging
//! consumer's read faults in, leave it while the broker runs, not only at the sweep once a
//! second. Alone in its binary: it measures the whole process's `RssFile`.

mod common;

use std::os::fd::AsRawFd;
use std::path::Path;

use common::{message, put};
use skiff_store::{MessageStore, StoreConfig};

const MIB: usize = 1024 * 1024;

/// The tests measure the one process's resident set: one at a time.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The file pages this process has mapped (`RssFile` of /proc/self/status), in bytes.
fn rss_file() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("RssFile:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// A store keeping 1 MiB of CommitLog mapped behind its writer, with 48 MiB written to `topic`
/// queue 0 (4 KiB bodies), once those pages have left the resident set again.
fn store_with_48_mib(dir: &Path, topic: &str) -> MessageStore {
    let store = MessageStore::open(StoreConfig {
        commit_log_file_size: 64 * MIB as u64,
        commit_log_resident_tail: MIB as u64,
        ..StoreConfig::new(dir)
    })
    .unwrap();
    let before = rss_file();
    let body = vec![b'c'; 4096];
    for _ in 0..48 {
        put(
            &store,
            (0..256).map(|_| message(topic, 0, &body, None)).collect(),
        );
    }
    // Each put of 1 MiB wakes the flush thread to populate ahead; its rounds release what the
    // writer left behind (the sweep once a second catches the rest).
    common::wait_until("the written pages released", || {
        rss_file() <= before + 16 * MIB
    });
    store
}

#[test]
fn the_writers_pages_leave_while_it_writes() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    store_with_48_mib(dir.path(), "Hot");
}

#[test]
fn a_cold_reads_pages_are_released_at_once() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_48_mib(dir.path(), "Cold");
    // The flush thread's sweep also releases, once a second: a round it interrupts is tried
    // again.
    let mut mapped_by_read = 0;
    for _ in 0..3 {
        let before = rss_file();
        let mut offset = 0;
        let mut count = 0;
        loop {
            let read = store.get_messages("Cold", 0, offset, 256, usize::MAX, &|_| true);
            if read.messages.is_empty() {
                break;
            }
            for record in &read.messages {
                // Touches every page of the record (4 KiB body and its header).
                std::hint::black_box(record.iter().step_by(1024).fold(0u8, |a, b| a ^ b));
                count += 1;
            }
            offset = read.next_begin_offset;
        }
        assert_eq!(count, 48 * 256, "every message read");
        let after_read = rss_file();
        store.release_cold_read_pages();
        let after_release = rss_file();
        assert!(
            after_release <= before + 8 * MIB,
            "released: {} MiB mapped before the read, {} MiB after the release",
            before / MIB,
            after_release / MIB
        );
        mapped_by_read = mapped_by_read.max(after_read.saturating_sub(before));
        if mapped_by_read >= 32 * MIB {
            break;
        }
    }
    assert!(
        mapped_by_read >= 32 * MIB,
        "the read mapped the 48 MiB it read (at most {} MiB seen)",
        mapped_by_read / MIB
    );
}

/// How many of the pages of `file`'s `[from, to)` the page cache holds (`mincore` of a mapping of
/// our own: for a file it reports the page cache, not this process's page tables).
fn cached_pages(file: &std::fs::File, from: usize, to: usize) -> usize {
    // SAFETY: read-only, and only its residency is asked: no byte of it is read.
    let map = unsafe { memmap2::Mmap::map(file) }.unwrap();
    let page = 4096;
    let mut vec = vec![0u8; (to - from).div_ceil(page)];
    // SAFETY: `from` is page-aligned inside the mapping and `vec` has a byte per page of the range.
    let rc = unsafe {
        libc::mincore(
            map.as_ptr().add(from) as *mut libc::c_void,
            to - from,
            vec.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    vec.iter().filter(|&&b| b & 1 == 1).count()
}

/// Drops `[from, to)` of `file` from the page cache, as pages nobody touched for a while on a
/// busy host; false if they stay (tmpfs keeps every page). Written back first, and retried while
/// the store still maps them: the kernel drops only clean pages nobody maps.
fn evict(file: &std::fs::File, from: usize, to: usize) -> bool {
    file.sync_all().unwrap();
    for _ in 0..30 {
        // SAFETY: plain syscall on an open descriptor.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
        if cached_pages(file, from, to) == 0 {
            return true;
        }
        // The flush thread's sweep unmaps a queue's pages once a second.
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

#[test]
fn a_cold_read_has_the_kernel_read_what_follows() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_48_mib(dir.path(), "Ahead");
    let open = |path: &str| std::fs::File::open(dir.path().join(path)).unwrap();
    let segment = open("commitlog/00000000000000000000");
    let queue = open("consumequeue/Ahead/0/00000000000000000000");
    // Past what the read below touches (4 MiB of CommitLog, 1,000 entries of 20 bytes), within
    // what it should have the kernel read ahead (16 MiB, 64 KiB).
    let (ahead_from, ahead_to) = (8 * MIB, 20 * MIB);
    let (entries_from, entries_to) = (24 * 1024, 64 * 1024);
    if !evict(&segment, ahead_from, ahead_to) || !evict(&queue, entries_from, entries_to) {
        eprintln!("this file system keeps the pages cached (tmpfs?): nothing to observe");
        return;
    }
    // 1,000 records of 4 KiB, read as a consumer catching up reads them.
    let mut offset = 0;
    while offset < 1000 {
        let read = store.get_messages("Ahead", 0, offset, 250, usize::MAX, &|_| true);
        assert!(!read.messages.is_empty());
        offset = read.next_begin_offset;
    }
    store.release_cold_read_pages();
    let wanted = (ahead_to - ahead_from) / 4096;
    common::wait_until("the next CommitLog pages read into the page cache", || {
        cached_pages(&segment, ahead_from, ahead_to) == wanted
    });
    let wanted = (entries_to - entries_from) / 4096;
    common::wait_until("the next entries read into the page cache", || {
        cached_pages(&queue, entries_from, entries_to) == wanted
    });
}

/// Drops the pages of `file` in `[from, to)` from the page cache (see [`evict`]).
fn evict_range(file: &std::fs::File, from: usize, to: usize) -> bool {
    file.sync_all().unwrap();
    for _ in 0..30 {
        // SAFETY: plain syscall on an open descriptor.
        let rc = unsafe {
            libc::posix_fadvise(
                file.as_raw_fd(),
                from as libc::off_t,
                (to - from) as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            )
        };
        assert_eq!(rc, 0);
        if cached_pages(file, from, to) == 0 {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}

#[test]
fn a_read_of_the_page_cache_stops_at_the_first_page_it_does_not_hold() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_48_mib(dir.path(), "Cached");
    let segment = std::fs::File::open(dir.path().join("commitlog/00000000000000000000")).unwrap();
    if !evict(&segment, 0, 40 * MIB) {
        eprintln!("this file system keeps the pages cached (tmpfs?): nothing to observe");
        return;
    }
    let cached = |offset: i64, max: i32| {
        store.get_cached_messages("Cached", 0, offset, max, usize::MAX, &|_| true)
    };
    assert!(
        cached(0, 32).is_none(),
        "nothing of the first records is cached"
    );

    // Read from the disk once, the page cache serves the same records.
    let read = store.get_copied_messages("Cached", 0, 0, 32, usize::MAX, &|_| true);
    assert_eq!(read.messages.len(), 32);
    let again = cached(0, 32).expect("the records just read are cached");
    assert_eq!(again.messages, read.messages);
    assert_eq!(again.next_begin_offset, read.next_begin_offset);

    // Pages missing in the middle of a pull: the read stops before the first record on them.
    // (2 MiB of them, aligned: the page cache may hold the file in folios that large, and
    // evicts only whole ones.)
    let boundary = 8 * MIB as i64;
    let starts_at = |offset: i64| {
        store
            .queue_entry("Cached", 0, offset)
            .unwrap()
            .physical_offset
    };
    let (mut low, mut high): (i64, i64) = (0, 48 * 256 - 1);
    while low < high {
        let middle = (low + high + 1) / 2;
        if starts_at(middle) <= boundary {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    // The record holding the boundary.
    let k = low;
    let read = store.get_copied_messages("Cached", 0, k - 10, 20, usize::MAX, &|_| true);
    assert_eq!(read.messages.len(), 20);
    let from = boundary as usize;
    assert!(evict_range(&segment, from, from + 2 * MIB));
    let partial = cached(k - 10, 20).expect("the first records are cached");
    assert_eq!(
        partial.messages.len(),
        10,
        "read up to the record on the first missing page"
    );
    assert!(partial.messages[..] == read.messages[..10]);
    assert_eq!(partial.next_begin_offset, k);
    assert!(cached(k, 20).is_none());
}

#[test]
fn copied_reads_map_no_commit_log_page() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_48_mib(dir.path(), "Copied");
    let before = rss_file();
    let (mut offset, mut bytes) = (0, 0);
    loop {
        let read = store.get_copied_messages("Copied", 0, offset, 256, usize::MAX, &|_| true);
        if read.messages.is_empty() {
            break;
        }
        // Each read's records share one buffer, in order.
        let first = read.messages[0].as_ptr();
        let mut at = first;
        for record in &read.messages {
            assert_eq!(record.as_ptr(), at);
            at = at.wrapping_add(record.len());
            bytes += record.len();
        }
        offset = read.next_begin_offset;
    }
    assert_eq!(offset, 48 * 256, "every message read");
    assert!(bytes > 48 * MIB);
    assert!(
        rss_file() <= before + 4 * MIB,
        "{} MiB of file pages mapped before, {} MiB after reading 48 MiB",
        before / MIB,
        rss_file() / MIB
    );
}
