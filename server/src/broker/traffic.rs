//! Traffic statistics by topic and by consumer group, as Java's `BrokerStatsManager` keeps them
//! for VIEW_BROKER_STATS_DATA (`mqadmin statsAll`, the Dashboard's topic charts).
//!
//! Each statistic (`TOPIC_PUT_NUMS` of a topic, `GROUP_GET_NUMS` of `topic@group`, ...) counts a
//! value and the number of events that added to it. Like Java's `StatsItem`, the totals are
//! sampled every 10 seconds (the last 7 samples: one minute), every 10 minutes (one hour) and every
//! hour (25: one day), and a window's figures are the difference between its first and last
//! sample. An item's first sample is preceded by a zero one period earlier, so what was counted
//! before it shows up at once. Items exist from their first event until their topic is deleted.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use skiff_model::admin::{StatsData, StatsWindow};

/// Java's statistic names (`BrokerStatsManager`) that Skiff keeps.
pub(super) const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
pub(super) const TOPIC_PUT_SIZE: &str = "TOPIC_PUT_SIZE";
pub(super) const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";
pub(super) const GROUP_GET_SIZE: &str = "GROUP_GET_SIZE";
pub(super) const BROKER_PUT_NUMS: &str = "BROKER_PUT_NUMS";
pub(super) const BROKER_GET_NUMS: &str = "BROKER_GET_NUMS";

const NAMES: [&str; 6] = [
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    BROKER_PUT_NUMS,
    BROKER_GET_NUMS,
];

/// How often each window is sampled, and how many samples it keeps.
#[derive(Clone, Copy)]
pub(super) enum Window {
    Minute,
    Hour,
    Day,
}

impl Window {
    pub(super) const fn period_ms(self) -> i64 {
        match self {
            Window::Minute => 10_000,
            Window::Hour => 600_000,
            Window::Day => 3_600_000,
        }
    }

    const fn kept(self) -> usize {
        match self {
            Window::Minute | Window::Hour => 7,
            Window::Day => 25,
        }
    }
}

#[derive(Clone, Copy)]
struct Sample {
    at_ms: i64,
    value: u64,
    times: u64,
}

#[derive(Default)]
struct Item {
    value: AtomicU64,
    times: AtomicU64,
    /// Minute, hour and day samples, oldest first.
    samples: Mutex<[VecDeque<Sample>; 3]>,
}

impl Item {
    fn add(&self, value: u64, times: u64) {
        self.value.fetch_add(value, Ordering::Relaxed);
        self.times.fetch_add(times, Ordering::Relaxed);
    }

    fn sample(&self, window: Window, now_ms: i64) {
        let mut samples = self.samples.lock();
        let list = &mut samples[window as usize];
        if list.is_empty() {
            list.push_back(Sample {
                at_ms: now_ms - window.period_ms(),
                value: 0,
                times: 0,
            });
        }
        list.push_back(Sample {
            at_ms: now_ms,
            value: self.value.load(Ordering::Relaxed),
            times: self.times.load(Ordering::Relaxed),
        });
        while list.len() > window.kept() {
            list.pop_front();
        }
    }

    fn data(&self) -> StatsData {
        let samples = self.samples.lock();
        StatsData {
            minute: figures(&samples[Window::Minute as usize]),
            hour: figures(&samples[Window::Hour as usize]),
            day: figures(&samples[Window::Day as usize]),
        }
    }
}

/// `StatsItem.computeStatsData`, with 0 instead of Java's NaN for a window without a time span.
fn figures(list: &VecDeque<Sample>) -> StatsWindow {
    let (Some(first), Some(last)) = (list.front(), list.back()) else {
        return StatsWindow::default();
    };
    let sum = last.value.saturating_sub(first.value);
    let span_ms = last.at_ms - first.at_ms;
    let times = last.times.saturating_sub(first.times);
    StatsWindow {
        sum: i64::try_from(sum).unwrap_or(i64::MAX),
        tps: if span_ms > 0 {
            sum as f64 * 1000.0 / span_ms as f64
        } else {
            0.0
        },
        avgpt: if times > 0 {
            sum as f64 / times as f64
        } else {
            0.0
        },
    }
}

/// One statistic's items by key. Java keys the `GROUP_*` statistics `topic@group`; here that key
/// is split in two levels (topic, then group), so that counting a pull looks its item up without
/// building the string. Other statistics have their topic (or cluster) and "" as the group.
type Table = RwLock<HashMap<String, HashMap<String, Arc<Item>>>>;

/// Every statistic of the broker, by name and key.
pub(super) struct TrafficStats {
    /// One table per name of [`NAMES`], in that order.
    tables: [Table; NAMES.len()],
    /// The key of the `BROKER_*` statistics (Java keys them by cluster name).
    cluster: String,
}

impl TrafficStats {
    pub(super) fn new(cluster: &str) -> Self {
        TrafficStats {
            tables: Default::default(),
            cluster: cluster.to_string(),
        }
    }

    /// Messages stored for `topic`: `count` of them in one call, `bytes` in all.
    pub(super) fn messages_put(&self, topic: &str, count: u64, bytes: u64) {
        self.add(TOPIC_PUT_NUMS, (topic, ""), count);
        self.add(TOPIC_PUT_SIZE, (topic, ""), bytes);
        self.add(BROKER_PUT_NUMS, (&self.cluster, ""), count);
    }

    /// Messages `group` pulled from `topic`.
    pub(super) fn messages_got(&self, group: &str, topic: &str, count: u64, bytes: u64) {
        if count == 0 {
            return;
        }
        self.add(GROUP_GET_NUMS, (topic, group), count);
        self.add(GROUP_GET_SIZE, (topic, group), bytes);
        self.add(BROKER_GET_NUMS, (&self.cluster, ""), count);
    }

    /// Adds `value` to the item of `name` at `(topic, group)`, as one event.
    fn add(&self, name: &str, (topic, group): (&str, &str), value: u64) {
        let Some(table) = self.table(name) else {
            return;
        };
        if let Some(item) = table.read().get(topic).and_then(|items| items.get(group)) {
            item.add(value, 1);
            return;
        }
        table
            .write()
            .entry(topic.to_string())
            .or_default()
            .entry(group.to_string())
            .or_default()
            .add(value, 1);
    }

    fn table(&self, name: &str) -> Option<&Table> {
        NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| &self.tables[i])
    }

    /// Takes a sample of every item for `window`; called every [`Window::period_ms`].
    pub(super) fn sample(&self, window: Window, now_ms: i64) {
        for table in &self.tables {
            let items: Vec<Arc<Item>> = table
                .read()
                .values()
                .flat_map(|items| items.values().cloned())
                .collect();
            for item in items {
                item.sample(window, now_ms);
            }
        }
    }

    /// One statistic's windows; `None` when nothing was counted under it (or `name` is not
    /// one Skiff keeps).
    pub(super) fn data(&self, name: &str, key: &str) -> Option<StatsData> {
        let (topic, group) = if name.starts_with("GROUP_") {
            key.split_once('@')?
        } else {
            (key, "")
        };
        let item = self.table(name)?.read().get(topic)?.get(group).cloned()?;
        Some(item.data())
    }

    /// Forgets a deleted topic's statistics and those of the groups that consumed it.
    pub(super) fn remove_topic(&self, topic: &str) {
        for table in &self.tables {
            table.write().remove(topic);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_differences_between_the_first_and_last_sample() {
        let stats = TrafficStats::new("DefaultCluster");
        assert!(stats.data(TOPIC_PUT_NUMS, "T").is_none());
        stats.messages_put("T", 10, 1_000);
        stats.messages_put("T", 5, 500);
        // Before the first sample the windows are empty, as in Java.
        assert_eq!(stats.data(TOPIC_PUT_NUMS, "T").unwrap().minute.sum, 0);

        // The first sample sees everything, against the zero one period before it.
        stats.sample(Window::Minute, 100_000);
        let minute = stats.data(TOPIC_PUT_NUMS, "T").unwrap().minute;
        assert_eq!(minute.sum, 15);
        assert_eq!(minute.tps, 1.5);
        assert_eq!(minute.avgpt, 7.5, "messages per send");
        let size = stats.data(TOPIC_PUT_SIZE, "T").unwrap().minute;
        assert_eq!((size.sum, size.avgpt), (1_500, 750.0));
        assert_eq!(
            stats
                .data(BROKER_PUT_NUMS, "DefaultCluster")
                .unwrap()
                .minute
                .sum,
            15
        );
        assert_eq!(stats.data(TOPIC_PUT_NUMS, "T").unwrap().hour.sum, 0);

        // Seven samples make the minute: older ones fall out.
        for i in 1..=7 {
            stats.messages_put("T", 1, 10);
            stats.sample(Window::Minute, 100_000 + i * 10_000);
        }
        let minute = stats.data(TOPIC_PUT_NUMS, "T").unwrap().minute;
        assert_eq!(minute.sum, 6, "the last 60 s");
        assert_eq!(minute.tps, 0.1);
    }

    #[test]
    fn group_gets_are_keyed_by_topic_and_group_and_deleted_with_the_topic() {
        let stats = TrafficStats::new("c");
        stats.messages_got("g", "T", 0, 0);
        assert!(
            stats.data(GROUP_GET_NUMS, "T@g").is_none(),
            "empty pulls count nothing"
        );
        stats.messages_got("g", "T", 3, 300);
        stats.messages_got("g", "U", 1, 100);
        stats.messages_put("T", 1, 1);
        stats.sample(Window::Hour, 1_000_000);
        assert_eq!(stats.data(GROUP_GET_NUMS, "T@g").unwrap().hour.sum, 3);
        assert_eq!(stats.data(BROKER_GET_NUMS, "c").unwrap().hour.sum, 4);
        assert!(stats.data("NO_SUCH_STATS", "T").is_none());

        stats.remove_topic("T");
        assert!(stats.data(GROUP_GET_NUMS, "T@g").is_none());
        assert!(stats.data(TOPIC_PUT_NUMS, "T").is_none());
        assert!(stats.data(GROUP_GET_NUMS, "U@g").is_some());
    }
}
