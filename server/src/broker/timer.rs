//! 5.x timer messages (`TimerMessageStore` and `HookUtils.handleScheduleMessage`): a message with
//! `TIMER_DELIVER_MS`, `TIMER_DELAY_SEC` or `TIMER_DELAY_MS` is stored in `rmq_sys_wheel_timer`
//! (queue 0) with `TIMER_OUT_MS`, `REAL_TOPIC` and `REAL_QID`, exactly as Java stores it, and a
//! dedicated thread moves it to its real topic when due.
//!
//! The send path calls [`redirect`] (pure: properties in, topic and queue out, or Java's refusal).
//! The thread ([`TimerService`]) owns the wheel files (`skiff_store::timer`): it reads new entries
//! of the timer topic into the wheel, opens each tick when it starts, delivers each entry at its
//! own due time within the tick (Java delivers the whole tick at its end), and flushes the files
//! and the checkpoint every `timerFlushIntervalMs`. The decisions are `skiff_store::timer::clock`'s;
//! this file does the reading and the putting.
//!
//! Recovery: the timer topic is read again from the checkpoint's queue offset, skipping what the
//! TimerLog already holds, and the wheel resumes at the checkpoint's tick; so after `kill -9` a
//! message is delivered once or (if it was delivered in the last flush interval) twice, never
//! lost and never early. Without timer files (a store from before, or Java's with
//! `timerWheelEnable=false`) the state is derived from the timer topic alone, read from its start.
//!
//! Deletion (`TIMER_DEL_UNIQKEY`, what RocketMQ 5's proxy sends to cancel a timer message): a
//! delete marker is a timer message for the same delivery time whose property names its target
//! as `REAL_TOPIC+UNIQ_KEY` (`buildDeleteKey`). As in Java it is put in the wheel with the DELETE
//! magic, never delivered itself, and when its tick opens it keeps every message of that tick
//! with that key from being delivered; a marker for another tick deletes nothing.
//!
//! Not implemented: flow control by `timerCongestNumEachSlot` (Java's default never limits),
//! timer messages in a batch (Java's batch path does not look at them either: they go out at
//! once).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use skiff_model::command::{ErrorKind, Reply};
use skiff_model::hash::java_string_hash;
use skiff_model::message::{keys, sys_flag, Properties};
use skiff_model::record::Record;
use skiff_store::timer::checkpoint::TimerCheckpoint;
use skiff_store::timer::clock::{due_in_tick, OpenTick, Placement, TimerClock};
use skiff_store::timer::log::{magic, Unit};
use skiff_store::timer::{Recovered, TimerStore, TimerStoreConfig};
use skiff_store::{MessageStore, MessageToStore};
use tracing::{error, info, warn};

use super::now_millis;
use crate::config::BrokerConfig;

/// The timer topic (`TimerMessageStore.TIMER_TOPIC`).
pub(crate) const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
const TIMER_ROLL_TIMES: &str = "TIMER_ROLL_TIMES";
const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";

/// A tick with at most this many entries is delivered entry by entry at each one's due time;
/// a larger one is streamed from the TimerLog at the tick's end (Java's way), so the memory a
/// tick takes stays bounded whatever it holds.
const EXACT_TICK_LIMIT: i32 = 16_384;
/// Entries read from the timer topic, or units streamed, per turn of the loop.
const BATCH: usize = 512;
/// Longest sleep of the loop: how soon a message already due at send is delivered.
const IDLE_POLL: Duration = Duration::from_millis(10);

/// The send-path hook (`HookUtils.handleScheduleMessage` for a timer message): where a message
/// goes, `(topic, queue_id)` unchanged unless it is a timer message due later than `now_ms`, which
/// goes to [`TIMER_TOPIC`] with its properties amended. Errors are Java's replies.
pub(super) fn redirect(
    config: &BrokerConfig,
    batch: bool,
    flags: i32,
    properties: &mut Properties,
    topic: &str,
    queue_id: i32,
    now_ms: i64,
) -> Result<(String, i32), Reply> {
    let unchanged = Ok((topic.to_string(), queue_id));
    let transaction = sys_flag::transaction_type(flags);
    if batch
        || topic == TIMER_TOPIC
        || !matches!(
            transaction,
            sys_flag::TRANSACTION_NOT_TYPE | sys_flag::TRANSACTION_COMMIT_TYPE
        )
    {
        return unchanged;
    }
    let timer_keys = [
        keys::TIMER_DELIVER_MS,
        keys::TIMER_DELAY_SEC,
        keys::TIMER_DELAY_MS,
    ];
    if properties.delay_level().is_some() {
        // A delay level wins; the timer properties are dropped (`checkIfTimerMessage`).
        for key in timer_keys {
            properties.remove(key);
        }
        return unchanged;
    }
    if properties.contains(TIMER_OUT_MS) || !timer_keys.iter().any(|k| properties.contains(k)) {
        return unchanged;
    }
    if !config.timer_wheel_enable {
        return Err(Reply::error(
            ErrorKind::SystemError,
            "accurate timer message is not enabled, timerWheelEnable is false",
        ));
    }
    let illegal = || {
        Reply::error(
            ErrorKind::MessageIllegal,
            format!(
                "timer message illegal, the delay time should not be bigger than the max delay {}ms; or if set del msg, the delay time should be bigger than the current time",
                config.timer_max_delay_sec.wrapping_mul(1000)
            ),
        )
    };
    let deliver_ms = deliver_ms(properties, now_ms).ok_or_else(illegal)?;
    if deliver_ms <= now_ms {
        if properties.contains(TIMER_DEL_UNIQKEY) {
            return Err(illegal());
        }
        // Already due: stored in its topic at once, as Java does.
        return unchanged;
    }
    if deliver_ms - now_ms > config.timer_max_delay_sec.saturating_mul(1000) {
        return Err(illegal());
    }
    let precision = config.timer_precision_ms;
    // Rounded down into the tick that ends at or after the delivery time (Java's arithmetic).
    let timer_out_ms = if deliver_ms % precision == 0 {
        deliver_ms - precision
    } else {
        deliver_ms / precision * precision
    };
    properties.insert(TIMER_OUT_MS, timer_out_ms.to_string());
    properties.insert(keys::REAL_TOPIC, topic);
    properties.insert(keys::REAL_QUEUE_ID, queue_id.to_string());
    Ok((TIMER_TOPIC.to_string(), 0))
}

/// The delivery time a sender asked for, computed at `now_ms` as Java does (`TIMER_DELAY_SEC`
/// before `TIMER_DELAY_MS` before `TIMER_DELIVER_MS`, with Java's wrapping arithmetic); `None`
/// if the property is not a number.
fn deliver_ms(properties: &Properties, now_ms: i64) -> Option<i64> {
    let number = |key| properties.get(key).map(|v| v.parse::<i64>().ok());
    if let Some(sec) = number(keys::TIMER_DELAY_SEC) {
        return sec.map(|s| now_ms.wrapping_add(s.wrapping_mul(1000)));
    }
    if let Some(ms) = number(keys::TIMER_DELAY_MS) {
        return ms.map(|m| now_ms.wrapping_add(m));
    }
    number(keys::TIMER_DELIVER_MS).flatten()
}

/// The exact delivery time of a stored timer-topic record, when its properties tell it: the
/// relative delays count from the store time, which is at or after the moment Java's transform
/// computed them, so the answer is never early. A rolled record has a later store time: `None`.
fn exact_due_ms(properties: &Properties, store_timestamp: i64) -> Option<i64> {
    if properties.contains(TIMER_ROLL_TIMES) && !properties.contains(keys::TIMER_DELIVER_MS) {
        return None;
    }
    deliver_ms(properties, store_timestamp)
}

/// The timer's last checkpoint, as put on disk: what a slave asks for (GET_TIMER_CHECK_POINT).
/// Written by the timer thread, read by the admin handler.
pub(crate) type Progress = Arc<parking_lot::Mutex<Option<skiff_model::admin::TimerCheckpoint>>>;

fn published(c: TimerCheckpoint) -> skiff_model::admin::TimerCheckpoint {
    skiff_model::admin::TimerCheckpoint {
        last_read_time_ms: c.last_read_time_ms,
        last_timer_log_flush_pos: c.last_timer_log_flush_pos,
        last_timer_queue_offset: c.last_timer_queue_offset,
        master_timer_queue_offset: c.master_timer_queue_offset,
        data_version: skiff_model::route::DataVersion {
            state_version: c.state_version,
            timestamp: c.timestamp,
            counter: c.counter,
        },
    }
}

/// The running timer thread.
pub(super) struct TimerService {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl TimerService {
    /// Opens and recovers the timer files (blocking: call it off the async workers) and starts
    /// the thread; `None` when `timerWheelEnable` is off.
    pub(super) fn start(
        config: &BrokerConfig,
        store: Arc<MessageStore>,
        progress: Progress,
    ) -> anyhow::Result<Option<TimerService>> {
        if !config.timer_wheel_enable {
            return Ok(None);
        }
        if config.broker_role == crate::config::BrokerRole::Slave {
            // The master delivers timer messages; their re-puts replicate to the slave.
            info!("timerWheelEnable: the timer runs on the master only; this broker is a slave");
            return Ok(None);
        }
        let (files, recovered) = TimerStore::open(&TimerStoreConfig {
            root_dir: config.store_path_root_dir.clone(),
            precision_ms: config.timer_precision_ms,
            log_file_size: config.mapped_file_size_timer_log,
            log_resident_tail: config.commit_log_resident_tail / 64,
        })?;
        *progress.lock() = recovered.checkpoint.map(published);
        let mut timer = Timer::recover(config, files, recovered, store, now_millis());
        timer.progress = progress;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("skiff-timer".into())
            .spawn(move || timer.run(&stopping))?;
        Ok(Some(TimerService { stop, thread }))
    }

    /// Stops the thread after its current step and waits for its final flush.
    pub(super) fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        if self.thread.join().is_err() {
            error!("the timer thread panicked");
        }
    }
}

/// An entry of the open tick waiting for its due time.
#[derive(Debug)]
struct Pending {
    offset_py: i64,
    magic: i32,
    enqueue_ms: i64,
}

/// The tick being delivered.
struct Open {
    tick: OpenTick<Pending>,
    /// For a tick too large to hold: the TimerLog position where streaming continues.
    stream_from: Option<i64>,
    /// The delete keys (`REAL_TOPIC+UNIQ_KEY`) of the tick's delete markers: messages of the
    /// tick with one of these are not delivered.
    deleted: HashSet<String>,
    /// Some of the tick's messages were delivered (the checkpoint only records whole ticks).
    delivered: bool,
}

/// `TimerMessageStore.buildDeleteKey`: how a delete marker names the message it cancels.
fn delete_key(real_topic: &str, uniq_key: &str) -> String {
    format!("{real_topic}+{uniq_key}")
}

struct Timer {
    files: TimerStore,
    store: Arc<MessageStore>,
    clock: TimerClock,
    /// Next timer-topic entry to read; all before it are in the wheel or delivered.
    queue_offset: i64,
    already_in_log: HashSet<i64>,
    open: Option<Open>,
    flush_interval: Duration,
    last_flush: Instant,
    progress: Progress,
}

impl Timer {
    fn recover(
        config: &BrokerConfig,
        files: TimerStore,
        recovered: Recovered,
        store: Arc<MessageStore>,
        now_ms: i64,
    ) -> Timer {
        let precision = config.timer_precision_ms;
        let checkpoint = recovered.checkpoint;
        let read_time = TimerClock::recovered_read_time(
            checkpoint.map(|c| c.last_read_time_ms),
            now_ms,
            precision,
        );
        let min = store.min_offset_in_queue(TIMER_TOPIC, 0);
        let max = store.max_offset_in_queue(TIMER_TOPIC, 0);
        let queue_offset = checkpoint
            .map_or(min, |c| {
                c.last_timer_queue_offset.min(c.master_timer_queue_offset)
            })
            .clamp(min, max.max(min));
        info!(
            read_time,
            queue_offset,
            pending_in_topic = max - queue_offset,
            timer_log_end = recovered.log_end,
            checkpoint = checkpoint.is_some(),
            "timer recovered"
        );
        Timer {
            files,
            store,
            clock: TimerClock::new(precision, config.timer_roll_window_slot, read_time),
            queue_offset,
            already_in_log: recovered.already_in_log,
            open: None,
            flush_interval: Duration::from_millis(config.timer_flush_interval_ms),
            last_flush: Instant::now(),
            progress: Progress::default(),
        }
    }

    fn run(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Acquire) {
            let now = now_millis();
            let read_more = self.enqueue(now);
            let deliver_more = self.dequeue(now);
            if self.last_flush.elapsed() >= self.flush_interval {
                self.flush(now);
            }
            if !read_more && !deliver_more {
                std::thread::park_timeout(self.sleep(now_millis()));
            }
        }
        // The checkpoint records whole ticks: stopping inside a tick some of whose messages went
        // out would deliver them again after the restart. So that tick is finished first, each
        // message at its time (at most one tick, `timerPrecisionMs`).
        if self.open.as_ref().is_some_and(|open| open.delivered) {
            while !self.finish_open_tick(now_millis()) {
                std::thread::park_timeout(self.sleep(now_millis()));
            }
        }
        self.flush(now_millis());
        info!(
            read_time = self.clock.read_time_ms(),
            queue_offset = self.queue_offset,
            "timer stopped"
        );
    }

    /// How long nothing can become due: until the next entry of the open tick, or the next
    /// tick's start, at most [`IDLE_POLL`] (new timer-topic entries are polled for).
    fn sleep(&self, now_ms: i64) -> Duration {
        let next = match &self.open {
            Some(open) => open
                .tick
                .next_due()
                .unwrap_or(self.clock.read_time_ms() + self.clock.precision_ms()),
            None => self.clock.read_time_ms(),
        };
        Duration::from_millis((next - now_ms).clamp(1, IDLE_POLL.as_millis() as i64) as u64)
    }

    fn flush(&mut self, now_ms: i64) {
        match self
            .files
            .flush(self.clock.read_time_ms(), self.queue_offset, now_ms)
        {
            Ok(checkpoint) => *self.progress.lock() = Some(published(checkpoint)),
            Err(e) => {
                error!(error = %e, "cannot flush the timer files; retrying at the next interval")
            }
        }
        self.last_flush = Instant::now();
    }

    /// Reads new timer-topic entries into the wheel (`TimerEnqueueGetService` and
    /// `TimerEnqueuePutService`). True if there may be more to read now.
    fn enqueue(&mut self, now_ms: i64) -> bool {
        let got =
            self.store
                .read_queue(TIMER_TOPIC, 0, self.queue_offset, BATCH as i32, usize::MAX);
        let count = got.messages.len();
        for bytes in &got.messages {
            let record = match Record::decode(bytes, false) {
                Ok(record) => record,
                Err(e) => {
                    warn!(error = %e, "unreadable record in {TIMER_TOPIC}; skipped");
                    continue;
                }
            };
            if !self.already_in_log.remove(&record.physical_offset) {
                self.place(&record, now_ms);
            }
        }
        self.queue_offset = got.next_begin_offset;
        count == BATCH
    }

    fn place(&mut self, record: &Record<'_>, now_ms: i64) {
        let properties = record.parsed_properties();
        let Some(timer_out) = properties
            .get(TIMER_OUT_MS)
            .and_then(|v| v.parse::<i64>().ok())
        else {
            warn!(
                offset = record.physical_offset,
                "{TIMER_TOPIC} message without a valid {TIMER_OUT_MS}; skipped"
            );
            return;
        };
        let mut unit_magic = magic::DEFAULT;
        if properties.contains(TIMER_DEL_UNIQKEY) {
            unit_magic |= magic::DELETE;
        }
        match self.clock.place(timer_out, now_ms) {
            Placement::Now => self.deliver(record, properties, i64::MAX, false, now_ms),
            Placement::Wheel { slot_ms, roll } => {
                if roll {
                    unit_magic |= magic::ROLL;
                }
                let write_ms =
                    now_ms.div_euclid(self.clock.precision_ms()) * self.clock.precision_ms();
                let topic_hash = properties.get(keys::REAL_TOPIC).map_or(0, java_string_hash);
                if let Err(e) = self.files.add(
                    slot_ms,
                    write_ms,
                    record.physical_offset,
                    record.total_size,
                    unit_magic,
                    topic_hash,
                ) {
                    // Not in the wheel: deliver rather than lose it.
                    error!(error = %e, "cannot append to the timer log; delivering the message now");
                    self.deliver(record, properties, i64::MAX, false, now_ms);
                    return;
                }
                let precision = self.clock.precision_ms();
                if let Some(open) = self.open.as_mut() {
                    // The open tick was read already: it learns of its new entry here.
                    if open.tick.slot_ms == slot_ms && unit_magic & magic::DELETE != 0 && !roll {
                        if let Some(key) = properties.get(TIMER_DEL_UNIQKEY) {
                            open.deleted.insert(key.to_string());
                        }
                    } else if open.tick.slot_ms == slot_ms {
                        let due = if roll {
                            slot_ms
                        } else {
                            due_in_tick(
                                exact_due_ms(&properties, record.store_timestamp),
                                slot_ms,
                                precision,
                            )
                        };
                        open.tick.push(
                            due,
                            Pending {
                                offset_py: record.physical_offset,
                                magic: unit_magic,
                                enqueue_ms: write_ms,
                            },
                        );
                    }
                }
            }
        }
    }

    /// Delivers what is due (`TimerDequeueGetService` and the put services). True if there is
    /// more to deliver now (a large tick being streamed, or ticks to catch up on).
    fn dequeue(&mut self, now_ms: i64) -> bool {
        let mut ticks = 0;
        loop {
            if self.open.is_none() {
                if !self.clock.tick_opens(now_ms) {
                    return false;
                }
                self.open = Some(self.open_tick());
            }
            let open = self.open.as_mut().expect("opened above");
            let due = open.tick.take_due(now_ms);
            open.delivered |= !due.is_empty();
            for pending in due {
                self.deliver_pending(&pending, now_ms);
            }
            if !self.clock.tick_closes(now_ms) {
                return false;
            }
            let slot_ms = self.clock.read_time_ms();
            let open = self.open.as_mut().expect("opened above");
            if let Some(from) = open.stream_from {
                let (units, next) = self.files.walk(slot_ms, from, BATCH);
                open.stream_from = next;
                open.delivered = true;
                for unit in units {
                    self.deliver_unit(&unit, now_ms);
                }
                if next.is_some() {
                    return true;
                }
            }
            self.clock.advance();
            self.open = None;
            ticks += 1;
            if ticks >= BATCH {
                // Catching up after a stop: let the loop read and flush in between.
                return true;
            }
        }
    }

    /// At a stop: delivers what of the open tick is due and, once the tick is over, the rest of
    /// a streamed one, then closes it without opening the next. True once closed.
    fn finish_open_tick(&mut self, now_ms: i64) -> bool {
        let Some(open) = self.open.as_mut() else {
            return true;
        };
        let due = open.tick.take_due(now_ms);
        for pending in due {
            self.deliver_pending(&pending, now_ms);
        }
        if !self.clock.tick_closes(now_ms) {
            return false;
        }
        let slot_ms = self.clock.read_time_ms();
        while let Some(from) = self.open.as_ref().and_then(|open| open.stream_from) {
            let (units, next) = self.files.walk(slot_ms, from, BATCH);
            for unit in units {
                self.deliver_unit(&unit, now_ms);
            }
            if let Some(open) = self.open.as_mut() {
                open.stream_from = next;
            }
        }
        self.clock.advance();
        self.open = None;
        true
    }

    /// Reads the read tick's units: each entry's due time comes from its message, so a small
    /// tick is held in memory and delivered entry by entry; a large one is streamed at its end.
    fn open_tick(&mut self) -> Open {
        let slot_ms = self.clock.read_time_ms();
        let precision = self.clock.precision_ms();
        let mut open = Open {
            tick: OpenTick::new(slot_ms),
            stream_from: None,
            deleted: HashSet::new(),
            delivered: false,
        };
        let Some(newest) = self.files.newest(slot_ms) else {
            return open;
        };
        if self.files.count(slot_ms) > EXACT_TICK_LIMIT {
            // Java reads a tick's delete markers before any of its messages: so does this pass
            // over the units (markers are few; only theirs are read from the CommitLog).
            let mut from = Some(newest);
            while let Some(position) = from {
                let (units, next) = self.files.walk(slot_ms, position, BATCH);
                for unit in units.iter().filter(|u| is_delete_marker(u.magic)) {
                    open.deleted.extend(self.marker_key(unit.offset_py));
                }
                from = next;
            }
            open.stream_from = Some(newest);
            return open;
        }
        let (units, _) = self
            .files
            .walk(slot_ms, newest, EXACT_TICK_LIMIT as usize * 2);
        for unit in units {
            if is_delete_marker(unit.magic) {
                open.deleted.extend(self.marker_key(unit.offset_py));
                continue;
            }
            let due = if unit.magic & magic::ROLL != 0 {
                slot_ms
            } else {
                let exact = self.store.read_message(unit.offset_py).and_then(|bytes| {
                    let record = Record::decode(&bytes, false).ok()?;
                    exact_due_ms(&record.parsed_properties(), record.store_timestamp)
                });
                due_in_tick(exact, slot_ms, precision)
            };
            open.tick.push(
                due,
                Pending {
                    offset_py: unit.offset_py,
                    magic: unit.magic,
                    enqueue_ms: unit.enqueue_ms,
                },
            );
        }
        open
    }

    /// The delete key a delete marker at `offset_py` carries.
    fn marker_key(&self, offset_py: i64) -> Option<String> {
        let bytes = self.store.read_message(offset_py)?;
        let record = Record::decode(&bytes, false).ok()?;
        record
            .parsed_properties()
            .get(TIMER_DEL_UNIQKEY)
            .map(str::to_string)
    }

    fn deliver_unit(&mut self, unit: &Unit, now_ms: i64) {
        self.deliver_pending(
            &Pending {
                offset_py: unit.offset_py,
                magic: unit.magic,
                enqueue_ms: unit.enqueue_ms,
            },
            now_ms,
        );
    }

    fn deliver_pending(&mut self, pending: &Pending, now_ms: i64) {
        let roll = pending.magic & magic::ROLL != 0;
        if is_delete_marker(pending.magic) {
            // Its key was taken when the tick opened; a marker is not a message to deliver.
            return;
        }
        let Some(bytes) = self.store.read_message(pending.offset_py) else {
            warn!(
                offset = pending.offset_py,
                "timer message no longer in the CommitLog (deleted by retention?); skipped"
            );
            return;
        };
        match Record::decode(&bytes, false) {
            Ok(record) => {
                let properties = record.parsed_properties();
                if !roll && self.is_deleted(&properties) {
                    info!(
                        offset = pending.offset_py,
                        uniq_key = properties.uniq_key().unwrap_or_default(),
                        "timer message deleted by a {TIMER_DEL_UNIQKEY} marker; not delivered"
                    );
                    return;
                }
                self.deliver(&record, properties, pending.enqueue_ms, roll, now_ms);
            }
            Err(e) => {
                warn!(offset = pending.offset_py, error = %e, "unreadable timer message; skipped")
            }
        }
    }

    /// Whether a delete marker of the open tick cancels this message.
    fn is_deleted(&self, properties: &Properties) -> bool {
        let Some(open) = self.open.as_ref().filter(|o| !o.deleted.is_empty()) else {
            return false;
        };
        match (properties.get(keys::REAL_TOPIC), properties.uniq_key()) {
            (Some(topic), Some(uniq)) => open.deleted.contains(&delete_key(topic, uniq)),
            _ => false,
        }
    }

    /// Puts the message in its real topic, or back on the timer topic when rolled
    /// (`convert` / `convertMessage` / `doPut`).
    fn deliver(
        &mut self,
        record: &Record<'_>,
        mut properties: Properties,
        enqueue_ms: i64,
        roll: bool,
        now_ms: i64,
    ) {
        if !roll && properties.contains(TIMER_DEL_UNIQKEY) {
            // A marker already due when it was read (`doPut` refuses to put one).
            warn!(
                offset = record.physical_offset,
                "a {TIMER_DEL_UNIQKEY} marker came due without its tick; dropped"
            );
            return;
        }
        properties.insert(TIMER_ENQUEUE_MS, enqueue_ms.to_string());
        if roll {
            let times = properties
                .get(TIMER_ROLL_TIMES)
                .and_then(|v| v.parse::<i32>().ok())
                .unwrap_or(0);
            properties.insert(TIMER_ROLL_TIMES, (times + 1).to_string());
        }
        properties.insert(TIMER_DEQUEUE_MS, now_ms.to_string());
        let (topic, queue_id) = if roll {
            (record.topic.to_string(), record.queue_id)
        } else {
            // They stay in the stored properties: Java clears them after it has encoded the
            // properties, so its delivered messages carry them too.
            let topic = properties.get(keys::REAL_TOPIC).map(str::to_string);
            let queue_id = properties
                .get(keys::REAL_QUEUE_ID)
                .and_then(|q| q.parse::<i32>().ok());
            match (topic, queue_id) {
                (Some(topic), Some(queue_id)) => (topic, queue_id),
                _ => {
                    warn!(
                        offset = record.physical_offset,
                        "timer message without REAL_TOPIC/REAL_QID; skipped"
                    );
                    return;
                }
            }
        };
        let message = MessageToStore::copy_of(record, topic, queue_id, properties.encode());
        // Java retries a put that may succeed later three times, half a tick apart.
        for attempt in 1..=3 {
            match self.store.append_messages(vec![message.clone()]) {
                // A sync-flush wait is not needed: nobody waits for this put.
                Ok(_) => return,
                Err(e @ skiff_store::PutError::ServiceNotAvailable(_))
                | Err(e @ skiff_store::PutError::Io(_))
                    if attempt < 3 =>
                {
                    warn!(error = %e, attempt, "timer delivery failed; retrying");
                    std::thread::sleep(Duration::from_millis(
                        (self.clock.precision_ms() / 2) as u64,
                    ));
                }
                Err(e) => {
                    error!(error = %e, topic = %message.topic, "timer message could not be delivered; dropped");
                    return;
                }
            }
        }
    }
}

/// A delete marker that is to take effect in its tick (a rolled one goes round the wheel again).
fn is_delete_marker(unit_magic: i32) -> bool {
    unit_magic & magic::DELETE != 0 && unit_magic & magic::ROLL == 0
}

#[cfg(test)]
mod tests;
