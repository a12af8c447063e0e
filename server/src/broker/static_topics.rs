//! The broker's part of each static topic (`TopicQueueMappingManager`), persisted as
//! `config/topicQueueMapping.json`: which logical queues of the topic this broker group hosts,
//! with their items. UPDATE_AND_CREATE_STATIC_TOPIC stores it (after Java's checks, unless
//! forced), GET_TOPIC_CONFIG shows it, and the registration with the name servers carries what
//! the broker leads of it, which ends up in the topic's route.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use skiff_model::command::QueueRef;
use skiff_model::route::DataVersion;
use skiff_model::static_topic::{
    LogicQueueMappingItem, TopicQueueMappingDetail, TopicQueueMappingInfo,
};
use tracing::{info, warn};

use super::config_file::ConfigFile;
use super::logical_queues::{Addressed, LogicalQueue};
use super::persist;
use crate::config::BrokerConfig;

/// The on-disk shape (`TopicQueueMappingSerializeWrapper`).
#[derive(Serialize, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", default)]
struct MappingFile {
    topic_queue_mapping_info_map: BTreeMap<String, TopicQueueMappingDetail>,
    data_version: DataVersion,
}

pub struct TopicQueueMappingManager {
    state: Arc<RwLock<MappingFile>>,
    /// The one writer of `topicQueueMapping.json`.
    file: ConfigFile,
}

impl TopicQueueMappingManager {
    pub fn load(config: &BrokerConfig) -> Self {
        let path = persist::config_dir(&config.store_path_root_dir).join("topicQueueMapping.json");
        let mappings: MappingFile = persist::load(&path).unwrap_or_default();
        let state = Arc::new(RwLock::new(mappings));
        let file = ConfigFile::spawn(path, skiff_store::fs::real(), {
            let state = state.clone();
            move || {
                let snapshot = state.read().clone();
                skiff_protocol::fastjson::to_string_pretty(&snapshot)
                    .expect("topic queue mappings serialize")
            }
        });
        TopicQueueMappingManager { state, file }
    }

    /// This broker's part of `topic`, if it is a static topic here.
    pub fn get(&self, topic: &str) -> Option<TopicQueueMappingDetail> {
        self.state
            .read()
            .topic_queue_mapping_info_map
            .get(topic)
            .cloned()
    }

    /// Stores `detail` as this broker's part of its topic (`updateTopicQueueMapping`), or says
    /// why not with Java's message.
    pub fn update(&self, detail: TopicQueueMappingDetail, force: bool) -> Result<(), String> {
        {
            let mut state = self.state.write();
            let old = state.topic_queue_mapping_info_map.get(&detail.topic);
            let merged = merge(old, detail, force)?;
            info!(topic = %merged.topic, epoch = merged.epoch, total_queues = merged.total_queues, force, "static topic mapping updated");
            state
                .topic_queue_mapping_info_map
                .insert(merged.topic.clone(), merged);
            state.data_version.counter += 1;
        }
        self.file.request();
        Ok(())
    }

    /// How `queue` is addressed (`buildTopicQueueMappingContext`): physically unless the topic
    /// is static here and the request did not say `lo=false`.
    pub fn address(&self, queue: &QueueRef) -> Addressed {
        if queue.physical {
            return Addressed::Physical;
        }
        self.lookup(&queue.topic, queue.queue_id, false)
    }

    /// How a send to `queue_id` of `topic` is addressed: as [`Self::address`], but a negative
    /// queue id (the broker may choose) picks the first logical queue hosted here.
    pub fn address_send(&self, topic: &str, queue_id: i32) -> Addressed {
        self.lookup(topic, queue_id, true)
    }

    fn lookup(&self, topic: &str, queue_id: i32, pick_when_negative: bool) -> Addressed {
        let state = self.state.read();
        let Some(detail) = state.topic_queue_mapping_info_map.get(topic) else {
            return Addressed::Physical;
        };
        let not_leader = || Addressed::NotLeader {
            here: detail.bname.clone(),
        };
        let mut global_id = queue_id;
        if global_id < 0 && pick_when_negative {
            global_id = detail.hosted_queues.keys().next().copied().unwrap_or(-1);
        }
        let Some(items) = detail.hosted_queues.get(&global_id) else {
            return not_leader();
        };
        match items.last() {
            Some(leader) if leader.bname == detail.bname => Addressed::Logical(LogicalQueue {
                topic: topic.to_string(),
                global_id,
                here: detail.bname.clone(),
                items: items.clone(),
            }),
            _ => not_leader(),
        }
    }

    /// Forgets `topic`'s mapping (the topic was deleted).
    pub fn remove(&self, topic: &str) {
        let removed = {
            let mut state = self.state.write();
            let removed = state.topic_queue_mapping_info_map.remove(topic).is_some();
            if removed {
                state.data_version.counter += 1;
            }
            removed
        };
        if removed {
            self.file.request();
        }
    }

    /// What a registration of `topics` carries of the static ones among them
    /// (`cloneAsMappingInfo`).
    pub fn infos<'a>(
        &self,
        topics: impl Iterator<Item = &'a String>,
    ) -> BTreeMap<String, TopicQueueMappingInfo> {
        let state = self.state.read();
        topics
            .filter_map(|topic| {
                let detail = state.topic_queue_mapping_info_map.get(topic)?;
                Some((topic.clone(), detail.mapping_info()))
            })
            .collect()
    }

    /// Writes `topicQueueMapping.json` now and waits for it. Blocks: not for async workers.
    pub fn persist(&self) {
        if !self.file.flush(Duration::from_secs(10)) {
            warn!(file = %self.file.path().display(), "topicQueueMapping.json not written yet");
        }
    }
}

/// The mapping to keep when `new` arrives over `old` (Java's `updateTopicQueueMapping`): the
/// items must be well formed; a forced update keeps the old logical queues `new` lacks;
/// otherwise the epoch may not go back, the scope not change, and with an equal epoch every old
/// logical queue must still be there with the same leader. Logical queues `new` lacks are kept
/// from `old`.
fn merge(
    old: Option<&TopicQueueMappingDetail>,
    mut new: TopicQueueMappingDetail,
    force: bool,
) -> Result<TopicQueueMappingDetail, String> {
    for items in new.hosted_queues.values() {
        check_item_offsets(items)?;
    }
    let Some(old) = old else {
        return Ok(new);
    };
    if force {
        for (global_id, items) in &old.hosted_queues {
            new.hosted_queues
                .entry(*global_id)
                .or_insert_with(|| items.clone());
        }
        return Ok(new);
    }
    if new.epoch < old.epoch {
        return Err(format!(
            "Can't accept data with small epoch {} < {}",
            new.epoch, old.epoch
        ));
    }
    if new.scope != old.scope {
        return Err(format!(
            "Can't accept data with unmatched scope {} != {}",
            new.scope, old.scope
        ));
    }
    let epoch_equal = new.epoch == old.epoch;
    for (global_id, old_items) in &old.hosted_queues {
        match new.hosted_queues.get(global_id) {
            None if epoch_equal => {
                return Err("Cannot accept equal epoch with null data".to_string())
            }
            None => {
                new.hosted_queues.insert(*global_id, old_items.clone());
            }
            Some(new_items) => check_same_leader(old_items, new_items, epoch_equal)?,
        }
    }
    Ok(new)
}

/// `checkLogicQueueMappingItemOffset`: from the newest item back, generations strictly fall,
/// only the newest may have an undecided logical offset, and logical offsets fall too.
fn check_item_offsets(items: &[LogicQueueMappingItem]) -> Result<(), String> {
    let mut last_gen = -1;
    let mut last_offset = -1;
    for (i, item) in items.iter().enumerate().rev() {
        if item.start_offset < 0 || item.gen < 0 || item.queue_id < 0 {
            return Err("The field is illegal, should not be negative".to_string());
        }
        if items.len() >= 2 && i + 2 <= items.len() && item.logic_offset < 0 {
            return Err("The non-latest item has negative logic offset".to_string());
        }
        if last_gen != -1 && item.gen >= last_gen {
            return Err("The gen does not increase monotonically".to_string());
        }
        if item.end_offset != -1 && item.end_offset < item.start_offset {
            return Err("The endOffset is smaller than the start offset".to_string());
        }
        if last_offset != -1 && item.logic_offset != -1 {
            if item.logic_offset >= last_offset {
                return Err("The base logic offset does not increase monotonically".to_string());
            }
            if item.max_static_queue_offset() >= last_offset {
                return Err("The max logic offset does not increase monotonically".to_string());
            }
        }
        last_gen = item.gen;
        last_offset = item.logic_offset;
    }
    Ok(())
}

/// What `makeSureLogicQueueMappingItemImmutable` enforces (its per-item asserts are off in a
/// running broker): some new items, and with an equal epoch the same leader.
fn check_same_leader(
    old: &[LogicQueueMappingItem],
    new: &[LogicQueueMappingItem],
    epoch_equal: bool,
) -> Result<(), String> {
    let Some(old_leader) = old.last() else {
        return Ok(());
    };
    let Some(new_leader) = new.last() else {
        return Err("The new item list is null or empty".to_string());
    };
    if epoch_equal
        && (new_leader.gen != old_leader.gen
            || new_leader.bname != old_leader.bname
            || new_leader.queue_id != old_leader.queue_id
            || new_leader.start_offset != old_leader.start_offset)
    {
        return Err("The new leader is different but epoch equal".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(gen: i32, queue_id: i32, bname: &str, logic_offset: i64) -> LogicQueueMappingItem {
        LogicQueueMappingItem {
            gen,
            queue_id,
            bname: bname.into(),
            logic_offset,
            ..LogicQueueMappingItem::default()
        }
    }

    fn detail(epoch: i64, queues: &[(i32, Vec<LogicQueueMappingItem>)]) -> TopicQueueMappingDetail {
        TopicQueueMappingDetail {
            topic: "st".into(),
            total_queues: 4,
            bname: "broker-a".into(),
            epoch,
            hosted_queues: queues.iter().cloned().collect(),
            ..TopicQueueMappingDetail::default()
        }
    }

    #[test]
    fn a_newer_epoch_adds_queues_and_keeps_the_old_ones() {
        let old = detail(10, &[(0, vec![item(0, 0, "broker-a", 0)])]);
        let new = detail(20, &[(1, vec![item(0, 1, "broker-a", 0)])]);
        let merged = merge(Some(&old), new, false).unwrap();
        assert_eq!(
            merged.hosted_queues.keys().copied().collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(merged.epoch, 20);
    }

    #[test]
    fn old_epochs_other_scopes_and_moved_leaders_are_refused_as_java_refuses_them() {
        let old = detail(10, &[(0, vec![item(0, 0, "broker-a", 0)])]);
        assert_eq!(
            merge(Some(&old), detail(9, &[]), false).unwrap_err(),
            "Can't accept data with small epoch 9 < 10"
        );
        let mut scoped = detail(11, &[]);
        scoped.scope = "other".into();
        assert_eq!(
            merge(Some(&old), scoped, false).unwrap_err(),
            "Can't accept data with unmatched scope other != __global__"
        );
        assert_eq!(
            merge(Some(&old), detail(10, &[]), false).unwrap_err(),
            "Cannot accept equal epoch with null data"
        );
        let moved = detail(10, &[(0, vec![item(0, 3, "broker-a", 0)])]);
        assert_eq!(
            merge(Some(&old), moved.clone(), false).unwrap_err(),
            "The new leader is different but epoch equal"
        );
        // Forced, anything goes, and the old queues the new mapping lacks stay.
        let forced = merge(
            Some(&old),
            detail(1, &[(1, vec![item(0, 1, "broker-a", 0)])]),
            true,
        )
        .unwrap();
        assert_eq!(forced.hosted_queues.len(), 2);
        assert_eq!(forced.epoch, 1);
    }

    #[test]
    fn items_must_run_in_generation_and_offset_order() {
        let remapped = vec![item(0, 0, "broker-a", 0), item(1, 0, "broker-b", -1)];
        assert_eq!(check_item_offsets(&remapped), Ok(()));
        let undecided_old = vec![item(0, 0, "broker-a", -1), item(1, 0, "broker-b", -1)];
        assert_eq!(
            check_item_offsets(&undecided_old).unwrap_err(),
            "The non-latest item has negative logic offset"
        );
        let same_gen = vec![item(1, 0, "broker-a", 0), item(1, 0, "broker-b", 10_000)];
        assert_eq!(
            check_item_offsets(&same_gen).unwrap_err(),
            "The gen does not increase monotonically"
        );
        let backwards = vec![
            item(0, 0, "broker-a", 20_000),
            item(1, 0, "broker-b", 10_000),
        ];
        assert_eq!(
            check_item_offsets(&backwards).unwrap_err(),
            "The base logic offset does not increase monotonically"
        );
        let negative = vec![item(0, -1, "broker-a", 0)];
        assert_eq!(
            check_item_offsets(&negative).unwrap_err(),
            "The field is illegal, should not be negative"
        );
        let mut overlapping = vec![item(0, 0, "broker-a", 0), item(1, 0, "broker-b", 10_000)];
        overlapping[0].end_offset = 10_000;
        assert_eq!(
            check_item_offsets(&overlapping).unwrap_err(),
            "The max logic offset does not increase monotonically"
        );
    }

    #[test]
    fn requests_address_the_logical_queues_led_here() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let mappings = TopicQueueMappingManager::load(&config);
        let mut moved_away = item(1, 0, "broker-b", 10_000);
        moved_away.queue_id = 5;
        let led_here = vec![item(0, 3, "broker-a", 0)];
        mappings
            .update(
                detail(
                    10,
                    &[
                        (2, led_here.clone()),
                        (4, vec![item(0, 0, "broker-a", 0), moved_away]),
                    ],
                ),
                false,
            )
            .unwrap();
        let queue = |id| QueueRef::new("st", id);
        let Addressed::Logical(logical) = mappings.address(&queue(2)) else {
            panic!("logical queue 2 is led here");
        };
        assert_eq!((logical.global_id, logical.items), (2, led_here));
        let not_leader = Addressed::NotLeader {
            here: "broker-a".into(),
        };
        assert_eq!(mappings.address(&queue(4)), not_leader);
        assert_eq!(mappings.address(&queue(7)), not_leader);
        assert_eq!(mappings.address(&queue(-1)), not_leader);
        // A send may leave the choice to the broker: the first logical queue hosted here.
        assert!(matches!(
            mappings.address_send("st", -1),
            Addressed::Logical(LogicalQueue { global_id: 2, .. })
        ));
        // `lo=false` and plain topics are physical.
        let physical = QueueRef {
            physical: true,
            ..queue(4)
        };
        assert_eq!(mappings.address(&physical), Addressed::Physical);
        assert_eq!(
            mappings.address(&QueueRef::new("plain", 0)),
            Addressed::Physical
        );
    }

    #[test]
    fn mappings_are_kept_in_the_file_and_registered_as_infos() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let mappings = TopicQueueMappingManager::load(&config);
        let mapping = detail(
            10,
            &[
                (0, vec![item(0, 0, "broker-a", 0)]),
                (1, vec![item(0, 1, "broker-a", 0)]),
            ],
        );
        mappings.update(mapping.clone(), false).unwrap();
        assert_eq!(
            mappings.update(detail(5, &[]), false).unwrap_err(),
            "Can't accept data with small epoch 5 < 10"
        );
        mappings.persist();
        let text =
            std::fs::read_to_string(dir.path().join("config/topicQueueMapping.json")).unwrap();
        assert!(text.contains("\"topicQueueMappingInfoMap\""), "{text}");

        let reloaded = TopicQueueMappingManager::load(&config);
        assert_eq!(reloaded.get("st"), Some(mapping));
        let topics = ["st".to_string(), "plain".to_string()];
        let infos = reloaded.infos(topics.iter());
        assert_eq!(infos.keys().collect::<Vec<_>>(), ["st"]);
        assert_eq!(infos["st"].curr_id_map, BTreeMap::from([(0, 0), (1, 1)]));
        reloaded.remove("st");
        assert_eq!(reloaded.get("st"), None);
    }
}
