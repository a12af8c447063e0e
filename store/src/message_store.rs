//! [`MessageStore`]: opening (lock, recovery, services), the put, replication and read entry
//! points, and shutdown (Java's `DefaultMessageStore`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use parking_lot::Mutex;

use crate::allocate::Allocator;
use crate::checkpoint::Checkpoint;
use crate::commit_log::CommitLog;
use crate::config::{FlushDiskType, RetentionSettings, StoreConfig, StoreRole};
use crate::consume_queue::Boundary;
use crate::cq_allocate::CqAllocator;
use crate::dir::{AbortFile, DirLock};
use crate::dispatch::DelayLevels;
use crate::env::StoreEnv;
use crate::error::{PutError, ReplicaError, StoreError};
use crate::flush::{self, GroupCommit, Waker};
use crate::index::{self, IndexService, QueryMessagesResult};
use crate::put::{self, AppendedMessage, MessageToStore, PutResult, PutStatus};
use crate::queues::{self, QueueTable};
use crate::read::{Copier, GetMessagesResult, QueueEntry};
use crate::recovery::Recovery;
use crate::replica;
use crate::retention;
use crate::stats::{LatencySnapshot, Stats};

/// Called after messages reach a queue: topic, queue id, the queue's new max offset.
pub type ArrivalListener = Arc<dyn Fn(&str, i32, i64) + Send + Sync>;

/// Java's answer when a put is refused because the store cannot take writes.
const NOT_AVAILABLE: &str = "service not available now. It may be caused by one of the following reasons: the broker's disk is full, messages are put to the slave, message store has been shut down, etc.";

/// State shared by the API and the service threads.
/// Java's `MAX_MANUAL_DELETE_FILE_TIMES`.
const MANUAL_DELETE_ROUNDS: u32 = 20;

pub(crate) struct Shared {
    pub config: StoreConfig,
    pub allocator: Arc<Allocator>,
    pub cq_allocator: CqAllocator,
    pub env: StoreEnv,
    pub commit_log: CommitLog,
    pub queues: QueueTable,
    pub checkpoint: Checkpoint,
    pub delays: DelayLevels,
    pub stats: Stats,
    pub flush_waker: Waker,
    pub cq_flush_waker: Waker,
    pub group_commit: GroupCommit,
    pub boot_ms: i64,
    /// Bytes behind the CommitLog head a pull treats as "in memory".
    pub memory_budget: i64,
    /// Bytes behind the CommitLog head outside which a record is "cold".
    pub hot_budget: i64,
    /// The IndexFiles, when `message_index_enable`.
    pub index: Option<IndexService>,
    pub index_waker: Waker,
    pub retention_waker: Waker,
    listener: ArcSwapOption<ArrivalListener>,
    shut_down: AtomicBool,
    consume_queue_error: AtomicBool,
    disk_full: AtomicBool,
    /// Retention rounds left that delete expired segments whatever the hour (an operator asked).
    pub manual_delete_rounds: std::sync::atomic::AtomicU32,
    /// What retention rounds read: the config's settings until an operator changes them.
    pub retention: parking_lot::RwLock<RetentionSettings>,
    /// The CommitLog's max offset for [`MessageStore::commit_log_end_watch`]; updated only while
    /// someone watches (see [`Shared::publish_end`]).
    end_watch: tokio::sync::watch::Sender<i64>,
}

impl Shared {
    /// Refuses writes after shutdown or a ConsumeQueue write failure.
    pub(crate) fn check_writable(&self) -> Result<(), PutError> {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(PutError::ServiceNotAvailable(format!(
                "{NOT_AVAILABLE} (the message store has been shut down)"
            )));
        }
        if self.disk_full.load(Ordering::Acquire) {
            let ratio = |path: &std::path::Path| self.env.disk.used_ratio(path);
            return Err(PutError::ServiceNotAvailable(format!(
                "service not available now. It may be caused by one of the following reasons: the broker's disk is full [CL: {:5.2} CQ: {:5.2} INDEX: {:5.2}], messages are put to the slave, message store has been shut down, etc.",
                ratio(&self.config.commit_log_dir()),
                ratio(&self.config.consume_queue_dir()),
                ratio(&self.config.index_dir()),
            )));
        }
        if self.consume_queue_error.load(Ordering::Acquire) {
            return Err(PutError::ServiceNotAvailable(format!(
                "{NOT_AVAILABLE} (a consume queue could not be written)"
            )));
        }
        Ok(())
    }

    /// The refusal for an I/O error of a put that wrote nothing: a full disk turns the store
    /// read-only (until retention or the disk check sees space again) with Java's disk-full
    /// remark; anything else is a plain I/O error.
    pub(crate) fn write_error(&self, e: std::io::Error) -> PutError {
        if crate::fs::is_disk_full(&e) {
            if !self.set_disk_full(true) {
                tracing::error!(error = %e, "the disk is full: refusing messages until space is freed (delete old CommitLog files or grow the volume)");
            }
            return self
                .check_writable()
                .err()
                .unwrap_or(PutError::ServiceNotAvailable(NOT_AVAILABLE.to_string()));
        }
        PutError::Io(e)
    }

    /// Sets whether the disk is too full for puts; returns the previous state.
    pub(crate) fn set_disk_full(&self, full: bool) -> bool {
        self.disk_full.swap(full, Ordering::AcqRel)
    }

    /// Tells [`MessageStore::commit_log_end_watch`] receivers that the CommitLog reached `end`
    /// (after the put lock). Without receivers this is one atomic load; the value only grows,
    /// whatever order concurrent writers publish in.
    pub(crate) fn publish_end(&self, end: i64) {
        if self.end_watch.receiver_count() > 0 {
            self.end_watch.send_if_modified(|current| {
                let grows = end > *current;
                if grows {
                    *current = end;
                }
                grows
            });
        }
    }

    /// Wakes the CommitLog flush after an append that ended at `end`, as the configured flush
    /// wants it (a sync-flush put that waits asks the group commit itself).
    pub(crate) fn wake_flush(&self, end: i64) {
        match self.config.flush_disk_type {
            FlushDiskType::SyncFlush => self.group_commit.waker.wake(),
            FlushDiskType::AsyncFlush => {
                if crate::flush::wants_async_flush(self, end) {
                    self.flush_waker.wake();
                }
            }
        }
    }

    pub(crate) fn mark_consume_queue_error(&self) {
        self.consume_queue_error.store(true, Ordering::Release);
    }

    /// Tells the listener that `queue` now ends at `max_offset` (after the put lock).
    pub(crate) fn notify_arrival(
        &self,
        queue: &crate::consume_queue::ConsumeQueue,
        max_offset: i64,
    ) {
        if let Some(listener) = self.listener.load().as_ref() {
            listener(queue.topic(), queue.queue_id(), max_offset);
        }
    }
}

/// The message store: CommitLog, ConsumeQueues, flush and recovery. `Send + Sync`; it owns its
/// service threads and stops them in [`MessageStore::shutdown`] (or when dropped).
pub struct MessageStore {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    abort: AbortFile,
    _lock: DirLock,
}

/// What [`MessageStore::append_messages`] leaves to do.
pub enum Put {
    /// Stored as the configuration promises: answer now.
    Done(PutResult),
    /// Appended; sync flush must confirm before the put is answered.
    AwaitFlush(FlushWait),
}

/// Appended messages waiting for group commit to flush them.
pub struct FlushWait {
    shared: Arc<Shared>,
    end: i64,
    messages: Vec<AppendedMessage>,
    begin: Instant,
}

impl FlushWait {
    /// Where the messages went (they are appended; only the flush is pending).
    pub fn messages(&self) -> &[AppendedMessage] {
        &self.messages
    }

    /// Waits until the CommitLog is flushed past the messages, or `sync_flush_timeout_ms`
    /// passes (`FlushDiskTimeout`; the messages stay stored).
    pub async fn wait(self) -> PutResult {
        let shared = &self.shared;
        let done = shared.group_commit.request(self.end);
        let timeout = Duration::from_millis(shared.config.sync_flush_timeout_ms);
        let status = match tokio::time::timeout(timeout, done).await {
            Ok(Ok(true)) => PutStatus::Ok,
            _ => PutStatus::FlushDiskTimeout,
        };
        shared.stats.record_put_time(self.begin);
        PutResult {
            status,
            messages: self.messages,
        }
    }
}

impl MessageStore {
    /// Opens (creating if needed) the store under `config.root_dir`: recovers, then starts the
    /// flush threads.
    pub fn open(config: StoreConfig) -> Result<MessageStore, StoreError> {
        Self::open_with_env(config, StoreEnv::default())
    }

    /// [`MessageStore::open`] with a given clock and disk probe (tests).
    pub fn open_with_env(config: StoreConfig, env: StoreEnv) -> Result<MessageStore, StoreError> {
        validate(&config)?;
        let delays = DelayLevels::parse(&config.message_delay_level).map_err(StoreError::Config)?;
        std::fs::create_dir_all(&config.root_dir)
            .map_err(|e| StoreError::io(&config.root_dir, e))?;
        let lock = DirLock::acquire(&config.lock_path())?;
        let abort = AbortFile::new(config.abort_path());
        let clean = !abort.exists();
        tracing::info!(root = %config.root_dir.display(), clean, "opening message store");

        let checkpoint = Checkpoint::open(&config.checkpoint_path())?;
        let mut commit_log_files = CommitLog::load(
            &config.commit_log_dir(),
            config.commit_log_file_size,
            &env.fs,
        )?;
        let cq_root = config.consume_queue_dir();
        let cq_file_size = config.consume_queue_file_size();
        let loaded = queues::load_all(&cq_root, cq_file_size, &env.fs)?;
        let recovered = Recovery {
            queue_root: &cq_root,
            queue_file_size: cq_file_size,
            fs: &env.fs,
            check_crc: config.check_crc_on_recover,
            delays: &delays,
            checkpoint: &checkpoint,
            clean,
        }
        .run(&mut commit_log_files, loaded)
        .map_err(|e| StoreError::io(&config.root_dir, e))?;
        let index = if config.message_index_enable {
            Some(IndexService::load(
                &config.index_dir(),
                config.max_hash_slot_num,
                config.max_index_num,
                clean,
                checkpoint.index_msg_timestamp(),
            )?)
        } else {
            None
        };
        checkpoint
            .flush()
            .map_err(|e| StoreError::io(config.checkpoint_path(), e))?;
        abort.create()?;

        let boot_ms = env.clock.now_ms();
        let memory = physical_memory_bytes();
        let memory_budget =
            memory.saturating_mul(i64::from(config.access_message_in_memory_max_ratio)) / 100;
        let hot_budget =
            memory.saturating_mul(i64::from(config.access_message_in_memory_hot_ratio)) / 100;
        let allocator = Arc::new(Allocator::new(
            config.commit_log_dir(),
            config.commit_log_file_size as usize,
            config.warm_mapped_file_enable,
            Arc::clone(&env.fs),
        ));
        let shared = Arc::new(Shared {
            commit_log: CommitLog::new(
                commit_log_files,
                Arc::clone(&allocator),
                recovered.last_record,
                config.role != StoreRole::Slave,
            ),
            allocator,
            cq_allocator: CqAllocator::default(),
            queues: QueueTable::new(cq_root, cq_file_size, recovered.queues, Arc::clone(&env.fs)),
            checkpoint,
            delays,
            stats: Stats::default(),
            flush_waker: Waker::default(),
            cq_flush_waker: Waker::default(),
            group_commit: GroupCommit::default(),
            boot_ms,
            memory_budget,
            hot_budget,
            index,
            index_waker: Waker::default(),
            retention_waker: Waker::default(),
            listener: ArcSwapOption::empty(),
            shut_down: AtomicBool::new(false),
            consume_queue_error: AtomicBool::new(false),
            disk_full: AtomicBool::new(false),
            manual_delete_rounds: std::sync::atomic::AtomicU32::new(0),
            retention: parking_lot::RwLock::new(config.retention.clone()),
            end_watch: tokio::sync::watch::Sender::new(0),
            config,
            env,
        });
        // Reserve the segment the writer continues in now, not under the first put's lock; on a
        // full disk the store opens read-only (reads work, puts are refused) instead of failing.
        if let Some(current) = shared.commit_log.files.current() {
            if let Err(e) = current.reserve(current.size()) {
                if crate::fs::is_disk_full(&e) {
                    shared.set_disk_full(true);
                    tracing::error!(error = %e, "the disk is full: the store opened read-only and refuses messages until space is freed");
                } else {
                    return Err(StoreError::io(current.path(), e));
                }
            }
        }
        if !shared.config.data_read_ahead_enable {
            if let Err(e) = shared.commit_log.set_read_ahead(false) {
                tracing::warn!(error = %e, "dataReadAheadEnable=false: the kernel refused MADV_RANDOM on the CommitLog; readahead stays on");
            }
        }
        let store = MessageStore {
            threads: Mutex::new(Vec::new()),
            shared,
            abort,
            _lock: lock,
        };
        store
            .start_services()
            .map_err(|e| StoreError::io(&store.shared.config.root_dir, e))?;
        Ok(store)
    }

    fn start_services(&self) -> std::io::Result<()> {
        let mut threads = self.threads.lock();
        let spawn = |name: &str, run: fn(Arc<Shared>)| {
            let shared = Arc::clone(&self.shared);
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || run(shared))
        };
        threads.push(match self.shared.config.flush_disk_type {
            FlushDiskType::AsyncFlush => spawn("skiff-flush-commitlog", flush::run_async_flush)?,
            FlushDiskType::SyncFlush => spawn("skiff-group-commit", flush::run_group_commit)?,
        });
        threads.push(spawn("skiff-flush-cq", flush::run_consume_queue_flush)?);
        threads.push(spawn("skiff-allocate", |shared| shared.allocator.run())?);
        threads.push(spawn("skiff-allocate-cq", |shared| {
            shared.cq_allocator.run()
        })?);
        threads.push(spawn("skiff-retention", retention::run_retention)?);
        if self.shared.index.is_some() {
            threads.push(spawn("skiff-index", index::run_indexer)?);
        }
        Ok(())
    }

    /// Appends the messages (normally one queue's batch) under one lock hold with consecutive
    /// queue offsets; with `SyncFlush` then waits for the disk (`FlushDiskTimeout` after
    /// `sync_flush_timeout_ms`, the messages stay stored).
    pub async fn put_messages(&self, messages: Vec<MessageToStore>) -> Result<PutResult, PutError> {
        match self.append_messages(messages)? {
            Put::Done(result) => Ok(result),
            Put::AwaitFlush(wait) => Ok(wait.wait().await),
        }
    }

    /// The synchronous half of [`put_messages`](Self::put_messages): appends now, on the
    /// caller's thread, so a caller that appends in arrival order keeps that order in the queues.
    /// What is left is a flush wait when sync flush must confirm before the put is answered.
    pub fn append_messages(&self, messages: Vec<MessageToStore>) -> Result<Put, PutError> {
        let begin = Instant::now();
        if messages.is_empty() {
            return Ok(Put::Done(PutResult {
                status: PutStatus::Ok,
                messages: Vec::new(),
            }));
        }
        let shared = &self.shared;
        let appended = match self
            .check_master()
            .and_then(|()| put::append(shared, &messages))
        {
            Ok(appended) => appended,
            Err(e) => {
                Stats::add(&shared.stats.put_message_failed_times, 1);
                return Err(e);
            }
        };
        shared.publish_end(appended.end_offset);
        match shared.config.flush_disk_type {
            FlushDiskType::SyncFlush if put::wants_flush_wait(&messages) => {
                if shared.commit_log.flushed_where() < appended.end_offset {
                    return Ok(Put::AwaitFlush(FlushWait {
                        shared: Arc::clone(shared),
                        end: appended.end_offset,
                        messages: appended.messages,
                        begin,
                    }));
                }
            }
            _ => shared.wake_flush(appended.end_offset),
        }
        shared.stats.record_put_time(begin);
        Ok(Put::Done(PutResult {
            status: PutStatus::Ok,
            messages: appended.messages,
        }))
    }

    /// Puts are for a master: a slave's CommitLog holds its master's bytes only.
    fn check_master(&self) -> Result<(), PutError> {
        match self.shared.config.role {
            StoreRole::Master => Ok(()),
            StoreRole::Slave => Err(PutError::ServiceNotAvailable(format!(
                "message store is in slave mode, so putMessage is forbidden: {NOT_AVAILABLE}"
            ))),
        }
    }

    /// Whether this store takes puts (master) or only replicated bytes (slave).
    pub fn role(&self) -> StoreRole {
        self.shared.config.role
    }

    /// Slave only: appends raw CommitLog bytes replicated from the master at `offset`, the end
    /// of this CommitLog (or, when it is empty, any segment start: the slave then starts there).
    /// `bytes` must be whole records, possibly ending in the segment's end blank (header and
    /// filler, up to the segment end), inside one segment. Every record is checked first (size,
    /// magic, PHYSICALOFFSET, body CRC with `check_crc_on_recover`, queue offsets continuing the
    /// queues): a refused chunk writes nothing. Then the bytes are copied under the put lock, and
    /// each record's ConsumeQueue entry is written as recovery writes it (an empty queue is
    /// padded up to its first entry). Long polls, the flush and the end watch are woken as after
    /// a put. Returns the new max offset. Blocks on the disk: call it from a blocking thread.
    pub fn append_replicated(&self, offset: i64, bytes: &[u8]) -> Result<i64, ReplicaError> {
        self.append_replicated_parts(offset, &[bytes])
    }

    /// [`MessageStore::append_replicated`] of the bytes `parts` hold one after another, each
    /// part whole records: frames read from the master are written as they are, without being
    /// joined into one buffer first. Checked, written and refused as one chunk.
    pub fn append_replicated_parts(
        &self,
        offset: i64,
        parts: &[&[u8]],
    ) -> Result<i64, ReplicaError> {
        if self.shared.config.role != StoreRole::Slave {
            return Err(ReplicaError::NotSlave);
        }
        replica::append(&self.shared, offset, parts)
    }

    /// Published CommitLog bytes from `from`, at most `max`, never past the end of `from`'s
    /// segment (what a master streams to a slave), zero-copy. `None` when `from` lies outside
    /// `[commit_log_min_offset, commit_log_max_offset)`.
    pub fn commit_log_data(&self, from: i64, max: usize) -> Option<Bytes> {
        self.shared.commit_log.data(from, max)
    }

    /// The CommitLog's last whole record: its offset and bytes (`None` when empty). A slave
    /// compares it with the master's record at that offset before streaming on.
    pub fn last_record(&self) -> Option<(i64, Bytes)> {
        self.shared.commit_log.last_record()
    }

    /// The CommitLog's max offset, updated after every put and replicated append (a master's
    /// replication writers wait on it instead of polling).
    pub fn commit_log_end_watch(&self) -> tokio::sync::watch::Receiver<i64> {
        let shared = &self.shared;
        let receiver = shared.end_watch.subscribe();
        // Nobody may have watched before: bring the value up to date.
        shared.publish_end(shared.commit_log.max_offset());
        receiver
    }

    /// Bytes per CommitLog segment (`mappedFileSizeCommitLog`).
    pub fn commit_log_segment_size(&self) -> i64 {
        self.shared.config.commit_log_file_size as i64
    }

    /// A pull (`DefaultMessageStore.getMessage`): up to `max_msg_nums` records from `offset`
    /// whose tag code `filter` accepts.
    pub fn get_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        max_total_bytes: usize,
        filter: &dyn Fn(i64) -> bool,
    ) -> GetMessagesResult {
        let result = self.shared.get_messages_inner(
            topic,
            queue_id,
            offset,
            max_msg_nums,
            max_total_bytes,
            filter,
            None,
        );
        self.shared.count_pull(&result);
        result
    }

    /// [`MessageStore::get_messages`] for a read far behind the writer (see
    /// [`MessageStore::is_cold_read`]), on a blocking thread: the records are copies read with
    /// `pread` (one buffer per read), not slices of the mapping, so the read maps no CommitLog
    /// page and leaves nothing to unmap.
    pub fn get_copied_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        max_total_bytes: usize,
        filter: &dyn Fn(i64) -> bool,
    ) -> GetMessagesResult {
        let result = self.shared.get_messages_inner(
            topic,
            queue_id,
            offset,
            max_msg_nums,
            max_total_bytes,
            filter,
            Some(&mut Copier::new(false)),
        );
        self.shared.count_pull(&result);
        result
    }

    /// [`MessageStore::get_copied_messages`] that never waits for the disk, for a cold read on an
    /// async worker: it stops before the first record (or ConsumeQueue entry) the page cache
    /// does not hold (`RWF_NOWAIT`, `mincore`), and answers `None` when that is the first one
    /// (read it on a blocking thread then). A consumer catching up finds its next pages there
    /// when the store's read-ahead (`release_cold_read_pages`) ran ahead of it.
    pub fn get_cached_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        max_total_bytes: usize,
        filter: &dyn Fn(i64) -> bool,
    ) -> Option<GetMessagesResult> {
        let mut copier = Copier::new(true);
        let result = self.shared.get_messages_inner(
            topic,
            queue_id,
            offset,
            max_msg_nums,
            max_total_bytes,
            filter,
            Some(&mut copier),
        );
        if copier.missed && result.messages.is_empty() {
            return None;
        }
        self.shared.count_pull(&result);
        Some(result)
    }

    /// [`MessageStore::get_messages`] for the broker's own services (the timer wheel's intake,
    /// which polls its queue every few milliseconds): not counted in the pull statistics
    /// (`getFoundTps`, `getMissTps`), as Java's timer reads its ConsumeQueue directly.
    pub fn read_queue(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        max_total_bytes: usize,
    ) -> GetMessagesResult {
        self.shared.get_messages_inner(
            topic,
            queue_id,
            offset,
            max_msg_nums,
            max_total_bytes,
            &|_| true,
            None,
        )
    }

    /// Deletes expired CommitLog segments (older than `file_reserved_time_hours`) in the next
    /// retention rounds whatever `delete_when` says (`executeDeleteFilesManually`, 20 rounds);
    /// returns at once.
    pub fn delete_expired_files_manually(&self) {
        self.shared
            .manual_delete_rounds
            .store(MANUAL_DELETE_ROUNDS, Ordering::Release);
        self.shared.retention_waker.wake();
    }

    /// Changes the retention settings from the next round on (UPDATE_BROKER_CONFIG of
    /// `fileReservedTime`, `deleteWhen`, the disk ratios, ...).
    pub fn set_retention(&self, settings: RetentionSettings) {
        *self.shared.retention.write() = settings;
        self.shared.retention_waker.wake();
    }

    /// Topics that have ConsumeQueues, sorted.
    pub fn topics(&self) -> Vec<String> {
        let mut topics: Vec<String> = self
            .shared
            .queues
            .all()
            .iter()
            .map(|q| q.topic().to_string())
            .collect();
        topics.sort();
        topics.dedup();
        topics
    }

    /// The next queue offset to be written (0 for an unknown queue).
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.shared.max_offset_in_queue(topic, queue_id)
    }

    /// The first queue offset whose message still exists (0 for an unknown queue).
    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.shared.min_offset_in_queue(topic, queue_id)
    }

    /// The queue offset of the first (`Lower`) or last (`Upper`) message stored at or around
    /// `timestamp` (`getOffsetInQueueByTime`), clamped to the queue's range.
    pub fn offset_by_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
        boundary: Boundary,
    ) -> i64 {
        self.shared
            .offset_by_time(topic, queue_id, timestamp, boundary)
    }

    /// Store time of the oldest message still in the queue.
    pub fn earliest_message_time(&self, topic: &str, queue_id: i32) -> Option<i64> {
        self.shared.earliest_message_time(topic, queue_id)
    }

    /// The entry at `queue_offset` and its record (`None` past the queue's end or below its
    /// start). The schedule service reads `SCHEDULE_TOPIC_XXXX` this way: its tag codes are due
    /// times.
    pub fn queue_entry(&self, topic: &str, queue_id: i32, queue_offset: i64) -> Option<QueueEntry> {
        self.shared.queue_entry(topic, queue_id, queue_offset)
    }

    /// Store time of the message at `queue_offset`.
    pub fn message_store_time(&self, topic: &str, queue_id: i32, queue_offset: i64) -> Option<i64> {
        self.shared
            .message_store_time(topic, queue_id, queue_offset)
    }

    /// Whether the message at `queue_offset` is still in the page cache by Java's estimate
    /// (`checkInMemByConsumeOffset`); false if there is no such message.
    pub fn is_in_memory(&self, topic: &str, queue_id: i32, queue_offset: i64) -> bool {
        self.shared.is_in_memory(topic, queue_id, queue_offset)
    }

    /// Records starting before this CommitLog offset are cold: more than
    /// `accessMessageInMemoryHotRatio` of RAM behind the CommitLog's end (Java's
    /// `checkInColdAreaByCommitOffset`).
    pub fn cold_area_end(&self) -> i64 {
        self.shared.commit_log.max_offset() - self.shared.hot_budget
    }

    /// Whether the record at `queue_offset` is cold (Java's `isMsgInColdArea`); false without
    /// such an entry.
    pub fn is_in_cold_area(&self, topic: &str, queue_id: i32, queue_offset: i64) -> bool {
        self.shared
            .bytes_behind_writer(topic, queue_id, queue_offset)
            .is_some_and(|behind| behind > self.shared.hot_budget)
    }

    /// Readahead on the CommitLog's pages on or off from now on (Java's `dataReadAheadEnable`,
    /// changed at runtime by SET_COMMITLOG_READ_MODE). Only `madvise` calls: no I/O.
    pub fn set_commit_log_read_ahead(&self, enabled: bool) -> std::io::Result<()> {
        self.shared.commit_log.set_read_ahead(enabled)
    }

    /// Whether a pull from `queue_offset` reads pages the store no longer keeps mapped (CommitLog
    /// data more than `commit_log_resident_tail` behind the writer, or the queue's entries
    /// behind its own tail; see `release_cold_pages`): every page it touches faults, a major
    /// fault if the page cache dropped it, so the caller should read on a blocking thread and
    /// copy the records out there. Pulls of consumers that keep up read the tail and stay
    /// inline. Answering never reads a page the store released.
    pub fn is_cold_read(&self, topic: &str, queue_id: i32, queue_offset: i64) -> bool {
        self.shared.is_cold_read(topic, queue_id, queue_offset)
    }

    /// Unmaps the CommitLog pages that reads of data more than `commit_log_resident_tail` behind
    /// the writer mapped since the last call (the flush thread's sweep does it about once a
    /// second). A cold read calls it once it has copied its records out, so that the pages it
    /// faulted in leave the broker's resident set at once (a consumer catching up at hundreds of
    /// MB/s would otherwise hold a second's worth). Only `madvise` calls, over the span those
    /// reads covered: the page cache keeps the bytes. Then it asks the kernel to read the next
    /// 16 MiB after those reads into the page cache (`MADV_WILLNEED`, nothing mapped, no wait):
    /// the consumer's next read finds its pages there instead of waiting in a page fault for
    /// each readahead window (a cold Kafka consume ran 1.27× faster and spent 40 % less CPU).
    pub fn release_cold_read_pages(&self) {
        let keep = self.shared.config.commit_log_resident_tail as i64;
        if let Some(end) = self.shared.commit_log.release_cold_reads(keep) {
            self.shared.commit_log.read_ahead_of_cold_read(end, keep);
        }
    }

    /// Bytes between the start of the record at `queue_offset` and the CommitLog's end (`None`
    /// without such an entry).
    pub fn bytes_behind_writer(
        &self,
        topic: &str,
        queue_id: i32,
        queue_offset: i64,
    ) -> Option<i64> {
        self.shared
            .bytes_behind_writer(topic, queue_id, queue_offset)
    }

    /// The whole record at a CommitLog offset (view by offset message id).
    pub fn read_message(&self, physical_offset: i64) -> Option<Bytes> {
        self.shared.read_message(physical_offset)
    }

    /// Messages indexed under `key` (a `KEYS` token or a `UNIQ_KEY`) in `topic`, stored between
    /// `begin_ts` and `end_ts`, at most `max_num` (capped by `max_msgs_num_batch`), oldest first
    /// (`queryMessage`). A unique-key lookup (QUERY_MESSAGE with `_UNIQUE_KEY_QUERY`) is the
    /// same call with the `UNIQ_KEY` and `default_query_max_num`; like Java, hash collisions
    /// are left for the client to filter.
    pub fn query_messages(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin_ts: i64,
        end_ts: i64,
    ) -> QueryMessagesResult {
        let shared = &self.shared;
        let Some(index) = &shared.index else {
            return QueryMessagesResult::default();
        };
        let max = max_num.min(shared.config.max_msgs_num_batch);
        let (mut offsets, timestamp, offset) = index.query(topic, key, max, begin_ts, end_ts);
        offsets.sort_unstable();
        QueryMessagesResult {
            messages: offsets
                .into_iter()
                .filter_map(|o| shared.read_message(o))
                .collect(),
            index_last_update_timestamp: timestamp,
            index_last_update_phyoffset: offset,
        }
    }

    /// First CommitLog offset still stored (-1 when the CommitLog is empty).
    pub fn commit_log_min_offset(&self) -> i64 {
        self.shared.commit_log.min_offset()
    }

    /// Offset the next record will be written at.
    pub fn commit_log_max_offset(&self) -> i64 {
        self.shared.commit_log.max_offset()
    }

    /// Queue ids of `topic` that have a ConsumeQueue, ascending.
    pub fn queue_ids(&self, topic: &str) -> Vec<i32> {
        self.shared.queues.queue_ids(topic)
    }

    /// Drops the topics' ConsumeQueues, files included; their queue offsets restart at 0. The
    /// records stay in the CommitLog until retention removes them, so a later recovery that
    /// rebuilds missing queues from the CommitLog can bring such a queue back.
    /// The queues leave the table under the put lock (a moment); their files are unlinked
    /// after it is released, so sends elsewhere do not wait for the file system. This blocks:
    /// call it from a blocking thread. A name that could leave the store directory is ignored.
    pub fn delete_topics(&self, topics: &[&str]) {
        let shared = &self.shared;
        let topics: Vec<&str> = topics
            .iter()
            .copied()
            .filter(|t| crate::consume_queue::is_storable_topic(t))
            .collect();
        let removed: Vec<_> = {
            let guard = shared.commit_log.lock();
            topics
                .iter()
                .map(|topic| (*topic, shared.queues.remove_topic(&guard, topic)))
                .collect()
        };
        for (topic, queues) in removed {
            for queue in queues {
                if let Err(e) = queue.destroy() {
                    tracing::warn!(topic, queue_id = queue.queue_id(), error = %e, "could not delete consume queue files");
                }
            }
            if let Ok(dir) = crate::consume_queue::topic_dir(shared.queues.root(), topic) {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }

    /// Drops, files included, each ConsumeQueue whose last entry points below the CommitLog's
    /// first offset, so that none of its messages exists any more (`cleanExpiredConsumerQueue`,
    /// `mqadmin cleanExpiredCQ`); queues of topics `keep` names (Java keeps the system topics)
    /// and queues without entries stay. Returns the (topic, queue id) pairs dropped, sorted. Like
    /// [`MessageStore::delete_topics`], the files are unlinked after the put lock is released;
    /// this blocks: call it from a blocking thread.
    pub fn clean_expired_queues(&self, keep: impl Fn(&str) -> bool) -> Vec<(String, i32)> {
        let shared = &self.shared;
        // `keep` is the caller's code: ask it before taking the put lock, not under it.
        let kept: std::collections::HashSet<String> =
            self.topics().into_iter().filter(|t| keep(t)).collect();
        let expired = |queue: &crate::consume_queue::ConsumeQueue, min: i64| {
            !kept.contains(queue.topic())
                && queue.max_offset() > 0
                && queue.max_physic_offset() < min
        };
        // Most calls find nothing: look without the put lock first, so sends do not wait for a
        // scan (and a copy) of the queue table; under the lock the test is made again.
        let min = shared.commit_log.min_offset();
        if !shared.queues.all().iter().any(|q| expired(q, min)) {
            return Vec::new();
        }
        let removed = {
            let guard = shared.commit_log.lock();
            let min = shared.commit_log.min_offset();
            shared
                .queues
                .remove_queues(&guard, |queue| expired(queue, min))
        };
        let mut dropped = Vec::with_capacity(removed.len());
        for queue in removed {
            if let Err(e) = queue.destroy() {
                tracing::warn!(topic = queue.topic(), queue_id = queue.queue_id(), error = %e, "could not delete consume queue files");
            }
            if shared.queues.queue_ids(queue.topic()).is_empty() {
                if let Ok(dir) =
                    crate::consume_queue::topic_dir(shared.queues.root(), queue.topic())
                {
                    let _ = std::fs::remove_dir(dir);
                }
            }
            dropped.push((queue.topic().to_string(), queue.queue_id()));
        }
        dropped.sort();
        dropped
    }

    /// Called with (topic, queue id, new max offset) after messages reach a queue, outside the
    /// put lock.
    pub fn set_message_arrival_listener(&self, listener: ArrivalListener) {
        self.shared.listener.store(Some(Arc::new(listener)));
    }

    /// CommitLog bytes appended but not flushed yet (Java's `flushBehindBytes`).
    pub fn flush_behind_bytes(&self) -> i64 {
        let commit_log = &self.shared.commit_log;
        (commit_log.max_offset() - commit_log.flushed_where()).max(0)
    }

    /// Durations of the CommitLog flushes that wrote something, and of SYNC_FLUSH puts' waits
    /// for their group commit.
    pub fn flush_latencies(&self) -> (LatencySnapshot, LatencySnapshot) {
        let stats = &self.shared.stats;
        (
            stats.commit_log_flush_latency.snapshot(),
            stats.group_commit_wait.snapshot(),
        )
    }

    /// Numbers for `GET_BROKER_RUNTIME_INFO`, named as Java names them.
    pub fn runtime_info(&self) -> Vec<(String, String)> {
        let shared = &self.shared;
        let mut info = shared
            .stats
            .runtime_info(shared.boot_ms, shared.env.clock.now_ms());
        let disk = |path: &std::path::Path| format!("{:?}", shared.env.disk.used_ratio(path));
        let commit_log_dir = shared.config.commit_log_dir();
        info.push(("commitLogDiskRatio".to_string(), disk(&commit_log_dir)));
        info.push((
            format!("commitLogDiskRatio_{}", commit_log_dir.display()),
            disk(&commit_log_dir),
        ));
        info.push((
            "consumeQueueDiskRatio".to_string(),
            disk(&shared.config.consume_queue_dir()),
        ));
        info.push((
            "commitLogMinOffset".to_string(),
            shared.commit_log.min_offset().to_string(),
        ));
        info.push((
            "commitLogMaxOffset".to_string(),
            shared.commit_log.max_offset().to_string(),
        ));
        info.push((
            "remainHowManyDataToFlush".to_string(),
            (shared.commit_log.max_offset() - shared.commit_log.flushed_where())
                .max(0)
                .to_string(),
        ));
        info
    }

    /// Stops the services (each flushes a last time), writes the checkpoint and removes `abort`.
    /// Later puts are refused. Idempotent.
    pub fn shutdown(&self) {
        let shared = &self.shared;
        if shared.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wait for a put in progress; later ones see `shut_down` under the lock.
        drop(shared.commit_log.lock());
        shared.flush_waker.stop();
        shared.group_commit.waker.stop();
        shared.cq_flush_waker.stop();
        shared.allocator.stop();
        shared.cq_allocator.stop();
        shared.index_waker.stop();
        shared.retention_waker.stop();
        for thread in self.threads.lock().drain(..) {
            if thread.join().is_err() {
                tracing::error!("a store service thread panicked");
            }
        }
        flush::flush_consume_queues(shared, true);
        self.abort.remove();
        tracing::info!("message store shut down");
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn validate(config: &StoreConfig) -> Result<(), StoreError> {
    let bad = |what: &str| Err(StoreError::Config(what.to_string()));
    if config.commit_log_file_size < 4096 || config.commit_log_file_size > i32::MAX as u64 {
        return bad("commit_log_file_size must be between 4 KiB and 2 GiB");
    }
    if config.consume_queue_file_entries == 0 || config.consume_queue_file_size() > i32::MAX as u64
    {
        return bad("consume_queue_file_entries must be positive and the file under 2 GiB");
    }
    Ok(())
}

/// Total RAM from `/proc/meminfo`, or 16 GiB if it cannot be read.
fn physical_memory_bytes() -> i64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(16 << 30)
}
