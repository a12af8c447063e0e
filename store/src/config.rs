//! Store settings, named and defaulted as Apache RocketMQ's `MessageStoreConfig` names them.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

/// When a put counts as stored (`flushDiskType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushDiskType {
    /// Acknowledge once the bytes are in the page cache; a thread flushes every
    /// `flush_interval_commit_log_ms`.
    #[default]
    AsyncFlush,
    /// Acknowledge once the bytes are on disk; concurrent puts share one flush (group commit).
    SyncFlush,
}

/// Every setting of the store. Field comments give the Java name where it differs.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `storePathRootDir`: holds `commitlog/`, `consumequeue/`, `index/`, `checkpoint`, `abort`
    /// and `lock` (`config/` belongs to the broker).
    pub root_dir: PathBuf,
    /// `mappedFileSizeCommitLog`: bytes per CommitLog segment.
    pub commit_log_file_size: u64,
    /// `mappedFileSizeConsumeQueue / 20`: entries per ConsumeQueue file.
    pub consume_queue_file_entries: u64,
    pub flush_disk_type: FlushDiskType,
    /// `flushIntervalCommitLog`: pause of the async flush thread.
    pub flush_interval_commit_log_ms: u64,
    /// `flushCommitLogLeastPages`: dirty 4 KiB pages worth an async flush.
    pub flush_commit_log_least_pages: u32,
    /// `flushCommitLogThoroughInterval`: flush whatever is dirty at least this often.
    pub flush_commit_log_thorough_interval_ms: u64,
    /// `syncFlushTimeout`: how long a sync-flush put waits before answering `FlushDiskTimeout`.
    pub sync_flush_timeout_ms: u64,
    /// `flushIntervalConsumeQueue`.
    pub flush_interval_consume_queue_ms: u64,
    /// `flushConsumeQueueLeastPages`.
    pub flush_consume_queue_least_pages: u32,
    /// `flushConsumeQueueThoroughInterval`; the checkpoint file is written on this cadence.
    pub flush_consume_queue_thorough_interval_ms: u64,
    /// `maxMessageSize`: a record larger than this is refused.
    pub max_message_size: usize,
    /// `brokerIP1:listenPort`, written into records (STOREHOST) and offset message ids.
    pub store_host: SocketAddr,
    /// `checkCRCOnRecover`: verify body CRCs while recovering.
    pub check_crc_on_recover: bool,
    /// `messageDelayLevel`: delay levels; SCHEDULE_TOPIC_XXXX entries carry deliver times.
    pub message_delay_level: String,
    /// `maxTransferBytesOnMessageInMemory`: pull batch byte cap for data likely in memory.
    pub max_transfer_bytes_on_message_in_memory: usize,
    /// `maxTransferCountOnMessageInMemory`.
    pub max_transfer_count_on_message_in_memory: usize,
    /// `maxTransferBytesOnMessageInDisk`.
    pub max_transfer_bytes_on_message_in_disk: usize,
    /// `maxTransferCountOnMessageInDisk`.
    pub max_transfer_count_on_message_in_disk: usize,
    /// `accessMessageInMemoryMaxRatio`: share of RAM (percent) behind the CommitLog head that a
    /// pull treats as "in memory".
    pub access_message_in_memory_max_ratio: u32,
    /// `maxFilterMessageSize`: bytes of ConsumeQueue one pull scans at most (at least
    /// `max_msg_nums * 20`).
    pub max_filter_message_size: usize,
}

impl StoreConfig {
    /// A config with Java's defaults rooted at `root_dir`.
    pub fn new(root_dir: impl Into<PathBuf>) -> Self {
        StoreConfig {
            root_dir: root_dir.into(),
            ..StoreConfig::default()
        }
    }

    pub(crate) fn commit_log_dir(&self) -> PathBuf {
        self.root_dir.join("commitlog")
    }

    pub(crate) fn consume_queue_dir(&self) -> PathBuf {
        self.root_dir.join("consumequeue")
    }

    pub(crate) fn checkpoint_path(&self) -> PathBuf {
        self.root_dir.join("checkpoint")
    }

    pub(crate) fn abort_path(&self) -> PathBuf {
        self.root_dir.join("abort")
    }

    pub(crate) fn lock_path(&self) -> PathBuf {
        self.root_dir.join("lock")
    }

    /// Bytes per ConsumeQueue file.
    pub(crate) fn consume_queue_file_size(&self) -> u64 {
        self.consume_queue_file_entries * crate::consume_queue::ENTRY_SIZE as u64
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            root_dir: PathBuf::from("./store"),
            commit_log_file_size: 1024 * 1024 * 1024,
            consume_queue_file_entries: 300_000,
            flush_disk_type: FlushDiskType::AsyncFlush,
            flush_interval_commit_log_ms: 500,
            flush_commit_log_least_pages: 4,
            flush_commit_log_thorough_interval_ms: 10_000,
            sync_flush_timeout_ms: 5_000,
            flush_interval_consume_queue_ms: 1_000,
            flush_consume_queue_least_pages: 2,
            flush_consume_queue_thorough_interval_ms: 60_000,
            max_message_size: 4 * 1024 * 1024,
            store_host: SocketAddr::from((Ipv4Addr::LOCALHOST, 10911)),
            check_crc_on_recover: true,
            message_delay_level: "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
                .to_string(),
            max_transfer_bytes_on_message_in_memory: 256 * 1024,
            max_transfer_count_on_message_in_memory: 32,
            max_transfer_bytes_on_message_in_disk: 64 * 1024,
            max_transfer_count_on_message_in_disk: 8,
            access_message_in_memory_max_ratio: 40,
            max_filter_message_size: 16_000,
        }
    }
}
