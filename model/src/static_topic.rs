//! Static topics: a fixed number of logical queues spread over broker groups, each logical queue
//! hosted by one physical queue of one group at a time (`TopicQueueMappingDetail`,
//! `LogicQueueMappingItem`). `mqadmin updateStaticTopic` and `remappingStaticTopic` compute the
//! mapping and hand each broker group its part; the broker keeps it, shows it with the topic's
//! settings and registers its current logical → physical queue ids with the name servers, which
//! put them in the topic's route.
//!
//! Field names are Java's, for the bodies and `config/topicQueueMapping.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `MixAll.METADATA_SCOPE_GLOBAL`: the scope every mapping gets unless told otherwise.
pub const METADATA_SCOPE_GLOBAL: &str = "__global__";

/// One physical queue's stretch of a logical queue (`LogicQueueMappingItem`): the logical
/// offset it starts at (-1 until decided) and its physical offsets (`end_offset` -1: open).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogicQueueMappingItem {
    pub gen: i32,
    pub queue_id: i32,
    pub bname: String,
    pub logic_offset: i64,
    pub start_offset: i64,
    pub end_offset: i64,
    pub time_of_start: i64,
    pub time_of_end: i64,
}

impl Default for LogicQueueMappingItem {
    fn default() -> Self {
        LogicQueueMappingItem {
            gen: 0,
            queue_id: 0,
            bname: String::new(),
            logic_offset: 0,
            start_offset: 0,
            end_offset: -1,
            time_of_start: -1,
            time_of_end: -1,
        }
    }
}

impl LogicQueueMappingItem {
    /// The last logical offset this item covers (`computeMaxStaticQueueOffset`).
    pub fn max_static_queue_offset(&self) -> i64 {
        if self.end_offset >= self.start_offset {
            self.logic_offset + self.end_offset - self.start_offset
        } else {
            self.logic_offset
        }
    }

    /// The logical offset of physical offset `physical` (`computeStaticQueueOffsetStrictly`).
    pub fn static_offset_strictly(&self, physical: i64) -> i64 {
        if physical < self.start_offset {
            self.logic_offset
        } else {
            self.logic_offset + (physical - self.start_offset)
        }
    }

    /// [`Self::static_offset_strictly`], but -1 while the logical offset is undecided and
    /// clamped to a decided end (`computeStaticQueueOffsetLoosely`).
    pub fn static_offset_loosely(&self, physical: i64) -> i64 {
        if self.logic_offset < 0 {
            -1
        } else if physical < self.start_offset {
            self.logic_offset
        } else if self.end_offset >= self.start_offset && self.end_offset < physical {
            self.logic_offset + (self.end_offset - self.start_offset)
        } else {
            self.logic_offset + (physical - self.start_offset)
        }
    }

    /// The physical offset of logical offset `logical` (`computePhysicalQueueOffset`; negative
    /// below the item).
    pub fn physical_offset(&self, logical: i64) -> i64 {
        logical - self.logic_offset + self.start_offset
    }

    /// What turns this item's physical offsets into logical ones (`computeOffsetDelta`).
    pub fn offset_delta(&self) -> i64 {
        self.logic_offset - self.start_offset
    }

    /// Whether the physical end is known (`checkIfEndOffsetDecided`; no tool sets it today).
    pub fn end_decided(&self) -> bool {
        self.end_offset > self.start_offset
    }
}

/// The item of `items` (oldest first) holding logical offset `logical`: the newest item with a
/// decided logical offset at or below it, else the oldest decided item
/// (`findLogicQueueMappingItem` with `ignoreNegative`). `0` finds the earliest item,
/// `i64::MAX` the newest decided one.
pub fn find_item(items: &[LogicQueueMappingItem], logical: i64) -> Option<&LogicQueueMappingItem> {
    let decided = || items.iter().filter(|item| item.logic_offset >= 0);
    decided()
        .rev()
        .find(|item| logical >= item.logic_offset)
        .or_else(|| decided().next())
}

/// The decided item after `current` (matched by generation), if any (`findNext`).
pub fn find_next<'a>(
    items: &'a [LogicQueueMappingItem],
    current: &LogicQueueMappingItem,
) -> Option<&'a LogicQueueMappingItem> {
    let at = items.iter().position(|item| item.gen == current.gen)?;
    items.get(at + 1).filter(|next| next.logic_offset >= 0)
}

/// What a broker group registers of a static topic (`TopicQueueMappingInfo`): the logical queue
/// count, the mapping's epoch and, in `curr_id_map`, the logical queues it leads now with their
/// physical queue ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicQueueMappingInfo {
    pub topic: String,
    pub scope: String,
    pub total_queues: i32,
    pub bname: String,
    pub epoch: i64,
    pub dirty: bool,
    pub curr_id_map: BTreeMap<i32, i32>,
}

impl Default for TopicQueueMappingInfo {
    fn default() -> Self {
        TopicQueueMappingInfo {
            topic: String::new(),
            scope: METADATA_SCOPE_GLOBAL.to_string(),
            total_queues: 0,
            bname: String::new(),
            epoch: 0,
            dirty: false,
            curr_id_map: BTreeMap::new(),
        }
    }
}

/// A broker group's whole part of a static topic (`TopicQueueMappingDetail`): the info fields
/// and, by logical queue id, the items of each logical queue it hosts or hosted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicQueueMappingDetail {
    pub topic: String,
    pub scope: String,
    pub total_queues: i32,
    pub bname: String,
    pub epoch: i64,
    pub dirty: bool,
    /// Empty in a detail (Java fills it only in the registered info).
    pub curr_id_map: BTreeMap<i32, i32>,
    pub hosted_queues: BTreeMap<i32, Vec<LogicQueueMappingItem>>,
}

impl Default for TopicQueueMappingDetail {
    fn default() -> Self {
        TopicQueueMappingDetail {
            topic: String::new(),
            scope: METADATA_SCOPE_GLOBAL.to_string(),
            total_queues: 0,
            bname: String::new(),
            epoch: 0,
            dirty: false,
            curr_id_map: BTreeMap::new(),
            hosted_queues: BTreeMap::new(),
        }
    }
}

impl TopicQueueMappingDetail {
    /// The item of this broker group on its physical queue `queue_id`, if one is.
    pub fn item_here(&self, queue_id: i32) -> Option<&LogicQueueMappingItem> {
        self.hosted_queues
            .values()
            .flatten()
            .find(|item| item.bname == self.bname && item.queue_id == queue_id)
    }

    /// What the broker registers (`cloneAsMappingInfo`): the logical queues whose latest item
    /// is on this broker group, with that item's physical queue id.
    pub fn mapping_info(&self) -> TopicQueueMappingInfo {
        let curr_id_map = self
            .hosted_queues
            .iter()
            .filter_map(|(global_id, items)| {
                let leader = items.last()?;
                (leader.bname == self.bname).then_some((*global_id, leader.queue_id))
            })
            .collect();
        TopicQueueMappingInfo {
            topic: self.topic.clone(),
            scope: self.scope.clone(),
            total_queues: self.total_queues,
            bname: self.bname.clone(),
            epoch: self.epoch,
            dirty: self.dirty,
            curr_id_map,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(gen: i32, queue_id: i32, bname: &str) -> LogicQueueMappingItem {
        LogicQueueMappingItem {
            gen,
            queue_id,
            bname: bname.into(),
            ..LogicQueueMappingItem::default()
        }
    }

    #[test]
    fn the_registered_info_lists_the_queues_led_here() {
        let detail = TopicQueueMappingDetail {
            topic: "T".into(),
            total_queues: 3,
            bname: "broker-a".into(),
            epoch: 7,
            hosted_queues: BTreeMap::from([
                (0, vec![item(0, 0, "broker-a")]),
                (1, vec![item(0, 1, "broker-a"), item(1, 0, "broker-b")]),
                (2, vec![item(0, 0, "broker-b"), item(1, 2, "broker-a")]),
            ]),
            ..TopicQueueMappingDetail::default()
        };
        let info = detail.mapping_info();
        assert_eq!(info.curr_id_map, BTreeMap::from([(0, 0), (2, 2)]));
        assert_eq!(
            (info.scope.as_str(), info.total_queues, info.epoch),
            ("__global__", 3, 7)
        );
    }

    fn at(gen: i32, bname: &str, logic_offset: i64) -> LogicQueueMappingItem {
        LogicQueueMappingItem {
            logic_offset,
            ..item(gen, 0, bname)
        }
    }

    #[test]
    fn offsets_convert_between_physical_and_logical_as_java_does() {
        let item = at(1, "b", 20_000);
        assert_eq!(item.static_offset_strictly(5), 20_005);
        assert_eq!(item.physical_offset(20_005), 5);
        assert_eq!(item.physical_offset(7), 7 - 20_000);
        assert_eq!(item.offset_delta(), 20_000);
        assert_eq!(item.static_offset_loosely(5), 20_005);
        assert_eq!(at(1, "b", -1).static_offset_loosely(5), -1);
        let mut ended = at(0, "a", 0);
        ended.end_offset = 10;
        assert_eq!(ended.static_offset_loosely(15), 10);
        assert!(ended.end_decided());
    }

    #[test]
    fn items_are_found_by_logical_offset_skipping_undecided_ones() {
        let items = [at(0, "a", 0), at(1, "b", 10_000), at(2, "c", -1)];
        assert_eq!(find_item(&items, 5).unwrap().gen, 0);
        assert_eq!(find_item(&items, 10_000).unwrap().gen, 1);
        assert_eq!(find_item(&items, i64::MAX).unwrap().gen, 1);
        assert_eq!(find_item(&items, -3).unwrap().gen, 0);
        assert_eq!(find_next(&items, &items[0]).unwrap().gen, 1);
        assert_eq!(find_next(&items, &items[1]), None);
        assert_eq!(find_item(&[at(0, "a", -1)], 0), None);
    }

    #[test]
    fn the_max_static_offset_of_an_open_item_is_its_start() {
        let mut item = item(0, 0, "b");
        item.logic_offset = 10_000;
        assert_eq!(item.max_static_queue_offset(), 10_000);
        item.end_offset = 25;
        assert_eq!(item.max_static_queue_offset(), 10_025);
    }
}
