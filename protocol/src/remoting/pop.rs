//! POP codes ⇄ [`PopCommand`] / [`PopReply`]: POP_MESSAGE, PEEK_MESSAGE, ACK_MESSAGE,
//! BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, NOTIFICATION, QUERY_ASSIGNMENT and
//! SET_MESSAGE_REQUEST_MODE, with the header and body names of Java's `PopMessageRequestHeader`,
//! `AckMessageRequestHeader`, `BatchAckMessageRequestBody`, `QueryAssignmentRequestBody`, ...

use base64::alphabet;
use base64::engine::{DecodePaddingMode, Engine as _, GeneralPurpose, GeneralPurposeConfig};
use serde::{Deserialize, Serialize};
use skiff_model::command::{ErrorReply, QueueRef};
use skiff_model::pop::{
    Assignment, AssignmentQuery, BatchAck, InitMode, MessageRequestMode, NotificationRequest,
    PeekRequest, PopCommand, PopReply, PopRequest, PopStatus, RequestModeSetting,
};

use super::codes::{request as code, response as rc};
use super::command::{Body, RemotingCommand};
use super::fields::{system_error, Fields, FieldsOut};
use crate::fastjson;

/// `ConsumeInitMode.MIN`; anything else is MAX.
const INIT_MODE_MIN: i32 = 0;

/// Whether `code` is one of the POP codes this module decodes.
pub(super) fn is_pop_code(code: i32) -> bool {
    matches!(
        code,
        code::POP_MESSAGE
            | code::PEEK_MESSAGE
            | code::ACK_MESSAGE
            | code::BATCH_ACK_MESSAGE
            | code::CHANGE_MESSAGE_INVISIBLETIME
            | code::NOTIFICATION
            | code::QUERY_ASSIGNMENT
            | code::SET_MESSAGE_REQUEST_MODE
    )
}

pub(super) fn decode(cmd: &RemotingCommand) -> Result<PopCommand, ErrorReply> {
    let f = Fields(&cmd.ext_fields);
    Ok(match cmd.code {
        code::POP_MESSAGE => PopCommand::Pop(PopRequest {
            consumer_group: f.string("consumerGroup")?,
            topic: f.string("topic")?,
            queue_id: f.num("queueId")?,
            max_msg_nums: f.num("maxMsgNums")?,
            invisible_time: f.num("invisibleTime")?,
            poll_time: f.num("pollTime")?,
            born_time: f.num("bornTime")?,
            init_mode: if f.num::<i32>("initMode")? == INIT_MODE_MIN {
                InitMode::Min
            } else {
                InitMode::Max
            },
            expression_type: f.opt_string("expType"),
            expression: f.opt_string("exp"),
            order: f.opt_bool("order") == Some(true),
            attempt_id: f.opt_string("attemptId"),
        }),
        code::PEEK_MESSAGE => PopCommand::Peek(PeekRequest {
            consumer_group: f.string("consumerGroup")?,
            queue: QueueRef {
                topic: f.string("topic")?,
                queue_id: f.num("queueId")?,
                physical: false,
            },
            max_msg_nums: f.num("maxMsgNums")?,
        }),
        code::ACK_MESSAGE => PopCommand::Ack(decode_ack(&f, false)?),
        code::CHANGE_MESSAGE_INVISIBLETIME => {
            PopCommand::ChangeInvisibleTime(decode_ack(&f, true)?)
        }
        code::BATCH_ACK_MESSAGE => {
            let body = cmd.body.to_bytes();
            let parsed: Option<BatchAckBody> = if body.is_empty() {
                None
            } else {
                Some(json(&body)?)
            };
            let (broker_name, acks) = match parsed {
                Some(b) => (
                    b.broker_name,
                    b.acks
                        .unwrap_or_default()
                        .into_iter()
                        .map(BatchAckJson::into_model)
                        .collect::<Result<_, _>>()?,
                ),
                None => (None, Vec::new()),
            };
            PopCommand::BatchAck { broker_name, acks }
        }
        code::NOTIFICATION => PopCommand::Notification(NotificationRequest {
            consumer_group: f.string("consumerGroup")?,
            topic: f.string("topic")?,
            queue_id: f.num("queueId")?,
            poll_time: f.num("pollTime")?,
            born_time: f.num("bornTime")?,
            order: f.opt_bool("order") == Some(true),
            attempt_id: f.opt_string("attemptId"),
        }),
        code::QUERY_ASSIGNMENT => {
            let body: QueryAssignmentBody = json(&required(cmd)?)?;
            PopCommand::QueryAssignment(AssignmentQuery {
                topic: body.topic,
                consumer_group: body.consumer_group,
                client_id: body.client_id,
                strategy_name: body.strategy_name,
                message_model: body.message_model,
            })
        }
        code::SET_MESSAGE_REQUEST_MODE => {
            PopCommand::SetRequestMode(json::<RequestModeSetting>(&required(cmd)?)?)
        }
        other => unreachable!("is_pop_code admitted {other}"),
    })
}

fn decode_ack(f: &Fields, change: bool) -> Result<skiff_model::pop::AckRequest, ErrorReply> {
    Ok(skiff_model::pop::AckRequest {
        consumer_group: f.string("consumerGroup")?,
        queue: QueueRef {
            topic: f.string("topic")?,
            queue_id: f.num("queueId")?,
            physical: false,
        },
        offset: f.num("offset")?,
        extra_info: f.string("extraInfo")?,
        invisible_time: if change {
            Some(f.num("invisibleTime")?)
        } else {
            None
        },
    })
}

fn required(cmd: &RemotingCommand) -> Result<bytes::Bytes, ErrorReply> {
    let body = cmd.body.to_bytes();
    if body.is_empty() {
        return Err(system_error("the request body is empty"));
    }
    Ok(body)
}

fn json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ErrorReply> {
    fastjson::from_slice(body).map_err(|e| system_error(format!("malformed request body: {e}")))
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryAssignmentBody {
    #[serde(default)]
    topic: String,
    #[serde(default)]
    consumer_group: String,
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    strategy_name: String,
    #[serde(default)]
    message_model: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchAckBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    broker_name: Option<String>,
    #[serde(default)]
    acks: Option<Vec<BatchAckJson>>,
}

/// `BatchAck` as fastjson writes it: short names, the BitSet as base64 of `BitSet.toByteArray`.
#[derive(Debug, Serialize, Deserialize)]
struct BatchAckJson {
    #[serde(rename = "c", alias = "consumerGroup", default)]
    consumer_group: String,
    #[serde(rename = "t", alias = "topic", default)]
    topic: String,
    #[serde(rename = "r", alias = "retry", default)]
    retry: String,
    #[serde(rename = "so", alias = "startOffset", default)]
    start_offset: i64,
    #[serde(rename = "q", alias = "queueId", default)]
    queue_id: i32,
    #[serde(rename = "rq", alias = "reviveQueueId", default)]
    revive_queue_id: i32,
    #[serde(rename = "pt", alias = "popTime", default)]
    pop_time: i64,
    #[serde(rename = "it", alias = "invisibleTime", default)]
    invisible_time: i64,
    #[serde(rename = "b", alias = "bitSet", default)]
    bit_set: String,
}

impl BatchAckJson {
    fn into_model(self) -> Result<BatchAck, ErrorReply> {
        let bytes = base64_decode(&self.bit_set)
            .ok_or_else(|| system_error(format!("malformed bitSet {:?}", self.bit_set)))?;
        let offset_diffs = bytes
            .iter()
            .enumerate()
            .flat_map(|(i, byte)| {
                (0..8)
                    .filter_map(move |bit| (byte & (1 << bit) != 0).then_some((i * 8 + bit) as u32))
            })
            .collect();
        Ok(BatchAck {
            consumer_group: self.consumer_group,
            topic: self.topic,
            retry: self.retry,
            start_offset: self.start_offset,
            queue_id: self.queue_id,
            revive_queue_id: self.revive_queue_id,
            pop_time: self.pop_time,
            invisible_time: self.invisible_time,
            offset_diffs,
        })
    }

    fn from_model(ack: &BatchAck) -> BatchAckJson {
        let mut bytes = Vec::new();
        for diff in &ack.offset_diffs {
            let (i, bit) = (*diff as usize / 8, diff % 8);
            if bytes.len() <= i {
                bytes.resize(i + 1, 0u8);
            }
            bytes[i] |= 1 << bit;
        }
        BatchAckJson {
            consumer_group: ack.consumer_group.clone(),
            topic: ack.topic.clone(),
            retry: ack.retry.clone(),
            start_offset: ack.start_offset,
            queue_id: ack.queue_id,
            revive_queue_id: ack.revive_queue_id,
            pop_time: ack.pop_time,
            invisible_time: ack.invisible_time,
            bit_set: base64_encode(&bytes),
        }
    }
}

/// Standard base64 as fastjson writes a `byte[]`; padding optional on input, as fastjson reads it.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A BitSet of a batch ack spans at most 32 messages (4 bytes); longer input is refused before
/// it is decoded.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    const MAX_LEN: usize = 4096;
    if text.len() > MAX_LEN {
        return None;
    }
    BASE64.decode(text).ok()
}

fn base64_encode(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// Client side: the request frame of a POP command (for tests and Skiff's own tools).
pub(super) fn encode(command: &PopCommand, cmd: &mut RemotingCommand) {
    let mut out = FieldsOut(&mut cmd.ext_fields);
    match command {
        PopCommand::Pop(p) => {
            out.put("consumerGroup", &p.consumer_group)
                .put("topic", &p.topic)
                .put("queueId", p.queue_id)
                .put("maxMsgNums", p.max_msg_nums)
                .put("invisibleTime", p.invisible_time)
                .put("pollTime", p.poll_time)
                .put("bornTime", p.born_time)
                .put(
                    "initMode",
                    if p.init_mode == InitMode::Min {
                        INIT_MODE_MIN
                    } else {
                        1
                    },
                )
                .put_opt("expType", p.expression_type.as_ref())
                .put_opt("exp", p.expression.as_ref())
                .put("order", p.order)
                .put_opt("attemptId", p.attempt_id.as_ref());
        }
        PopCommand::Peek(p) => {
            out.put("consumerGroup", &p.consumer_group)
                .put("topic", &p.queue.topic)
                .put("queueId", p.queue.queue_id)
                .put("maxMsgNums", p.max_msg_nums);
        }
        PopCommand::Ack(a) | PopCommand::ChangeInvisibleTime(a) => {
            out.put("consumerGroup", &a.consumer_group)
                .put("topic", &a.queue.topic)
                .put("queueId", a.queue.queue_id)
                .put("offset", a.offset)
                .put("extraInfo", &a.extra_info)
                .put_opt("invisibleTime", a.invisible_time);
        }
        PopCommand::BatchAck { broker_name, acks } => {
            let body = BatchAckBody {
                broker_name: broker_name.clone(),
                acks: Some(acks.iter().map(BatchAckJson::from_model).collect()),
            };
            cmd.body = Body::from(super::body::to_json(&body).into_bytes());
        }
        PopCommand::Notification(n) => {
            out.put("consumerGroup", &n.consumer_group)
                .put("topic", &n.topic)
                .put("queueId", n.queue_id)
                .put("pollTime", n.poll_time)
                .put("bornTime", n.born_time)
                .put("order", n.order)
                .put_opt("attemptId", n.attempt_id.as_ref());
        }
        PopCommand::QueryAssignment(q) => {
            let body = QueryAssignmentBody {
                topic: q.topic.clone(),
                consumer_group: q.consumer_group.clone(),
                client_id: q.client_id.clone(),
                strategy_name: q.strategy_name.clone(),
                message_model: q.message_model.clone(),
            };
            cmd.body = Body::from(super::body::to_json(&body).into_bytes());
        }
        PopCommand::SetRequestMode(s) => {
            cmd.body = Body::from(super::body::to_json(s).into_bytes());
        }
    }
}

/// The request code of a POP command.
pub(super) fn request_code(command: &PopCommand) -> i32 {
    match command {
        PopCommand::Pop(_) => code::POP_MESSAGE,
        PopCommand::Peek(_) => code::PEEK_MESSAGE,
        PopCommand::Ack(_) => code::ACK_MESSAGE,
        PopCommand::BatchAck { .. } => code::BATCH_ACK_MESSAGE,
        PopCommand::ChangeInvisibleTime(_) => code::CHANGE_MESSAGE_INVISIBLETIME,
        PopCommand::Notification(_) => code::NOTIFICATION,
        PopCommand::QueryAssignment(_) => code::QUERY_ASSIGNMENT,
        PopCommand::SetRequestMode(_) => code::SET_MESSAGE_REQUEST_MODE,
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageQueueJson<'a> {
    broker_name: &'a str,
    queue_id: i32,
    topic: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AssignmentJson<'a> {
    message_queue: MessageQueueJson<'a>,
    mode: MessageRequestMode,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AssignmentsJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    message_queue_assignments: Option<Vec<AssignmentJson<'a>>>,
}

/// Server side: writes a POP reply into the response frame.
pub(super) fn encode_reply(reply: PopReply, cmd: &mut RemotingCommand) {
    match reply {
        PopReply::Popped(popped) => {
            cmd.code = match popped.status {
                PopStatus::Found => rc::SUCCESS,
                PopStatus::NotFound => rc::POLLING_TIMEOUT,
                PopStatus::PollingFull => rc::POLLING_FULL,
            };
            cmd.remark = Some(
                match popped.status {
                    PopStatus::Found => "FOUND",
                    _ => "NO_MESSAGE_IN_QUEUE",
                }
                .to_string(),
            );
            cmd.set_ext("popTime", popped.pop_time);
            cmd.set_ext("invisibleTime", popped.invisible_time);
            cmd.set_ext("reviveQid", popped.revive_qid);
            cmd.set_ext("restNum", popped.rest_num);
            cmd.set_ext("startOffsetInfo", popped.start_offset_info);
            cmd.set_ext("msgOffsetInfo", popped.msg_offset_info);
            if let Some(order) = popped.order_count_info {
                cmd.set_ext("orderCountInfo", order);
            }
            cmd.body = Body::Chunks(popped.messages);
        }
        PopReply::Peeked(messages) => {
            if messages.is_empty() {
                cmd.code = rc::PULL_NOT_FOUND;
            }
            cmd.body = Body::Chunks(messages);
        }
        PopReply::InvisibleTimeChanged {
            pop_time,
            invisible_time,
            revive_qid,
        } => {
            cmd.set_ext("popTime", pop_time);
            cmd.set_ext("invisibleTime", invisible_time);
            cmd.set_ext("reviveQid", revive_qid);
        }
        PopReply::Notified {
            has_msg,
            polling_full,
        } => {
            cmd.set_ext("hasMsg", has_msg);
            cmd.set_ext("pollingFull", polling_full);
        }
        PopReply::Assignments(assignments) => {
            let body = AssignmentsJson {
                message_queue_assignments: assignments.as_ref().map(|list| {
                    list.iter()
                        .map(|a: &Assignment| AssignmentJson {
                            message_queue: MessageQueueJson {
                                broker_name: &a.broker_name,
                                queue_id: a.queue_id,
                                topic: &a.topic,
                            },
                            mode: a.mode,
                        })
                        .collect()
                }),
            };
            cmd.body = Body::from(super::body::to_json(&body).into_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remoting::{decode_request, encode_reply as encode_any_reply, encode_request};
    use skiff_model::command::{Reply, Request};
    use skiff_model::pop::{AckRequest, PopResult};

    fn round_trip(command: PopCommand) {
        let request = Request::Pop(command);
        let frame = encode_request(&request, 7, false);
        assert_eq!(decode_request(&frame), Ok(request));
    }

    #[test]
    fn every_pop_command_round_trips() {
        round_trip(PopCommand::Pop(PopRequest {
            consumer_group: "G".into(),
            topic: "T".into(),
            queue_id: -1,
            max_msg_nums: 32,
            invisible_time: 60_000,
            poll_time: 15_000,
            born_time: 1_700_000_000_000,
            init_mode: InitMode::Min,
            expression_type: Some("TAG".into()),
            expression: Some("a || b".into()),
            order: true,
            attempt_id: Some("x".into()),
        }));
        let ack = AckRequest {
            consumer_group: "G".into(),
            queue: QueueRef {
                topic: "%RETRY%G_T".into(),
                queue_id: 0,
                physical: false,
            },
            offset: 9,
            extra_info: "0 1 2 3 1 b 0 9".into(),
            invisible_time: None,
        };
        round_trip(PopCommand::Ack(ack.clone()));
        round_trip(PopCommand::ChangeInvisibleTime(AckRequest {
            invisible_time: Some(10_000),
            ..ack
        }));
        round_trip(PopCommand::BatchAck {
            broker_name: Some("b".into()),
            acks: vec![BatchAck {
                consumer_group: "G".into(),
                topic: "T".into(),
                retry: "0".into(),
                start_offset: 4,
                queue_id: 1,
                revive_queue_id: 2,
                pop_time: 5,
                invisible_time: 6,
                offset_diffs: vec![0, 3, 9, 31],
            }],
        });
        round_trip(PopCommand::Peek(PeekRequest {
            consumer_group: "G".into(),
            queue: QueueRef {
                topic: "T".into(),
                queue_id: 2,
                physical: false,
            },
            max_msg_nums: 3,
        }));
        round_trip(PopCommand::Notification(NotificationRequest {
            consumer_group: "G".into(),
            topic: "T".into(),
            queue_id: -1,
            poll_time: 1000,
            born_time: 2,
            order: false,
            attempt_id: None,
        }));
        round_trip(PopCommand::QueryAssignment(AssignmentQuery {
            topic: "T".into(),
            consumer_group: "G".into(),
            client_id: "c@1".into(),
            strategy_name: "AVG".into(),
            message_model: "CLUSTERING".into(),
        }));
        round_trip(PopCommand::SetRequestMode(RequestModeSetting {
            topic: "T".into(),
            consumer_group: "G".into(),
            mode: MessageRequestMode::Pop,
            pop_share_queue_num: 0,
        }));
    }

    #[test]
    fn java_batch_ack_body_decodes() {
        // As fastjson writes `BatchAckMessageRequestBody` (BitSet {0, 2} = byte 0b101 = "BQ==").
        let mut cmd = RemotingCommand::request(code::BATCH_ACK_MESSAGE, 1);
        cmd.body = Body::from(
            br#"{"acks":[{"b":"BQ==","c":"G","it":60000,"pt":17,"q":1,"r":"0","rq":3,"so":10,"t":"T"}],"brokerName":"broker-a"}"#
                .to_vec(),
        );
        let Ok(Request::Pop(PopCommand::BatchAck { broker_name, acks })) = decode_request(&cmd)
        else {
            panic!("not a batch ack")
        };
        assert_eq!(broker_name.as_deref(), Some("broker-a"));
        assert_eq!(acks[0].offset_diffs, vec![0, 2]);
        assert_eq!(acks[0].start_offset, 10);
        cmd.body = Body::from(br#"{"acks":[{"b":"!!"}]}"#.to_vec());
        assert!(decode_request(&cmd).is_err());
    }

    #[test]
    fn pop_reply_carries_the_checkpoint_fields() {
        let request = encode_request(
            &Request::Pop(PopCommand::Notification(NotificationRequest::default())),
            3,
            false,
        );
        let cmd = encode_any_reply(
            &request,
            Reply::pop(PopReply::Popped(PopResult {
                status: PopStatus::Found,
                pop_time: 11,
                invisible_time: 22,
                revive_qid: 1,
                rest_num: 0,
                start_offset_info: "0 0 5".into(),
                msg_offset_info: "0 0 5,6".into(),
                order_count_info: None,
                messages: vec![],
            })),
        );
        assert_eq!(cmd.code, rc::SUCCESS);
        assert_eq!(cmd.ext("startOffsetInfo"), Some("0 0 5"));
        assert_eq!(cmd.ext("popTime"), Some("11"));
        let none = encode_any_reply(&request, Reply::pop(PopReply::Popped(PopResult::default())));
        assert_eq!(none.code, rc::POLLING_TIMEOUT);
        let assigned = encode_any_reply(
            &request,
            Reply::pop(PopReply::Assignments(Some(vec![Assignment {
                topic: "T".into(),
                broker_name: "b".into(),
                queue_id: -1,
                mode: MessageRequestMode::Pop,
            }]))),
        );
        let text = String::from_utf8(assigned.body.to_bytes().to_vec()).unwrap();
        assert_eq!(
            text,
            r#"{"messageQueueAssignments":[{"messageQueue":{"brokerName":"b","queueId":-1,"topic":"T"},"mode":"POP"}]}"#
        );
    }

    #[test]
    fn base64_matches_java() {
        assert_eq!(base64_encode(&[5]), "BQ==");
        assert_eq!(base64_decode("BQ=="), Some(vec![5]));
        assert_eq!(
            base64_decode(&base64_encode(&[1, 2, 3, 4])),
            Some(vec![1, 2, 3, 4])
        );
    }
}
