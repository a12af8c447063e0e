//! The protocol-neutral command model: every request a codec can decode, and every reply the
//! server can give.
//!
//! A codec turns its wire form into a [`Request`], the server answers with a [`Reply`], and the
//! codec writes that reply in its own wire form. Variants are named for what they mean (send,
//! pull, commit an offset), not for one protocol's request codes, so the Kafka and gRPC codecs can
//! map onto the same set. Replies are self-describing: a codec can encode any [`Reply`] without
//! seeing the request it answers.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::consumer::{
    ConsumeStats, HeartbeatData, LockBatchRequest, MessageQueue, SubscriptionGroupConfig,
    TopicStatsTable,
};
use crate::message::Message;
use crate::route::{
    BrokerRegistration, ClusterInfo, DataVersion, RegistrationResult, TopicConfig, TopicRouteData,
};
use crate::static_topic::TopicQueueMappingDetail;
use crate::transaction::{CheckTransactionStateRequest, EndTransactionRequest};

/// One queue of one topic on the broker that received the request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct QueueRef {
    pub topic: String,
    /// Of a static topic, the logical queue id (and offsets are logical), unless `physical`.
    pub queue_id: i32,
    /// The queue id and offsets name a physical queue even if the topic is static: a request
    /// one broker passes on to another for a logical queue's older stretch (Java's `lo=false`).
    pub physical: bool,
}

impl QueueRef {
    /// A queue addressed as clients address it (logical if the topic is static).
    pub fn new(topic: impl Into<String>, queue_id: i32) -> QueueRef {
        QueueRef {
            topic: topic.into(),
            queue_id,
            physical: false,
        }
    }
}

/// Everything a client can ask of a name server or a broker, and the requests a broker sends
/// back to clients ([`Request::NotifyConsumerIdsChanged`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    // ---- producing and consuming (broker) ----
    /// Store one message, or a batch of messages into one queue.
    Send(SendRequest),
    /// Read messages from a queue, possibly waiting for them (long polling).
    Pull(PullRequest),
    /// A group's committed offset on a queue.
    QueryConsumerOffset {
        group: String,
        queue: QueueRef,
        /// With nothing committed, answer 0 for a queue that still starts at 0 (Java's
        /// `setZeroIfNotFound`, true unless the header says false; brokers asking each other
        /// for a static topic's older stretch say false).
        set_zero_if_not_found: bool,
    },
    /// Commit a group's offset on a queue.
    UpdateConsumerOffset {
        group: String,
        queue: QueueRef,
        offset: i64,
    },
    /// The offset the next message of a queue will get (= number of entries ever written).
    GetMaxOffset {
        queue: QueueRef,
    },
    /// The oldest offset still readable in a queue.
    GetMinOffset {
        queue: QueueRef,
    },
    /// The offset of the first (or last) message stored at or after `timestamp` (ms).
    SearchOffsetByTimestamp {
        queue: QueueRef,
        timestamp: i64,
        boundary: BoundaryType,
    },
    /// Store time of the oldest message in a queue.
    GetEarliestMsgStoreTime {
        queue: QueueRef,
    },
    /// Messages of `topic` indexed under `key` (a message key, or the client's unique id when
    /// `unique_key`) and stored between the two timestamps (ms).
    QueryMessage {
        topic: String,
        key: String,
        max_num: i32,
        begin_timestamp: i64,
        end_timestamp: i64,
        unique_key: bool,
    },
    /// One stored message by its CommitLog offset (decoded from a broker message id).
    ViewMessage {
        commit_log_offset: i64,
    },
    /// A consumer failed a message: retry it later through `%RETRY%<group>`, or give up on it
    /// (`%DLQ%<group>`).
    ConsumerSendMsgBack(SendBackRequest),
    /// A client announcing its producer and consumer groups and subscriptions.
    Heartbeat(HeartbeatData),
    /// A client leaving a producer and/or consumer group.
    UnregisterClient {
        client_id: String,
        producer_group: Option<String>,
        consumer_group: Option<String>,
    },
    /// Client ids of a consumer group's live members.
    GetConsumerListByGroup {
        group: String,
    },
    /// A producer's commit or rollback of a half (transactional) message.
    EndTransaction(EndTransactionRequest),
    /// A consumer asking whether the broker can serve its subscription (a SQL92 filter) before it
    /// starts.
    CheckClientConfig(CheckClientConfig),
    /// An orderly consumer locking queues of its group (or renewing its locks).
    LockBatchMq(LockBatchRequest),
    /// An orderly consumer giving queue locks back.
    UnlockBatchMq(LockBatchRequest),

    // ---- administration (broker) ----
    /// Create a topic, or change it if it exists.
    CreateTopic(TopicConfig),
    DeleteTopicInBroker {
        topic: String,
    },
    GetAllTopicConfig,
    /// One topic's settings on this broker, with its static-topic mapping when `lo` (Java's
    /// `GetTopicConfigRequestHeader.lo`, which the Java admin client always sets).
    GetTopicConfig {
        topic: String,
        lo: bool,
    },
    /// Create a subscription group, or change it if it exists.
    CreateSubscriptionGroup(SubscriptionGroupConfig),
    GetTopicStats {
        topic: String,
    },
    /// A group's progress, on one topic or all of the group's topics.
    GetConsumeStats {
        group: String,
        topic: Option<String>,
    },
    GetBrokerRuntimeInfo,

    // ---- name server ----
    RegisterBroker(BrokerRegistration),
    UnregisterBroker {
        cluster_name: String,
        broker_name: String,
        broker_addr: String,
        broker_id: i64,
    },
    GetRouteInfo {
        topic: String,
    },
    GetBrokerClusterInfo,
    GetAllTopicList,
    DeleteTopicInNamesrv {
        topic: String,
        cluster_name: Option<String>,
    },

    /// POP consumption (pop, ack, change invisible time, assignment): see [`crate::pop`].
    Pop(crate::pop::PopCommand),
    /// Operator requests (KV config, write permission, introspection): see [`crate::admin`].
    Admin(crate::admin::AdminCommand),

    // ---- broker to client ----
    /// The members of a consumer group changed: rebalance now.
    NotifyConsumerIdsChanged {
        group: String,
    },
    /// How did this producer's transaction end? (answered with [`Request::EndTransaction`]).
    CheckTransactionState(CheckTransactionStateRequest),
    /// Consume `group`'s queues of `topic` from these offsets now (RESET_CONSUMER_CLIENT_OFFSET:
    /// the client-side reset of an operator's INVOKE_BROKER_TO_RESET_OFFSET).
    ResetConsumerClientOffset {
        topic: String,
        group: String,
        timestamp: i64,
        offsets: Vec<(MessageQueue, i64)>,
    },
}

/// CONSUMER_SEND_MSG_BACK (`ConsumerSendMsgBackRequestHeader`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendBackRequest {
    /// CommitLog offset of the message the consumer got.
    pub offset: i64,
    pub group: String,
    /// 0: the broker picks by reconsume count; negative: straight to the dead letters.
    pub delay_level: i32,
    pub origin_msg_id: Option<String>,
    pub origin_topic: Option<String>,
    pub unit_mode: bool,
    /// The consumer's limit; the group's `retryMaxTimes` when absent.
    pub max_reconsume_times: Option<i32>,
}

/// `CheckClientRequestBody`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CheckClientConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_data: Option<crate::consumer::SubscriptionData>,
}

/// Which end of a timestamp range a search should land on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BoundaryType {
    /// The first message stored at or after the timestamp.
    #[default]
    Lower,
    /// The last message stored at or before the timestamp.
    Upper,
}

/// A topic to create when a send names one the broker does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoCreateTopic {
    /// The template topic whose settings the new topic inherits (`TBW102`).
    pub template_topic: String,
    /// Queue count the producer asks for (capped by the template's).
    pub queue_nums: i32,
}

/// Store messages in one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendRequest {
    pub producer_group: String,
    pub topic: String,
    /// The target queue; negative lets the broker choose.
    pub queue_id: i32,
    /// Sys flag of every message: compression and transaction bits.
    pub sys_flag: i32,
    pub born_timestamp: i64,
    /// How many times these messages were consumed and sent back already.
    pub reconsume_times: i32,
    /// Retry limit that overrides the group's, for messages coming back from consumers.
    pub max_reconsume_times: Option<i32>,
    pub unit_mode: bool,
    /// How to create the topic if the broker does not have it.
    pub auto_create: Option<AutoCreateTopic>,
    /// Whether this was sent as a batch (one request, many messages, consecutive offsets).
    pub batch: bool,
    /// The messages, in order; exactly one unless `batch`.
    pub messages: Vec<Message>,
    /// The broker the client addressed, when the protocol says.
    pub broker_name: Option<String>,
}

/// How a pulling consumer filters a queue when the request carries its subscription inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionExpression {
    /// `TAG` or `SQL92`.
    pub expression_type: String,
    pub expression: String,
    pub version: i64,
}

/// Read from one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullRequest {
    pub consumer_group: String,
    pub queue: QueueRef,
    /// First queue offset wanted.
    pub queue_offset: i64,
    pub max_msg_nums: i32,
    pub max_msg_bytes: Option<i32>,
    /// An offset to commit for the group on the way (push consumers piggyback their progress).
    pub commit_offset: Option<i64>,
    /// How long the broker may hold the request when nothing is available; `None` = answer now.
    pub suspend_timeout_millis: Option<u64>,
    /// The subscription to filter with; `None` = use the one from the group's heartbeats.
    pub subscription: Option<SubscriptionExpression>,
    /// The version of the subscription the client holds (compared with the heartbeat's).
    pub sub_version: i64,
    /// Lite-pull consumers pull without a heartbeat subscription.
    pub lite: bool,
}

/// Why a request failed. Each codec maps these onto its protocol's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    SystemError,
    SystemBusy,
    RequestNotSupported,
    TopicNotExist,
    TopicExistAlready,
    MessageIllegal,
    ServiceNotAvailable,
    NoPermission,
    QueryNotFound,
    SubscriptionParseFailed,
    SubscriptionNotExist,
    SubscriptionNotLatest,
    SubscriptionGroupNotExist,
    /// A SQL92 subscription from a heartbeat whose expression did not compile.
    FilterDataNotExist,
    InvalidParameter,
    ConsumerNotOnline,
    FlowControl,
    VersionNotSupported,
    /// Refused in this state (Java's `ILLEGAL_OPERATION`, 604).
    IllegalOperation,
    /// A static topic's logical queue this broker does not lead (Java's `NOT_LEADER_FOR_QUEUE`,
    /// 501).
    NotLeaderForQueue,
    /// No such message (an ack or change of an offset outside the queue).
    NoMessage,
    /// A long-polling request arrived too late to be held.
    PollingTimeout,
    /// A client asked on an operator's behalf did not answer in time.
    ConsumeMessageTimeout,
    /// The request needs the master: this broker is a slave (Java's `SLAVE_NOT_AVAILABLE`, 11).
    SlaveNotAvailable,
}

/// A failed request: what kind of failure, and a sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    pub kind: ErrorKind,
    pub message: String,
}

/// How safely a sent message is stored (all of these mean "stored").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SendStatus {
    #[default]
    Ok,
    /// Written, but the sync flush did not finish in time.
    FlushDiskTimeout,
    /// Written, but the slave did not confirm in time.
    FlushSlaveTimeout,
    /// Written, but no slave was there to replicate to.
    SlaveNotAvailable,
}

/// Where sent messages went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendResult {
    pub status: SendStatus,
    /// The broker's id of each stored message, in order (the offset msgId in RocketMQ).
    pub msg_ids: Vec<String>,
    pub queue_id: i32,
    /// Queue offset of the first stored message.
    pub queue_offset: i64,
    /// Transaction id of a prepared message.
    pub transaction_id: Option<String>,
    /// The broker's region (`MSG_REGION`).
    pub region_id: String,
    /// Whether the broker wants clients to trace (`TRACE_ON`).
    pub trace_on: bool,
}

/// What a pull found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PullStatus {
    /// Messages are attached.
    Found,
    /// Nothing at or after the requested offset yet.
    #[default]
    NoNewMessage,
    /// Messages were there but none matched the subscription: pull again from `next_begin_offset`.
    NoMatchedMessage,
    /// The requested offset is outside the queue: continue from `next_begin_offset`.
    OffsetMoved,
}

/// A pull's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullResult {
    pub status: PullStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    /// Which member of the broker group to pull from next (0 = master).
    pub suggest_which_broker_id: i64,
    /// Of a static topic's logical queue: what to add to each message's (physical) queue offset
    /// to get its logical one (Java's `offsetDelta`); `None` for other topics.
    pub offset_delta: Option<i64>,
    /// Stored records (see [`crate::record`]), in queue order.
    pub messages: Vec<Bytes>,
}

/// Everything the server can answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Done; nothing to report.
    Success,
    Error(ErrorReply),
    Sent(SendResult),
    Pulled(PullResult),
    /// A queue offset (consumer offset, max, min or search result).
    Offset(i64),
    /// A store timestamp in ms.
    Timestamp(i64),
    ConsumerIds(Vec<String>),
    /// The queues a LOCK_BATCH_MQ locked for the client.
    LockedQueues(Vec<MessageQueue>),
    Route(TopicRouteData),
    ClusterInfo(ClusterInfo),
    TopicList(Vec<String>),
    BrokerRegistered(RegistrationResult),
    TopicConfigs {
        topics: BTreeMap<String, TopicConfig>,
        data_version: DataVersion,
    },
    /// One topic's settings, and the broker's part of its mapping if it is a static topic
    /// (boxed, so that every reply stays small).
    TopicConfig {
        config: Box<TopicConfig>,
        mapping: Option<Box<TopicQueueMappingDetail>>,
    },
    /// Messages found by a query, and how far the index had been built when it ran.
    QueriedMessages {
        /// Stored records, oldest first.
        messages: Vec<Bytes>,
        index_last_update_timestamp: i64,
        index_last_update_phyoffset: i64,
    },
    /// One stored record.
    Message(Bytes),
    TopicStats(TopicStatsTable),
    ConsumeStats(ConsumeStats),
    /// Named values, such as the broker's runtime information.
    KeyValues(BTreeMap<String, String>),
    /// An answer to a [`Request::Pop`] (boxed: a pop result is large).
    Pop(Box<crate::pop::PopReply>),
    /// An answer to a [`Request::Admin`].
    Admin(crate::admin::AdminReply),
}

impl Reply {
    /// A POP answer.
    pub fn pop(reply: crate::pop::PopReply) -> Self {
        Reply::Pop(Box::new(reply))
    }

    /// An error reply of `kind` with a message for the user.
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> Self {
        Reply::Error(ErrorReply {
            kind,
            message: message.into(),
        })
    }
}
