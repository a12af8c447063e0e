//! Clients, groups and subscriptions: what heartbeats carry and what admin tools read back.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// One queue of a topic on one broker group.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageQueue {
    pub topic: String,
    pub broker_name: String,
    pub queue_id: i32,
}

/// How a consumer gets messages (`ConsumeType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsumeType {
    /// Pull and lite-pull consumers.
    ConsumeActively,
    /// Push consumers.
    #[default]
    ConsumePassively,
    ConsumePop,
}

/// Whether a group shares its queues (clustering) or every member reads all (broadcasting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageModel {
    Broadcasting,
    #[default]
    Clustering,
}

/// Where a consumer with no committed offset starts (`ConsumeFromWhere`, deprecated values kept).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsumeFromWhere {
    #[default]
    ConsumeFromLastOffset,
    ConsumeFromLastOffsetAndFromMinWhenBootFirst,
    ConsumeFromMinOffset,
    ConsumeFromMaxOffset,
    ConsumeFromFirstOffset,
    ConsumeFromTimestamp,
}

/// `SubscriptionData.SUB_ALL`.
pub const SUB_ALL: &str = "*";
/// The tag expression type; anything else (`SQL92`) is evaluated against properties.
pub const EXPRESSION_TYPE_TAG: &str = "TAG";
pub const EXPRESSION_TYPE_SQL92: &str = "SQL92";

/// A group's interest in one topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionData {
    pub class_filter_mode: bool,
    pub topic: String,
    pub sub_string: String,
    pub tags_set: BTreeSet<String>,
    pub code_set: BTreeSet<i32>,
    pub sub_version: i64,
    pub expression_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_class_source: Option<String>,
}

impl Default for SubscriptionData {
    fn default() -> Self {
        SubscriptionData {
            class_filter_mode: false,
            topic: String::new(),
            sub_string: SUB_ALL.to_string(),
            tags_set: BTreeSet::new(),
            code_set: BTreeSet::new(),
            sub_version: 0,
            expression_type: EXPRESSION_TYPE_TAG.to_string(),
            filter_class_source: None,
        }
    }
}

impl SubscriptionData {
    /// Builds a subscription from an expression as `FilterAPI.buildSubscriptionData` does: empty
    /// or `*` means everything; otherwise `TagA || TagB` lists tags, kept with their hash codes.
    /// Non-TAG expressions (SQL92) are kept verbatim.
    pub fn from_expression(
        topic: &str,
        expression_type: &str,
        expression: &str,
        version: i64,
    ) -> Self {
        let mut data = SubscriptionData {
            topic: topic.to_string(),
            sub_version: version,
            expression_type: if expression_type.is_empty() {
                EXPRESSION_TYPE_TAG.to_string()
            } else {
                expression_type.to_string()
            },
            ..SubscriptionData::default()
        };
        if data.expression_type != EXPRESSION_TYPE_TAG {
            data.sub_string = expression.to_string();
            return data;
        }
        let expression = expression.trim();
        if expression.is_empty() || expression == SUB_ALL {
            return data;
        }
        data.sub_string = expression.to_string();
        for tag in expression
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            data.code_set.insert(crate::java_string_hash(tag));
            data.tags_set.insert(tag.to_string());
        }
        data
    }

    /// Whether this subscription takes every tag.
    pub fn is_all(&self) -> bool {
        self.sub_string == SUB_ALL || self.sub_string.is_empty()
    }

    /// The ConsumeQueue-level filter (`ExpressionMessageFilter.isMatchedByConsumeQueue`): a
    /// message passes if the subscription takes everything, is not a tag filter, or lists the
    /// message's tag code. Clients re-check the tag string, so hash collisions are harmless.
    pub fn matches_tags_code(&self, tags_code: i64) -> bool {
        if self.class_filter_mode || self.expression_type != EXPRESSION_TYPE_TAG || self.is_all() {
            return true;
        }
        self.code_set.contains(&(tags_code as i32))
    }
}

/// A producer group a client belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerData {
    pub group_name: String,
}

/// A consumer group a client belongs to, with its subscriptions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerData {
    pub group_name: String,
    pub consume_type: ConsumeType,
    pub message_model: MessageModel,
    pub consume_from_where: ConsumeFromWhere,
    pub subscription_data_set: Vec<SubscriptionData>,
    pub unit_mode: bool,
}

/// A client's periodic announcement of its groups (`HeartbeatData`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeartbeatData {
    #[serde(rename = "clientID")]
    pub client_id: String,
    #[serde(rename = "producerDataSet")]
    pub producer_data_set: Vec<ProducerData>,
    #[serde(rename = "consumerDataSet")]
    pub consumer_data_set: Vec<ConsumerData>,
    #[serde(rename = "heartbeatFingerprint")]
    pub heartbeat_fingerprint: i32,
    #[serde(rename = "withoutSub")]
    pub without_sub: bool,
}

/// A consumer group's settings on a broker (`SubscriptionGroupConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    pub group_name: String,
    pub consume_enable: bool,
    pub consume_from_min_enable: bool,
    pub consume_broadcast_enable: bool,
    pub consume_message_orderly: bool,
    pub retry_queue_nums: i32,
    pub retry_max_times: i32,
    pub broker_id: i64,
    pub which_broker_when_consume_slowly: i64,
    pub notify_consumer_ids_changed_enable: bool,
    pub group_sys_flag: i32,
    pub consume_timeout_minute: i32,
    pub attributes: std::collections::BTreeMap<String, String>,
}

impl Default for SubscriptionGroupConfig {
    fn default() -> Self {
        SubscriptionGroupConfig {
            group_name: String::new(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            consume_message_orderly: false,
            retry_queue_nums: 1,
            retry_max_times: 16,
            broker_id: crate::route::MASTER_ID,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
            group_sys_flag: 0,
            consume_timeout_minute: 15,
            attributes: std::collections::BTreeMap::new(),
        }
    }
}

impl SubscriptionGroupConfig {
    pub fn new(group: impl Into<String>) -> Self {
        SubscriptionGroupConfig {
            group_name: group.into(),
            ..SubscriptionGroupConfig::default()
        }
    }
}

/// Offsets of one queue, for topic statistics (`TopicOffset`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicOffset {
    pub min_offset: i64,
    pub max_offset: i64,
    pub last_update_timestamp: i64,
}

/// A group's progress on one queue (`OffsetWrapper`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OffsetWrapper {
    pub broker_offset: i64,
    pub consumer_offset: i64,
    pub pull_offset: i64,
    pub last_timestamp: i64,
}

/// A group's progress on every queue it consumes (`ConsumeStats`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsumeStats {
    pub offset_table: Vec<(MessageQueue, OffsetWrapper)>,
    pub consume_tps: f64,
}

/// Per-queue offsets of a topic (`TopicStatsTable`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicStatsTable {
    pub offset_table: Vec<(MessageQueue, TopicOffset)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_expressions_parse_like_filter_api() {
        let sub = SubscriptionData::from_expression("T", "TAG", "TagA || TagB ||  ", 1);
        assert_eq!(sub.sub_string, "TagA || TagB ||");
        assert_eq!(sub.tags_set.len(), 2);
        assert!(sub.matches_tags_code(2598919));
        assert!(!sub.matches_tags_code(crate::java_string_hash("TagC").into()));
        let all = SubscriptionData::from_expression("T", "", "*", 1);
        assert!(all.is_all());
        assert!(all.matches_tags_code(12345));
        let sql = SubscriptionData::from_expression("T", "SQL92", "a > 1", 1);
        assert!(sql.matches_tags_code(1));
    }

    #[test]
    fn heartbeat_json_from_java_parses() {
        let json = r#"{"clientID":"10.0.0.9@12345#987654321","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"g1","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000000,"tagsSet":[],"topic":"T"}],"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"p1"}],"withoutSub":false}"#;
        let hb: HeartbeatData = serde_json::from_str(json).unwrap();
        assert_eq!(hb.client_id, "10.0.0.9@12345#987654321");
        assert_eq!(
            hb.consumer_data_set[0].message_model,
            MessageModel::Clustering
        );
        assert_eq!(hb.consumer_data_set[0].subscription_data_set[0].topic, "T");
        assert_eq!(hb.producer_data_set[0].group_name, "p1");
    }
}

/// `LockBatchRequestBody` / `UnlockBatchRequestBody`: an orderly consumer taking (or giving back)
/// the locks of queues of its group. `None` for a member the client left out (Java's `null`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LockBatchRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Set between the members of a broker group in strict lock mode; Skiff has one member.
    pub only_this_broker: bool,
    pub mq_set: Vec<MessageQueue>,
}
