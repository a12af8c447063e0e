//! Flushing: group commit shares flushes between concurrent sync puts; the async thread
//! catches up on its own.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use skiff_store::{FlushDiskType, MessageStore, PutStatus, StoreConfig};

fn info(store: &MessageStore, key: &str) -> i64 {
    store
        .runtime_info()
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.parse().unwrap())
        .unwrap()
}

#[test]
fn concurrent_sync_puts_share_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        flush_disk_type: FlushDiskType::SyncFlush,
        commit_log_file_size: 1024 * 1024,
        ..small_config(dir.path())
    };
    let store = Arc::new(MessageStore::open(config).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    const PUTS: usize = 400;
    let results = runtime.block_on(async {
        let tasks: Vec<_> = (0..PUTS)
            .map(|i| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    store
                        .put_messages(vec![message("Sync", (i % 4) as i32, &[i as u8; 200], None)])
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.unwrap());
        }
        results
    });
    assert!(results.iter().all(|r| r.status == PutStatus::Ok));
    let flushes = info(&store, "commitLogFlushTimes");
    eprintln!("{flushes} flushes for {PUTS} puts");
    assert!(
        flushes >= 1 && (flushes as usize) < PUTS,
        "{flushes} flushes for {PUTS} puts"
    );
    // Everything acknowledged is on disk.
    assert_eq!(info(&store, "remainHowManyDataToFlush"), 0);
    assert_eq!(
        (0..4)
            .map(|q| store.max_offset_in_queue("Sync", q))
            .sum::<i64>(),
        PUTS as i64
    );
}

#[test]
fn a_put_that_does_not_wait_still_gets_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        flush_disk_type: FlushDiskType::SyncFlush,
        ..small_config(dir.path())
    };
    let store = MessageStore::open(config).unwrap();
    let mut no_wait = message("NoWait", 0, b"x", None);
    no_wait.properties.push_str("WAIT\u{1}false\u{2}");
    assert_eq!(put(&store, vec![no_wait]).status, PutStatus::Ok);
    wait_until(|| info(&store, "remainHowManyDataToFlush") == 0);
}

#[test]
fn the_async_thread_flushes_thoroughly_on_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        flush_commit_log_thorough_interval_ms: 100,
        ..small_config(dir.path())
    };
    let store = MessageStore::open(config).unwrap();
    put(&store, vec![message("Async", 0, b"tiny", None)]);
    wait_until(|| info(&store, "remainHowManyDataToFlush") == 0);
}

#[test]
fn timed_async_flushes_once_per_interval_untimed_as_pages_get_dirty() {
    // 200 puts of 4 KiB, each dirtying more than flushCommitLogLeastPages (1 here) pages.
    let flushes = |timed: bool| {
        let dir = tempfile::tempdir().unwrap();
        let config = StoreConfig {
            flush_interval_commit_log_ms: 60_000,
            flush_commit_log_thorough_interval_ms: 60_000,
            flush_commit_log_least_pages: 1,
            flush_commit_log_timed: timed,
            commit_log_file_size: 4 * 1024 * 1024,
            ..small_config(dir.path())
        };
        let store = MessageStore::open(config).unwrap();
        for i in 0..200 {
            put(&store, vec![message("Async", 0, &[i as u8; 4096], None)]);
        }
        if !timed {
            wait_until(|| info(&store, "commitLogFlushTimes") > 0);
        }
        info(&store, "commitLogFlushTimes")
    };
    assert_eq!(flushes(true), 0, "the first timed flush is a minute away");
    assert!(flushes(false) > 0, "puts wake the untimed flush");
}

fn wait_until(condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "condition not met in 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}
