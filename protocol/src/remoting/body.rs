//! Request and response bodies: the batch message encoding and the fastjson bodies whose shapes
//! are Java classes (`TopicConfigSerializeWrapper`, `RegisterBrokerBody`, `TopicStatsTable`, …).
//!
//! Field names are those of the Java classes because the Java client decodes these bodies with
//! fastjson into them; unknown fields are ignored on input, as fastjson does.

use std::collections::BTreeMap;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use skiff_model::consumer::{
    ConsumeStats, MessageQueue, OffsetWrapper, TopicOffset, TopicStatsTable,
};
use skiff_model::message::{Message, Properties};
use skiff_model::route::{BrokerRegistration, DataVersion, TopicConfig};
use skiff_model::static_topic::{TopicQueueMappingDetail, TopicQueueMappingInfo};

use crate::fastjson;

// ---------------------------------------------------------------- batch messages

/// Fixed bytes of one message in a batch body: total size, magic, body CRC, flag, body length,
/// properties length.
const BATCH_ENTRY_FIXED_LEN: usize = 4 + 4 + 4 + 4 + 4 + 2;

/// Decodes a SEND_BATCH_MESSAGE body (`MessageDecoder.encodeMessages`): per message
/// `i32 totalSize, i32 magic, i32 bodyCRC, i32 flag, i32 bodyLen + body, i16 propsLen + props`.
/// Like Java, fields are read in sequence and the size, magic and CRC are not trusted.
pub(super) fn decode_batch(body: &Bytes) -> Result<Vec<Message>, String> {
    let mut buf = body.clone();
    let mut messages = Vec::new();
    while buf.has_remaining() {
        if buf.remaining() < BATCH_ENTRY_FIXED_LEN - 2 {
            return Err(format!("batch message {} is truncated", messages.len()));
        }
        buf.advance(12);
        let flag = buf.get_i32();
        let body_len = buf.get_i32();
        if body_len < 0 || body_len as usize + 2 > buf.remaining() {
            return Err(format!(
                "batch message {} has a bad body length {body_len}",
                messages.len()
            ));
        }
        let message_body = buf.split_to(body_len as usize);
        let props_len = buf.get_i16();
        if props_len < 0 || props_len as usize > buf.remaining() {
            return Err(format!(
                "batch message {} has a bad properties length {props_len}",
                messages.len()
            ));
        }
        let properties = Properties::decode_bytes(&buf.split_to(props_len as usize));
        messages.push(Message {
            flag,
            body: message_body,
            properties,
        });
    }
    Ok(messages)
}

/// Encodes messages as a SEND_BATCH_MESSAGE body, exactly as Java's `MessageDecoder.encodeMessages`.
pub(super) fn encode_batch(messages: &[Message]) -> Bytes {
    let mut out = BytesMut::new();
    for message in messages {
        let properties = message.properties.encode();
        out.put_i32((BATCH_ENTRY_FIXED_LEN + message.body.len() + properties.len()) as i32);
        out.put_i32(0);
        out.put_i32(0);
        out.put_i32(message.flag);
        out.put_i32(message.body.len() as i32);
        out.put_slice(&message.body);
        out.put_i16(properties.len() as i16);
        out.put_slice(properties.as_bytes());
    }
    out.freeze()
}

// ---------------------------------------------------------------- JSON bodies

/// `TopicConfigSerializeWrapper`: GET_ALL_TOPIC_CONFIG's body and `topics.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct TopicConfigWrapper {
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    pub data_version: DataVersion,
    /// `TopicConfigAndMappingSerializeWrapper.topicQueueMappingInfoMap`: what a registering
    /// broker leads of its static topics.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub topic_queue_mapping_info_map: BTreeMap<String, TopicQueueMappingInfo>,
}

/// `TopicConfigAndQueueMapping`, GET_TOPIC_CONFIG's body: the topic's fields and, for a static
/// topic, `mappingDetail` (left out when null, as fastjson does).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TopicConfigAndQueueMapping<'a> {
    #[serde(flatten)]
    pub config: &'a TopicConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping_detail: Option<&'a TopicQueueMappingDetail>,
}

/// The `mappingDetail` of a `TopicConfigAndQueueMapping` (its topic fields read as a
/// [`TopicConfig`]).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct MappingDetailOf {
    pub mapping_detail: Option<TopicQueueMappingDetail>,
}

/// `RegisterBrokerBody` (uncompressed form).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct RegisterBrokerBody {
    pub topic_config_serialize_wrapper: TopicConfigWrapper,
    pub filter_server_list: Vec<String>,
}

/// `RegisterBrokerBody` as a broker sends it, borrowing the registration.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RegisterBrokerBodyOut<'a> {
    topic_config_serialize_wrapper: TopicConfigWrapperOut<'a>,
    filter_server_list: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicConfigWrapperOut<'a> {
    topic_config_table: &'a BTreeMap<String, TopicConfig>,
    data_version: DataVersion,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    topic_queue_mapping_info_map: &'a BTreeMap<String, TopicQueueMappingInfo>,
}

fn register_broker_body_out(registration: &BrokerRegistration) -> RegisterBrokerBodyOut<'_> {
    RegisterBrokerBodyOut {
        topic_config_serialize_wrapper: TopicConfigWrapperOut {
            topic_config_table: &registration.topics,
            data_version: registration.data_version,
            topic_queue_mapping_info_map: &registration.topic_queue_mappings,
        },
        filter_server_list: &registration.filter_server_list,
    }
}

/// REGISTER_BROKER's body. Written by `serde_json`, not the fastjson writer: the members are in
/// declaration order instead of fastjson's name order, which the name servers' parsers (Java's
/// fastjson, Skiff's) do not care about, and a table of 100,000 topics (~18 MB) costs a tenth
/// of the time. Model types have no null members nor non-string keys, so the JSON is the same.
pub(super) fn register_broker_body(registration: &BrokerRegistration) -> Vec<u8> {
    serde_json::to_vec(&register_broker_body_out(registration))
        .expect("model types serialize to JSON")
}

/// The length of the REGISTER_BROKER body for `registration`, counted without building it.
pub fn register_broker_body_len(registration: &BrokerRegistration) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, &register_broker_body_out(registration))
        .expect("model types serialize to JSON");
    counter.0
}

/// `TopicList`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct TopicList {
    pub topic_list: Vec<String>,
}

/// `GetConsumerListByGroupResponseBody`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct ConsumerList {
    pub consumer_id_list: Vec<String>,
}

/// `LockBatchResponseBody`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct LockBatchResponse {
    #[serde(rename = "lockOKMQSet")]
    pub lock_ok_mq_set: Vec<MessageQueue>,
}

/// `KVTable`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct KvTable {
    pub table: BTreeMap<String, String>,
}

/// A `Map<MessageQueue, V>` field: fastjson writes the queue objects as bare keys.
struct QueueMap<'a, V>(&'a [(MessageQueue, V)]);

impl<V: Serialize> Serialize for QueueMap<'_, V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(queue, value)| (queue, value)))
    }
}

/// `TopicStatsTable` as Java writes it.
pub(super) fn topic_stats_json(stats: &TopicStatsTable) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Wire<'a> {
        offset_table: QueueMap<'a, TopicOffset>,
        topic_put_tps: f64,
    }
    to_json(&Wire {
        offset_table: QueueMap(&stats.offset_table),
        topic_put_tps: 0.0,
    })
}

/// `ResetOffsetBody` as Java writes it.
pub(super) fn reset_offset_json(offsets: &[(MessageQueue, i64)]) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Wire<'a> {
        offset_table: QueueMap<'a, i64>,
    }
    to_json(&Wire {
        offset_table: QueueMap(offsets),
    })
}

/// `GetConsumerStatusBody` as the broker answers it: offsets by client id.
pub(super) fn consumer_status_json(table: &BTreeMap<String, Vec<(MessageQueue, i64)>>) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Wire<'a> {
        consumer_table: BTreeMap<&'a str, QueueMap<'a, i64>>,
        message_queue_table: BTreeMap<(), ()>,
    }
    to_json(&Wire {
        consumer_table: table
            .iter()
            .map(|(client, offsets)| (client.as_str(), QueueMap(offsets)))
            .collect(),
        message_queue_table: BTreeMap::new(),
    })
}

/// A client's `GetConsumerStatusBody` (its `messageQueueTable`: offset by queue), as the Java
/// client writes it.
pub fn parse_client_consumer_status(body: &[u8]) -> Result<Vec<(MessageQueue, i64)>, String> {
    let value: Value = fastjson::parse_slice(body).map_err(|e| e.to_string())?;
    queue_map(&value, "messageQueueTable")
}

/// `ConsumeStats` as Java writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumeStatsWire<'a> {
    offset_table: QueueMap<'a, OffsetWrapper>,
    consume_tps: f64,
}

impl<'a> From<&'a ConsumeStats> for ConsumeStatsWire<'a> {
    fn from(stats: &'a ConsumeStats) -> Self {
        ConsumeStatsWire {
            offset_table: QueueMap(&stats.offset_table),
            consume_tps: stats.consume_tps,
        }
    }
}

pub(super) fn consume_stats_json(stats: &ConsumeStats) -> String {
    to_json(&ConsumeStatsWire::from(stats))
}

/// `ConsumeStatsList`: `consumeStatsList` is a list of one-entry maps, group → its stats.
pub(super) fn consume_stats_list_json(
    broker_addr: &str,
    groups: &[(String, Vec<ConsumeStats>)],
    total_diff: i64,
    total_inflight_diff: i64,
) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Wire<'a> {
        broker_addr: &'a str,
        consume_stats_list: Vec<BTreeMap<&'a str, Vec<ConsumeStatsWire<'a>>>>,
        total_diff: i64,
        total_inflight_diff: i64,
    }
    let consume_stats_list = groups
        .iter()
        .map(|(group, list)| {
            let mut one = BTreeMap::new();
            one.insert(
                group.as_str(),
                list.iter().map(ConsumeStatsWire::from).collect(),
            );
            one
        })
        .collect();
    to_json(&Wire {
        broker_addr,
        consume_stats_list,
        total_diff,
        total_inflight_diff,
    })
}

/// Serializes a body built from model types, which always serialize.
pub(super) fn to_json<T: Serialize>(value: &T) -> String {
    fastjson::to_string(value).expect("model types serialize to JSON")
}

/// Reads a `Map<MessageQueue, V>` member from Java's output: bare object keys, or (fastjson with
/// `WriteNonStringKeyAsString`) keys holding the object's JSON text.
fn queue_map<V: for<'de> Deserialize<'de>>(
    body: &Value,
    field: &str,
) -> Result<Vec<(MessageQueue, V)>, String> {
    let Some(table) = body.get(field) else {
        return Ok(Vec::new());
    };
    let table = table
        .as_object()
        .ok_or_else(|| format!("{field} is not an object"))?;
    let mut entries = Vec::with_capacity(table.len());
    for (key, value) in table {
        let queue: MessageQueue =
            fastjson::from_str(key).map_err(|e| format!("{field} key {key}: {e}"))?;
        let value =
            fastjson::from_value(value.clone()).map_err(|e| format!("{field} value: {e}"))?;
        entries.push((queue, value));
    }
    // Java's HashMap order is meaningless; sort so that results are stable.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// A `ResetOffsetBody` (RESET_CONSUMER_CLIENT_OFFSET's body).
pub(super) fn parse_reset_offsets(body: &[u8]) -> Result<Vec<(MessageQueue, i64)>, String> {
    let value = fastjson::parse_slice(body).map_err(|e| e.to_string())?;
    queue_map(&value, "offsetTable")
}

pub(super) fn parse_topic_stats(body: &[u8]) -> Result<TopicStatsTable, String> {
    let value = fastjson::parse_slice(body).map_err(|e| e.to_string())?;
    Ok(TopicStatsTable {
        offset_table: queue_map(&value, "offsetTable")?,
    })
}

pub(super) fn parse_consume_stats(body: &[u8]) -> Result<ConsumeStats, String> {
    let value = fastjson::parse_slice(body).map_err(|e| e.to_string())?;
    Ok(ConsumeStats {
        offset_table: queue_map(&value, "offsetTable")?,
        consume_tps: value
            .get("consumeTps")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_round_trip() {
        let messages = vec![
            Message {
                flag: 3,
                body: Bytes::from_static(b"one"),
                properties: Properties::decode("TAGS\u{1}A\u{2}"),
            },
            Message::default(),
        ];
        let body = encode_batch(&messages);
        assert_eq!(decode_batch(&body).unwrap(), messages);
        for cut in 1..body.len() {
            if cut != 22 + 3 + 7 {
                assert!(decode_batch(&body.slice(..cut)).is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn queue_maps_are_written_with_bare_keys() {
        let stats = TopicStatsTable {
            offset_table: vec![(
                MessageQueue {
                    topic: "T".into(),
                    broker_name: "b".into(),
                    queue_id: 0,
                },
                TopicOffset {
                    min_offset: 1,
                    max_offset: 2,
                    last_update_timestamp: 3,
                },
            )],
        };
        let json = topic_stats_json(&stats);
        assert_eq!(
            json,
            r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":3,"maxOffset":2,"minOffset":1}},"topicPutTps":0.0}"#
        );
        assert_eq!(parse_topic_stats(json.as_bytes()).unwrap(), stats);
    }
}
