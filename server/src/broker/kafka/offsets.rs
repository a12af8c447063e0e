//! Offsets committed by Kafka consumer groups, in `config/kafkaConsumerOffsets.json`: the
//! offset, its leader epoch, the client's metadata string and the commit time, per group, topic
//! and partition. Kafka groups are kept apart from RocketMQ's (`consumerOffset.json`), so a group
//! name used by both protocols does not mix two rebalancing schemes.
//!
//! A commit is answered once it is on disk, as Kafka answers once its offsets topic has it: the
//! file has one writer (`ConfigFile`) that coalesces commits arriving while it writes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::broker::config_file::ConfigFile;
use crate::broker::persist;

/// How long a commit waits for its write before it is answered with an error.
const DURABLE_WITHIN: Duration = Duration::from_secs(10);

/// One committed offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Committed {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
}

/// group → (topic, partition) → offset.
type Table = BTreeMap<String, BTreeMap<String, BTreeMap<i32, Committed>>>;

pub(super) struct GroupOffsets {
    table: Arc<Mutex<Table>>,
    file: Arc<ConfigFile>,
}

impl GroupOffsets {
    pub(super) fn load(config_dir: PathBuf) -> Self {
        let path = config_dir.join("kafkaConsumerOffsets.json");
        let table: Arc<Mutex<Table>> =
            Arc::new(Mutex::new(persist::load(&path).unwrap_or_default()));
        let file = ConfigFile::spawn(path, skiff_store::fs::real(), {
            let table = table.clone();
            move || serde_json::to_string_pretty(&*table.lock()).unwrap_or_default()
        });
        GroupOffsets {
            table,
            file: Arc::new(file),
        }
    }

    /// Stores `entries` ((topic, partition, offset)) for `group`; resolves once they are on disk.
    pub(super) async fn commit(&self, group: &str, entries: Vec<(String, i32, Committed)>) -> bool {
        {
            let mut table = self.table.lock();
            let group = table.entry(group.to_string()).or_default();
            for (topic, partition, committed) in entries {
                group.entry(topic).or_default().insert(partition, committed);
            }
        }
        let file = self.file.clone();
        tokio::task::spawn_blocking(move || file.flush(DURABLE_WITHIN))
            .await
            .unwrap_or(false)
    }

    pub(super) fn get(&self, group: &str, topic: &str, partition: i32) -> Option<Committed> {
        self.table
            .lock()
            .get(group)?
            .get(topic)?
            .get(&partition)
            .cloned()
    }

    /// Every (topic, partition) `group` committed.
    pub(super) fn partitions(&self, group: &str) -> Vec<(String, i32, Committed)> {
        let table = self.table.lock();
        let Some(topics) = table.get(group) else {
            return Vec::new();
        };
        topics
            .iter()
            .flat_map(|(topic, partitions)| {
                partitions
                    .iter()
                    .map(move |(p, c)| (topic.clone(), *p, c.clone()))
            })
            .collect()
    }

    /// Forgets every group's offsets of `topic` (it was deleted), on disk soon after.
    pub(super) fn remove_topic(&self, topic: &str) {
        let removed = {
            let mut table = self.table.lock();
            let mut removed = false;
            for topics in table.values_mut() {
                removed |= topics.remove(topic).is_some();
            }
            table.retain(|_, topics| !topics.is_empty());
            removed
        };
        if removed {
            self.file.request();
        }
    }

    /// Groups that committed something.
    pub(super) fn groups(&self) -> Vec<String> {
        self.table.lock().keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn commits_are_on_disk_when_answered_and_read_back_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let committed = Committed {
            offset: 42,
            leader_epoch: -1,
            metadata: "meta".into(),
            commit_timestamp: 7,
        };
        {
            let offsets = GroupOffsets::load(dir.path().to_path_buf());
            assert!(
                offsets
                    .commit("g", vec![("T".into(), 3, committed.clone())])
                    .await
            );
            assert_eq!(offsets.get("g", "T", 3), Some(committed.clone()));
            assert_eq!(offsets.get("g", "T", 4), None);
        }
        let reloaded = GroupOffsets::load(dir.path().to_path_buf());
        assert_eq!(reloaded.get("g", "T", 3), Some(committed));
        assert_eq!(reloaded.groups(), vec!["g".to_string()]);
        assert_eq!(reloaded.partitions("g").len(), 1);
        reloaded.remove_topic("T");
        assert!(
            reloaded.groups().is_empty(),
            "a deleted topic's offsets go with it"
        );
    }
}
