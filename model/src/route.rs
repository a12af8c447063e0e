//! Topics, brokers and routes: what a name server hands out and what a broker registers.
//!
//! Field names follow Apache RocketMQ's (`TopicConfig`, `QueueData`, `BrokerData`,
//! `TopicRouteData`, `ClusterInfo`) because they are the domain model every RocketMQ user and tool
//! knows; serde derives use the Java JSON names so config files and bodies can reuse them.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::static_topic::TopicQueueMappingInfo;

/// Permission bits of a topic or broker (`PermName`).
pub mod perm {
    pub const PRIORITY: i32 = 0x8;
    pub const READ: i32 = 0x4;
    pub const WRITE: i32 = 0x2;
    /// Topics with this bit (only `TBW102`) may be used as auto-create templates.
    pub const INHERIT: i32 = 0x1;

    pub fn is_readable(perm: i32) -> bool {
        perm & READ == READ
    }

    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE == WRITE
    }

    pub fn is_inherited(perm: i32) -> bool {
        perm & INHERIT == INHERIT
    }
}

/// The id of a master within a broker group.
pub const MASTER_ID: i64 = 0;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TopicFilterType {
    #[default]
    SingleTag,
    MultiTag,
}

/// A topic as a broker hosts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    pub topic_name: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_filter_type: TopicFilterType,
    pub topic_sys_flag: i32,
    pub order: bool,
    pub attributes: BTreeMap<String, String>,
}

/// Queue count a topic gets when nobody says otherwise (`TopicConfig.defaultReadQueueNums`).
pub const DEFAULT_QUEUE_NUMS: i32 = 16;

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            topic_name: String::new(),
            read_queue_nums: DEFAULT_QUEUE_NUMS,
            write_queue_nums: DEFAULT_QUEUE_NUMS,
            perm: perm::READ | perm::WRITE,
            topic_filter_type: TopicFilterType::SingleTag,
            topic_sys_flag: 0,
            order: false,
            attributes: BTreeMap::new(),
        }
    }
}

impl TopicConfig {
    /// A read-write topic with `queues` read and write queues.
    pub fn new(name: impl Into<String>, queues: i32) -> Self {
        TopicConfig {
            topic_name: name.into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            ..TopicConfig::default()
        }
    }
}

/// `DataVersion`: lets a name server tell whether a broker's topic set changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    pub state_version: i64,
    pub timestamp: i64,
    pub counter: i64,
}

/// One broker group's queues of a topic, as the route lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueData {
    pub broker_name: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_sys_flag: i32,
}

/// One broker group: its cluster, name and the address of each member by broker id (0 = master).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    pub cluster: String,
    pub broker_name: String,
    pub broker_addrs: BTreeMap<i64, String>,
    pub enable_acting_master: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

/// What a client needs to reach a topic: its queues per broker group and the groups' addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    pub queue_datas: Vec<QueueData>,
    pub broker_datas: Vec<BrokerData>,
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    /// A static topic's mapping, by broker group: what each group registered of it (boxed, so
    /// that a plain topic's route stays small).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_by_broker: Option<Box<BTreeMap<String, TopicQueueMappingInfo>>>,
}

/// Every broker group known to a name server, and which groups each cluster has.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// A broker announcing itself and its topics to a name server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerRegistration {
    pub cluster_name: String,
    pub broker_name: String,
    /// `ip:port` clients connect to.
    pub broker_addr: String,
    pub broker_id: i64,
    /// `ip:port` of the HA (replication) listener.
    pub ha_server_addr: String,
    /// How long the name server may go without hearing from the broker before dropping it.
    pub heartbeat_timeout_millis: Option<i64>,
    /// `enableActingMaster`; `None` from a broker too old to send it (before 5.0), which a
    /// name server never takes as a group's prime slave.
    pub enable_acting_master: Option<bool>,
    pub data_version: DataVersion,
    pub topics: BTreeMap<String, TopicConfig>,
    /// The static topics among `topics`, with the logical queues this group leads.
    pub topic_queue_mappings: BTreeMap<String, TopicQueueMappingInfo>,
    pub filter_server_list: Vec<String>,
}

/// What a name server answers a registration with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrationResult {
    pub master_addr: Option<String>,
    pub ha_server_addr: Option<String>,
}
