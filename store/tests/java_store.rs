//! A store directory written by the real Apache RocketMQ 5.3.3 broker (tests/data/java-5.3.3,
//! made by tests/data/make-java-store.sh) opens here with exactly the messages and offsets the
//! Java producer was told, its queues rebuild byte for byte, and its IndexFiles answer queries.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use skiff_model::record::decode_offset_msg_id;
use skiff_store::{MessageStore, StoreConfig};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/java-5.3.3");

/// One line of the manifest Gen.java wrote.
struct Sent {
    topic: String,
    queue_id: i32,
    queue_offset: i64,
    offset_msg_id: String,
    uniq_key: String,
    tags: String,
    keys: String,
    body: String,
}

fn manifest() -> Vec<Sent> {
    fs::read_to_string(Path::new(FIXTURE).join("manifest.tsv"))
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            Sent {
                topic: f[0].into(),
                queue_id: f[1].parse().unwrap(),
                queue_offset: f[2].parse().unwrap(),
                offset_msg_id: f[3].into(),
                uniq_key: f[4].into(),
                tags: f[5].into(),
                keys: f[6].into(),
                body: f[7].into(),
            }
        })
        .collect()
}

/// The Java broker's settings for that directory (broker.conf in make-java-store.sh).
fn java_config(root: &Path) -> StoreConfig {
    StoreConfig {
        commit_log_file_size: 65536,
        consume_queue_file_entries: 60,
        max_hash_slot_num: 64,
        max_index_num: 256,
        ..StoreConfig::new(root)
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    copy_dir(Path::new(FIXTURE), &root);
    fs::remove_file(root.join("manifest.tsv")).unwrap();
    (dir, root)
}

/// Every file of a subdirectory, relative path → bytes.
fn tree(root: &Path, sub: &str) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                let name = path.strip_prefix(base).unwrap().display().to_string();
                out.insert(name, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&root.join(sub), root, &mut out);
    out
}

fn check_messages(store: &MessageStore) {
    let sent = manifest();
    assert_eq!(sent.len(), 197);
    let mut queues = BTreeMap::new();
    for s in &sent {
        let property = |record: &skiff_model::record::Record<'_>, name: &str| {
            record.parsed_properties().get(name).map(str::to_string)
        };
        if s.offset_msg_id == "null" {
            // The transactional send answers without an offset id: find the commit record.
            let pulled = pull_all(store, &s.topic, s.queue_id);
            let record = decode(&pulled[s.queue_offset as usize]);
            assert_eq!(record.body, s.body.as_bytes());
            assert_eq!(record.sys_flag & 0xC, 0x8, "a committed transaction record");
            continue;
        }
        let (host, offset) = decode_offset_msg_id(&s.offset_msg_id).unwrap();
        assert_eq!(host.to_string(), format!("127.0.0.1:{}", host.port()));
        let bytes = store.read_message(offset).unwrap();
        let record = decode(&bytes);
        assert_eq!(record.physical_offset, offset);
        assert_eq!(record.body, s.body.as_bytes(), "{}", s.offset_msg_id);
        // 5.3.3 appends a batch's own properties (its UNIQ_KEY too) to each inner message, so
        // look for the message's key in the raw properties rather than the last value.
        let raw = String::from_utf8_lossy(record.properties);
        assert!(
            raw.contains(&format!("UNIQ_KEY\u{1}{}\u{2}", s.uniq_key)),
            "{raw}"
        );
        assert_eq!(property(&record, "TAGS").unwrap_or_default(), s.tags);
        assert_eq!(property(&record, "KEYS").unwrap_or_default(), s.keys);
        if record.topic == s.topic {
            assert_eq!(
                (record.queue_id, record.queue_offset),
                (s.queue_id, s.queue_offset)
            );
            let pulled =
                store.get_messages(&s.topic, s.queue_id, s.queue_offset, 1, usize::MAX, &all);
            assert_eq!(pulled.messages, vec![bytes.clone()]);
            *queues.entry((s.topic.clone(), s.queue_id)).or_insert(0) += 1;
        } else {
            // The delayed message: stored in the schedule topic, re-put to its topic later.
            assert_eq!(record.topic, "SCHEDULE_TOPIC_XXXX");
            assert_eq!(
                property(&record, "REAL_TOPIC").as_deref(),
                Some(s.topic.as_str())
            );
            let redelivered = pull_all(store, &s.topic, s.queue_id);
            assert_eq!(redelivered.len(), 1);
            assert_eq!(decode(&redelivered[0]).body, s.body.as_bytes());
        }
    }
    for ((topic, queue_id), count) in queues {
        assert_eq!(store.min_offset_in_queue(&topic, queue_id), 0);
        assert_eq!(
            store.max_offset_in_queue(&topic, queue_id),
            count,
            "{topic}/{queue_id}"
        );
        for (i, m) in pull_all(store, &topic, queue_id).iter().enumerate() {
            let record = decode(m);
            assert_eq!(
                (record.topic, record.queue_id, record.queue_offset),
                (topic.as_str(), queue_id, i as i64)
            );
        }
    }
    let tag_a = skiff_model::message::tags_code(Some("TagA"));
    let only_a = move |code: i64| code == tag_a;
    let mut offset = 0;
    let mut tagged = 0;
    while offset < 150 {
        let pulled = store.get_messages("JavaA", 0, offset, 32, usize::MAX, &only_a);
        tagged += pulled.messages.len();
        offset = pulled.next_begin_offset;
    }
    assert_eq!(tagged, 50);
}

fn check_index(store: &MessageStore) {
    let sent = manifest();
    let find = |topic: &str, key: &str| store.query_messages(topic, key, 64, 0, i64::MAX).messages;
    for s in sent.iter().filter(|s| s.topic == "JavaA").step_by(7) {
        let key = s.keys.split(' ').next().unwrap();
        let found = find("JavaA", key);
        assert_eq!(found.len(), 1, "{key}");
        assert_eq!(decode(&found[0]).body, s.body.as_bytes());
        let by_uniq = find("JavaA", &s.uniq_key);
        assert_eq!(by_uniq.len(), 1);
        assert_eq!(decode(&by_uniq[0]).body, s.body.as_bytes());
    }
    assert_eq!(find("JavaA", "shared").len(), 64);
    assert_eq!(find("JavaB", "b17").len(), 1);
    assert_eq!(find("JavaB", "batch-3").len(), 1);
}

#[test]
fn a_java_store_opens_with_every_message_where_java_put_it() {
    let (_dir, root) = fixture_copy();
    let before_log = tree(&root, "commitlog");
    let before_queues = tree(&root, "consumequeue");
    {
        let store = MessageStore::open(java_config(&root)).unwrap();
        assert_eq!(store.commit_log_min_offset(), 0);
        check_messages(&store);
        check_index(&store);
    }
    // Reading and a clean stop change nothing Java wrote.
    assert_eq!(tree(&root, "commitlog"), before_log);
    assert_eq!(tree(&root, "consumequeue"), before_queues);
}

#[test]
fn java_queues_rebuild_byte_for_byte_from_the_java_commit_log() {
    let (_dir, root) = fixture_copy();
    let java_queues = tree(&root, "consumequeue");
    let java_index: Vec<Vec<u8>> = tree(&root, "index").into_values().collect();
    fs::remove_dir_all(root.join("consumequeue")).unwrap();
    fs::remove_dir_all(root.join("index")).unwrap();
    {
        let store = MessageStore::open(java_config(&root)).unwrap();
        check_messages(&store);
        wait_until("the index rebuild", || {
            store
                .query_messages("JavaTx", "tx-key", 1, 0, i64::MAX)
                .messages
                .len()
                == 1
        });
        check_index(&store);
    }
    let rebuilt = tree(&root, "consumequeue");
    assert_eq!(
        rebuilt.keys().collect::<Vec<_>>(),
        java_queues.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &java_queues {
        assert!(rebuilt[name] == *bytes, "{name} differs");
    }
    // The index too, file by file (names are creation times, so only the order is compared).
    let rebuilt_index: Vec<Vec<u8>> = tree(&root, "index").into_values().collect();
    assert_eq!(rebuilt_index.len(), java_index.len());
    for (i, (ours, java)) in rebuilt_index.iter().zip(&java_index).enumerate() {
        assert!(ours == java, "index file {i} differs");
    }
}

#[test]
fn a_crashed_java_store_recovers_and_takes_new_messages() {
    let (_dir, root) = fixture_copy();
    fs::write(root.join("abort"), b"4242").unwrap();
    let end;
    {
        let store = MessageStore::open(java_config(&root)).unwrap();
        end = store.commit_log_max_offset();
        check_messages(&store);
        let appended = put(
            &store,
            vec![message("JavaA", 0, b"after java", Some("TagA"))],
        );
        assert_eq!(appended.messages[0].queue_offset, 150);
        assert_eq!(appended.messages[0].physical_offset, end);
    }
    let store = MessageStore::open(java_config(&root)).unwrap();
    let last = store.get_messages("JavaA", 0, 150, 1, usize::MAX, &all);
    assert_eq!(decode(&last.messages[0]).body, b"after java");
    assert_eq!(pull_all(&store, "JavaA", 0).len(), 151);
    assert_eq!(store.commit_log_min_offset(), 0);
}
