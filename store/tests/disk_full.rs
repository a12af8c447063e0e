//! A full disk (ENOSPC injected through the store's file-system seam) refuses puts with the
//! disk-full remark and never faults; a store opened on a full disk serves reads and refuses
//! puts. In-process and in milliseconds.

mod common;

use std::sync::Arc;

use common::*;
use skiff_store::fs::{Fault, FaultyFs, FileOp};
use skiff_store::{MessageStore, PutError, StoreConfig};

fn refused(store: &MessageStore, topic: &str) -> String {
    match block_on(store.put_messages(vec![message(topic, 0, &[b'x'; 500], None)])) {
        Err(PutError::ServiceNotAvailable(remark)) => remark,
        other => panic!("expected a disk-full refusal, got {other:?}"),
    }
}

#[test]
fn a_full_disk_refuses_puts_and_recovers_when_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let disk = Arc::new(FakeDisk::default());
    disk.set(0.5);
    let store =
        MessageStore::open_with_env(disk_check_config(dir.path()), faulty_env(&fs, &disk)).unwrap();
    put(&store, vec![message("T", 0, b"before", None)]);

    // A new ConsumeQueue cannot get its blocks.
    fs.inject(
        FileOp::Allocate,
        "consumequeue",
        Fault::Errno(libc::ENOSPC),
        None,
    );
    let remark = refused(&store, "Fresh");
    assert!(remark.contains("the broker's disk is full"), "{remark}");
    // The store stays read-only for every queue until the disk check sees space.
    refused(&store, "T");
    fs.clear();
    wait_until("puts accepted again", || {
        block_on(store.put_messages(vec![message("Fresh", 0, b"after", None)])).is_ok()
    });
    assert_eq!(pull_all(&store, "Fresh", 0).len(), 1);

    // CommitLog segments: rolling into a segment that cannot be allocated is refused.
    fs.inject(
        FileOp::Allocate,
        "commitlog",
        Fault::Errno(libc::ENOSPC),
        None,
    );
    let mut refusals = 0;
    for _ in 0..64 {
        match block_on(store.put_messages(vec![message("T", 0, &[b'y'; 700], None)])) {
            Ok(_) => {}
            Err(PutError::ServiceNotAvailable(remark)) => {
                assert!(remark.contains("disk is full"), "{remark}");
                refusals += 1;
                break;
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(refusals, 1, "a roll must hit the full disk within 64 puts");
    // Everything acknowledged is still readable.
    assert!(pull_all(&store, "T", 0).len() >= 2);
    assert!(!fs.fired().is_empty());
}

#[test]
fn a_store_opened_on_a_full_disk_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FakeDisk::default());
    disk.set(0.5);
    {
        let fs = FaultyFs::new();
        let store =
            MessageStore::open_with_env(disk_check_config(dir.path()), faulty_env(&fs, &disk))
                .unwrap();
        for i in 0..5 {
            put(
                &store,
                vec![message("T", 0, format!("m{i}").as_bytes(), None)],
            );
        }
        store.shutdown();
    }
    let fs = FaultyFs::new();
    fs.inject(FileOp::Allocate, "", Fault::Errno(libc::ENOSPC), None);
    // The disk check must not clear the state while the disk stays full.
    disk.set(0.99);
    let store =
        MessageStore::open_with_env(disk_check_config(dir.path()), faulty_env(&fs, &disk)).unwrap();
    assert_eq!(pull_all(&store, "T", 0).len(), 5);
    let remark = refused(&store, "T");
    assert!(remark.contains("disk is full"), "{remark}");
}

#[test]
fn an_msync_error_under_sync_flush_answers_flush_disk_timeout_then_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let disk = Arc::new(FakeDisk::default());
    disk.set(0.5);
    let config = StoreConfig {
        flush_disk_type: skiff_store::FlushDiskType::SyncFlush,
        ..disk_check_config(dir.path())
    };
    let store = MessageStore::open_with_env(config, faulty_env(&fs, &disk)).unwrap();
    fs.inject(FileOp::SyncMap, "commitlog", Fault::Errno(libc::EIO), None);
    let result = put(&store, vec![message("T", 0, b"unsynced", None)]);
    assert_eq!(result.status, skiff_store::PutStatus::FlushDiskTimeout);
    fs.clear();
    let result = put(&store, vec![message("T", 0, b"synced", None)]);
    assert_eq!(result.status, skiff_store::PutStatus::Ok);
    // Both are stored: an unsynced message is not lost while the process lives.
    assert_eq!(pull_all(&store, "T", 0).len(), 2);
}
