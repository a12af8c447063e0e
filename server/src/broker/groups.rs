//! Consumer group settings (`SubscriptionGroupManager`), persisted as
//! `config/subscriptionGroup.json`. With `autoCreateSubscriptionGroup` (the default) a group is
//! created the first time a consumer of it shows up.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use skiff_model::consumer::SubscriptionGroupConfig;
use skiff_model::route::DataVersion;
use tracing::{info, warn};

use super::config_file::ConfigFile;
use super::persist;
use crate::config::BrokerConfig;

#[derive(Serialize, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", default)]
struct GroupsFile {
    data_version: DataVersion,
    subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    forbidden_table: BTreeMap<String, BTreeMap<String, i32>>,
}

/// `Validators.CHARACTER_MAX_LENGTH`, the limit Java auto-creates groups up to.
const AUTO_CREATE_MAX_LENGTH: usize = 255;

fn has_illegal_char(name: &str) -> bool {
    name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
}

/// The groups every Java broker has from its start (`MixAll`'s names).
const BUILT_IN_GROUPS: [&str; 8] = [
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_RMQ_SYS_TRANS",
];

pub struct SubscriptionGroupManager {
    state: Arc<RwLock<GroupsFile>>,
    /// The one writer of `subscriptionGroup.json`.
    file: ConfigFile,
    /// `autoCreateSubscriptionGroup` in force (UPDATE_BROKER_CONFIG changes it at runtime, as
    /// Java reads its setting at each lookup).
    auto_create: AtomicBool,
}

impl SubscriptionGroupManager {
    pub fn load(config: &BrokerConfig) -> Self {
        let path = persist::config_dir(&config.store_path_root_dir).join("subscriptionGroup.json");
        let mut groups: GroupsFile = persist::load(&path).unwrap_or_default();
        // Java's `SubscriptionGroupManager.init` has these before the file is read (which may
        // change them); tools and the Dashboard list them.
        for name in BUILT_IN_GROUPS {
            groups
                .subscription_group_table
                .entry(name.to_string())
                .or_insert_with(|| SubscriptionGroupConfig::new(name));
        }
        let state: Arc<RwLock<GroupsFile>> = Arc::new(RwLock::new(groups));
        let file = ConfigFile::spawn(path, skiff_store::fs::real(), {
            let state = state.clone();
            move || {
                let snapshot = state.read().clone();
                skiff_protocol::fastjson::to_string_pretty(&snapshot)
                    .expect("subscription groups serialize")
            }
        });
        SubscriptionGroupManager {
            state,
            file,
            auto_create: AtomicBool::new(config.auto_create_subscription_group),
        }
    }

    /// Turns auto-creation of unknown groups on or off from now on.
    pub fn set_auto_create(&self, on: bool) {
        self.auto_create.store(on, Ordering::Relaxed);
    }

    /// How many subscription groups exist, the built-in ones included
    /// (`rocketmq_consumer_group_number`).
    pub fn count(&self) -> usize {
        self.state.read().subscription_group_table.len()
    }

    /// Whether the group has settings (`containsSubscriptionGroup`); creates nothing.
    pub fn contains(&self, group: &str) -> bool {
        self.state
            .read()
            .subscription_group_table
            .contains_key(group)
    }

    /// The group's settings, creating the group if auto-creation is on
    /// (`findSubscriptionGroupConfig`). `None` means the group does not exist.
    pub fn find_or_create(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        if let Some(found) = self.state.read().subscription_group_table.get(group) {
            return Some(found.clone());
        }
        // Java's `findSubscriptionGroupConfig` never auto-creates an illegal name (the name ends
        // up in retry topic names and file contents).
        if !self.auto_create.load(Ordering::Relaxed)
            || group.len() > AUTO_CREATE_MAX_LENGTH
            || has_illegal_char(group)
        {
            return None;
        }
        let created = {
            let mut state = self.state.write();
            let created = state
                .subscription_group_table
                .entry(group.to_string())
                .or_insert_with(|| SubscriptionGroupConfig::new(group))
                .clone();
            state.data_version.counter += 1;
            created
        };
        info!(group, "auto-created subscription group");
        self.file.request();
        Some(created)
    }

    /// Every group's settings and the table's version (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
    pub fn snapshot(&self) -> (BTreeMap<String, SubscriptionGroupConfig>, DataVersion) {
        let state = self.state.read();
        (state.subscription_group_table.clone(), state.data_version)
    }

    /// `deleteSubscriptionGroupConfig`: whether the group existed.
    pub fn remove(&self, group: &str) -> bool {
        let removed = {
            let mut state = self.state.write();
            let removed = state.subscription_group_table.remove(group).is_some();
            state.forbidden_table.remove(group);
            if removed {
                state.data_version.counter += 1;
            }
            removed
        };
        if removed {
            self.file.request();
        }
        removed
    }

    /// Creates or replaces a group's settings (admin `UPDATE_AND_CREATE_SUBSCRIPTIONGROUP`).
    pub fn upsert(&self, config: SubscriptionGroupConfig) {
        {
            let mut state = self.state.write();
            state
                .subscription_group_table
                .insert(config.group_name.clone(), config);
            state.data_version.counter += 1;
        }
        self.file.request();
    }

    /// A slave's sync (`SlaveSynchronize.syncSubscriptionGroupConfig`): when the master's table
    /// has another version, it replaces this one, version included. Returns whether it did.
    pub fn replace_from_master(
        &self,
        groups: BTreeMap<String, SubscriptionGroupConfig>,
        data_version: DataVersion,
    ) -> bool {
        {
            let mut state = self.state.write();
            if state.data_version == data_version {
                return false;
            }
            state.subscription_group_table = groups;
            state.data_version = data_version;
        }
        self.file.request();
        true
    }

    /// Writes `subscriptionGroup.json` now and waits for it. Blocks: not for async workers.
    pub fn persist(&self) {
        if !self.file.flush(Duration::from_secs(10)) {
            warn!(file = %self.file.path().display(), "subscriptionGroup.json not written yet");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_created_on_demand_and_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let groups = SubscriptionGroupManager::load(&config);
        let group = groups.find_or_create("g1").unwrap();
        assert_eq!(group.retry_max_times, 16);
        groups.persist();
        let reloaded = SubscriptionGroupManager::load(&config);
        assert_eq!(reloaded.find_or_create("g1"), Some(group));

        let strict = SubscriptionGroupManager::load(&BrokerConfig {
            auto_create_subscription_group: false,
            ..config
        });
        assert!(strict.find_or_create("other").is_none());
        assert!(strict.find_or_create("g1").is_some());
        // UPDATE_BROKER_CONFIG autoCreateSubscriptionGroup, in force at the next lookup.
        strict.set_auto_create(true);
        assert!(strict.find_or_create("other").is_some());
        strict.set_auto_create(false);
        assert!(strict.find_or_create("another").is_none());
        assert!(groups.find_or_create("../x").is_none());
        assert!(groups.find_or_create(&"g".repeat(256)).is_none());
    }

    #[test]
    fn removed_groups_leave_the_snapshot_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let groups = SubscriptionGroupManager::load(&config);
        groups.upsert(SubscriptionGroupConfig::new("g1"));
        groups.upsert(SubscriptionGroupConfig::new("g2"));
        let (_, before) = groups.snapshot();
        assert!(groups.remove("g1"));
        assert!(!groups.remove("g1"));
        let (table, after) = groups.snapshot();
        let ours = |table: &BTreeMap<String, SubscriptionGroupConfig>| {
            table
                .keys()
                .filter(|g| !BUILT_IN_GROUPS.contains(&g.as_str()))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(ours(&table), ["g2"]);
        assert_ne!(before, after);
        groups.persist();
        let (reloaded, _) = SubscriptionGroupManager::load(&config).snapshot();
        assert_eq!(ours(&reloaded), ["g2"]);
    }

    #[test]
    fn the_built_in_groups_exist_and_the_file_may_change_them() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            store_path_root_dir: dir.path().to_path_buf(),
            auto_create_subscription_group: false,
            ..BrokerConfig::default()
        };
        let groups = SubscriptionGroupManager::load(&config);
        assert_eq!(groups.count(), BUILT_IN_GROUPS.len());
        assert!(groups.find_or_create("CID_RMQ_SYS_TRANS").is_some());
        groups.upsert(SubscriptionGroupConfig {
            retry_max_times: 3,
            ..SubscriptionGroupConfig::new("TOOLS_CONSUMER")
        });
        groups.persist();
        let reloaded = SubscriptionGroupManager::load(&config);
        assert_eq!(
            reloaded
                .find_or_create("TOOLS_CONSUMER")
                .unwrap()
                .retry_max_times,
            3
        );
        assert_eq!(reloaded.count(), BUILT_IN_GROUPS.len());
    }
}
