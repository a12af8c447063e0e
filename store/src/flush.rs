//! Getting written bytes to disk (Java's `FlushRealTimeService`, `GroupCommitService` and
//! `FlushConsumeQueueService`). Each runs on its own OS thread and does a last full flush when
//! stopped.
//!
//! * Async flush: every `flush_interval_commit_log_ms` (or, with `flush_commit_log_timed` off,
//!   when woken by a put) msync the CommitLog if at least `flush_commit_log_least_pages` pages are
//!   dirty, and everything at least every `flush_commit_log_thorough_interval_ms`.
//! * Sync flush (group commit): puts enqueue "flush up to my end offset" and await a oneshot; the
//!   thread takes all pending requests at once, flushes once, and answers every request the flush
//!   covered. Many concurrent puts therefore share one msync.
//! * ConsumeQueues: every `flush_interval_consume_queue_ms`, with the checkpoint written on each
//!   thorough flush.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use crate::consume_queue;
use crate::message_store::Shared;
use crate::stats::Stats;

/// Wakes a service thread early, or stops it (Java's `ServiceThread.waitForRunning`).
#[derive(Default)]
pub(crate) struct Waker {
    notified: AtomicBool,
    stopped: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Waker {
    /// Sleeps up to `timeout` unless woken; false once stopped.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        if !self.notified.swap(false, Ordering::AcqRel) && !self.is_stopped() {
            let mut guard = self.lock.lock();
            if !self.notified.load(Ordering::Acquire) && !self.is_stopped() {
                self.cv.wait_for(&mut guard, timeout);
            }
            self.notified.store(false, Ordering::Release);
        }
        !self.is_stopped()
    }

    /// Cheap when the thread was already woken and has not run yet.
    pub(crate) fn wake(&self) {
        if !self.notified.swap(true, Ordering::AcqRel) {
            let _guard = self.lock.lock();
            self.cv.notify_one();
        }
    }

    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let _guard = self.lock.lock();
        self.cv.notify_all();
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

/// A put waiting for the CommitLog to be flushed up to `end`.
struct FlushRequest {
    end: i64,
    done: oneshot::Sender<bool>,
    /// When the put asked: its wait goes into `group_commit_wait`.
    asked: std::time::Instant,
}

/// Pending sync-flush requests.
#[derive(Default)]
pub(crate) struct GroupCommit {
    pending: Mutex<Pending>,
    pub(crate) waker: Waker,
}

#[derive(Default)]
struct Pending {
    requests: Vec<FlushRequest>,
    /// The thread has taken its last batch; later requests are answered "not confirmed".
    closed: bool,
}

impl GroupCommit {
    /// Registers a wait for `end`; the receiver gets true once it is on disk.
    pub(crate) fn request(&self, end: i64) -> oneshot::Receiver<bool> {
        let (done, receiver) = oneshot::channel();
        let mut pending = self.pending.lock();
        if pending.closed {
            let _ = done.send(false);
        } else {
            pending.requests.push(FlushRequest {
                end,
                done,
                asked: std::time::Instant::now(),
            });
            drop(pending);
            self.waker.wake();
        }
        receiver
    }

    fn take(&self, close: bool) -> Vec<FlushRequest> {
        let mut pending = self.pending.lock();
        pending.closed |= close;
        std::mem::take(&mut pending.requests)
    }
}

/// Flushes the CommitLog (`least_pages` as in the config) and advances the checkpoint's
/// physicMsgTimestamp to the newest record known to be on disk.
fn flush_commit_log(shared: &Shared, least_pages: usize) -> std::io::Result<i64> {
    let commit_log = &shared.commit_log;
    // Timestamp first, then the end: the record carrying the timestamp lies below that end.
    let timestamp = commit_log
        .files
        .current()
        .map_or(0, |f| f.store_timestamp());
    let end = commit_log.max_offset();
    let before = commit_log.flushed_where();
    let began = std::time::Instant::now();
    let flushed = commit_log.files.flush(least_pages)?;
    if flushed > before {
        Stats::add(&shared.stats.commit_log_flush_times, 1);
        shared
            .stats
            .commit_log_flush_latency
            .record(began.elapsed());
    }
    if flushed >= end && timestamp > 0 {
        shared.checkpoint.set_physic_msg_timestamp(timestamp);
    }
    Ok(flushed)
}

/// The async flush thread. With `flushCommitLogTimed` (Java's default) it flushes once every
/// `flushIntervalCommitLog`; otherwise whenever a put wakes it (see
/// [`wants_async_flush`]). Puts also wake it to populate pages ahead of the writer, which it does
/// on every wake.
pub(crate) fn run_async_flush(shared: Arc<Shared>) {
    let config = &shared.config;
    let interval = Duration::from_millis(config.flush_interval_commit_log_ms);
    let mut last_thorough = shared.env.clock.now_ms();
    let mut next_flush = Instant::now() + interval;
    let mut wait = interval;
    while shared.flush_waker.wait(wait) {
        if !config.flush_commit_log_timed || Instant::now() >= next_flush {
            let now = shared.env.clock.now_ms();
            let mut least_pages = config.flush_commit_log_least_pages as usize;
            if now >= last_thorough + config.flush_commit_log_thorough_interval_ms as i64 {
                last_thorough = now;
                least_pages = 0;
            }
            if let Err(e) = flush_commit_log(&shared, least_pages) {
                tracing::error!(error = %e, "commit log flush failed");
            }
            next_flush = Instant::now() + interval;
        }
        shared.commit_log.populate_ahead();
        shared
            .commit_log
            .release_behind_writer(config.commit_log_resident_tail as i64);
        if config.flush_commit_log_timed {
            wait = next_flush.saturating_duration_since(Instant::now());
        }
    }
    final_flush(&shared);
}

/// Whether a put that ended at `end` wakes the async flush thread: to populate pages ahead of
/// the writer, or, when flushes are not timed, once `flushCommitLogLeastPages` are dirty (Java
/// wakes it on every put, a futex wake that costs more than the append).
pub(crate) fn wants_async_flush(shared: &Shared, end: i64) -> bool {
    let commit_log = &shared.commit_log;
    if commit_log.wants_populate(end) {
        return true;
    }
    let config = &shared.config;
    let least = i64::from(config.flush_commit_log_least_pages.max(1));
    !config.flush_commit_log_timed
        && end - commit_log.flushed_where() >= least * crate::mapped_file::OS_PAGE_SIZE as i64
}

/// The group commit thread (sync flush).
pub(crate) fn run_group_commit(shared: Arc<Shared>) {
    let group = &shared.group_commit;
    while group.waker.wait(Duration::from_millis(10)) {
        commit_group(&shared, group.take(false));
        shared.commit_log.populate_ahead();
        shared
            .commit_log
            .release_behind_writer(shared.config.commit_log_resident_tail as i64);
    }
    // Puts that raced with the stop still get their answer.
    commit_group(&shared, group.take(true));
    final_flush(&shared);
}

fn commit_group(shared: &Shared, requests: Vec<FlushRequest>) {
    let mut flushed = flush_commit_log(shared, 0);
    for request in requests {
        if matches!(flushed, Ok(at) if at < request.end) {
            // Written after the flush started: one more round covers it.
            flushed = flush_commit_log(shared, 0);
        }
        let ok = matches!(flushed, Ok(at) if at >= request.end);
        shared
            .stats
            .group_commit_wait
            .record(request.asked.elapsed());
        let _ = request.done.send(ok);
    }
    if let Err(e) = flushed {
        tracing::error!(error = %e, "commit log flush failed");
    }
}

fn final_flush(shared: &Shared) {
    for attempt in 1..=3 {
        match flush_commit_log(shared, 0) {
            Ok(_) => return,
            Err(e) => tracing::error!(error = %e, attempt, "final commit log flush failed"),
        }
    }
}

/// The ConsumeQueue flush thread.
pub(crate) fn run_consume_queue_flush(shared: Arc<Shared>) {
    let interval = Duration::from_millis(shared.config.flush_interval_consume_queue_ms);
    let mut last_thorough = shared.env.clock.now_ms();
    while shared.cq_flush_waker.wait(interval) {
        let now = shared.env.clock.now_ms();
        let thorough =
            now >= last_thorough + shared.config.flush_consume_queue_thorough_interval_ms as i64;
        if thorough {
            last_thorough = now;
        }
        flush_consume_queues(&shared, thorough);
        // This thread ticks about once a second: a fine clock for the TPS samples, and often
        // enough to keep the CommitLog's resident pages near its tail.
        shared.stats.sample(now);
        release_cold_pages(&shared);
    }
    flush_consume_queues(&shared, true);
}

/// Unmaps the pages of the CommitLog more than `commitLogResidentTail` behind its write position,
/// and of each ConsumeQueue more than [`consume_queue::resident_tail`] behind its last entry: the
/// broker's resident set is the tails in use, not every page written or read since start.
fn release_cold_pages(shared: &Shared) {
    let keep = shared.config.commit_log_resident_tail as i64;
    shared.commit_log.release_cold_pages(keep);
    for queue in shared.queues.all() {
        if let Err(e) = queue.release_cold_pages(consume_queue::resident_tail(keep)) {
            tracing::debug!(topic = queue.topic(), queue_id = queue.queue_id(), error = %e, "cannot release consume queue pages");
        }
    }
}

/// Flushes every queue; a thorough flush also persists the checkpoint with the ConsumeQueue
/// timestamp read before flushing (so it never claims more than what reached the disk).
pub(crate) fn flush_consume_queues(shared: &Shared, thorough: bool) {
    let least_pages = if thorough {
        0
    } else {
        shared.config.flush_consume_queue_least_pages as usize
    };
    let logics_timestamp = shared.checkpoint.logics_msg_timestamp();
    for queue in shared.queues.all() {
        if let Err(e) = queue.flush(least_pages) {
            tracing::error!(topic = queue.topic(), queue_id = queue.queue_id(), error = %e, "consume queue flush failed");
        }
    }
    if thorough {
        if logics_timestamp > 0 {
            shared.checkpoint.set_logics_msg_timestamp(logics_timestamp);
        }
        if let Err(e) = shared.checkpoint.flush() {
            tracing::error!(error = %e, "checkpoint flush failed");
        }
    }
}
