//! Reopening: clean restarts, torn CommitLog tails, flipped CRCs, lost ConsumeQueue files.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use proptest::prelude::*;
use skiff_store::{MessageStore, StoreConfig};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// Every file under the queue root with its bytes.
fn queue_files(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for topic in files(&root.join("consumequeue")) {
        for queue in files(&topic) {
            for file in files(&queue) {
                out.push((file.clone(), fs::read(&file).unwrap()));
            }
        }
    }
    out
}

fn fill(store: &MessageStore, topics: &[&str], rounds: usize) {
    for round in 0..rounds {
        for topic in topics {
            for queue in 0..2 {
                let body = format!("{topic}-{queue}-{round}-{}", "p".repeat(round * 37 % 300));
                put(
                    store,
                    vec![message(topic, queue, body.as_bytes(), Some("T"))],
                );
            }
        }
    }
}

fn bodies(store: &MessageStore, topic: &str, queue: i32) -> Vec<Vec<u8>> {
    pull_all(store, topic, queue)
        .iter()
        .map(|m| decode(m).body.to_vec())
        .collect()
}

fn mark_crashed(root: &Path) {
    fs::write(root.join("abort"), b"12345").unwrap();
}

#[test]
fn a_clean_restart_keeps_everything_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let (max, queue_max);
    {
        let store = MessageStore::open(config.clone()).unwrap();
        fill(&store, &["A", "B"], 30);
        max = store.commit_log_max_offset();
        queue_max = store.max_offset_in_queue("A", 1);
    }
    assert!(!dir.path().join("abort").exists());
    let before = queue_files(dir.path());
    let store = MessageStore::open(config).unwrap();
    assert_eq!(store.commit_log_max_offset(), max);
    assert_eq!(store.max_offset_in_queue("A", 1), queue_max);
    assert_eq!(bodies(&store, "B", 0).len(), 30);
    let next = put(&store, vec![message("A", 1, b"next", None)]);
    assert_eq!(next.messages[0].queue_offset, queue_max);
    assert_eq!(next.messages[0].physical_offset, max);
    drop(store);
    // The queue files of the first run are untouched (prefix-equal).
    for (path, bytes) in before {
        let now = fs::read(&path).unwrap();
        let written = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
        assert_eq!(&now[..written], &bytes[..written], "{}", path.display());
    }
}

#[test]
fn a_torn_tail_is_cut_and_the_queues_follow() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let (last, segment_path);
    {
        let store = MessageStore::open(config.clone()).unwrap();
        fill(&store, &["A"], 20);
        last = put(&store, vec![message("A", 0, &[9; 300], None)])
            .messages
            .remove(0);
        segment_path = dir.path().join("commitlog").join(format!(
            "{:020}",
            last.physical_offset / config.commit_log_file_size as i64
                * config.commit_log_file_size as i64
        ));
    }
    // The machine died half way through the last record.
    let mut segment = fs::read(&segment_path).unwrap();
    let start = (last.physical_offset % config.commit_log_file_size as i64) as usize;
    for byte in &mut segment[start + 100..] {
        *byte = 0;
    }
    fs::write(&segment_path, &segment).unwrap();
    mark_crashed(dir.path());

    let store = MessageStore::open(config.clone()).unwrap();
    assert_eq!(store.commit_log_max_offset(), last.physical_offset);
    assert_eq!(store.max_offset_in_queue("A", 0), last.queue_offset);
    assert_eq!(bodies(&store, "A", 0).len(), 20);
    let again = put(&store, vec![message("A", 0, b"again", None)]);
    assert_eq!(
        (
            again.messages[0].physical_offset,
            again.messages[0].queue_offset
        ),
        (last.physical_offset, last.queue_offset)
    );
    drop(store);
    // The cut tail was zeroed: nothing of the torn record survives after the new one.
    let segment = fs::read(&segment_path).unwrap();
    let end = start + again.messages[0].size as usize;
    assert!(segment[end..].iter().all(|b| *b == 0));
}

#[test]
fn a_bad_crc_ends_the_valid_data() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let appended;
    {
        let store = MessageStore::open(config.clone()).unwrap();
        appended = put(
            &store,
            (0..10)
                .map(|i| message("C", 0, format!("body{i}").as_bytes(), None))
                .collect(),
        )
        .messages;
    }
    let path = dir.path().join("commitlog").join(format!("{:020}", 0));
    let mut segment = fs::read(&path).unwrap();
    let victim = &appended[6];
    let record =
        victim.physical_offset as usize..(victim.physical_offset + i64::from(victim.size)) as usize;
    let body_at = record.start
        + segment[record]
            .windows(5)
            .position(|w| w == b"body6")
            .unwrap();
    segment[body_at] ^= 0x20;
    fs::write(&path, &segment).unwrap();
    mark_crashed(dir.path());

    let store = MessageStore::open(config).unwrap();
    assert_eq!(store.commit_log_max_offset(), victim.physical_offset);
    assert_eq!(store.max_offset_in_queue("C", 0), 6);
    assert_eq!(bodies(&store, "C", 0).len(), 6);
}

#[test]
fn lost_queue_files_are_rebuilt_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    {
        let store = MessageStore::open(config.clone()).unwrap();
        fill(&store, &["A", "B", "%RETRY%g"], 25);
    }
    let before = queue_files(dir.path());
    assert!(before.len() > 6);
    fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    {
        let store = MessageStore::open(config.clone()).unwrap();
        assert_eq!(bodies(&store, "A", 1).len(), 25);
    }
    assert_eq!(queue_files(dir.path()), before);

    // One queue lost while its records span many segments (clean stop): rebuilt too.
    fs::remove_dir_all(dir.path().join("consumequeue/B/1")).unwrap();
    {
        let store = MessageStore::open(config.clone()).unwrap();
        assert_eq!(bodies(&store, "B", 1).len(), 25);
    }
    assert_eq!(queue_files(dir.path()), before);

    // Unflushed queue tails after a crash: the last entries of a queue are zero.
    let last_file = files(&dir.path().join("consumequeue/A/0")).pop().unwrap();
    let mut bytes = fs::read(&last_file).unwrap();
    let written = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
    for byte in &mut bytes[written.saturating_sub(60)..] {
        *byte = 0;
    }
    fs::write(&last_file, bytes).unwrap();
    mark_crashed(dir.path());
    {
        let store = MessageStore::open(config).unwrap();
        assert_eq!(bodies(&store, "A", 0).len(), 25);
    }
    assert_eq!(queue_files(dir.path()), before);
}

#[test]
fn queue_entries_past_the_commit_log_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let segment = config.commit_log_file_size;
    {
        let store = MessageStore::open(config.clone()).unwrap();
        fill(&store, &["A"], 40);
    }
    let segments = files(&dir.path().join("commitlog"));
    assert!(segments.len() >= 3);
    // The last segment never reached the disk.
    fs::remove_file(segments.last().unwrap()).unwrap();
    mark_crashed(dir.path());
    let store = MessageStore::open(config).unwrap();
    let end = store.commit_log_max_offset();
    assert!(end <= (segments.len() as i64 - 1) * segment as i64);
    for queue in 0..2 {
        for m in pull_all(&store, "A", queue) {
            assert!(decode(&m).physical_offset < end);
        }
    }
    let next = put(&store, vec![message("A", 0, b"n", None)]);
    assert_eq!(
        next.messages[0].queue_offset,
        store.max_offset_in_queue("A", 0) - 1
    );
    assert_eq!(
        bodies(&store, "A", 0).len() as i64,
        store.max_offset_in_queue("A", 0)
    );
}

#[test]
fn a_crash_with_an_old_checkpoint_recovers_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    {
        let store = MessageStore::open(config.clone()).unwrap();
        fill(&store, &["A"], 30);
    }
    let before = queue_files(dir.path());
    fs::write(dir.path().join("checkpoint"), [0u8; 4096]).unwrap();
    fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    mark_crashed(dir.path());
    let store = MessageStore::open(config).unwrap();
    assert_eq!(bodies(&store, "A", 0).len(), 30);
    drop(store);
    assert_eq!(queue_files(dir.path()), before);
}

#[test]
fn files_of_the_wrong_size_refuse_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    drop(MessageStore::open(config.clone()).unwrap());
    {
        let store = MessageStore::open(config.clone()).unwrap();
        put(&store, vec![message("A", 0, b"x", None)]);
    }
    let other = StoreConfig {
        commit_log_file_size: 16 * 1024,
        ..config
    };
    let err = MessageStore::open(other).err().unwrap();
    assert!(
        matches!(err, skiff_store::StoreError::FileSizeMismatch { .. }),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random batches, reopened at random points (cleanly or as after a crash), read back the same.
    #[test]
    fn random_appends_survive_reopening(
        batches in proptest::collection::vec(
            (0..3i32, 1..4usize, 0..1500usize, any::<bool>()), 1..40),
        crash in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let config = small_config(dir.path());
        let mut expected: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 3];
        let mut store = MessageStore::open(config.clone()).unwrap();
        for (n, (queue, count, size, reopen)) in batches.iter().enumerate() {
            let batch: Vec<_> = (0..*count).map(|i| {
                let body: Vec<u8> = (0..*size).map(|b| (b + n + i) as u8).collect();
                expected[*queue as usize].push(body.clone());
                message("P", *queue, &body, None)
            }).collect();
            put(&store, batch);
            if *reopen {
                drop(store);
                if crash {
                    mark_crashed(dir.path());
                }
                store = MessageStore::open(config.clone()).unwrap();
            }
        }
        drop(store);
        if crash {
            mark_crashed(dir.path());
        }
        let store = MessageStore::open(config).unwrap();
        for queue in 0..3 {
            prop_assert_eq!(&bodies(&store, "P", queue), &expected[queue as usize]);
        }
    }
}
