//! Committed consumer offsets (`ConsumerOffsetManager`), keyed `topic@group` → queue → offset and
//! persisted as `config/consumerOffset.json` every few seconds and at shutdown. Pull offsets (how
//! far a group has fetched, committed or not) are kept in memory for consume statistics only.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tracing::warn;

use super::config_file::ConfigFile;
use super::persist;
use crate::config::BrokerConfig;

/// Separates topic and group in the table key (`ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR`).
const TOPIC_GROUP_SEPARATOR: char = '@';

type OffsetTable = HashMap<String, BTreeMap<i32, i64>>;

pub struct ConsumerOffsetManager {
    committed: Arc<RwLock<OffsetTable>>,
    pulled: RwLock<OffsetTable>,
    /// Offsets an operator reset that the group's next pull of the queue is told
    /// (`resetOffsetTable`), and how many there are, so that pulls skip the lock when none are.
    resets: RwLock<OffsetTable>,
    pending_resets: AtomicUsize,
    dirty: AtomicBool,
    /// The one writer of `consumerOffset.json`.
    file: ConfigFile,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}{TOPIC_GROUP_SEPARATOR}{group}")
}

impl ConsumerOffsetManager {
    pub fn load(config: &BrokerConfig) -> Self {
        let path = persist::config_dir(&config.store_path_root_dir).join("consumerOffset.json");
        #[derive(serde::Deserialize, Default)]
        #[serde(rename_all = "camelCase", default)]
        struct OffsetsFile {
            offset_table: HashMap<String, BTreeMap<i32, i64>>,
        }
        let committed = persist::load::<OffsetsFile>(&path)
            .unwrap_or_default()
            .offset_table;
        let committed = Arc::new(RwLock::new(committed));
        let file = ConfigFile::spawn(path, skiff_store::fs::real(), {
            let committed = committed.clone();
            move || {
                let table: BTreeMap<String, BTreeMap<i32, i64>> = committed
                    .read()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                skiff_protocol::fastjson::consumer_offset_file(&table)
            }
        });
        ConsumerOffsetManager {
            committed,
            pulled: RwLock::new(OffsetTable::new()),
            resets: RwLock::new(OffsetTable::new()),
            pending_resets: AtomicUsize::new(0),
            dirty: AtomicBool::new(false),
            file,
        }
    }

    /// The group's committed offset on a queue.
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.committed
            .read()
            .get(&key(topic, group))
            .and_then(|queues| queues.get(&queue_id))
            .copied()
    }

    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.committed
            .write()
            .entry(key(topic, group))
            .or_default()
            .insert(queue_id, offset);
        self.dirty.store(true, Ordering::Release);
    }

    /// Every committed offset, `topic@group` → queue → offset (GET_ALL_CONSUMER_OFFSET).
    pub fn snapshot(&self) -> BTreeMap<String, BTreeMap<i32, i64>> {
        self.committed
            .read()
            .iter()
            .map(|(key, queues)| (key.clone(), queues.clone()))
            .collect()
    }

    /// A slave's sync (`SlaveSynchronize.syncConsumerOffset`): the master's offsets replace
    /// this broker's for the keys the master has; keys only the slave has stay, as in Java.
    pub fn merge_from_master(&self, table: BTreeMap<String, BTreeMap<i32, i64>>) {
        self.committed.write().extend(table);
        self.dirty.store(true, Ordering::Release);
    }

    /// An operator's reset (`assignResetOffset`): committed now, and told to the group's next
    /// pull of the queue (a consumer online overwrites the commit until it hears of the reset).
    pub fn assign_reset(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut resets = self.resets.write();
        if resets
            .entry(key(topic, group))
            .or_default()
            .insert(queue_id, offset)
            .is_none()
        {
            self.pending_resets.fetch_add(1, Ordering::AcqRel);
        }
        drop(resets);
        self.commit(group, topic, queue_id, offset);
    }

    /// The reset waiting for this pull, taken (`queryThenEraseResetOffset`).
    pub fn take_reset(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        if self.pending_resets.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut resets = self.resets.write();
        let key = key(topic, group);
        let queues = resets.get_mut(&key)?;
        let offset = queues.remove(&queue_id)?;
        if queues.is_empty() {
            resets.remove(&key);
        }
        self.pending_resets.fetch_sub(1, Ordering::AcqRel);
        Some(offset)
    }

    /// Copies `src`'s committed offsets on `topic` to `dest` (`cloneOffset`); false if `src` has
    /// none there.
    pub fn clone_offsets(&self, src: &str, dest: &str, topic: &str) -> bool {
        let mut committed = self.committed.write();
        let Some(offsets) = committed.get(&key(topic, src)).cloned() else {
            return false;
        };
        committed.insert(key(topic, dest), offsets);
        drop(committed);
        self.dirty.store(true, Ordering::Release);
        true
    }

    /// Records how far a group has pulled (`commitPullOffset`).
    pub fn record_pull(&self, group: &str, topic: &str, queue_id: i32, next_offset: i64) {
        self.pulled
            .write()
            .entry(key(topic, group))
            .or_default()
            .insert(queue_id, next_offset);
    }

    pub fn pulled(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.pulled
            .read()
            .get(&key(topic, group))
            .and_then(|queues| queues.get(&queue_id))
            .copied()
    }

    /// Every group with a committed offset.
    pub fn groups(&self) -> BTreeSet<String> {
        self.committed
            .read()
            .keys()
            .filter_map(|key| key.split_once(TOPIC_GROUP_SEPARATOR))
            .map(|(_, group)| group.to_string())
            .collect()
    }

    /// Topics on which `group` has committed offsets (`whichTopicByConsumer`).
    pub fn topics_of_group(&self, group: &str) -> Vec<String> {
        let mut topics: Vec<String> = self
            .committed
            .read()
            .keys()
            .filter_map(|k| k.rsplit_once(TOPIC_GROUP_SEPARATOR))
            .filter(|(_, g)| *g == group)
            .map(|(t, _)| t.to_string())
            .collect();
        topics.sort();
        topics
    }

    /// Groups with committed offsets on `topic` (`whichGroupByTopic`), sorted.
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        let mut groups: Vec<String> = self
            .committed
            .read()
            .keys()
            .filter_map(|k| k.split_once(TOPIC_GROUP_SEPARATOR))
            .filter(|(t, _)| *t == topic)
            .map(|(_, g)| g.to_string())
            .collect();
        groups.sort();
        groups
    }

    /// Forgets `group`'s offsets on every topic (`removeOffset`).
    pub fn remove_group(&self, group: &str) {
        let keep = |k: &String| {
            k.rsplit_once(TOPIC_GROUP_SEPARATOR)
                .is_none_or(|(_, g)| g != group)
        };
        for table in [&self.committed, &self.pulled] {
            table.write().retain(|k, _| keep(k));
        }
        self.retain_resets(keep);
        self.dirty.store(true, Ordering::Release);
    }

    fn retain_resets(&self, keep: impl Fn(&String) -> bool) {
        let mut resets = self.resets.write();
        resets.retain(|k, _| keep(k));
        let pending = resets.values().map(BTreeMap::len).sum();
        self.pending_resets.store(pending, Ordering::Release);
    }

    /// Forgets every group's offsets on `topic`.
    pub fn remove_topic(&self, topic: &str) {
        let prefix = format!("{topic}{TOPIC_GROUP_SEPARATOR}");
        for table in [&self.committed, &self.pulled] {
            table.write().retain(|k, _| !k.starts_with(&prefix));
        }
        self.retain_resets(|k| !k.starts_with(&prefix));
        self.dirty.store(true, Ordering::Release);
    }

    /// Writes `consumerOffset.json` if anything changed since the last write.
    /// Writes `consumerOffset.json` if offsets changed, and waits for it. Blocks: not for async
    /// workers (shutdown runs it on a blocking thread).
    pub fn persist_if_dirty(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) && !self.file.flush(Duration::from_secs(10)) {
            warn!(file = %self.file.path().display(), "consumerOffset.json not written yet");
        }
    }

    /// Asks the writer thread to write `consumerOffset.json` if offsets changed; returns at once
    /// (the periodic `flushConsumerOffsetInterval` task). A failed write is retried by the writer.
    pub fn request_persist_if_dirty(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) {
            self.file.request();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let offsets = ConsumerOffsetManager::load(&config);
        assert_eq!(offsets.query("g", "T", 0), None);
        offsets.commit("g", "T", 0, 12);
        offsets.commit("g", "T2", 3, 7);
        offsets.commit("other", "U", 1, 1);
        offsets.persist_if_dirty();
        let reloaded = ConsumerOffsetManager::load(&config);
        assert_eq!(reloaded.query("g", "T", 0), Some(12));
        assert_eq!(reloaded.query("g", "T2", 3), Some(7));
        assert_eq!(reloaded.topics_of_group("g"), ["T", "T2"]);
        reloaded.commit("h", "T", 0, 1);
        assert_eq!(reloaded.groups_of_topic("T"), ["g", "h"]);
        assert!(reloaded.groups_of_topic("absent").is_empty());
        reloaded.remove_group("h");
        assert_eq!(reloaded.groups_of_topic("T"), ["g"]);
        assert_eq!(reloaded.query("g", "T2", 3), Some(7));
        reloaded.remove_topic("T");
        assert_eq!(reloaded.query("g", "T", 0), None);
        assert_eq!(reloaded.query("g", "T2", 3), Some(7));
    }

    #[test]
    fn a_reset_is_committed_and_told_to_one_pull_of_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let offsets = ConsumerOffsetManager::load(&config);
        assert_eq!(offsets.take_reset("g", "T", 0), None);
        offsets.commit("g", "T", 0, 40);
        offsets.assign_reset("g", "T", 0, 3);
        offsets.assign_reset("g", "T", 1, 5);
        offsets.assign_reset("g", "T", 1, 6);
        assert_eq!(offsets.query("g", "T", 0), Some(3));
        assert_eq!(offsets.take_reset("other", "T", 0), None);
        assert_eq!(offsets.take_reset("g", "T", 0), Some(3));
        assert_eq!(offsets.take_reset("g", "T", 0), None, "told once");
        assert_eq!(offsets.pending_resets.load(Ordering::Acquire), 1);
        offsets.remove_topic("T");
        assert_eq!(offsets.pending_resets.load(Ordering::Acquire), 0);
        assert_eq!(offsets.take_reset("g", "T", 1), None);
    }

    #[test]
    fn offsets_clone_to_another_group() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let offsets = ConsumerOffsetManager::load(&config);
        assert!(!offsets.clone_offsets("src", "dest", "T"));
        offsets.commit("src", "T", 0, 4);
        offsets.commit("src", "T", 3, 9);
        offsets.commit("dest", "T", 5, 1);
        assert!(offsets.clone_offsets("src", "dest", "T"));
        assert_eq!(offsets.query("dest", "T", 0), Some(4));
        assert_eq!(offsets.query("dest", "T", 3), Some(9));
        assert_eq!(
            offsets.query("dest", "T", 5),
            None,
            "replaced, as Java's put"
        );
    }
}
