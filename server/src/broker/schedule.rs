//! Delay levels (`ScheduleMessageService`): a send whose `DELAY` property is a level above 0 is
//! stored to `SCHEDULE_TOPIC_XXXX`, queue `level - 1`, with `REAL_TOPIC` and `REAL_QID` saying
//! where it belongs; the store gives its ConsumeQueue entry the due time as tag code. The schedule
//! service re-puts each message to its real topic and queue once it is due, and keeps each level's
//! next offset in `config/delayOffset.json` (Java's `DelayOffsetSerializeWrapper`).
//!
//! The service is one thread of its own (reads of old CommitLog pages may fault, and puts take the
//! store's lock): it walks every level's queue head, sleeps until the earliest due time (at most
//! [`IDLE_POLL_MS`]) and persists progress every `flushDelayOffsetInterval`. The decisions (what is
//! due, where a level resumes) are the pure functions of `skiff_model::delay`. The broker owns it:
//! [`ScheduleService::start`] after the store opens, [`ScheduleService::shutdown`] before the store
//! closes, which stops the thread and writes the offsets.
//!
//! A message is re-put before its level's offset moves past it, and the offset is persisted after,
//! so a `kill -9` may deliver a message twice but never loses one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use skiff_model::delay::{level_queue_id, DelayLevels, DelayProgress, Due, IDLE_POLL_MS};
use skiff_model::message::{keys, sys_flag, Properties};
use skiff_model::record::Record;
use skiff_model::route::DataVersion;
use skiff_model::topic;
use skiff_store::{MessageStore, MessageToStore, PutError};
use tracing::{error, info, warn};

use super::{now_millis, persist};
use crate::config::BrokerConfig;

/// Messages one level delivers before the others get a turn.
const BATCH_PER_LEVEL: usize = 256;
/// How long a level waits after the store refused a re-put it may take later (full disk, …).
const RETRY_AFTER_FAILED_PUT_MS: i64 = 1_000;

/// Moves a send with a delay level to `SCHEDULE_TOPIC_XXXX` (`HookUtils.handleScheduleMessage`):
/// only ordinary and committed messages, the level clamped to the highest one. Returns the level.
pub(super) fn to_schedule_topic(
    levels: &DelayLevels,
    flags: i32,
    topic_name: &mut String,
    queue_id: &mut i32,
    properties: &mut Properties,
) -> Option<i32> {
    if !matches!(
        sys_flag::transaction_type(flags),
        sys_flag::TRANSACTION_NOT_TYPE | sys_flag::TRANSACTION_COMMIT_TYPE
    ) {
        return None;
    }
    let requested = properties.delay_level()?;
    let level = levels.effective_level(requested)?;
    if level != requested {
        properties.insert(keys::DELAY_TIME_LEVEL, level.to_string());
    }
    properties.insert(keys::REAL_TOPIC, std::mem::take(topic_name));
    properties.insert(keys::REAL_QUEUE_ID, queue_id.to_string());
    *topic_name = topic::SCHEDULE_TOPIC.to_string();
    *queue_id = level_queue_id(level);
    Some(level)
}

/// `delayOffset.json`: `{"dataVersion":{…},"offsetTable":{1:12,2:0}}` (fastjson writes the integer
/// keys bare; the parser reads both forms).
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct DelayOffsetFile {
    data_version: DataVersion,
    offset_table: BTreeMap<i32, i64>,
}

/// The running schedule service.
pub(crate) struct ScheduleService {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    levels: DelayLevels,
    store: Arc<MessageStore>,
    path: PathBuf,
    flush_interval_ms: i64,
    progress: Mutex<DelayProgress>,
    data_version: Mutex<DataVersion>,
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl ScheduleService {
    /// Loads `delayOffset.json`, corrects each level's offset into its queue and starts the thread.
    pub(crate) fn start(
        config: &BrokerConfig,
        store: Arc<MessageStore>,
    ) -> anyhow::Result<ScheduleService> {
        let levels = DelayLevels::parse(&config.message_delay_level)
            .map_err(|e| anyhow::anyhow!("messageDelayLevel: {e}"))?;
        let path = persist::config_dir(&config.store_path_root_dir).join("delayOffset.json");
        let file: DelayOffsetFile = persist::load(&path).unwrap_or_default();
        let mut progress = DelayProgress::from_table(file.offset_table);
        for level in levels.levels() {
            let queue_id = level_queue_id(level);
            let min = store.min_offset_in_queue(topic::SCHEDULE_TOPIC, queue_id);
            let max = store.max_offset_in_queue(topic::SCHEDULE_TOPIC, queue_id);
            if let Some(corrected) = progress.correct(level, min, max) {
                warn!(
                    level,
                    corrected, min, max, "delay offset was outside its queue; corrected"
                );
            }
        }
        let shared = Arc::new(Shared {
            levels,
            store,
            path,
            flush_interval_ms: config.flush_delay_offset_interval as i64,
            progress: Mutex::new(progress),
            data_version: Mutex::new(file.data_version),
            stopped: Mutex::new(false),
            wake: Condvar::new(),
        });
        // A slave delivers nothing: its master re-puts the due messages, which then replicate.
        if config.broker_role == crate::config::BrokerRole::Slave {
            return Ok(ScheduleService {
                shared,
                thread: Mutex::new(None),
            });
        }
        let runner = shared.clone();
        let thread = std::thread::Builder::new()
            .name("skiff-schedule".into())
            .spawn(move || runner.run())?;
        info!(
            levels = shared.levels.max_level(),
            "schedule service started"
        );
        Ok(ScheduleService {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The delay levels in force (`messageDelayLevel`).
    pub(crate) fn levels(&self) -> &DelayLevels {
        &self.shared.levels
    }

    /// Each level's delivery offset and the table's version (GET_ALL_DELAY_OFFSET).
    pub(crate) fn snapshot(&self) -> (BTreeMap<i32, i64>, DataVersion) {
        let table = self.shared.progress.lock().table().clone();
        (table, *self.shared.data_version.lock())
    }

    /// A slave's sync (`SlaveSynchronize.syncDelayOffset`): the master's progress replaces this
    /// broker's and is written to `delayOffset.json`, so a slave promoted to master goes on
    /// delivering from where its master was. Blocking (the file write): not on async workers.
    pub(crate) fn replace_from_master(&self, table: BTreeMap<i32, i64>, data_version: DataVersion) {
        *self.shared.progress.lock() = DelayProgress::from_table(table);
        *self.shared.data_version.lock() = data_version;
        self.shared.progress.lock().mark_changed();
        self.shared.persist(false);
    }

    /// Stops the thread and writes the offsets. Blocking: call it off the async workers.
    pub(crate) fn shutdown(&self) {
        *self.shared.stopped.lock() = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
        self.shared.persist(true);
    }

    /// `scheduleMessageOffset_<level>` = `<delay offset>,<max offset>` for the runtime info.
    pub(crate) fn runtime_info(&self) -> Vec<(String, String)> {
        let progress = self.shared.progress.lock();
        progress
            .table()
            .iter()
            .map(|(&level, &offset)| {
                let max = self
                    .shared
                    .store
                    .max_offset_in_queue(topic::SCHEDULE_TOPIC, level_queue_id(level));
                (
                    format!("scheduleMessageOffset_{level}"),
                    format!("{offset},{max}"),
                )
            })
            .collect()
    }
}

impl Drop for ScheduleService {
    /// A broker dropped without [`ScheduleService::shutdown`] still stops its thread.
    fn drop(&mut self) {
        *self.shared.stopped.lock() = true;
        self.shared.wake.notify_all();
    }
}

impl Shared {
    fn run(&self) {
        let mut last_persist = now_millis();
        loop {
            if *self.stopped.lock() {
                return;
            }
            let mut wake_at = now_millis() + IDLE_POLL_MS;
            for level in self.levels.levels() {
                wake_at = wake_at.min(self.deliver_level(level));
            }
            let now = now_millis();
            if now - last_persist >= self.flush_interval_ms {
                self.persist(false);
                last_persist = now;
            }
            let mut stopped = self.stopped.lock();
            if *stopped {
                return;
            }
            let wait = (wake_at - now_millis()).max(0) as u64;
            if wait > 0 {
                self.wake
                    .wait_for(&mut stopped, Duration::from_millis(wait));
            }
        }
    }

    /// Re-puts the due head of one level's queue; returns when to look at the level again.
    fn deliver_level(&self, level: i32) -> i64 {
        let queue_id = level_queue_id(level);
        let mut offset = self.progress.lock().offset(level);
        let mut delivered = 0;
        let next = loop {
            if delivered == BATCH_PER_LEVEL || *self.stopped.lock() {
                break now_millis();
            }
            let Some(entry) = self
                .store
                .queue_entry(topic::SCHEDULE_TOPIC, queue_id, offset)
            else {
                // Caught up, or the entry's file was deleted: resume inside the queue.
                let min = self
                    .store
                    .min_offset_in_queue(topic::SCHEDULE_TOPIC, queue_id);
                if offset < min {
                    offset = min;
                    continue;
                }
                break now_millis() + IDLE_POLL_MS;
            };
            let now = now_millis();
            if let Due::At(due) = self.levels.due(level, entry.tags_code, now) {
                break due;
            }
            match entry.record.as_deref().map(|bytes| self.deliver(bytes)) {
                Some(Err(RetryLater)) => break now + RETRY_AFTER_FAILED_PUT_MS,
                // Delivered, skipped as undeliverable, or its CommitLog data is gone.
                Some(Ok(())) | None => {
                    offset += 1;
                    delivered += 1;
                }
            }
        };
        self.progress.lock().advance(level, offset);
        next
    }

    /// Re-puts one due message to its real topic and queue (`messageTimeUp`): body, flag, sys
    /// flag, born host and time and reconsume times as stored, the properties unchanged (Java
    /// builds the stored string before it clears `DELAY` from its map, so `DELAY`, `REAL_TOPIC`
    /// and `REAL_QID` stay visible to consumers).
    fn deliver(&self, bytes: &[u8]) -> Result<(), RetryLater> {
        let record = match Record::decode(bytes, false) {
            Ok(record) => record,
            Err(err) => {
                error!(%err, "undecodable record in SCHEDULE_TOPIC_XXXX; skipped");
                return Ok(());
            }
        };
        let properties_text = String::from_utf8_lossy(record.properties).into_owned();
        let properties = Properties::decode(&properties_text);
        let real_topic = properties.get(keys::REAL_TOPIC);
        let real_queue = properties
            .get(keys::REAL_QUEUE_ID)
            .and_then(|q| q.parse::<i32>().ok());
        let (Some(real_topic), Some(real_queue)) = (real_topic, real_queue) else {
            error!(
                offset = record.physical_offset,
                "delayed message without REAL_TOPIC/REAL_QID; skipped"
            );
            return Ok(());
        };
        if real_topic == topic::TRANS_HALF_TOPIC {
            error!(
                offset = record.physical_offset,
                "delayed message for the transaction half topic; discarded"
            );
            return Ok(());
        }
        let message = MessageToStore::copy_of(
            &record,
            real_topic.to_string(),
            real_queue,
            properties_text.clone(),
        );
        // Like Java (`setWaitStoreMsgOK(false)`) the service does not wait for a flush.
        match self.store.append_messages(vec![message]) {
            Ok(_) => Ok(()),
            Err(err @ (PutError::ServiceNotAvailable(_) | PutError::Io(_))) => {
                warn!(%err, "cannot deliver a delayed message yet; retrying");
                Err(RetryLater)
            }
            Err(err) => {
                error!(%err, offset = record.physical_offset, "delayed message refused by the store; skipped");
                Ok(())
            }
        }
    }

    fn persist(&self, force: bool) {
        let changed = self.progress.lock().take_changed();
        let table = match changed {
            Some(table) => table,
            None if force => self.progress.lock().table().clone(),
            None => return,
        };
        let data_version = {
            let mut version = self.data_version.lock();
            version.counter += 1;
            version.timestamp = now_millis();
            *version
        };
        let file = DelayOffsetFile {
            data_version,
            offset_table: table,
        };
        let content =
            skiff_protocol::fastjson::to_string_pretty(&file).expect("delay offsets serialize");
        if let Err(err) = persist::store(&self.path, &content) {
            warn!(file = %self.path.display(), %err, "cannot write delayOffset.json; will retry");
            self.progress.lock().mark_changed();
        }
    }
}

/// The store refused a put for a reason that may pass (full disk, shutting down).
struct RetryLater;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delayed_sends_move_to_the_schedule_topic() {
        let levels = DelayLevels::parse("1s 5s 10s").unwrap();
        let mut topic_name = "T".to_string();
        let mut queue_id = 2;
        let mut properties = Properties::decode("DELAY\u{1}2\u{2}TAGS\u{1}a\u{2}");
        let level = to_schedule_topic(&levels, 0, &mut topic_name, &mut queue_id, &mut properties);
        assert_eq!(level, Some(2));
        assert_eq!(topic_name, "SCHEDULE_TOPIC_XXXX");
        assert_eq!(queue_id, 1);
        assert_eq!(properties.get("REAL_TOPIC"), Some("T"));
        assert_eq!(properties.get("REAL_QID"), Some("2"));
        assert_eq!(properties.get("DELAY"), Some("2"));

        // Clamped to the highest level.
        let (mut t, mut q) = ("T".to_string(), 0);
        let mut p = Properties::decode("DELAY\u{1}99\u{2}");
        assert_eq!(
            to_schedule_topic(&levels, 0, &mut t, &mut q, &mut p),
            Some(3)
        );
        assert_eq!((q, p.get("DELAY")), (2, Some("3")));

        // No delay, a negative one (the DLQ marker) and prepared transactions stay.
        for (props, flags) in [
            ("TAGS\u{1}a\u{2}", 0),
            ("DELAY\u{1}0\u{2}", 0),
            ("DELAY\u{1}-1\u{2}", 0),
            ("DELAY\u{1}x\u{2}", 0),
            ("DELAY\u{1}3\u{2}", sys_flag::TRANSACTION_PREPARED_TYPE),
        ] {
            let (mut t, mut q) = ("T".to_string(), 1);
            let mut p = Properties::decode(props);
            assert_eq!(
                to_schedule_topic(&levels, flags, &mut t, &mut q, &mut p),
                None
            );
            assert_eq!((t.as_str(), q), ("T", 1));
            assert!(p.get("REAL_TOPIC").is_none());
        }
    }

    #[test]
    fn delay_offsets_are_written_as_java_writes_them() {
        let file = DelayOffsetFile {
            data_version: DataVersion::default(),
            offset_table: BTreeMap::from([(1, 12), (2, 0)]),
        };
        let text = skiff_protocol::fastjson::to_string(&file).unwrap();
        assert!(text.contains(r#""offsetTable":{1:12,2:0}"#), "{text}");
        let java = r#"{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1733000000000},"offsetTable":{3:7,1:2}}"#;
        let read: DelayOffsetFile = skiff_protocol::fastjson::from_str(java).unwrap();
        assert_eq!(read.offset_table, BTreeMap::from([(1, 2), (3, 7)]));
        assert_eq!(read.data_version.counter, 3);
        let four_nine = r#"{"offsetTable":{"1":5}}"#;
        let read: DelayOffsetFile = skiff_protocol::fastjson::from_str(four_nine).unwrap();
        assert_eq!(read.offset_table, BTreeMap::from([(1, 5)]));
    }
}
