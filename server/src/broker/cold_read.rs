//! Cold-read flow control (Java's `ColdDataCgCtrService`, on with `coldDataFlowControlEnable`):
//! a consumer group that reads much data from far behind the CommitLog's end (a replay, a
//! consumer back after days) reads it from disk and evicts the page cache other groups read
//! from. Each pull adds the bytes of its cold records (outside `accessMessageInMemoryHotRatio` of
//! RAM behind the end) to its group's account; a group past its threshold per period (its own, set
//! by `updateColdDataFlowCtrGroupConfig`, or `cgColdReadThreshold`), or any cold reader while all
//! groups together are past `globalColdReadThreshold`, is throttled on its next cold pull. Every
//! period (5 s) the accounts start again from zero; a group that read nothing cold for a minute
//! leaves the table.
//!
//! The state lives here with the clock passed in; the pull handler asks and reports, and a task
//! calls [`ColdReadControl::end_period`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use parking_lot::Mutex;
use skiff_model::admin::{ColdReadAccount, ColdReadInfo};

use crate::config::BrokerConfig;

/// How often the accounts start again (Java's service waits 5 s between rounds when on).
pub(crate) const PERIOD: Duration = Duration::from_secs(5);
/// A group that read nothing cold for this long leaves the table (`cgColdAccResideTimeoutMills`).
const RESIDE_TIMEOUT_MS: i64 = 60_000;

/// Groups the broker's own tools and Java's built-in services pull with
/// (`MixAll.isSysConsumerGroupPullMessage`): never throttled.
fn is_system_group(group: &str) -> bool {
    const GROUPS: [&str; 11] = [
        "DEFAULT_CONSUMER",
        "TOOLS_CONSUMER",
        "SCHEDULE_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
        "CID_RMQ_SYS_TRANS",
    ];
    GROUPS.contains(&group) || group.starts_with("CID_RMQ_SYS_")
}

pub(crate) struct ColdReadControl {
    enabled: bool,
    group_threshold: i64,
    global_threshold: i64,
    tables: Mutex<Tables>,
}

#[derive(Default)]
struct Tables {
    /// Groups that read cold data lately.
    runtime: HashMap<String, ColdReadAccount>,
    /// Thresholds an operator set, by group.
    config: BTreeMap<String, i64>,
    /// All groups' cold bytes this period.
    global_acc: i64,
}

impl ColdReadControl {
    pub(crate) fn new(config: &BrokerConfig) -> Self {
        ColdReadControl {
            enabled: config.cold_data_flow_control_enable,
            group_threshold: config.cg_cold_read_threshold,
            global_threshold: config.global_cold_read_threshold,
            tables: Mutex::new(Tables::default()),
        }
    }

    /// Whether pulls are accounted and throttled at all.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// A pull of `group` read `bytes` of cold records (`coldAcc`).
    pub(crate) fn record(&self, group: &str, bytes: i64, now_ms: i64) {
        if bytes <= 0 || is_system_group(group) {
            return;
        }
        let mut tables = self.tables.lock();
        tables.global_acc = tables.global_acc.saturating_add(bytes);
        let account = tables
            .runtime
            .entry(group.to_string())
            .or_insert(ColdReadAccount {
                cold_acc: 0,
                last_cold_read_ms: now_ms,
                created_ms: now_ms,
            });
        account.cold_acc = account.cold_acc.saturating_add(bytes);
        account.last_cold_read_ms = now_ms;
    }

    /// Whether `group`'s next pull of cold data is throttled (`isCgNeedColdDataFlowCtr`): it read
    /// cold data this period, and either it is past its threshold or all groups are past the
    /// global one.
    pub(crate) fn must_throttle(&self, group: &str) -> bool {
        if !self.enabled || is_system_group(group) {
            return false;
        }
        let tables = self.tables.lock();
        let Some(account) = tables.runtime.get(group) else {
            return false;
        };
        let threshold = tables
            .config
            .get(group)
            .copied()
            .unwrap_or(self.group_threshold);
        account.cold_acc >= threshold || tables.global_acc >= self.global_threshold
    }

    /// Sets the thresholds of the `group=bytes` lines (UPDATE_COLD_DATA_FLOW_CTR_CONFIG). As in
    /// Java, an entry whose value is not a number is skipped; the names of the skipped keys are
    /// returned for the log. Text that is not properties at all is refused.
    pub(crate) fn set_thresholds(&self, properties: &str) -> Result<Vec<String>, String> {
        let entries = crate::config::properties::parse(properties)
            .map_err(|(line, why)| format!("line {line}: {why}"))?;
        let mut tables = self.tables.lock();
        let mut skipped = Vec::new();
        for entry in entries {
            match entry.value.parse::<i64>() {
                Ok(threshold) => {
                    tables.config.insert(entry.key, threshold);
                }
                Err(_) => skipped.push(entry.key),
            }
        }
        Ok(skipped)
    }

    /// `group` back to `cgColdReadThreshold` (REMOVE_COLD_DATA_FLOW_CTR_CONFIG).
    pub(crate) fn remove_threshold(&self, group: &str) {
        self.tables.lock().config.remove(group);
    }

    /// The tables as GET_COLD_DATA_FLOW_CTR_INFO shows them.
    pub(crate) fn info(&self) -> ColdReadInfo {
        let tables = self.tables.lock();
        ColdReadInfo {
            runtime: tables
                .runtime
                .iter()
                .map(|(group, account)| (group.clone(), *account))
                .collect(),
            config: tables.config.clone(),
            group_threshold: self.group_threshold,
            global_threshold: self.global_threshold,
            global_acc: tables.global_acc,
        }
    }

    /// The end of a period (`clearDataAcc`): groups quiet for a minute leave, the others and the
    /// global account start again from zero.
    pub(crate) fn end_period(&self, now_ms: i64) {
        let mut tables = self.tables.lock();
        tables
            .runtime
            .retain(|_, account| now_ms < account.last_cold_read_ms + RESIDE_TIMEOUT_MS);
        for account in tables.runtime.values_mut() {
            account.cold_acc = 0;
        }
        tables.global_acc = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(enabled: bool) -> ColdReadControl {
        ColdReadControl::new(&BrokerConfig {
            cold_data_flow_control_enable: enabled,
            cg_cold_read_threshold: 1000,
            global_cold_read_threshold: 5000,
            ..BrokerConfig::default()
        })
    }

    #[test]
    fn a_group_past_its_threshold_is_throttled_until_the_period_ends() {
        let cold = control(true);
        cold.record("G", 999, 10);
        assert!(!cold.must_throttle("G"));
        cold.record("G", 1, 20);
        assert!(cold.must_throttle("G"));
        assert!(
            !cold.must_throttle("Other"),
            "a group that read nothing cold"
        );
        let info = cold.info();
        assert_eq!(info.global_acc, 1000);
        assert_eq!(
            info.runtime["G"],
            ColdReadAccount {
                cold_acc: 1000,
                last_cold_read_ms: 20,
                created_ms: 10,
            }
        );
        cold.end_period(5_000);
        assert!(!cold.must_throttle("G"));
        assert_eq!(cold.info().runtime["G"].cold_acc, 0, "kept for a minute");
        cold.end_period(20 + RESIDE_TIMEOUT_MS);
        assert!(cold.info().runtime.is_empty());
    }

    #[test]
    fn an_operator_threshold_overrides_the_default_and_can_be_removed() {
        let cold = control(true);
        let skipped = cold
            .set_thresholds("G=100\nH=lots\n# comment\nK: 7\n")
            .unwrap();
        assert_eq!(skipped, vec!["H".to_string()]);
        assert_eq!(
            cold.info().config,
            BTreeMap::from([("G".to_string(), 100), ("K".to_string(), 7)])
        );
        cold.record("G", 100, 1);
        assert!(cold.must_throttle("G"));
        cold.remove_threshold("G");
        assert!(!cold.must_throttle("G"), "back to the default 1000");
    }

    #[test]
    fn all_cold_readers_are_throttled_past_the_global_threshold() {
        let cold = control(true);
        // Each below its own 1000, together past 5000.
        for (i, group) in ["A", "B", "C", "D", "E"].iter().enumerate() {
            cold.record(group, 999, i as i64);
        }
        assert!(!cold.must_throttle("A"));
        cold.record("E", 6, 9);
        assert!(cold.must_throttle("A"));
        assert!(!cold.must_throttle("F"), "only groups reading cold data");
    }

    #[test]
    fn system_groups_and_a_disabled_control_never_throttle() {
        let cold = control(true);
        cold.record("TOOLS_CONSUMER", 10_000, 1);
        cold.record("CID_RMQ_SYS_X", 10_000, 1);
        assert!(!cold.must_throttle("TOOLS_CONSUMER"));
        assert_eq!(cold.info().global_acc, 0);
        let off = control(false);
        off.record("G", 10_000, 1);
        assert!(!off.must_throttle("G"));
    }
}
