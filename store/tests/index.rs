//! The IndexFile: keys and unique keys, built in the background, rebuilt after a crash.

mod common;

use std::fs;

use common::*;
use skiff_store::{MessageStore, StoreConfig};

fn config(root: &std::path::Path) -> StoreConfig {
    StoreConfig {
        max_hash_slot_num: 16,
        max_index_num: 40,
        ..small_config(root)
    }
}

fn index_files(root: &std::path::Path) -> Vec<String> {
    let mut names: Vec<_> = fs::read_dir(root.join("index"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn bodies_for(store: &MessageStore, topic: &str, key: &str) -> Vec<String> {
    store
        .query_messages(topic, key, 64, 0, i64::MAX)
        .messages
        .iter()
        .map(|m| String::from_utf8(decode(m).body.to_vec()).unwrap())
        .collect()
}

#[test]
fn keys_and_unique_keys_find_their_messages_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path())).unwrap();
    for i in 0..30 {
        let keys = format!("order-{} shared  color-{}", i, i % 3);
        put(
            &store,
            vec![with_keys(
                message("Idx", i % 2, format!("m{i}").as_bytes(), None),
                &format!("U{i}"),
                &keys,
            )],
        );
    }
    put(
        &store,
        vec![with_keys(
            message("Other", 0, b"other", None),
            "U0",
            "shared",
        )],
    );
    let last = store.commit_log_max_offset();
    wait_until("the index to catch up", || {
        store
            .query_messages("Other", "shared", 1, 0, i64::MAX)
            .messages
            .len()
            == 1
    });
    // 4 keys per message and 39 entries per file: several files, named by local time.
    let files = index_files(dir.path());
    assert!(files.len() >= 3, "{files:?}");
    assert!(files
        .iter()
        .all(|n| n.len() == 17 && n.bytes().all(|b| b.is_ascii_digit())));
    let size = fs::metadata(dir.path().join("index").join(&files[0]))
        .unwrap()
        .len();
    assert_eq!(size, 40 + 16 * 4 + 40 * 20);

    assert_eq!(bodies_for(&store, "Idx", "order-7"), vec!["m7"]);
    assert_eq!(bodies_for(&store, "Idx", "U12"), vec!["m12"]);
    assert_eq!(
        bodies_for(&store, "Idx", "color-1"),
        (0..30)
            .filter(|i| i % 3 == 1)
            .map(|i| format!("m{i}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(bodies_for(&store, "Idx", "shared").len(), 30);
    assert_eq!(bodies_for(&store, "Other", "U0"), vec!["other"]);
    assert!(bodies_for(&store, "Idx", "missing").is_empty());
    let capped = store.query_messages("Idx", "shared", 5, 0, i64::MAX);
    assert_eq!(capped.messages.len(), 5);
    assert!(capped.index_last_update_timestamp > 0);
    assert!(capped.index_last_update_phyoffset < last);
    assert!(store
        .query_messages("Idx", "shared", 64, 0, 1)
        .messages
        .is_empty());
}

#[test]
fn the_index_resumes_and_is_rebuilt_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = MessageStore::open(config(dir.path())).unwrap();
        for i in 0..12 {
            put(
                &store,
                vec![with_keys(
                    message("R", 0, format!("a{i}").as_bytes(), None),
                    &format!("A{i}"),
                    "k",
                )],
            );
        }
        wait_until("indexing", || bodies_for(&store, "R", "k").len() == 12);
    }
    let before = index_files(dir.path());
    {
        // Clean restart: resumes after the last indexed record, no duplicates.
        let store = MessageStore::open(config(dir.path())).unwrap();
        for i in 12..20 {
            put(
                &store,
                vec![with_keys(
                    message("R", 0, format!("a{i}").as_bytes(), None),
                    &format!("A{i}"),
                    "k",
                )],
            );
        }
        // "k" is indexed right after each unique key: wait for the last one.
        wait_until("indexing", || bodies_for(&store, "R", "k").len() == 20);
        assert_eq!(bodies_for(&store, "R", "A19"), vec!["a19"]);
        assert_eq!(bodies_for(&store, "R", "A3"), vec!["a3"]);
    }
    assert!(index_files(dir.path()).len() >= before.len());
    // A crash: the index files newer than the checkpoint go and are rebuilt from the CommitLog.
    fs::write(dir.path().join("abort"), b"1").unwrap();
    let store = MessageStore::open(config(dir.path())).unwrap();
    wait_until("rebuilding", || bodies_for(&store, "R", "k").len() == 20);
    for i in 0..20 {
        assert_eq!(
            bodies_for(&store, "R", &format!("A{i}")),
            vec![format!("a{i}")]
        );
    }
}

#[test]
fn no_index_when_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(StoreConfig {
        message_index_enable: false,
        ..config(dir.path())
    })
    .unwrap();
    put(
        &store,
        vec![with_keys(message("N", 0, b"x", None), "U", "k")],
    );
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(store
        .query_messages("N", "k", 10, 0, i64::MAX)
        .messages
        .is_empty());
    assert!(!dir.path().join("index").exists() || index_files(dir.path()).is_empty());
}
