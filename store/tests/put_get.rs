//! Appending and reading: round trips, segment rolls, queue density, filters and every pull
//! status.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use skiff_model::message::sys_flag;
use skiff_model::record::BLANK_MAGIC;
use skiff_store::{Boundary, GetMessageStatus, MessageStore, StoreConfig};

#[test]
fn messages_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path())).unwrap();
    let batch: Vec<_> = (0..5)
        .map(|i| message("TopicTest", 1, format!("body-{i}").as_bytes(), Some("TagA")))
        .collect();
    let result = put(&store, batch);
    assert_eq!(result.status, skiff_store::PutStatus::Ok);
    assert_eq!(result.messages.len(), 5);
    let mut expected_offset = 0;
    for (i, appended) in result.messages.iter().enumerate() {
        assert_eq!(appended.queue_offset, i as i64);
        assert_eq!(appended.physical_offset, expected_offset);
        expected_offset += i64::from(appended.size);
    }
    assert_eq!(store.commit_log_max_offset(), expected_offset);
    assert_eq!(store.commit_log_min_offset(), 0);
    assert_eq!(store.max_offset_in_queue("TopicTest", 1), 5);
    assert_eq!(store.min_offset_in_queue("TopicTest", 1), 0);
    assert_eq!(store.queue_ids("TopicTest"), vec![1]);

    let pulled = store.get_messages("TopicTest", 1, 0, 32, usize::MAX, &all);
    assert_eq!(pulled.status, GetMessageStatus::Found);
    assert_eq!(pulled.next_begin_offset, 5);
    assert_eq!((pulled.min_offset, pulled.max_offset), (0, 5));
    for (i, bytes) in pulled.messages.iter().enumerate() {
        let record = decode(bytes);
        assert_eq!(record.topic, "TopicTest");
        assert_eq!(record.queue_id, 1);
        assert_eq!(record.queue_offset, i as i64);
        assert_eq!(record.physical_offset, result.messages[i].physical_offset);
        assert_eq!(record.store_timestamp, result.messages[i].store_timestamp);
        assert_eq!(record.body, format!("body-{i}").as_bytes());
        assert_eq!(record.born_host, "10.1.2.3:50000".parse().unwrap());
        assert_eq!(record.store_host, "127.0.0.1:10911".parse().unwrap());
        assert_eq!(record.parsed_properties().tags(), Some("TagA"));
        assert_eq!(store.read_message(record.physical_offset).unwrap(), *bytes);
    }
    assert!(store.read_message(3).is_none());
    assert!(store.read_message(expected_offset).is_none());
    let time = result.messages[2].store_timestamp;
    assert_eq!(store.message_store_time("TopicTest", 1, 2), Some(time));
    assert_eq!(
        store.earliest_message_time("TopicTest", 1),
        Some(result.messages[0].store_timestamp)
    );
    assert_eq!(store.message_store_time("TopicTest", 1, 5), None);
    let info = store.runtime_info();
    let value = |key: &str| info.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    assert_eq!(
        value("commitLogMaxOffset"),
        Some(expected_offset.to_string())
    );
    assert_eq!(value("putMessageTimesTotal"), Some("5".to_string()));
    assert!(value("commitLogDiskRatio").is_some());
}

#[test]
fn segments_roll_with_blanks_and_records_never_span_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let segment = config.commit_log_file_size as usize;
    let store = MessageStore::open(config).unwrap();
    let body = vec![b'x'; 1000];
    let mut appended = Vec::new();
    for i in 0..30 {
        // Mixed batch sizes: batches roll in the middle too.
        let batch = (0..(i % 3 + 1))
            .map(|_| message("Roll", 0, &body, None))
            .collect();
        appended.extend(put(&store, batch).messages);
    }
    for m in &appended {
        let start = m.physical_offset as usize;
        assert_eq!(
            start / segment,
            (start + m.size as usize - 1) / segment,
            "record spans segments"
        );
    }
    let pulled = pull_all(&store, "Roll", 0);
    assert_eq!(pulled.len(), appended.len());
    store.shutdown();

    let mut files: Vec<_> = std::fs::read_dir(dir.path().join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() > 3);
    for (n, path) in files.iter().enumerate() {
        let name = path.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, format!("{:020}", n * segment));
        let content = std::fs::read(path).unwrap();
        assert_eq!(content.len(), segment);
        if n + 1 == files.len() {
            continue;
        }
        // Walk the records to the blank, which declares exactly the rest of the file.
        let mut pos = 0;
        loop {
            let size = i32::from_be_bytes(content[pos..pos + 4].try_into().unwrap());
            let magic = i32::from_be_bytes(content[pos + 4..pos + 8].try_into().unwrap());
            if magic == BLANK_MAGIC {
                assert_eq!(size as usize, segment - pos);
                break;
            }
            pos += decode(&content[pos..]).total_size as usize;
        }
    }
}

#[test]
fn queues_stay_dense_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let entries = config.consume_queue_file_entries as usize;
    let store = MessageStore::open(config).unwrap();
    for round in 0..25 {
        for queue in 0..3 {
            put(
                &store,
                vec![message("Dense", queue, format!("{round}").as_bytes(), None)],
            );
        }
    }
    for queue in 0..3 {
        assert_eq!(store.max_offset_in_queue("Dense", queue), 25);
        let pulled = pull_all(&store, "Dense", queue);
        assert_eq!(pulled.len(), 25);
        for (i, bytes) in pulled.iter().enumerate() {
            let record = decode(bytes);
            assert_eq!((record.queue_id, record.queue_offset), (queue, i as i64));
            assert_eq!(record.body, i.to_string().as_bytes());
        }
    }
    store.shutdown();
    let queue_dir = dir.path().join("consumequeue/Dense/0");
    let mut files: Vec<_> = std::fs::read_dir(&queue_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2);
    assert_eq!(
        files[1].file_name().unwrap(),
        format!("{:020}", entries * 20).as_str()
    );
    for file in &files {
        assert_eq!(
            std::fs::metadata(file).unwrap().len(),
            (entries * 20) as u64
        );
    }
}

#[test]
fn tag_filters_and_pull_limits() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        consume_queue_file_entries: 1000,
        ..small_config(dir.path())
    };
    let store = MessageStore::open(config).unwrap();
    let batch = (0..40)
        .map(|i| {
            message(
                "Tags",
                0,
                b"b",
                Some(if i % 2 == 0 { "TagA" } else { "TagB" }),
            )
        })
        .collect();
    put(&store, batch);
    let tag_a = skiff_model::message::tags_code(Some("TagA"));
    let only_a = move |code: i64| code == tag_a;
    let pulled = store.get_messages("Tags", 0, 0, 32, usize::MAX, &only_a);
    assert_eq!(pulled.status, GetMessageStatus::Found);
    assert_eq!(pulled.messages.len(), 20);
    assert_eq!(pulled.next_begin_offset, 40);
    assert!(pulled
        .messages
        .iter()
        .all(|m| decode(m).parsed_properties().tags() == Some("TagA")));

    let none = |_: i64| false;
    let pulled = store.get_messages("Tags", 0, 5, 32, usize::MAX, &none);
    assert_eq!(pulled.status, GetMessageStatus::NoMatchedMessage);
    assert_eq!(pulled.next_begin_offset, 40);
    assert!(pulled.messages.is_empty());

    // Count cap, then the in-memory transfer cap (32), then the byte cap (the first always goes).
    let pulled = store.get_messages("Tags", 0, 0, 10, usize::MAX, &all);
    assert_eq!((pulled.messages.len(), pulled.next_begin_offset), (10, 10));
    let pulled = store.get_messages("Tags", 0, 0, 64, usize::MAX, &all);
    assert_eq!((pulled.messages.len(), pulled.next_begin_offset), (32, 32));
    let pulled = store.get_messages("Tags", 0, 3, 32, 1, &all);
    assert_eq!((pulled.messages.len(), pulled.next_begin_offset), (1, 4));
}

#[test]
fn a_pull_reads_one_queue_file_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path())).unwrap();
    put(
        &store,
        (0..40)
            .map(|i| message("Files", 0, b"b", Some(if i % 2 == 0 { "A" } else { "B" })))
            .collect(),
    );
    let a = skiff_model::message::tags_code(Some("A"));
    let only_a = move |code: i64| code == a;
    // 16 entries per file: from 10 the pull stops at the file end, 16.
    let pulled = store.get_messages("Files", 0, 10, 32, usize::MAX, &only_a);
    assert_eq!((pulled.messages.len(), pulled.next_begin_offset), (3, 16));
    let none = |_: i64| false;
    let pulled = store.get_messages("Files", 0, 16, 32, usize::MAX, &none);
    assert_eq!(
        (pulled.status, pulled.next_begin_offset),
        (GetMessageStatus::NoMatchedMessage, 32)
    );
}

#[test]
fn pull_statuses_and_next_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path())).unwrap();
    let unknown = store.get_messages("Nope", 0, 7, 32, usize::MAX, &all);
    assert_eq!(unknown.status, GetMessageStatus::NoMessageInQueue);
    assert_eq!(
        (
            unknown.next_begin_offset,
            unknown.min_offset,
            unknown.max_offset
        ),
        (0, 0, 0)
    );
    assert_eq!(store.max_offset_in_queue("Nope", 0), 0);

    put(
        &store,
        (0..3).map(|_| message("S", 0, b"x", None)).collect(),
    );
    let found = store.get_messages("S", 0, 0, 32, usize::MAX, &all);
    assert_eq!(
        (found.status, found.next_begin_offset),
        (GetMessageStatus::Found, 3)
    );
    let one = store.get_messages("S", 0, 3, 32, usize::MAX, &all);
    assert_eq!(
        (one.status, one.next_begin_offset),
        (GetMessageStatus::OffsetOverflowOne, 3)
    );
    let badly = store.get_messages("S", 0, 9, 32, usize::MAX, &all);
    assert_eq!(
        (badly.status, badly.next_begin_offset),
        (GetMessageStatus::OffsetOverflowBadly, 3)
    );
    assert_eq!((badly.min_offset, badly.max_offset), (0, 3));
    let middle = store.get_messages("S", 0, 2, 32, usize::MAX, &all);
    assert_eq!(
        (
            middle.status,
            middle.next_begin_offset,
            middle.messages.len()
        ),
        (GetMessageStatus::Found, 3, 1)
    );
}

#[test]
fn offset_too_small_after_the_first_segment_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config(dir.path());
    let segment = config.commit_log_file_size;
    {
        let store = MessageStore::open(config.clone()).unwrap();
        for _ in 0..20 {
            put(&store, vec![message("Old", 0, &[7; 1000], None)]);
        }
    }
    std::fs::remove_file(dir.path().join("commitlog").join(format!("{:020}", 0))).unwrap();
    let store = MessageStore::open(config).unwrap();
    assert_eq!(store.commit_log_min_offset(), segment as i64);
    let min = store.min_offset_in_queue("Old", 0);
    assert!(min > 0);
    let small = store.get_messages("Old", 0, 0, 32, usize::MAX, &all);
    assert_eq!(
        (small.status, small.next_begin_offset),
        (GetMessageStatus::OffsetTooSmall, min)
    );
    let first = store.get_messages("Old", 0, min, 1, usize::MAX, &all);
    assert_eq!(decode(&first.messages[0]).physical_offset, segment as i64);
    assert_eq!(pull_all(&store, "Old", 0).len() as i64, 20 - min);
}

#[test]
fn prepared_and_rollback_messages_get_no_queue_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path())).unwrap();
    let mut prepared = message("Tx", 0, b"half", None);
    prepared.sys_flag = sys_flag::TRANSACTION_PREPARED_TYPE;
    let mut rollback = message("Tx", 0, b"rollback", None);
    rollback.sys_flag = sys_flag::TRANSACTION_ROLLBACK_TYPE;
    let mut commit = message("Tx", 0, b"commit", None);
    commit.sys_flag = sys_flag::TRANSACTION_COMMIT_TYPE;
    let result = put(&store, vec![prepared, commit.clone(), rollback, commit]);
    let offsets: Vec<_> = result.messages.iter().map(|m| m.queue_offset).collect();
    assert_eq!(offsets, vec![0, 0, 0, 1]);
    assert_eq!(store.max_offset_in_queue("Tx", 0), 2);
    let half = store
        .read_message(result.messages[0].physical_offset)
        .unwrap();
    assert_eq!(decode(&half).body, b"half");
    let pulled = pull_all(&store, "Tx", 0);
    assert_eq!(
        pulled
            .iter()
            .map(|m| decode(m).body.to_vec())
            .collect::<Vec<_>>(),
        vec![b"commit".to_vec(), b"commit".to_vec()]
    );
}

#[test]
fn arrivals_are_announced_after_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MessageStore::open(small_config(dir.path())).unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (sink, reader) = (Arc::clone(&seen), Arc::clone(&store));
    store.set_message_arrival_listener(Arc::new(move |topic, queue_id, max| {
        // The new messages are already readable when the listener runs.
        assert_eq!(reader.max_offset_in_queue(topic, queue_id), max);
        sink.lock()
            .unwrap()
            .push((topic.to_string(), queue_id, max));
    }));
    put(
        &store,
        vec![message("A", 0, b"1", None), message("A", 0, b"2", None)],
    );
    put(&store, vec![message("A", 3, b"3", None)]);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![("A".to_string(), 0, 2), ("A".to_string(), 3, 1)]
    );
}

#[test]
fn deleted_topics_lose_their_queues() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path())).unwrap();
    put(
        &store,
        vec![
            message("Gone", 0, b"1", None),
            message("Gone", 0, b"2", None),
        ],
    );
    put(
        &store,
        vec![
            message("Gone", 1, b"3", None),
            message("Kept", 0, b"4", None),
        ],
    );
    store.delete_topics(&["Gone"]);
    assert!(store.queue_ids("Gone").is_empty());
    assert!(!dir.path().join("consumequeue/Gone").exists());
    assert_eq!(store.queue_ids("Kept"), vec![0]);
    let again = put(&store, vec![message("Gone", 0, b"5", None)]);
    assert_eq!(again.messages[0].queue_offset, 0);
}

#[test]
fn offsets_by_store_time() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::default());
    let store =
        MessageStore::open_with_env(small_config(dir.path()), env_with_clock(clock.clone()))
            .unwrap();
    for (i, time) in [1000, 1000, 2000, 3000, 3000, 3000, 5000]
        .iter()
        .enumerate()
    {
        clock.set(*time);
        put(
            &store,
            vec![message("Time", 0, i.to_string().as_bytes(), None)],
        );
    }
    let lower = |t| store.offset_by_time("Time", 0, t, Boundary::Lower);
    let upper = |t| store.offset_by_time("Time", 0, t, Boundary::Upper);
    assert_eq!((lower(1000), upper(1000)), (0, 1));
    assert_eq!((lower(3000), upper(3000)), (3, 5));
    assert_eq!((lower(4000), upper(4000)), (6, 5));
    assert_eq!((lower(0), upper(0)), (0, 0));
    assert_eq!((lower(9000), upper(9000)), (7, 6));
    assert_eq!(store.offset_by_time("None", 0, 1000, Boundary::Lower), 0);
    assert_eq!(store.earliest_message_time("Time", 0), Some(1000));
}

#[test]
fn refusals() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_message_size: 512,
        ..small_config(dir.path())
    };
    let store = MessageStore::open(config).unwrap();
    let too_big = block_on(store.put_messages(vec![message("T", 0, &[0; 600], None)]));
    assert!(
        matches!(
            too_big,
            Err(skiff_store::PutError::MessageTooLarge { max: 512, .. })
        ),
        "{too_big:?}"
    );
    let mut props = message("T", 0, b"x", None);
    props.properties = "k\u{1}".to_string() + &"v".repeat(40_000);
    assert!(matches!(
        block_on(store.put_messages(vec![props])),
        Err(skiff_store::PutError::PropertiesTooLarge { .. })
    ));
    assert!(matches!(
        block_on(store.put_messages(vec![message("../x", 0, b"x", None)])),
        Err(skiff_store::PutError::InvalidTopic(_))
    ));
    assert_eq!(store.commit_log_max_offset(), 0);
    store.shutdown();
    let refused = block_on(store.put_messages(vec![message("T", 0, b"x", None)]));
    let err = refused.unwrap_err();
    assert!(
        err.to_string().starts_with("service not available now."),
        "{err}"
    );
    assert!(!dir.path().join("abort").exists());
    store.shutdown();
}

#[test]
fn a_second_open_of_a_locked_store_fails() {
    let dir = tempfile::tempdir().unwrap();
    let _store = MessageStore::open(small_config(dir.path())).unwrap();
    assert!(dir.path().join("abort").exists());
    assert!(dir.path().join("lock").exists());
    assert_eq!(
        std::fs::metadata(dir.path().join("checkpoint"))
            .unwrap()
            .len(),
        4096
    );
}

#[test]
fn recent_messages_count_as_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(small_config(dir.path())).unwrap();
    assert!(!store.is_in_memory("TopicTest", 0, 0), "no message yet");
    put(&store, vec![message("TopicTest", 0, b"x", None)]);
    assert!(store.is_in_memory("TopicTest", 0, 0));
    assert!(!store.is_in_memory("TopicTest", 0, 1), "past the end");
    assert!(!store.is_in_memory("Other", 0, 0));
}
