//! Helpers shared by the store's integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use skiff_model::record::Record;
use skiff_store::{Clock, MessageStore, MessageToStore, StatvfsDisk, StoreConfig, StoreEnv};

/// Small files so that tests roll segments and queue files quickly.
pub fn small_config(root: &Path) -> StoreConfig {
    StoreConfig {
        commit_log_file_size: 8 * 1024,
        consume_queue_file_entries: 16,
        flush_interval_commit_log_ms: 50,
        flush_interval_consume_queue_ms: 50,
        ..StoreConfig::new(root)
    }
}

pub fn message(topic: &str, queue_id: i32, body: &[u8], tags: Option<&str>) -> MessageToStore {
    let mut properties = String::new();
    if let Some(tags) = tags {
        properties.push_str(&format!("TAGS\u{1}{tags}\u{2}"));
    }
    properties.push_str("UNIQ_KEY\u{1}7F0000010001\u{2}");
    MessageToStore {
        topic: topic.to_string(),
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.1.2.3:50000".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::copy_from_slice(body),
        properties,
    }
}

pub fn decode(bytes: &[u8]) -> Record<'_> {
    Record::decode(bytes, true).expect("a valid record")
}

pub fn all(_: i64) -> bool {
    true
}

/// Every message of a queue, pulled in batches.
pub fn pull_all(store: &MessageStore, topic: &str, queue_id: i32) -> Vec<Bytes> {
    let mut offset = store.min_offset_in_queue(topic, queue_id);
    let mut out = Vec::new();
    loop {
        let result = store.get_messages(topic, queue_id, offset, 32, usize::MAX, &all);
        if result.messages.is_empty() && result.next_begin_offset == offset {
            return out;
        }
        out.extend(result.messages);
        offset = result.next_begin_offset;
    }
}

/// A clock tests move by hand.
#[derive(Default)]
pub struct ManualClock(pub AtomicI64);

impl ManualClock {
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

pub fn env_with_clock(clock: Arc<ManualClock>) -> StoreEnv {
    StoreEnv {
        clock,
        disk: Arc::new(StatvfsDisk),
        fs: skiff_store::fs::real(),
    }
}

pub fn put(store: &MessageStore, messages: Vec<MessageToStore>) -> skiff_store::PutResult {
    block_on(store.put_messages(messages)).expect("put")
}

/// Runs a future to completion on a small current-thread runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

/// A disk whose used ratio tests set by hand.
#[derive(Default)]
pub struct FakeDisk(pub std::sync::atomic::AtomicU64);

impl FakeDisk {
    pub fn set(&self, ratio: f64) {
        self.0.store(ratio.to_bits(), Ordering::SeqCst);
    }
}

impl skiff_store::DiskProbe for FakeDisk {
    fn used_ratio(&self, _path: &Path) -> f64 {
        f64::from_bits(self.0.load(Ordering::SeqCst))
    }
}

/// Polls `condition` for up to 10 s.
pub fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

pub fn with_keys(mut message: MessageToStore, uniq: &str, keys: &str) -> MessageToStore {
    message.properties = format!("KEYS\u{1}{keys}\u{2}UNIQ_KEY\u{1}{uniq}\u{2}");
    message
}

/// A store environment whose file operations go through `fs` (faults injected there) and whose
/// free space is `disk`'s.
pub fn faulty_env(fs: &Arc<skiff_store::fs::FaultyFs>, disk: &Arc<FakeDisk>) -> StoreEnv {
    let fs: skiff_store::fs::Fs = fs.clone();
    StoreEnv {
        clock: Arc::new(skiff_store::SystemClock),
        disk: disk.clone(),
        fs,
    }
}

/// [`small_config`] with the disk checked every 20 ms, for tests that fill or free it.
pub fn disk_check_config(root: &Path) -> StoreConfig {
    StoreConfig {
        clean_resource_interval_ms: 20,
        ..small_config(root)
    }
}
