//! Operator requests beyond topics and groups (the ones `mqadmin` sends): the name server's
//! key-value configuration, write-permission switches for a broker's routes, and broker
//! introspection (who consumes a topic, replication status).

use std::collections::BTreeMap;

use crate::consumer::SubscriptionGroupConfig;
use crate::route::DataVersion;

/// An administration request. Name-server ones are marked; the rest go to a broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminCommand {
    /// Name server: set `key` to `value` in `namespace` (created on first use).
    PutKvConfig {
        namespace: String,
        key: String,
        value: String,
    },
    /// Name server: one value.
    GetKvConfig { namespace: String, key: String },
    /// Name server: remove one key (a missing key is not an error).
    DeleteKvConfig { namespace: String, key: String },
    /// Name server: every key of a namespace.
    GetKvList { namespace: String },
    /// Name server: make every route of `broker_name` read-only (`wipeWritePerm`), or writable
    /// again (`addWritePerm`), until the broker next registers its own permissions.
    WritePerm { broker_name: String, writable: bool },
    /// Broker: the groups that consume `topic` (live subscribers and groups with offsets).
    TopicConsumers { topic: String },
    /// Broker: replication status (`HARuntimeInfo`).
    HaStatus,
    /// Broker: its configuration in force, by Java key.
    GetBrokerConfig,
    /// Name server: its configuration in force, by Java key.
    GetNamesrvConfig,
    /// Broker: every subscription group's settings.
    GetAllSubscriptionGroups,
    /// Broker: forget a subscription group's settings, and its committed offsets when
    /// `clean_offset` (a missing group is not an error, as in Java).
    DeleteSubscriptionGroup { group: String, clean_offset: bool },
}

/// An answer to an [`AdminCommand`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminReply {
    /// A key-value config value.
    KvValue(String),
    /// A namespace's keys and values.
    KvList(BTreeMap<String, String>),
    /// How many topics a [`AdminCommand::WritePerm`] changed.
    WritePermChanged {
        writable: bool,
        topic_count: i32,
    },
    /// Consumer group names, sorted.
    Groups(Vec<String>),
    HaStatus(HaStatus),
    /// Settings by Java key, in the server's order, and the configuration's version (the
    /// broker's answer carries one, the name server's none).
    Config {
        properties: Vec<(String, String)>,
        data_version: Option<DataVersion>,
    },
    /// Subscription groups by name (`SubscriptionGroupWrapper`).
    SubscriptionGroups {
        groups: BTreeMap<String, SubscriptionGroupConfig>,
        data_version: DataVersion,
    },
}

/// `HARuntimeInfo` of a master (Skiff does not replicate yet: a master without slaves).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HaStatus {
    pub master: bool,
    /// The CommitLog's max physical offset.
    pub master_commit_log_max_offset: i64,
    pub in_sync_slave_nums: i32,
}
