//! POP consumption, protocol-neutral: a consumer pops messages (they become invisible to the
//! group for an invisible time), then acks them or changes their invisible time; un-acked
//! messages come back through the group's POP retry topic. The RocketMQ remoting codes
//! (POP_MESSAGE, ACK_MESSAGE, ...) and the 5.x gRPC `ReceiveMessage`/`AckMessage` map onto these
//! commands.
//!
//! The `extra_info` string a popped message carries (`POP_CK`) is the client's handle on its
//! checkpoint; [`ExtraInfo`] is its parsed form, in the layout of Java's `ExtraInfoUtil`.

use crate::command::QueueRef;

/// Revive queue id of orderly pops (`KeyBuilder.POP_ORDER_REVIVE_QUEUE`).
pub const ORDER_REVIVE_QUEUE: i32 = 999;

/// The group of the revive log's consumer offsets (`PopAckConstants.REVIVE_GROUP`).
pub const REVIVE_GROUP: &str = "CID_RMQ_SYS_REVIVE_GROUP";

/// The revive log topic of a cluster (`PopAckConstants.buildClusterReviveTopic`).
pub fn revive_topic(cluster: &str) -> String {
    format!("rmq_sys_REVIVE_LOG_{cluster}")
}

/// The POP retry topic of a group on a topic (`KeyBuilder.buildPopRetryTopicV1`).
pub fn pop_retry_topic(topic: &str, group: &str) -> String {
    format!("{}{group}_{topic}", crate::topic::RETRY_GROUP_TOPIC_PREFIX)
}

/// `ExtraInfoUtil`'s topic mark: "0" for a normal topic, "1" for a POP retry topic.
pub fn retry_mark(topic: &str) -> &'static str {
    if crate::topic::is_retry_topic(topic) {
        "1"
    } else {
        "0"
    }
}

/// The topic a mark names: the POP retry topic of `group` on `topic` for "1" (and "2", the v2
/// retry name, which this broker never hands out but reads as v1), `topic` itself otherwise.
pub fn real_topic(topic: &str, group: &str, mark: &str) -> String {
    match mark {
        "1" | "2" if !crate::topic::is_retry_topic(topic) => pop_retry_topic(topic, group),
        _ => topic.to_string(),
    }
}

/// Where the client is in a consume queue when it pops for the first time
/// (`ConsumeInitMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InitMode {
    /// The queue's max offset: only new messages.
    #[default]
    Max,
    /// The queue's min offset: everything still stored.
    Min,
}

/// Pop up to `max_msg_nums` messages of `topic` (all queues when `queue_id` < 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PopRequest {
    pub consumer_group: String,
    pub topic: String,
    pub queue_id: i32,
    pub max_msg_nums: i32,
    /// How long popped messages stay invisible (ms).
    pub invisible_time: i64,
    /// How long the broker may hold the request when nothing is there (ms).
    pub poll_time: i64,
    /// When the client sent the request (ms); a request older than `poll_time` + 500 ms is late.
    pub born_time: i64,
    pub init_mode: InitMode,
    pub expression_type: Option<String>,
    pub expression: Option<String>,
    /// Orderly pop: a queue stays locked to one pop until it is acked or its invisible time passes.
    pub order: bool,
    pub attempt_id: Option<String>,
}

/// Read messages without popping them (PEEK_MESSAGE).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeekRequest {
    pub consumer_group: String,
    pub queue: QueueRef,
    pub max_msg_nums: i32,
}

/// Ack one popped message, or change its invisible time (`invisible_time` set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckRequest {
    pub consumer_group: String,
    /// The message's real topic (the POP retry topic for a retried message).
    pub queue: QueueRef,
    /// The message's queue offset.
    pub offset: i64,
    /// The message's `POP_CK` property.
    pub extra_info: String,
    /// CHANGE_MESSAGE_INVISIBLETIME: the new invisible time from now (ms).
    pub invisible_time: Option<i64>,
}

/// Acks of several messages of one checkpoint (`BatchAck`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchAck {
    pub consumer_group: String,
    /// The topic as the client subscribed it; `retry` says whether the retry topic is meant.
    pub topic: String,
    pub retry: String,
    pub start_offset: i64,
    pub queue_id: i32,
    pub revive_queue_id: i32,
    pub pop_time: i64,
    pub invisible_time: i64,
    /// Offsets acked, as differences from `start_offset`.
    pub offset_diffs: Vec<u32>,
}

/// Ask whether a topic has messages to pop (NOTIFICATION), waiting up to `poll_time`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotificationRequest {
    pub consumer_group: String,
    pub topic: String,
    pub queue_id: i32,
    pub poll_time: i64,
    pub born_time: i64,
    pub order: bool,
    pub attempt_id: Option<String>,
}

/// How a group consumes a topic (`MessageRequestMode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MessageRequestMode {
    #[default]
    #[serde(rename = "PULL")]
    Pull,
    #[serde(rename = "POP")]
    Pop,
}

/// A group's request mode on a topic (`SetMessageRequestModeRequestBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestModeSetting {
    pub topic: String,
    pub consumer_group: String,
    #[serde(default)]
    pub mode: MessageRequestMode,
    /// How many following consumers' queues each POP consumer also pops (0 = all queues).
    #[serde(default)]
    pub pop_share_queue_num: i32,
}

/// Which queues of a topic a client should consume (QUERY_ASSIGNMENT).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignmentQuery {
    pub topic: String,
    pub consumer_group: String,
    pub client_id: String,
    pub strategy_name: String,
    /// `CLUSTERING` or `BROADCASTING`.
    pub message_model: String,
}

/// One queue handed to a client, and how to consume it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub topic: String,
    pub broker_name: String,
    /// -1 = every queue of the topic (a POP consumer sharing all queues).
    pub queue_id: i32,
    pub mode: MessageRequestMode,
}

/// Every POP-related request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PopCommand {
    Pop(PopRequest),
    Peek(PeekRequest),
    Ack(AckRequest),
    BatchAck {
        broker_name: Option<String>,
        acks: Vec<BatchAck>,
    },
    ChangeInvisibleTime(AckRequest),
    Notification(NotificationRequest),
    QueryAssignment(AssignmentQuery),
    SetRequestMode(RequestModeSetting),
}

/// How a pop ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PopStatus {
    /// Messages are attached.
    Found,
    /// Nothing to pop (after the poll time, if any).
    #[default]
    NotFound,
    /// Too many requests are held already.
    PollingFull,
}

/// A pop's answer: the messages and what the client needs to build each one's `POP_CK`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PopResult {
    pub status: PopStatus,
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    /// Messages left in the popped queues.
    pub rest_num: i64,
    /// `mark queueId startOffset;...`
    pub start_offset_info: String,
    /// `mark queueId offset,offset;...`
    pub msg_offset_info: String,
    pub order_count_info: Option<String>,
    /// Stored records, as a pull carries them (retried messages re-encoded with the origin topic).
    pub messages: Vec<bytes::Bytes>,
}

/// Every POP-related answer that is not a plain success or error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PopReply {
    Popped(PopResult),
    Peeked(Vec<bytes::Bytes>),
    InvisibleTimeChanged {
        pop_time: i64,
        invisible_time: i64,
        revive_qid: i32,
    },
    Notified {
        has_msg: bool,
        polling_full: bool,
    },
    /// `None`: no valid assignment (the client keeps what it has).
    Assignments(Option<Vec<Assignment>>),
}

/// A parsed `POP_CK` / `extraInfo`: `ckOffset popTime invisibleTime reviveQid mark brokerName
/// queueId [offset]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraInfo {
    pub ck_offset: i64,
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    pub retry_mark: String,
    pub broker_name: String,
    pub queue_id: i32,
    pub queue_offset: Option<i64>,
}

impl ExtraInfo {
    /// Parses the string; `Err` says which part is missing or malformed (as Java's
    /// `IllegalArgumentException` / `NumberFormatException` would).
    pub fn parse(text: &str) -> Result<ExtraInfo, String> {
        let parts: Vec<&str> = text.split(' ').collect();
        let num = |i: usize, what: &str| -> Result<i64, String> {
            let raw = parts
                .get(i)
                .ok_or_else(|| format!("get{what} fail, extraInfoStrs length {}", parts.len()))?;
            raw.parse::<i64>().map_err(|_| {
                format!("java.lang.NumberFormatException: For input string: \"{raw}\"")
            })
        };
        let int = |i: usize, what: &str| -> Result<i32, String> {
            let v = num(i, what)?;
            i32::try_from(v)
                .map_err(|_| format!("java.lang.NumberFormatException: For input string: \"{v}\""))
        };
        let text_at = |i: usize, what: &str| -> Result<String, String> {
            parts
                .get(i)
                .map(|s| s.to_string())
                .ok_or_else(|| format!("get{what} fail, extraInfoStrs length {}", parts.len()))
        };
        Ok(ExtraInfo {
            ck_offset: num(0, "CkQueueOffset")?,
            pop_time: num(1, "PopTime")?,
            invisible_time: num(2, "InvisibleTime")?,
            revive_qid: int(3, "ReviveQid")?,
            retry_mark: text_at(4, "Retry")?,
            broker_name: text_at(5, "BrokerName")?,
            queue_id: int(6, "QueueId")?,
            queue_offset: parts.get(7).map(|_| num(7, "QueueOffset")).transpose()?,
        })
    }

    /// [`ExtraInfo::parse`], but the first field found missing or malformed is the first one of
    /// `order` (indexes of the parts), so the message names the field Java reads first.
    pub fn parse_checking(text: &str, order: &[usize]) -> Result<ExtraInfo, String> {
        const NAMES: [&str; 8] = [
            "CkQueueOffset",
            "PopTime",
            "InvisibleTime",
            "ReviveQid",
            "Retry",
            "BrokerName",
            "QueueId",
            "QueueOffset",
        ];
        let parts: Vec<&str> = text.split(' ').collect();
        for &i in order {
            let Some(raw) = parts.get(i) else {
                return Err(format!(
                    "get{} fail, extraInfoStrs length {}",
                    NAMES[i],
                    parts.len()
                ));
            };
            let numeric = !matches!(i, 4 | 5);
            if numeric && raw.parse::<i64>().is_err() {
                return Err(format!(
                    "java.lang.NumberFormatException: For input string: \"{raw}\""
                ));
            }
        }
        ExtraInfo::parse(text)
    }

    /// Whether this is the handle of an orderly pop.
    pub fn is_order(&self) -> bool {
        self.revive_qid == ORDER_REVIVE_QUEUE
    }
}

impl std::fmt::Display for ExtraInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {}",
            self.ck_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry_mark,
            self.broker_name,
            self.queue_id
        )?;
        if let Some(offset) = self.queue_offset {
            write!(f, " {offset}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_info_round_trips_and_names_what_is_wrong() {
        let text = "5 1700000000000 60000 3 1 broker-a 0 7";
        let info = ExtraInfo::parse(text).unwrap();
        assert_eq!(info.ck_offset, 5);
        assert_eq!(info.retry_mark, "1");
        assert_eq!(info.queue_offset, Some(7));
        assert_eq!(info.to_string(), text);
        assert!(ExtraInfo::parse("garbage")
            .unwrap_err()
            .contains("NumberFormat"));
        assert!(ExtraInfo::parse("1 2").unwrap_err().contains("length 2"));
        assert!(!info.is_order());
        // ACK_MESSAGE reads the broker name first, as Java's AckMessageProcessor.
        assert_eq!(
            ExtraInfo::parse_checking("garbage", &[5, 3, 0]).unwrap_err(),
            "getBrokerName fail, extraInfoStrs length 1"
        );
    }

    #[test]
    fn retry_topic_names_follow_key_builder() {
        assert_eq!(pop_retry_topic("T", "G"), "%RETRY%G_T");
        assert_eq!(real_topic("T", "G", "1"), "%RETRY%G_T");
        assert_eq!(real_topic("T", "G", "0"), "T");
        assert_eq!(retry_mark("%RETRY%G_T"), "1");
        assert_eq!(
            revive_topic("DefaultCluster"),
            "rmq_sys_REVIVE_LOG_DefaultCluster"
        );
    }
}
