//! Space made ahead of the writer (CommitLog segments by `skiff-allocate`, ConsumeQueue blocks by
//! `skiff-allocate-cq`): used when ready, made by the writer when not, and a full disk met in the
//! background turns into the disk-full refusal of the next put that needs the file, never a fault.

mod common;

use std::sync::Arc;

use common::*;
use skiff_store::fs::{Fault, FaultyFs, FileOp};
use skiff_store::{MessageStore, PutError};

#[test]
fn no_consume_queue_file_is_made_past_the_queue_end() {
    // A Java broker that opens the store after kill -9 must find no empty ConsumeQueue file
    // past a queue's end (one made ahead left a Java pull of such a store unanswered).
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(disk_check_config(dir.path())).unwrap();
    let queue_dir = dir.path().join("consumequeue/T/0");
    // 16 entries per file.
    for i in 0..31 {
        put(
            &store,
            vec![message("T", 0, format!("m{i}").as_bytes(), None)],
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let files = std::fs::read_dir(&queue_dir).unwrap().count();
    assert_eq!(files, 2, "31 entries of 16 per file, and nothing more");
    let bodies: Vec<_> = pull_all(&store, "T", 0)
        .iter()
        .map(|r| decode(r).body.to_vec())
        .collect();
    assert_eq!(bodies.len(), 31);
    assert_eq!(bodies[30], b"m30");
    store.shutdown();
    drop(store);
    let store = MessageStore::open(disk_check_config(dir.path())).unwrap();
    assert_eq!(pull_all(&store, "T", 0).len(), 31);
}

#[test]
fn a_full_disk_met_by_the_background_allocation_makes_the_store_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let disk = Arc::new(FakeDisk::default());
    disk.set(0.5);
    // The first segment is made in the background when the store opens: it meets the full disk.
    fs.inject(
        FileOp::Allocate,
        "commitlog",
        Fault::Errno(libc::ENOSPC),
        None,
    );
    let store =
        MessageStore::open_with_env(disk_check_config(dir.path()), faulty_env(&fs, &disk)).unwrap();
    wait_until("the background allocation fails", || !fs.fired().is_empty());
    // The first put needs the segment, makes it itself, meets the full disk too: refused with
    // Java's remark, nothing written, the process alive.
    match block_on(store.put_messages(vec![message("T", 0, b"refused", None)])) {
        Err(PutError::ServiceNotAvailable(remark)) => {
            assert!(remark.contains("the broker's disk is full"), "{remark}")
        }
        other => panic!("expected the disk-full refusal, got {other:?}"),
    }
    assert!(pull_all(&store, "T", 0).is_empty());
    // Space comes back: the disk check lifts the refusal and the writer continues.
    fs.clear();
    wait_until("puts accepted again", || {
        block_on(store.put_messages(vec![message("T", 0, b"after", None)])).is_ok()
    });
    for i in 0..30 {
        put(
            &store,
            vec![message("T", 0, &[b'a' + (i % 26) as u8; 700], None)],
        );
    }
    assert_eq!(pull_all(&store, "T", 0).len(), 31);
}

#[test]
fn pulls_of_the_tail_are_not_cold() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(disk_check_config(dir.path())).unwrap();
    for i in 0..10 {
        put(
            &store,
            vec![message("T", 0, format!("m{i}").as_bytes(), None)],
        );
    }
    let behind = |offset| store.bytes_behind_writer("T", 0, offset);
    let first = behind(0).unwrap();
    assert!(first > behind(9).unwrap() && behind(9).unwrap() > 0);
    assert_eq!(behind(10), None, "no entry at the queue's end");
    assert_eq!(store.bytes_behind_writer("Unknown", 0, 0), None);
    // Far less than the resident tail behind the writer: read inline.
    assert!(!store.is_cold_read("T", 0, 0));
    assert!(!store.is_cold_read("T", 0, 10));
}

#[test]
fn a_pull_of_entries_behind_the_queues_own_tail_is_cold() {
    // A queue keeps 1/64 of the CommitLog's resident tail of entries mapped: 64 entries here,
    // while every message lies in the CommitLog's tail. Reading an entry behind those could
    // wait on the disk, so the question does not read it: the pull goes to a blocking thread.
    let dir = tempfile::tempdir().unwrap();
    let config = skiff_store::StoreConfig {
        commit_log_resident_tail: 64 * 64 * 20,
        ..disk_check_config(dir.path())
    };
    let store = MessageStore::open(config).unwrap();
    for i in 0..100 {
        put(
            &store,
            vec![message("T", 0, format!("m{i}").as_bytes(), None)],
        );
    }
    assert!(store.bytes_behind_writer("T", 0, 0).unwrap() < 64 * 64 * 20);
    assert!(store.is_cold_read("T", 0, 0));
    assert!(store.is_cold_read("T", 0, 35));
    assert!(
        !store.is_cold_read("T", 0, 36),
        "within the last 64 entries"
    );
    assert!(!store.is_cold_read("T", 0, 99));
    assert_eq!(pull_all(&store, "T", 0).len(), 100);
}
