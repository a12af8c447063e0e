//! Writes a small store with the file sizes of `tests/data/make-java-store.sh` and a manifest of
//! what went where, for checking that the Java broker reads a Skiff store
//! (`tests/data/check-java-reads-skiff.sh`).
//!
//! `cargo run -p skiff-store --example write_store -- <store dir> <manifest.tsv> <broker port>`

use std::fmt::Write as _;

use bytes::Bytes;
use skiff_store::{MessageStore, MessageToStore, StoreConfig};

fn message(
    topic: &str,
    queue_id: i32,
    tags: &str,
    keys: &str,
    uniq: &str,
    body: String,
) -> MessageToStore {
    let mut properties = String::new();
    if !keys.is_empty() {
        let _ = write!(properties, "KEYS\u{1}{keys}\u{2}");
    }
    let _ = write!(properties, "UNIQ_KEY\u{1}{uniq}\u{2}WAIT\u{1}true\u{2}");
    if !tags.is_empty() {
        let _ = write!(properties, "TAGS\u{1}{tags}\u{2}");
    }
    MessageToStore {
        topic: topic.to_string(),
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:40000".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::from(body),
        properties,
    }
}

/// A client message id as the Java client makes them (IPv4, pid, class loader hash, time,
/// counter), which the Java 4.9 client parses when it looks a message up by it.
fn uniq_key(n: usize) -> String {
    format!("7F000001000100000000{:08X}{:04X}", 0x0100_0000, n)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, manifest, port] = args.as_slice() else {
        return Err("usage: write_store <store dir> <manifest.tsv> <broker port>".into());
    };
    let store = MessageStore::open(StoreConfig {
        commit_log_file_size: 65536,
        consume_queue_file_entries: 60,
        max_hash_slot_num: 64,
        max_index_num: 256,
        store_host: format!("127.0.0.1:{port}").parse()?,
        ..StoreConfig::new(root)
    })?;
    let mut lines = String::new();
    let mut n = 0;
    let mut batches = Vec::new();
    for i in 0..150 {
        let tags = if i % 3 == 0 { "TagA" } else { "TagB" };
        let body = format!("skiff-{n}-{}", "z".repeat(40 + (i * 97) % 1500));
        batches.push(vec![message(
            "SkiffA",
            0,
            tags,
            &format!("key-{i} shared"),
            &uniq_key(n),
            body,
        )]);
        n += 1;
    }
    for i in 0..40 {
        let body = format!("skiff-{n}-{}", "y".repeat(10 + i));
        batches.push(vec![message(
            "SkiffB",
            (i % 4) as i32,
            "",
            &format!("b{i}"),
            &uniq_key(n),
            body,
        )]);
        n += 1;
    }
    batches.push(
        (0..5)
            .map(|i| {
                let body = format!("skiff-{}-batch", n + i);
                message(
                    "SkiffB",
                    1,
                    "Batch",
                    &format!("batch-{i}"),
                    &uniq_key(n + i),
                    body,
                )
            })
            .collect(),
    );
    for batch in batches {
        let sent: Vec<(String, String, String, String, String)> = batch
            .iter()
            .map(|m| {
                let props = skiff_model::message::Properties::decode(&m.properties);
                (
                    m.topic.clone(),
                    props.uniq_key().unwrap_or_default().to_string(),
                    props.tags().unwrap_or_default().to_string(),
                    props.get("KEYS").unwrap_or_default().to_string(),
                    String::from_utf8(m.body.to_vec()).unwrap(),
                )
            })
            .collect();
        let queue_id = batch[0].queue_id;
        let result = store.put_messages(batch).await?;
        for ((topic, uniq, tags, keys, body), appended) in sent.into_iter().zip(result.messages) {
            let _ = writeln!(
                lines,
                "{topic}\t{queue_id}\t{}\t{}\t{uniq}\t{tags}\t{keys}\t{body}",
                appended.queue_offset, appended.msg_id
            );
        }
    }
    // Let the index catch up before the clean stop.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while store
        .query_messages("SkiffB", "batch-4", 1, 0, i64::MAX)
        .messages
        .is_empty()
    {
        if std::time::Instant::now() > deadline {
            return Err("the index did not catch up".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    store.shutdown();
    std::fs::write(manifest, lines)?;
    println!("wrote {n} messages and 5 in a batch to {root}");
    Ok(())
}
