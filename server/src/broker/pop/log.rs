//! The revive log's records as messages of `rmq_sys_REVIVE_LOG_<cluster>`: a checkpoint is a
//! message tagged `ck` whose body is Java's `PopCheckPoint` JSON, an ack is tagged `ack`
//! (`AckMsg`) or `bAck` (`BatchAckMsg`). The field names are Java's, so the log reads the same
//! to a person who knows Java's.

use serde::{Deserialize, Serialize};
use skiff_model::message::{keys, Properties};

use super::state::{CkKey, PopRecord};

pub const CK_TAG: &str = "ck";
pub const ACK_TAG: &str = "ack";
pub const BATCH_ACK_TAG: &str = "bAck";

#[derive(Serialize, Deserialize)]
struct CheckpointJson {
    #[serde(rename = "so")]
    start_offset: i64,
    #[serde(rename = "pt")]
    pop_time: i64,
    #[serde(rename = "it")]
    invisible_time: i64,
    #[serde(rename = "bm", default)]
    bit_map: i32,
    #[serde(rename = "n")]
    num: i32,
    #[serde(rename = "q")]
    queue_id: i32,
    #[serde(rename = "t")]
    topic: String,
    #[serde(rename = "c")]
    cid: String,
    #[serde(rename = "ro", default)]
    revive_offset: i64,
    #[serde(rename = "d")]
    queue_offset_diff: Vec<i64>,
    #[serde(rename = "bn", default)]
    broker_name: String,
}

#[derive(Serialize, Deserialize)]
struct AckJson {
    #[serde(rename = "ao", default, skip_serializing_if = "Option::is_none")]
    ack_offset: Option<i64>,
    #[serde(rename = "aol", default, skip_serializing_if = "Option::is_none")]
    ack_offset_list: Option<Vec<i64>>,
    #[serde(rename = "so")]
    start_offset: i64,
    #[serde(rename = "c")]
    consumer_group: String,
    #[serde(rename = "t")]
    topic: String,
    #[serde(rename = "q")]
    queue_id: i32,
    #[serde(rename = "pt")]
    pop_time: i64,
    #[serde(rename = "bn", default)]
    broker_name: String,
}

/// The body and properties of the revive-log message holding `record`.
pub fn encode(record: &PopRecord, broker_name: &str) -> (Vec<u8>, String) {
    let (tag, body) = match record {
        PopRecord::Checkpoint {
            key,
            invisible_time,
            offsets,
            ..
        } => (
            CK_TAG,
            serde_json::to_vec(&CheckpointJson {
                start_offset: key.start_offset,
                pop_time: key.pop_time,
                invisible_time: *invisible_time,
                bit_map: 0,
                num: offsets.len() as i32,
                queue_id: key.queue_id,
                topic: key.topic.clone(),
                cid: key.group.clone(),
                revive_offset: 0,
                queue_offset_diff: offsets.iter().map(|o| o - key.start_offset).collect(),
                broker_name: broker_name.to_string(),
            }),
        ),
        PopRecord::Ack { key, offsets } => {
            let single = offsets.len() == 1;
            (
                if single { ACK_TAG } else { BATCH_ACK_TAG },
                serde_json::to_vec(&AckJson {
                    ack_offset: single.then(|| offsets[0]),
                    ack_offset_list: (!single).then(|| offsets.clone()),
                    start_offset: key.start_offset,
                    consumer_group: key.group.clone(),
                    topic: key.topic.clone(),
                    queue_id: key.queue_id,
                    pop_time: key.pop_time,
                    broker_name: broker_name.to_string(),
                }),
            )
        }
    };
    let mut properties = Properties::new();
    properties.insert(keys::TAGS, tag);
    (body.expect("revive records serialize"), properties.encode())
}

/// The record a revive-log message holds; `None` for a message that is not one (logged by the
/// caller and skipped, as Java's revive skips what it cannot parse).
pub fn decode(tags: Option<&str>, body: &[u8], revive_qid: i32) -> Option<PopRecord> {
    match tags? {
        CK_TAG => {
            let ck: CheckpointJson = serde_json::from_slice(body).ok()?;
            Some(PopRecord::Checkpoint {
                key: CkKey {
                    group: ck.cid,
                    topic: ck.topic,
                    queue_id: ck.queue_id,
                    start_offset: ck.start_offset,
                    pop_time: ck.pop_time,
                },
                invisible_time: ck.invisible_time,
                revive_qid,
                offsets: ck
                    .queue_offset_diff
                    .iter()
                    .map(|d| ck.start_offset + d)
                    .collect(),
            })
        }
        ACK_TAG | BATCH_ACK_TAG => {
            let ack: AckJson = serde_json::from_slice(body).ok()?;
            let offsets = match (ack.ack_offset, ack.ack_offset_list) {
                (_, Some(list)) => list,
                (Some(one), None) => vec![one],
                (None, None) => return None,
            };
            Some(PopRecord::Ack {
                key: CkKey {
                    group: ack.consumer_group,
                    topic: ack.topic,
                    queue_id: ack.queue_id,
                    start_offset: ack.start_offset,
                    pop_time: ack.pop_time,
                },
                offsets,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_java_shaped_json() {
        let key = CkKey {
            group: "G".into(),
            topic: "%RETRY%G_T".into(),
            queue_id: 0,
            start_offset: 10,
            pop_time: 1_700_000_000_000,
        };
        for record in [
            PopRecord::Checkpoint {
                key: key.clone(),
                invisible_time: 60_000,
                revive_qid: 3,
                offsets: vec![10, 12],
            },
            PopRecord::Ack {
                key: key.clone(),
                offsets: vec![12],
            },
            PopRecord::Ack {
                key,
                offsets: vec![10, 12],
            },
        ] {
            let (body, properties) = encode(&record, "broker-a");
            let tags = Properties::decode(&properties);
            assert_eq!(decode(tags.tags(), &body, 3), Some(record));
        }
        let (body, _) = encode(
            &PopRecord::Ack {
                key: CkKey {
                    group: "G".into(),
                    topic: "T".into(),
                    queue_id: 1,
                    start_offset: 0,
                    pop_time: 5,
                },
                offsets: vec![3],
            },
            "b",
        );
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"ao":3,"so":0,"c":"G","t":"T","q":1,"pt":5,"bn":"b"}"#
        );
        assert_eq!(decode(Some("ck"), b"not json", 0), None);
        assert_eq!(decode(None, b"{}", 0), None);
    }
}
