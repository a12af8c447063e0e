//! Retention and disk-full refusal, with a hand-set clock and disk.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use skiff_store::{
    GetMessageStatus, MessageStore, PutError, RetentionSettings, StoreConfig, StoreEnv,
};

const HOUR: i64 = 3_600_000;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The local hour of `ms`, as `delete_when` spells it.
fn local_hour(ms: i64) -> String {
    let seconds = (ms / 1000) as libc::time_t;
    // SAFETY: `tm` is plain old data, for which all-zero bytes are a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers come from live references; localtime_r is the thread-safe variant.
    unsafe { libc::localtime_r(&seconds, &mut tm) };
    format!("{:02}", tm.tm_hour)
}

struct Setup {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    store: MessageStore,
    clock: Arc<ManualClock>,
    disk: Arc<FakeDisk>,
}

fn setup(delete_now: bool) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::default());
    clock.set(now_ms());
    let disk = Arc::new(FakeDisk::default());
    disk.set(0.20);
    let hour = local_hour(now_ms() + 100 * HOUR);
    let other_hour = format!("{:02}", (hour.parse::<i32>().unwrap() + 12) % 24);
    let config = StoreConfig {
        clean_resource_interval_ms: 20,
        retention: RetentionSettings {
            delete_when: if delete_now { hour } else { other_hour },
            ..RetentionSettings::default()
        },
        max_hash_slot_num: 8,
        max_index_num: 16,
        ..small_config(dir.path())
    };
    let env = StoreEnv {
        clock: clock.clone(),
        disk: disk.clone(),
        fs: skiff_store::fs::real(),
    };
    let store = MessageStore::open_with_env(config, env).unwrap();
    for i in 0..40 {
        put(
            &store,
            vec![with_keys(
                message("Old", i % 2, &[b'o'; 900], None),
                &format!("U{i}"),
                "key",
            )],
        );
    }
    wait_until("indexing", || {
        store
            .query_messages("Old", "U39", 1, 0, i64::MAX)
            .messages
            .len()
            == 1
    });
    Setup {
        root: dir.path().to_path_buf(),
        _dir: dir,
        store,
        clock,
        disk,
    }
}

fn segments(root: &std::path::Path) -> usize {
    std::fs::read_dir(root.join("commitlog")).unwrap().count()
}

/// Only the segment being written is left.
fn only_current_segment(store: &MessageStore) -> bool {
    let size = small_config(std::path::Path::new(".")).commit_log_file_size as i64;
    store.commit_log_min_offset() == store.commit_log_max_offset() / size * size
}

/// Lets a few retention rounds run.
fn settle() {
    std::thread::sleep(Duration::from_millis(150));
}

#[test]
fn expired_segments_go_at_the_delete_hour_and_queues_follow() {
    let s = setup(true);
    let before = segments(&s.root);
    assert!(before >= 4);
    settle();
    assert_eq!(
        s.store.commit_log_min_offset(),
        0,
        "nothing is 72 h old yet"
    );

    s.clock.set(now_ms() + 100 * HOUR);
    // The queues follow the CommitLog in the same round, just after it.
    wait_until("deletion", || {
        s.store.commit_log_min_offset() > 0
            && (0..2).all(|q| s.store.min_offset_in_queue("Old", q) > 0)
    });
    let min = s.store.commit_log_min_offset();
    assert!(
        only_current_segment(&s.store),
        "all but the segment being written"
    );
    for queue in 0..2 {
        let queue_min = s.store.min_offset_in_queue("Old", queue);
        assert!(queue_min > 0);
        let pulled = s.store.get_messages("Old", queue, 0, 32, usize::MAX, &all);
        assert_eq!(
            (pulled.status, pulled.next_begin_offset),
            (GetMessageStatus::OffsetTooSmall, queue_min)
        );
        for m in pull_all(&s.store, "Old", queue) {
            assert!(decode(&m).physical_offset >= min);
        }
    }
    // Queue files wholly below the new min went too (16 entries per file, 20 per queue).
    wait_until("queue files to go", || {
        std::fs::read_dir(s.root.join("consumequeue/Old/0"))
            .unwrap()
            .count()
            == 1
    });
    assert!(s
        .store
        .query_messages("Old", "U0", 1, 0, i64::MAX)
        .messages
        .is_empty());
    assert_eq!(
        s.store
            .query_messages("Old", "U39", 1, 0, i64::MAX)
            .messages
            .len(),
        1
    );
    // Writing goes on.
    let next = put(&s.store, vec![message("Old", 0, b"new", None)]);
    assert_eq!(next.messages[0].queue_offset, 20);
}

#[test]
fn outside_the_hour_only_disk_usage_deletes() {
    let s = setup(false);
    s.clock.set(now_ms() + 100 * HOUR);
    settle();
    assert_eq!(
        s.store.commit_log_min_offset(),
        0,
        "not the hour, disk fine"
    );

    s.disk.set(0.80);
    wait_until("deletion above diskMaxUsedSpaceRatio", || {
        s.store.commit_log_min_offset() > 0
    });
}

#[test]
fn young_segments_stay_unless_the_disk_is_nearly_full() {
    let s = setup(false);
    s.disk.set(0.80);
    settle();
    assert_eq!(s.store.commit_log_min_offset(), 0, "nothing expired");
    s.disk.set(0.86);
    wait_until("forced deletion", || only_current_segment(&s.store));
    assert!(s.store.commit_log_min_offset() > 0);
}

#[test]
fn a_full_disk_refuses_puts_until_space_frees() {
    let s = setup(false);
    s.disk.set(0.95);
    wait_until("refusal", || {
        matches!(
            block_on(s.store.put_messages(vec![message("Full", 0, b"x", None)])),
            Err(PutError::ServiceNotAvailable(_))
        )
    });
    let err = block_on(s.store.put_messages(vec![message("Full", 0, b"x", None)])).unwrap_err();
    assert!(
        err.to_string()
            .contains("the broker's disk is full [CL:  0.95 CQ:  0.95 INDEX:  0.95]"),
        "{err}"
    );
    // Past 85 % the oldest segments go too; reads go on.
    // (Until the queue follows, a pull may meet entries whose records are being removed.)
    wait_until("forced deletion", || {
        only_current_segment(&s.store)
            && pull_all(&s.store, "Old", 1).len() as i64
                == s.store.max_offset_in_queue("Old", 1) - s.store.min_offset_in_queue("Old", 1)
    });
    let written = s.store.max_offset_in_queue("Full", 0);
    s.disk.set(0.50);
    wait_until("writes again", || {
        block_on(s.store.put_messages(vec![message("Full", 0, b"x", None)])).is_ok()
    });
    assert_eq!(s.store.max_offset_in_queue("Full", 0), written + 1);
}

#[test]
fn an_operator_can_delete_expired_segments_outside_the_delete_hour() {
    let s = setup(false);
    s.clock.set(now_ms() + 100 * HOUR);
    settle();
    assert_eq!(
        s.store.commit_log_min_offset(),
        0,
        "expired, but not the delete hour"
    );
    // DELETE_EXPIRED_COMMITLOG: the next rounds delete whatever the hour.
    s.store.delete_expired_files_manually();
    wait_until("manual deletion", || s.store.commit_log_min_offset() > 0);
    assert!(only_current_segment(&s.store));
}

#[test]
fn retention_settings_changed_at_runtime_apply_from_the_next_round() {
    let s = setup(false);
    // Young segments stay, even when an operator asks.
    s.store.delete_expired_files_manually();
    settle();
    assert_eq!(s.store.commit_log_min_offset(), 0, "nothing is 72 h old");
    // A minute on, UPDATE_BROKER_CONFIG fileReservedTime=0 and deleteWhen = this hour: every
    // full segment has expired, and the delete hour is now.
    let later = now_ms() + 60_000;
    s.clock.set(later);
    s.store.set_retention(RetentionSettings {
        file_reserved_time_hours: 0,
        delete_when: local_hour(later),
        ..small_config(&s.root).retention
    });
    wait_until("deletion by the new settings", || {
        only_current_segment(&s.store)
    });
}

#[test]
fn queues_whose_messages_are_all_gone_can_be_cleaned() {
    let s = setup(false);
    put(&s.store, vec![message("SYS_KEPT", 0, &[b's'; 900], None)]);
    // Enough new data that the segment being written holds none of "Old".
    for _ in 0..12 {
        put(&s.store, vec![message("New", 0, &[b'n'; 900], None)]);
    }
    assert!(
        s.store.clean_expired_queues(|_| false).is_empty(),
        "every queue still has its messages"
    );
    s.clock.set(now_ms() + 100 * HOUR);
    s.store.delete_expired_files_manually();
    wait_until("manual deletion", || only_current_segment(&s.store));
    assert!(s.store.min_offset_in_queue("New", 0) < s.store.max_offset_in_queue("New", 0));

    let dropped = s.store.clean_expired_queues(|topic| topic == "SYS_KEPT");
    assert_eq!(
        dropped,
        vec![("Old".to_string(), 0), ("Old".to_string(), 1)]
    );
    assert!(s.store.queue_ids("Old").is_empty());
    assert!(!s.root.join("consumequeue/Old").exists());
    assert_eq!(s.store.queue_ids("SYS_KEPT"), vec![0], "kept by the caller");
    assert_eq!(s.store.queue_ids("New"), vec![0], "its last messages exist");
    // A later message starts the queue again, as after Java's removeTopicQueueTable.
    put(&s.store, vec![message("Old", 0, b"again", None)]);
    assert_eq!(s.store.max_offset_in_queue("Old", 0), 1);
}
