//! The topics a broker hosts (`TopicConfigManager`), persisted as `config/topics.json`.
//!
//! Besides user topics the broker always hosts the system topics RocketMQ tools look for: the
//! auto-create template `TBW102`, the cluster-named and broker-named topics admin tools resolve
//! brokers with, and the internal ones (`SELF_TEST_TOPIC`, `OFFSET_MOVED_EVENT`, schedule,
//! transaction and reply topics).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use skiff_model::route::{perm, DataVersion, TopicConfig};
use skiff_model::topic;
use tokio::sync::watch;
use tracing::{info, warn};

use super::config_file::ConfigFile;
use super::persist;
use crate::config::BrokerConfig;

/// Queues of `SCHEDULE_TOPIC_XXXX`: one per delay level.
const SCHEDULE_TOPIC_QUEUE_NUM: i32 = 18;
/// How long [`TopicConfigManager::persist`] waits for the writer.
const PERSIST_WAIT: Duration = Duration::from_secs(10);
/// `MixAll.REPLY_TOPIC_POSTFIX`.
const REPLY_TOPIC_POSTFIX: &str = "REPLY_TOPIC";

/// The on-disk shape (`TopicConfigSerializeWrapper`).
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct TopicsFile {
    data_version: DataVersion,
    topic_config_table: BTreeMap<String, TopicConfig>,
}

struct State {
    topics: BTreeMap<String, TopicConfig>,
    data_version: DataVersion,
}

pub struct TopicConfigManager {
    state: Arc<RwLock<State>>,
    /// The one writer of `topics.json`: changes only request a write.
    file: ConfigFile,
    /// Bumped whenever topics change, so the broker re-registers with name servers at once.
    changed: watch::Sender<u64>,
    /// The topics this broker made for itself (Java's `TopicValidator.addSystemTopic` calls
    /// in `TopicConfigManager`): its cluster- and broker-named topics among them.
    system: std::collections::BTreeSet<String>,
    /// Topics changed since the name servers were last told (incremental registration).
    unannounced: parking_lot::Mutex<std::collections::BTreeSet<String>>,
    /// `autoCreateTopicEnable` in force (UPDATE_BROKER_CONFIG changes it at runtime, as Java
    /// reads its setting at each creation).
    auto_create: AtomicBool,
    /// Whether loading changed the table from what `topics.json` holds (system topics added,
    /// the template dropped, queue counts clamped): only then is the file written at start.
    changed_at_load: bool,
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl TopicConfigManager {
    /// Loads `topics.json` and adds the system topics this configuration calls for.
    pub fn load(config: &BrokerConfig) -> Self {
        let path = persist::config_dir(&config.store_path_root_dir).join("topics.json");
        let file: TopicsFile = persist::load(&path).unwrap_or_default();
        let mut topics = system_topics(config);
        let system: std::collections::BTreeSet<String> = topics.keys().cloned().collect();
        let mut changed_at_load = system
            .iter()
            .any(|name| !file.topic_config_table.contains_key(name));
        // Persisted settings win, except that the template follows autoCreateTopicEnable: gone
        // when it is off, inheritable when it is on (turning it off at runtime took the bit
        // away; Java would keep the persisted perm and never auto-create again).
        for (name, mut topic) in file.topic_config_table {
            if name == topic::AUTO_CREATE_TOPIC_KEY {
                if !config.auto_create_topic_enable {
                    changed_at_load = true;
                    continue;
                }
                changed_at_load |= !perm::is_inherited(topic.perm);
                topic.perm |= perm::INHERIT;
            }
            let queues = (topic.read_queue_nums, topic.write_queue_nums);
            clamp_queue_nums(&mut topic, config.max_topic_queue_nums);
            changed_at_load |= queues != (topic.read_queue_nums, topic.write_queue_nums);
            topics.insert(name, topic);
        }
        let mut data_version = file.data_version;
        data_version.timestamp = now_millis();
        data_version.counter += 1;
        let state = Arc::new(RwLock::new(State {
            topics,
            data_version,
        }));
        let file = ConfigFile::spawn(path, skiff_store::fs::real(), {
            let state = state.clone();
            move || {
                // Copy under the lock, serialize outside it: creations never wait for JSON.
                let file = {
                    let state = state.read();
                    TopicsFile {
                        data_version: state.data_version,
                        topic_config_table: state.topics.clone(),
                    }
                };
                skiff_protocol::fastjson::to_string_pretty(&file).expect("topic configs serialize")
            }
        });
        TopicConfigManager {
            state,
            file,
            changed: watch::Sender::new(0),
            system,
            unannounced: parking_lot::Mutex::new(std::collections::BTreeSet::new()),
            auto_create: AtomicBool::new(config.auto_create_topic_enable),
            changed_at_load,
        }
    }

    /// Turns creation from the template topic on or off from now on (`autoCreateTopicEnable`).
    pub fn set_auto_create(&self, on: bool) {
        self.auto_create.store(on, Ordering::Relaxed);
    }

    /// Asks for `topics.json` to be written if loading changed the table (a first start, a new
    /// system topic, a clamped queue count); a file that is already right is not rewritten, so
    /// a start with 100,000 topics does not serialize them all again.
    pub fn persist_if_changed_at_load(&self) {
        if self.changed_at_load {
            self.file.request();
        }
    }

    /// Whether `name` belongs to the broker: a RocketMQ system topic, or one this broker made
    /// for itself (cluster name, broker name, reply and trace topics).
    pub fn is_system_topic(&self, name: &str) -> bool {
        topic::is_system_topic(name) || self.system.contains(name)
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_BROKER: RocketMQ's system topics, the broker's own and every
    /// `rmq_sys_` topic it holds (the POP revive log, the timer topic), sorted.
    pub fn system_topics(&self) -> Vec<String> {
        let mut topics: std::collections::BTreeSet<String> = topic::system_topic_set()
            .iter()
            .map(|t| t.to_string())
            .collect();
        topics.extend(self.system.iter().cloned());
        let state = self.state.read();
        topics.extend(
            state
                .topics
                .keys()
                .filter(|name| topic::is_system_topic(name))
                .cloned(),
        );
        topics.into_iter().collect()
    }

    /// A new data version without a change of topics (Java's `getDataVersion().nextVersion()`
    /// when the broker's permission changes): name servers then take the next registration.
    pub fn touch(&self) {
        bump(&mut self.state.write().data_version);
    }

    pub fn get(&self, name: &str) -> Option<TopicConfig> {
        self.state.read().topics.get(name).cloned()
    }

    /// Every topic, with the version name servers compare to see changes.
    pub fn snapshot(&self) -> (BTreeMap<String, TopicConfig>, DataVersion) {
        let state = self.state.read();
        (state.topics.clone(), state.data_version)
    }

    /// A number that changes whenever the topic table does.
    pub fn version(&self) -> u64 {
        *self.changed.borrow()
    }

    /// Sees every change of the topic table (registration waits on this between periods).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Creates `name` from a template topic, as a producer sending to an unknown topic asks
    /// (`createTopicInSendMessageMethod`). `None` if the template is missing or not inheritable.
    pub fn create_from_template(
        &self,
        name: &str,
        template: &str,
        queue_nums: i32,
        topic_sys_flag: i32,
    ) -> Option<TopicConfig> {
        let created = {
            let mut state = self.state.write();
            if let Some(existing) = state.topics.get(name) {
                return Some(existing.clone());
            }
            let Some(template_config) = state.topics.get_mut(template) else {
                warn!(
                    topic = name,
                    template, "cannot auto-create topic: template topic does not exist"
                );
                return None;
            };
            if template == topic::AUTO_CREATE_TOPIC_KEY && !self.auto_create.load(Ordering::Relaxed)
            {
                // As Java's `createTopicInSendMessageMethod`: with auto-creation off the template
                // loses its inherit bit, in the table only (no new version), and so stays
                // uninheritable when it is turned on again, until a restart gives it back.
                template_config.perm = perm::READ | perm::WRITE;
            }
            let template_config = &*template_config;
            if !perm::is_inherited(template_config.perm) {
                warn!(topic = name, template, "cannot auto-create topic: the template is not inheritable (autoCreateTopicEnable=false?)");
                return None;
            }
            let queues = queue_nums.min(template_config.write_queue_nums).max(0);
            let created = TopicConfig {
                topic_name: name.to_string(),
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: template_config.perm & !perm::INHERIT,
                topic_filter_type: template_config.topic_filter_type,
                topic_sys_flag,
                ..TopicConfig::default()
            };
            state.topics.insert(name.to_string(), created.clone());
            bump(&mut state.data_version);
            created
        };
        info!(
            topic = name,
            queues = created.write_queue_nums,
            "auto-created topic"
        );
        self.persist_and_announce(name);
        Some(created)
    }

    /// Creates a retry or DLQ topic if it is missing (`createTopicInSendMessageBackMethod`).
    pub fn create_if_absent(&self, name: &str, queue_nums: i32, perm_bits: i32) -> TopicConfig {
        {
            let state = self.state.read();
            if let Some(existing) = state.topics.get(name) {
                return existing.clone();
            }
        }
        let created = {
            let mut state = self.state.write();
            if let Some(existing) = state.topics.get(name) {
                return existing.clone();
            }
            let created = TopicConfig {
                perm: perm_bits,
                ..TopicConfig::new(name, queue_nums)
            };
            state.topics.insert(name.to_string(), created.clone());
            bump(&mut state.data_version);
            created
        };
        self.persist_and_announce(name);
        created
    }

    /// Creates or replaces a topic (admin `UPDATE_AND_CREATE_TOPIC`).
    pub fn upsert(&self, config: TopicConfig) {
        let name = config.topic_name.clone();
        {
            let mut state = self.state.write();
            state.topics.insert(config.topic_name.clone(), config);
            bump(&mut state.data_version);
        }
        self.persist_and_announce(&name);
    }

    /// Removes a topic; returns whether it existed.
    pub fn remove(&self, name: &str) -> bool {
        let removed = {
            let mut state = self.state.write();
            let removed = state.topics.remove(name).is_some();
            if removed {
                bump(&mut state.data_version);
            }
            removed
        };
        if removed {
            self.persist_and_announce(name);
        }
        removed
    }

    /// A slave's sync (`SlaveSynchronize.syncTopicConfig`): when the master's table has another
    /// version, it replaces this one, version included. Returns whether it did.
    pub fn replace_from_master(
        &self,
        topics: BTreeMap<String, TopicConfig>,
        data_version: DataVersion,
    ) -> bool {
        {
            let mut state = self.state.write();
            if state.data_version == data_version {
                return false;
            }
            state.topics = topics;
            state.data_version = data_version;
        }
        // Announced with the next periodic registration, as Java's slave does.
        self.file.request();
        true
    }

    /// Writes `topics.json` now and waits for it. Blocks: call it from a blocking thread.
    pub fn persist(&self) {
        if !self.file.flush(PERSIST_WAIT) {
            warn!(file = %self.file.path().display(), "topics.json not written yet; topic changes are not durable until it succeeds");
        }
    }

    fn persist_and_announce(&self, name: &str) {
        self.file.request();
        self.unannounced.lock().insert(name.to_string());
        self.changed.send_modify(|version| *version += 1);
    }

    /// The topics changed since the last call that still exist, with the current version: what
    /// an incremental registration sends (Java's `registerIncrementBrokerData`).
    pub fn take_unannounced(&self) -> (BTreeMap<String, TopicConfig>, DataVersion) {
        let names = std::mem::take(&mut *self.unannounced.lock());
        let state = self.state.read();
        let topics = names
            .into_iter()
            .filter_map(|name| state.topics.get(&name).map(|t| (name, t.clone())))
            .collect();
        (topics, state.data_version)
    }
}

/// Brings persisted queue counts into `0..=max` (older versions accepted any number), saying so.
fn clamp_queue_nums(topic: &mut TopicConfig, max: i32) {
    let (read, write) = (topic.read_queue_nums, topic.write_queue_nums);
    topic.read_queue_nums = read.clamp(0, max);
    topic.write_queue_nums = write.clamp(0, max);
    if (read, write) != (topic.read_queue_nums, topic.write_queue_nums) {
        warn!(
            topic = %topic.topic_name, read, write, max,
            "topics.json gives this topic queue counts out of range; using the nearest allowed (maxTopicQueueNums)"
        );
    }
}

fn bump(version: &mut DataVersion) {
    version.counter += 1;
    version.timestamp = now_millis();
}

/// The topics a broker with this configuration always has (`TopicConfigManager.init`).
fn system_topics(config: &BrokerConfig) -> BTreeMap<String, TopicConfig> {
    let mut topics = BTreeMap::new();
    let mut add = |name: &str, queues: i32, perm_bits: i32| {
        let topic = TopicConfig {
            perm: perm_bits,
            ..TopicConfig::new(name, queues)
        };
        topics.insert(name.to_string(), topic);
    };
    let rw = perm::READ | perm::WRITE;
    add(topic::SELF_TEST_TOPIC, 1, rw);
    if config.auto_create_topic_enable {
        add(
            topic::AUTO_CREATE_TOPIC_KEY,
            config.default_topic_queue_nums,
            perm::INHERIT | rw,
        );
    }
    add(topic::BENCHMARK_TOPIC, 1024, rw);
    let cluster_perm = perm::INHERIT | if config.cluster_topic_enable { rw } else { 0 };
    add(&config.broker_cluster_name, 16, cluster_perm);
    let broker_perm = perm::INHERIT | if config.broker_topic_enable { rw } else { 0 };
    add(&config.broker_name, 1, broker_perm);
    add(topic::OFFSET_MOVED_EVENT, 1, rw);
    add(topic::SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, rw);
    if config.trace_topic_enable {
        add(&config.msg_trace_topic_name, 1, rw);
    }
    add(
        &format!("{}_{REPLY_TOPIC_POSTFIX}", config.broker_cluster_name),
        1,
        rw,
    );
    add(topic::TRANS_HALF_TOPIC, 1, rw);
    add(topic::TRANS_OP_HALF_TOPIC, 1, rw);
    if config.timer_wheel_enable {
        add(super::timer::TIMER_TOPIC, 1, rw);
    }
    topics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path) -> BrokerConfig {
        BrokerConfig {
            store_path_root_dir: dir.to_path_buf(),
            ..BrokerConfig::default()
        }
    }

    #[test]
    fn system_topics_are_present() {
        let dir = tempfile::tempdir().unwrap();
        let topics = TopicConfigManager::load(&config(dir.path()));
        let template = topics.get("TBW102").unwrap();
        assert_eq!(template.perm, 7);
        assert_eq!(template.write_queue_nums, 8);
        assert_eq!(topics.get("DefaultCluster").unwrap().perm, 7);
        assert_eq!(topics.get("broker-a").unwrap().write_queue_nums, 1);
        assert!(topics.get("DefaultCluster_REPLY_TOPIC").is_some());
    }

    #[test]
    fn a_file_that_is_already_right_is_not_rewritten_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let first = TopicConfigManager::load(&cfg);
        assert!(
            first.changed_at_load,
            "a first start writes the system topics"
        );
        first.persist();
        drop(first);
        let again = TopicConfigManager::load(&cfg);
        assert!(!again.changed_at_load);
        assert!(again.get("DefaultCluster").is_some());
        // A clamped queue count is a change to write back.
        let clamped = TopicConfigManager::load(&BrokerConfig {
            max_topic_queue_nums: 4,
            ..cfg
        });
        assert!(clamped.changed_at_load);
    }

    #[test]
    fn auto_create_inherits_from_the_template_and_persists() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let topics = TopicConfigManager::load(&cfg);
        let created = topics
            .create_from_template("NewTopic", "TBW102", 4, 0)
            .unwrap();
        assert_eq!(created.write_queue_nums, 4);
        assert_eq!(created.perm, 6);
        let big = topics.create_from_template("Big", "TBW102", 64, 0).unwrap();
        assert_eq!(big.write_queue_nums, 8, "capped by the template");
        assert!(topics.create_from_template("X", "Missing", 4, 0).is_none());
        topics.persist();
        let reloaded = TopicConfigManager::load(&cfg);
        assert_eq!(reloaded.get("NewTopic"), Some(created));
    }

    #[test]
    fn auto_create_turned_off_at_runtime_takes_the_templates_inherit_bit_as_java() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path());
        let topics = TopicConfigManager::load(&cfg);
        topics.set_auto_create(false);
        assert!(topics.create_from_template("Off", "TBW102", 4, 0).is_none());
        assert_eq!(topics.get("TBW102").unwrap().perm, 6);
        // On again, the template is still uninheritable (Java's quirk)...
        topics.set_auto_create(true);
        assert!(topics.create_from_template("On", "TBW102", 4, 0).is_none());
        // ...until a restart with auto-creation on, even after the table was written.
        topics.upsert(TopicConfig::new("Other", 1));
        topics.persist();
        let restarted = TopicConfigManager::load(&cfg);
        assert_eq!(restarted.get("TBW102").unwrap().perm, 7);
        assert!(restarted
            .create_from_template("On", "TBW102", 4, 0)
            .is_some());
    }

    #[test]
    fn no_template_without_auto_create() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BrokerConfig {
            auto_create_topic_enable: false,
            ..config(dir.path())
        };
        let topics = TopicConfigManager::load(&cfg);
        assert!(topics.get("TBW102").is_none());
        assert!(topics.create_from_template("T", "TBW102", 4, 0).is_none());
    }
}
