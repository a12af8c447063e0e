//! Operator requests beyond topics and groups (the ones `mqadmin` sends): the name server's
//! key-value configuration, write-permission switches for a broker's routes, and broker
//! introspection (who consumes a topic, replication status, who is connected, traffic statistics,
//! a consumer's own running state).

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::consumer::{
    ConsumeFromWhere, ConsumeStats, ConsumeType, MessageModel, MessageQueue, SubscriptionData,
    SubscriptionGroupConfig,
};
use crate::route::{DataVersion, TopicConfig};
use crate::static_topic::TopicQueueMappingDetail;

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
    /// Broker: every committed consumer offset (GET_ALL_CONSUMER_OFFSET; a slave's metadata sync).
    GetAllConsumerOffsets,
    /// Broker: how far each delay level has delivered (GET_ALL_DELAY_OFFSET; a slave's sync).
    GetAllDelayOffsets,
    /// Broker: every group's PULL/POP setting per topic (GET_ALL_MESSAGE_REQUEST_MODE; a slave's
    /// sync).
    GetAllMessageRequestModes,
    /// Broker: the timer's last checkpoint (GET_TIMER_CHECK_POINT; a 5.x slave asks every 3 s).
    GetTimerCheckpoint,
    /// Broker: timer messages pending per topic (GET_TIMER_METRICS; a 5.x slave's sync).
    GetTimerMetrics,
    /// Broker: forget a subscription group's settings, and its committed offsets when
    /// `clean_offset` (a missing group is not an error, as in Java).
    DeleteSubscriptionGroup { group: String, clean_offset: bool },
    /// Broker: the live connections of a consumer group and what they subscribe to.
    ConsumerConnections { group: String },
    /// Broker: the live connections of a producer group.
    ProducerConnections { group: String },
    /// Name server: the system topics (cluster and broker names), and a broker to ask for its own.
    SystemTopicsFromNamesrv,
    /// Broker: the system topics it knows (`TopicValidator.getSystemTopicSet`).
    SystemTopicsFromBroker,
    /// Broker: ask the consumer `client_id` of `group` for its running state
    /// (`ConsumerRunningInfo`); the client's answer is relayed as it is.
    ConsumerRunningInfo {
        group: String,
        client_id: String,
        jstack: bool,
    },
    /// Broker: move `group`'s committed offsets on `topic` (INVOKE_BROKER_TO_RESET_OFFSET). With
    /// the server-side reset of Java 5 (its default) consumers learn it on their next pull: every
    /// queue (`queue_id` -1) to the first message stored at or after `timestamp` (-1: the end), or
    /// one queue to `offset` when given. With the client-side reset the live consumers are told
    /// at once, and an offset moves forward only when `force`.
    ResetOffset {
        topic: String,
        group: String,
        timestamp: i64,
        queue_id: i32,
        offset: Option<i64>,
        force: bool,
    },
    /// Broker: hand the stored message `msg_id` (an offset message id) to the consumer
    /// `client_id` of `group` to consume now (CONSUME_MESSAGE_DIRECTLY, `mqadmin queryMsgById -d`);
    /// the client's answer is relayed as it is. `message` is the stored record, which the broker
    /// adds before passing the request on (none from the operator).
    ConsumeMessageDirectly {
        group: String,
        client_id: String,
        msg_id: String,
        topic: Option<String>,
        broker_name: Option<String>,
        message: Option<Bytes>,
    },
    /// Broker: `count` ConsumeQueue entries of a queue from `index` (QUERY_CONSUME_QUEUE,
    /// `mqadmin queryCq`), with `group`'s subscription to the topic when given.
    QueryConsumeQueue {
        topic: String,
        queue_id: i32,
        index: i64,
        count: i32,
        group: Option<String>,
    },
    /// Broker: each live consumer's own offsets on `topic` (INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
    /// `mqadmin getConsumerStatus`); the broker asks every member of `group` (or only
    /// `client_id` when not empty) with [`AdminCommand::ConsumerStatusFromClient`].
    ConsumerStatus {
        topic: String,
        group: String,
        client_id: String,
    },
    /// Broker to client: your offsets on `topic` (GET_CONSUMER_STATUS_FROM_CLIENT).
    ConsumerStatusFromClient { topic: String, group: String },
    /// Broker: copy `src_group`'s committed offsets on `topic` to `dest_group`
    /// (CLONE_GROUP_OFFSET); unless `offline`, skipped when the live source group does not
    /// subscribe to the topic.
    CloneGroupOffset {
        src_group: String,
        dest_group: String,
        topic: String,
        offline: bool,
    },
    /// Broker: change settings at runtime (UPDATE_BROKER_CONFIG, `mqadmin updateBrokerConfig`),
    /// given as Java properties text (`key=value` lines, the form of RocketMQ's config files).
    UpdateBrokerConfig { properties: String },
    /// Broker: delete expired CommitLog segments now rather than at `deleteWhen`
    /// (DELETE_EXPIRED_COMMITLOG, `mqadmin deleteExpiredCommitLog`).
    DeleteExpiredCommitLog,
    /// Broker: drop the ConsumeQueues of topics it no longer has (CLEAN_UNUSED_TOPIC,
    /// `mqadmin cleanUnusedTopic`); system topics are kept.
    CleanUnusedTopic,
    /// Broker: drop the ConsumeQueues none of whose messages is stored any more
    /// (CLEAN_EXPIRED_CONSUMEQUEUE, `mqadmin cleanExpiredCQ`); system topics are kept.
    CleanExpiredConsumeQueue,
    /// Broker: create or change several topics at once (UPDATE_AND_CREATE_TOPIC_LIST,
    /// `mqadmin updateTopicList`).
    CreateTopicList(Vec<TopicConfig>),
    /// Broker: create or change a static topic and this broker's part of its mapping
    /// (UPDATE_AND_CREATE_STATIC_TOPIC, `mqadmin updateStaticTopic` / `remappingStaticTopic`);
    /// `force` replaces the old mapping without the epoch and item checks.
    CreateStaticTopic {
        config: TopicConfig,
        mapping: TopicQueueMappingDetail,
        force: bool,
    },
    /// Broker: create or change several subscription groups at once
    /// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, `mqadmin updateSubGroupList`).
    CreateSubscriptionGroupList(Vec<SubscriptionGroupConfig>),
    /// Broker: export configs kept in RocksDB to JSON files (EXPORT_ROCKSDB_CONFIG_TO_JSON,
    /// `mqadmin rocksDBConfigToJson`); `config_types` as Java lists them
    /// (`topics;subscriptionGroups;consumerOffsets`).
    ExportRocksDbConfig { config_types: String },
    /// Name server: the same for its settings (UPDATE_NAMESRV_CONFIG).
    UpdateNamesrvConfig { properties: String },
    /// Broker: every producer connection by group (GET_ALL_PRODUCER_INFO).
    AllProducerInfo,
    /// Broker: the progress of every subscription group on every topic it has offsets on
    /// (GET_BROKER_CONSUME_STATS); only ordered topics when `order_only`.
    BrokerConsumeStats { order_only: bool },
    /// Broker: one traffic statistic (`BrokerStatsManager`), e.g. `TOPIC_PUT_NUMS` of a topic
    /// or `GROUP_GET_NUMS` of `topic@group`.
    StatsData { name: String, key: String },
    /// Broker: set the cold-read threshold (bytes per check period) of some consumer groups
    /// (UPDATE_COLD_DATA_FLOW_CTR_CONFIG), given as Java properties text `group=bytes`.
    UpdateColdReadThresholds { properties: String },
    /// Broker: a consumer group back to the broker's `cgColdReadThreshold`
    /// (REMOVE_COLD_DATA_FLOW_CTR_CONFIG).
    RemoveColdReadThreshold { group: String },
    /// Broker: the cold-read flow control's tables (GET_COLD_DATA_FLOW_CTR_INFO).
    ColdReadInfo,
    /// Broker: readahead on the CommitLog's pages on (`MADV_NORMAL`, 0) or off (`MADV_RANDOM`,
    /// 1) (SET_COMMITLOG_READ_MODE, `mqadmin setCommitLogReadAheadMode`).
    SetCommitLogReadAhead { mode: i32 },
    /// Broker (a slave): where its master's flushed CommitLog ends (RESET_MASTER_FLUSH_OFFSET);
    /// a master ignores it, as Java's does.
    ResetMasterFlushOffset { offset: i64 },
    /// Broker: compare the file ConsumeQueues with the RocksDB ones written alongside
    /// (CHECK_ROCKSDB_CQ_WRITE_PROGRESS); `topic` empty = all, messages stored since
    /// `check_store_time`.
    CheckRocksDbCqWriteProgress {
        topic: String,
        check_store_time: i64,
    },
    /// Broker: move the POP records kept in the RocksDB KV store (`popConsumerKVServiceEnable`)
    /// to the revive topic's files (POP_ROLLBACK, `mqadmin exportPopRecord`).
    ExportPopRecords,
    /// Broker: add an ACL 2.0 user (AUTH_CREATE_USER). `caller` is the user the request is
    /// signed as (none without authentication): only a super user may create a super user.
    CreateUser {
        caller: Option<String>,
        user: UserInfo,
    },
    /// Broker: change a user's password, type or status, whichever `user` sets
    /// (AUTH_UPDATE_USER).
    UpdateUser {
        caller: Option<String>,
        user: UserInfo,
    },
    /// Broker: remove a user (AUTH_DELETE_USER); a missing one is not an error.
    DeleteUser {
        caller: Option<String>,
        username: String,
    },
    /// Broker: one user (AUTH_GET_USER).
    GetUser { username: String },
    /// Broker: the users whose name contains `filter` (AUTH_LIST_USER).
    ListUsers { filter: Option<String> },
    /// Broker: add policies to a subject's ACL, or change the entries of the same resources
    /// (AUTH_CREATE_ACL; AUTH_UPDATE_ACL does the same in Java). `subject` is the header's,
    /// used when the body names none.
    CreateAcl {
        subject: String,
        acl: Option<AclInfo>,
        update: bool,
    },
    /// Broker: remove one resource's entry of a subject's ACL, or the whole ACL without a
    /// resource (AUTH_DELETE_ACL).
    DeleteAcl {
        subject: String,
        policy_type: Option<String>,
        resource: Option<String>,
    },
    /// Broker: a subject's ACL (AUTH_GET_ACL).
    GetAcl { subject: Option<String> },
    /// Broker: the ACLs whose subject contains `subject_filter`, with the entries whose resource
    /// contains `resource_filter` (AUTH_LIST_ACL).
    ListAcls {
        subject_filter: Option<String>,
        resource_filter: Option<String>,
    },
}

/// An ACL 2.0 access control list as operators write it (`AclInfo`): the subject
/// (`User:alice`) and its policies. Names are Java's (`Custom`, `Pub`, `Allow`, `Topic:orders`),
/// any case; `None` where the request leaves a field out. The JSON of these three is Java's.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AclInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<PolicyInfo>>,
}

/// `PolicyInfo`: `Custom` or `Default` policies and their entries.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<PolicyEntryInfo>>,
}

/// `PolicyEntryInfo`: a resource (`*`, `Topic:t`, `Group:g*`), the actions allowed or denied on
/// it, from which addresses (IPs or CIDRs; none = any), and the decision.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyEntryInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_ips: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
}

/// An ACL 2.0 user as operators see it (`UserInfo`): the type (`Super`, `Normal`) and status
/// (`enable`, `disable`) by Java's names, any case; `None` where the request leaves them out.
/// Its JSON is Java's: camel-case names, absent fields left out (as fastjson writes them).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UserInfo {
    pub username: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_status: Option<String>,
}

/// An answer to an [`AdminCommand`].
#[derive(Debug, Clone, PartialEq)]
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
    /// Committed offsets, `topic@group` → queue → offset (`ConsumerOffsetSerializeWrapper`).
    ConsumerOffsets {
        table: BTreeMap<String, BTreeMap<i32, i64>>,
        data_version: DataVersion,
    },
    /// Each delay level's next queue offset to deliver (`delayOffset.json`).
    DelayOffsets {
        table: BTreeMap<i32, i64>,
        data_version: DataVersion,
    },
    /// topic → group → PULL/POP setting (`MessageRequestModeSerializeWrapper`).
    MessageRequestModes(BTreeMap<String, BTreeMap<String, crate::pop::RequestModeSetting>>),
    /// The timer's progress as last put on disk (`TimerCheckpoint`).
    TimerCheckpoint(TimerCheckpoint),
    /// Timer messages pending per topic (`TimerMetricsSerializeWrapper`).
    TimerMetrics {
        timing_count: BTreeMap<String, TimerMetric>,
        data_version: DataVersion,
    },
    /// Subscription groups by name (`SubscriptionGroupWrapper`).
    SubscriptionGroups {
        groups: BTreeMap<String, SubscriptionGroupConfig>,
        data_version: DataVersion,
    },
    ConsumerConnections(ConsumerConnections),
    /// A producer group's live connections.
    ProducerConnections(Vec<ClientConnection>),
    /// System topic names, and (from a name server) a broker that lists its own.
    SystemTopics {
        topics: Vec<String>,
        broker_addr: Option<String>,
    },
    /// A client's answer to a request the broker passed on to it, returned to the asker as it is.
    FromClient(ClientAnswer),
    StatsData(StatsData),
    /// Producer connections by group (`ProducerTableInfo`).
    ProducerTable(BTreeMap<String, Vec<ProducerInfo>>),
    /// `ConsumeStatsList`: each group's stats per topic, and the broker's total backlog.
    BrokerConsumeStats {
        broker_addr: String,
        groups: Vec<(String, Vec<ConsumeStats>)>,
        total_diff: i64,
        total_inflight_diff: i64,
    },
    ConsumeQueue(Box<ConsumeQueueView>),
    /// Offsets each consumer reported, by client id (`GetConsumerStatusBody.consumerTable`).
    ConsumerStatus(BTreeMap<String, Vec<(MessageQueue, i64)>>),
    /// Done, with Java's remark for it.
    Done(String),
    /// The offsets a [`AdminCommand::ResetOffset`] set, by queue.
    ResetOffsets(Vec<(MessageQueue, i64)>),
    ColdReadInfo(ColdReadInfo),
    /// A check started in the background (`CheckRocksdbCqWriteResult`, status
    /// `CHECK_IN_PROGRESS`): its result goes to the broker's log.
    CheckInProgress,
    /// One user, or none when there is no such user (Java answers success without a body).
    User(Option<UserInfo>),
    /// Users sorted by name (an empty list has no body on the wire).
    Users(Vec<UserInfo>),
    /// A subject's ACL, or none (success without a body).
    Acl(Option<AclInfo>),
    /// ACLs sorted by subject (an empty list has no body).
    Acls(Vec<AclInfo>),
}

/// The cold-read flow control's state (`ColdDataCgCtrService.getColdDataFlowCtrInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ColdReadInfo {
    /// Groups that read cold data in the last minute, by name.
    pub runtime: BTreeMap<String, ColdReadAccount>,
    /// Thresholds set by an operator, bytes by group.
    pub config: BTreeMap<String, i64>,
    /// `cgColdReadThreshold`: a group's bytes per period without a threshold of its own.
    pub group_threshold: i64,
    /// `globalColdReadThreshold`: all groups' bytes per period.
    pub global_threshold: i64,
    /// Cold bytes read by all groups in this period.
    pub global_acc: i64,
}

/// One group's cold reads (`AccAndTimeStamp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColdReadAccount {
    /// Cold bytes read in this period.
    pub cold_acc: i64,
    /// ms since the epoch.
    pub last_cold_read_ms: i64,
    /// ms since the epoch.
    pub created_ms: i64,
}

/// One client connection as its heartbeats described it (`Connection`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConnection {
    pub client_id: String,
    /// `ip:port` of the client's end.
    pub client_addr: String,
    /// The client's implementation language, by Java's name (`JAVA`, `GO`, ...).
    pub language: String,
    /// The client's version number (`MQVersion.Version` ordinal).
    pub version: i32,
}

/// What QUERY_CONSUME_QUEUE found (`QueryConsumeQueueResponseBody`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumeQueueView {
    /// The group's live subscription to the topic, when a group was named and is online.
    pub subscription: Option<SubscriptionData>,
    /// Java's `filterData` text: `null` for a live subscription, `G@T is not online!` otherwise.
    pub filter_data: Option<String>,
    pub max_queue_index: i64,
    pub min_queue_index: i64,
    /// The entries from the index on; `None` when the index is outside the queue (Java then
    /// answers success with only a remark).
    pub entries: Option<Vec<ConsumeQueueEntry>>,
    /// Java's remark for an index outside the queue.
    pub remark: Option<String>,
}

/// One ConsumeQueue entry (`ConsumeQueueData`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumeQueueEntry {
    pub physical_offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

/// One producer connection (`ProducerInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerInfo {
    pub connection: ClientConnection,
    /// When its last heartbeat arrived, ms since the epoch.
    pub last_update_timestamp: i64,
}

/// A live consumer group (`ConsumerConnection`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConnections {
    pub connections: Vec<ClientConnection>,
    /// By topic.
    pub subscriptions: BTreeMap<String, SubscriptionData>,
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
}

/// What a client answered (its response code, remark and body, untouched).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAnswer {
    pub code: i32,
    pub remark: Option<String>,
    pub body: Bytes,
}

/// A statistic over the last minute, hour and day (`BrokerStatsData`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatsData {
    pub minute: StatsWindow,
    pub hour: StatsWindow,
    pub day: StatsWindow,
}

/// What was counted in one window (`BrokerStatsItem`): the total, per second, and the mean
/// amount per event (bytes per message for sizes, messages per call for counts).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatsWindow {
    pub sum: i64,
    pub tps: f64,
    pub avgpt: f64,
}

/// Replication status (`HARuntimeInfo`): a master's slave connections, or a slave's client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HaStatus {
    pub master: bool,
    /// The CommitLog's max physical offset (0 on a slave).
    pub master_commit_log_max_offset: i64,
    /// Connections whose slave is less than `haMaxGapNotInSync` behind.
    pub in_sync_slave_nums: i32,
    /// A master's slave connections, oldest first (empty on a slave).
    pub connections: Vec<HaConnectionStatus>,
    /// A slave's replication client (all zero on a master).
    pub client: HaClientStatus,
}

/// One slave connection on a master (`HAConnectionRuntimeInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HaConnectionStatus {
    /// The slave's `host:port` as the master sees the connection.
    pub addr: String,
    /// The slave's last report, -1 before the first.
    pub slave_ack_offset: i64,
    /// The master's CommitLog end minus `slave_ack_offset`.
    pub diff: i64,
    pub in_sync: bool,
    /// Bytes sent to the slave in the last whole second.
    pub transferred_bytes_per_second: i64,
    /// The next offset to send, -1 before the slave's first report.
    pub transfer_from_where: i64,
}

/// A slave's replication client (`HAClientRuntimeInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HaClientStatus {
    /// The master's HA address in use (`None` while none is known).
    pub master_addr: Option<String>,
    /// Bytes read from the master in the last whole second.
    pub transferred_bytes_per_second: i64,
    /// The slave's CommitLog end.
    pub max_offset: i64,
    /// When bytes last came from the master, epoch ms.
    pub last_read_timestamp: i64,
    /// When the slave last reported to the master, epoch ms.
    pub last_write_timestamp: i64,
    /// The master's flushed offset as the slave knows it (controller mode only: 0 here).
    pub master_flush_offset: i64,
}

/// How far the timer got (Java's `TimerCheckpoint`, the `config/timercheck` file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimerCheckpoint {
    /// Every wheel tick before it was delivered.
    pub last_read_time_ms: i64,
    /// The TimerLog is on disk up to here.
    pub last_timer_log_flush_pos: i64,
    /// Every timer-topic entry before it is in the TimerLog.
    pub last_timer_queue_offset: i64,
    pub master_timer_queue_offset: i64,
    pub data_version: DataVersion,
}

/// Timer messages of one topic waiting for their time (`TimerMetrics.Metric`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TimerMetric {
    pub count: i64,
    pub time_stamp: i64,
}
