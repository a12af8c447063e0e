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

/// Whether the store takes puts or only bytes replicated from a master (`brokerRole`: a
/// `SLAVE`, or either kind of master).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreRole {
    /// Puts append; [`crate::MessageStore::append_replicated`] is refused.
    #[default]
    Master,
    /// Only [`crate::MessageStore::append_replicated`] writes the CommitLog; puts are refused, so
    /// that the master's bytes are the only ones in it.
    Slave,
}

/// Every setting of the store. Field comments give the Java name where it differs.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `storePathRootDir`: holds `commitlog/`, `consumequeue/`, `index/`, `checkpoint`, `abort`
    /// and `lock` (`config/` belongs to the broker).
    pub root_dir: PathBuf,
    /// Master (puts) or slave (replicated appends only).
    pub role: StoreRole,
    /// `mappedFileSizeCommitLog`: bytes per CommitLog segment.
    pub commit_log_file_size: u64,
    /// `mappedFileSizeConsumeQueue / 20`: entries per ConsumeQueue file.
    pub consume_queue_file_entries: u64,
    pub flush_disk_type: FlushDiskType,
    /// `flushIntervalCommitLog`: pause of the async flush thread.
    pub flush_interval_commit_log_ms: u64,
    /// `flushCommitLogLeastPages`: dirty 4 KiB pages worth an async flush.
    pub flush_commit_log_least_pages: u32,
    /// `flushCommitLogTimed`: the async flush runs once per `flushIntervalCommitLog` (Java's
    /// default, one large write per interval); false flushes as soon as
    /// `flushCommitLogLeastPages` are dirty, which costs a write and a device request per few
    /// pages.
    pub flush_commit_log_timed: bool,
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
    /// `accessMessageInMemoryHotRatio`: share of RAM (percent) behind the CommitLog head outside
    /// which a record counts as cold for the cold-read flow control.
    pub access_message_in_memory_hot_ratio: u32,
    /// `dataReadAheadEnable`: readahead on CommitLog pages read back from disk (off:
    /// `MADV_RANDOM`).
    pub data_read_ahead_enable: bool,
    /// `maxFilterMessageSize`: bytes of ConsumeQueue one pull scans at most (at least
    /// `max_msg_nums * 20`).
    pub max_filter_message_size: usize,
    /// `warmMapedFileEnable`: touch every page of a pre-allocated CommitLog segment so the put
    /// path never page-faults on a fresh segment.
    pub warm_mapped_file_enable: bool,
    /// `messageIndexEnable`: build the IndexFile (keys and unique keys).
    pub message_index_enable: bool,
    /// Skiff's `commitLogResidentTail`: CommitLog bytes behind the write position that stay
    /// mapped in the broker (what consumers keeping up read); older pages are unmapped once a
    /// second and mapped again by whoever reads them. ConsumeQueues, the TimerLog and the
    /// IndexFile's entries keep 1/64 of it behind their ends.
    pub commit_log_resident_tail: u64,
    /// `maxHashSlotNum`: hash slots per IndexFile.
    pub max_hash_slot_num: u32,
    /// `maxIndexNum`: entries per IndexFile.
    pub max_index_num: u32,
    /// `maxMsgsNumBatch`: most messages one key query returns.
    pub max_msgs_num_batch: usize,
    /// `defaultQueryMaxNum`: what the broker asks for in a unique-key query.
    pub default_query_max_num: usize,
    /// What retention deletes and when; an operator may change it while the store runs
    /// ([`crate::MessageStore::set_retention`]).
    pub retention: RetentionSettings,
    /// `cleanResourceInterval`: how often retention and the disk check run.
    pub clean_resource_interval_ms: u64,
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

    pub(crate) fn index_dir(&self) -> PathBuf {
        self.root_dir.join("index")
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
            role: StoreRole::Master,
            commit_log_file_size: 1024 * 1024 * 1024,
            consume_queue_file_entries: 300_000,
            flush_disk_type: FlushDiskType::AsyncFlush,
            flush_interval_commit_log_ms: 500,
            flush_commit_log_least_pages: 4,
            flush_commit_log_timed: true,
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
            access_message_in_memory_hot_ratio: 26,
            data_read_ahead_enable: true,
            max_filter_message_size: 16_000,
            warm_mapped_file_enable: false,
            message_index_enable: true,
            commit_log_resident_tail: 64 * 1024 * 1024,
            max_hash_slot_num: 5_000_000,
            max_index_num: 5_000_000 * 4,
            max_msgs_num_batch: 64,
            default_query_max_num: 32,
            retention: RetentionSettings::default(),
            clean_resource_interval_ms: 10_000,
        }
    }
}

/// The settings a retention round reads (Java's clean services read them at each round too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionSettings {
    /// `fileReservedTime`, in hours: CommitLog segments older than this are deleted.
    pub file_reserved_time_hours: u64,
    /// `deleteWhen`: local hours (`"04"`, `"04;16"`) at which expired segments are deleted.
    pub delete_when: String,
    /// `diskMaxUsedSpaceRatio` (percent): above it, expired segments go at any hour.
    pub disk_max_used_space_ratio: u32,
    /// `diskSpaceCleanForciblyRatio` (percent, at most 85): above it, the oldest segments go
    /// whatever their age (with `clean_file_forcibly_enable`).
    pub disk_space_clean_forcibly_ratio: u32,
    /// `diskSpaceWarningLevelRatio` (percent, at most 90): above it, puts are refused until
    /// space frees up.
    pub disk_space_warning_level_ratio: u32,
    /// `cleanFileForciblyEnable`.
    pub clean_file_forcibly_enable: bool,
    /// `deleteFileBatchMax`: segments deleted per round at most.
    pub delete_file_batch_max: usize,
}

impl Default for RetentionSettings {
    /// Java's defaults.
    fn default() -> Self {
        RetentionSettings {
            file_reserved_time_hours: 72,
            delete_when: "04".to_string(),
            disk_max_used_space_ratio: 75,
            disk_space_clean_forcibly_ratio: 85,
            disk_space_warning_level_ratio: 90,
            clean_file_forcibly_enable: true,
            delete_file_batch_max: 10,
        }
    }
}
