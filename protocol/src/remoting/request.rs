//! Request frames ⇄ [`Request`]: which code carries which header fields and body.

use skiff_model::command::{
    AutoCreateTopic, BoundaryType, ErrorKind, ErrorReply, PullRequest, QueueRef, Request,
    SendBackRequest, SendRequest, SubscriptionExpression,
};
use skiff_model::consumer::{HeartbeatData, SubscriptionGroupConfig, EXPRESSION_TYPE_TAG};
use skiff_model::message::{keys, sys_flag, Message, Properties};
use skiff_model::record::body_crc;
use skiff_model::route::{BrokerRegistration, TopicConfig, TopicFilterType};
use skiff_model::transaction::{
    CheckTransactionStateRequest, EndTransactionRequest, TransactionResolution,
};

use super::body::{self, RegisterBrokerBody};
use super::codes::request as code;
use super::command::{Body, RemotingCommand, FLAG_ONEWAY};
use super::fields::{system_error, Fields, FieldsOut};
use crate::fastjson;

/// `PullSysFlag` bits of a pull request's `sysFlag`.
mod pull_flag {
    pub const COMMIT_OFFSET: i32 = 0x1;
    pub const SUSPEND: i32 = 0x2;
    pub const SUBSCRIPTION: i32 = 0x4;
    pub const LITE_PULL: i32 = 0x10;
}

/// The extField that marks a QUERY_MESSAGE by unique key (`MixAll.UNIQUE_MSG_QUERY_FLAG`).
const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

/// Header field names of a send: `SendMessageRequestHeader` (code 10) or the one-letter names of
/// `SendMessageRequestHeaderV2` (codes 310 and 320).
struct SendNames {
    producer_group: &'static str,
    topic: &'static str,
    default_topic: &'static str,
    default_topic_queue_nums: &'static str,
    queue_id: &'static str,
    sys_flag: &'static str,
    born_timestamp: &'static str,
    flag: &'static str,
    properties: &'static str,
    reconsume_times: &'static str,
    unit_mode: &'static str,
    max_reconsume_times: &'static str,
    batch: &'static str,
    broker_name: &'static str,
}

const SEND_V1: SendNames = SendNames {
    producer_group: "producerGroup",
    topic: "topic",
    default_topic: "defaultTopic",
    default_topic_queue_nums: "defaultTopicQueueNums",
    queue_id: "queueId",
    sys_flag: "sysFlag",
    born_timestamp: "bornTimestamp",
    flag: "flag",
    properties: "properties",
    reconsume_times: "reconsumeTimes",
    unit_mode: "unitMode",
    max_reconsume_times: "maxReconsumeTimes",
    batch: "batch",
    // The 5.x V1 header inherits the broker name from `RpcRequestHeader.bname`.
    broker_name: "bname",
};

const SEND_V2: SendNames = SendNames {
    producer_group: "a",
    topic: "b",
    default_topic: "c",
    default_topic_queue_nums: "d",
    queue_id: "e",
    sys_flag: "f",
    born_timestamp: "g",
    flag: "h",
    properties: "i",
    reconsume_times: "j",
    unit_mode: "k",
    max_reconsume_times: "l",
    batch: "m",
    broker_name: "n",
};

/// Server side: what the client asked. `Err` is the reply to send back: Java's answers for an
/// unknown code (REQUEST_CODE_NOT_SUPPORTED, `" request type <code> not supported"`), a missing
/// required header field (SYSTEM_ERROR, `"the custom field <name> is null"`), a field that does not
/// parse, or a malformed body.
pub fn decode_request(cmd: &RemotingCommand) -> Result<Request, ErrorReply> {
    let f = Fields(&cmd.ext_fields);
    let request = match cmd.code {
        code::SEND_MESSAGE => Request::Send(decode_send(cmd, &SEND_V1)?),
        code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE => {
            Request::Send(decode_send(cmd, &SEND_V2)?)
        }
        code::PULL_MESSAGE | code::LITE_PULL_MESSAGE => Request::Pull(decode_pull(cmd)?),
        code::QUERY_CONSUMER_OFFSET => Request::QueryConsumerOffset {
            group: f.string("consumerGroup")?,
            queue: queue(&f)?,
            set_zero_if_not_found: f.opt_bool("setZeroIfNotFound") != Some(false),
        },
        code::UPDATE_CONSUMER_OFFSET => Request::UpdateConsumerOffset {
            group: f.string("consumerGroup")?,
            queue: queue(&f)?,
            offset: f.num("commitOffset")?,
        },
        code::SEARCH_OFFSET_BY_TIMESTAMP => Request::SearchOffsetByTimestamp {
            queue: queue(&f)?,
            timestamp: f.num("timestamp")?,
            // `BoundaryType.getType`: UPPER in any case, anything else LOWER.
            boundary: match f.opt("boundaryType") {
                Some(b) if b.eq_ignore_ascii_case("upper") => BoundaryType::Upper,
                _ => BoundaryType::Lower,
            },
        },
        code::GET_MAX_OFFSET => Request::GetMaxOffset { queue: queue(&f)? },
        code::GET_MIN_OFFSET => Request::GetMinOffset { queue: queue(&f)? },
        code::GET_EARLIEST_MSG_STORETIME => Request::GetEarliestMsgStoreTime { queue: queue(&f)? },
        code::QUERY_MESSAGE => Request::QueryMessage {
            topic: f.string("topic")?,
            key: f.string("key")?,
            max_num: f.num("maxNum")?,
            begin_timestamp: f.num("beginTimestamp")?,
            end_timestamp: f.num("endTimestamp")?,
            unique_key: f.opt_bool(UNIQUE_KEY_QUERY) == Some(true),
        },
        code::VIEW_MESSAGE_BY_ID => Request::ViewMessage {
            commit_log_offset: f.num("offset")?,
        },
        code::CONSUMER_SEND_MSG_BACK => Request::ConsumerSendMsgBack(SendBackRequest {
            offset: f.num("offset")?,
            group: f.string("group")?,
            delay_level: f.num("delayLevel")?,
            origin_msg_id: f.opt_string("originMsgId"),
            origin_topic: f.opt_string("originTopic"),
            unit_mode: f.opt_bool("unitMode") == Some(true),
            max_reconsume_times: f.opt_num("maxReconsumeTimes")?,
        }),
        code::HEART_BEAT => Request::Heartbeat(json_body::<HeartbeatData>(cmd)?),
        code::UNREGISTER_CLIENT => Request::UnregisterClient {
            client_id: f.string("clientID")?,
            producer_group: f.opt_string("producerGroup"),
            consumer_group: f.opt_string("consumerGroup"),
        },
        code::GET_CONSUMER_LIST_BY_GROUP => Request::GetConsumerListByGroup {
            group: f.string("consumerGroup")?,
        },
        code::END_TRANSACTION => Request::EndTransaction(decode_end_transaction(&f)?),
        code::CHECK_TRANSACTION_STATE => {
            Request::CheckTransactionState(CheckTransactionStateRequest {
                topic: f.opt_string("topic").unwrap_or_default(),
                tran_state_table_offset: f.num("tranStateTableOffset")?,
                commit_log_offset: f.num("commitLogOffset")?,
                msg_id: f.opt_string("msgId"),
                transaction_id: f.opt_string("transactionId"),
                offset_msg_id: f.opt_string("offsetMsgId").unwrap_or_default(),
                broker_name: f.opt_string("bname").unwrap_or_default(),
                message: cmd.body.to_bytes(),
            })
        }
        code::CHECK_CLIENT_CONFIG => Request::CheckClientConfig(json_body(cmd)?),
        code::LOCK_BATCH_MQ => Request::LockBatchMq(json_body(cmd)?),
        code::UNLOCK_BATCH_MQ => Request::UnlockBatchMq(json_body(cmd)?),
        code::UPDATE_AND_CREATE_TOPIC => Request::CreateTopic(decode_create_topic(&f)?),
        code::DELETE_TOPIC_IN_BROKER => Request::DeleteTopicInBroker {
            topic: f.string("topic")?,
        },
        code::GET_ALL_TOPIC_CONFIG => Request::GetAllTopicConfig,
        code::GET_TOPIC_CONFIG => Request::GetTopicConfig {
            topic: f.string("topic")?,
            lo: f.opt_bool("lo") == Some(true),
        },
        code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
            Request::CreateSubscriptionGroup(json_body::<SubscriptionGroupConfig>(cmd)?)
        }
        code::GET_TOPIC_STATS_INFO => Request::GetTopicStats {
            topic: f.string("topic")?,
        },
        code::GET_CONSUME_STATS => Request::GetConsumeStats {
            group: f.string("consumerGroup")?,
            topic: f.opt_string("topic"),
        },
        code::GET_BROKER_RUNTIME_INFO => Request::GetBrokerRuntimeInfo,
        code::REGISTER_BROKER => Request::RegisterBroker(decode_register_broker(cmd)?),
        code::UNREGISTER_BROKER => Request::UnregisterBroker {
            cluster_name: f.string("clusterName")?,
            broker_name: f.string("brokerName")?,
            broker_addr: f.string("brokerAddr")?,
            broker_id: f.num("brokerId")?,
        },
        code::GET_ROUTEINFO_BY_TOPIC => Request::GetRouteInfo {
            topic: f.string("topic")?,
        },
        code::GET_BROKER_CLUSTER_INFO => Request::GetBrokerClusterInfo,
        code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => Request::GetAllTopicList,
        code::DELETE_TOPIC_IN_NAMESRV => Request::DeleteTopicInNamesrv {
            topic: f.string("topic")?,
            cluster_name: f.opt_string("clusterName"),
        },
        code::NOTIFY_CONSUMER_IDS_CHANGED => Request::NotifyConsumerIdsChanged {
            group: f.string("consumerGroup")?,
        },
        code::RESET_CONSUMER_CLIENT_OFFSET => Request::ResetConsumerClientOffset {
            topic: f.string("topic")?,
            group: f.string("group")?,
            timestamp: f.num("timestamp")?,
            offsets: body::parse_reset_offsets(&cmd.body.to_bytes())
                .map_err(|e| system_error(format!("malformed ResetOffsetBody: {e}")))?,
        },
        pop if super::pop::is_pop_code(pop) => Request::Pop(super::pop::decode(cmd)?),
        admin if super::admin::is_admin_code(admin) => Request::Admin(super::admin::decode(cmd)?),
        other => {
            return Err(ErrorReply {
                kind: ErrorKind::RequestNotSupported,
                message: format!(" request type {other} not supported"),
            })
        }
    };
    Ok(request)
}

/// `EndTransactionRequestHeader`, with its `checkFields` rule on `commitOrRollback`.
fn decode_end_transaction(f: &Fields) -> Result<EndTransactionRequest, ErrorReply> {
    // Java 5.3.3 does not enforce this @CFNotNull field: a missing group fails the group check.
    let producer_group = f.opt_string("producerGroup").unwrap_or_default();
    let tran_state_table_offset = f.num("tranStateTableOffset")?;
    let commit_log_offset = f.num("commitLogOffset")?;
    let resolution = match f.num::<i32>("commitOrRollback")? {
        sys_flag::TRANSACTION_NOT_TYPE => TransactionResolution::Unknown,
        sys_flag::TRANSACTION_COMMIT_TYPE => TransactionResolution::Commit,
        sys_flag::TRANSACTION_ROLLBACK_TYPE => TransactionResolution::Rollback,
        _ => return Err(system_error("commitOrRollback field wrong")),
    };
    Ok(EndTransactionRequest {
        producer_group,
        tran_state_table_offset,
        commit_log_offset,
        resolution,
        from_transaction_check: f.opt_bool("fromTransactionCheck") == Some(true),
        msg_id: f.string("msgId")?,
        transaction_id: f.opt_string("transactionId"),
    })
}

fn queue(f: &Fields) -> Result<QueueRef, ErrorReply> {
    Ok(QueueRef {
        topic: f.string("topic")?,
        queue_id: f.num("queueId")?,
        physical: f.opt_bool("lo") == Some(false),
    })
}

/// A JSON (fastjson) body; an empty or malformed one is a system error, as Java's NPE would be.
pub(super) fn json_body<T: serde::de::DeserializeOwned>(
    cmd: &RemotingCommand,
) -> Result<T, ErrorReply> {
    let body = cmd.body.to_bytes();
    if body.is_empty() {
        return Err(system_error("the request body is empty"));
    }
    fastjson::from_slice(&body).map_err(|e| system_error(format!("malformed request body: {e}")))
}

fn decode_send(cmd: &RemotingCommand, names: &SendNames) -> Result<SendRequest, ErrorReply> {
    let f = Fields(&cmd.ext_fields);
    let producer_group = f.string(names.producer_group)?;
    let topic = f.string(names.topic)?;
    let default_topic = f.string(names.default_topic)?;
    let default_topic_queue_nums: i32 = f.num(names.default_topic_queue_nums)?;
    let queue_id = f.num(names.queue_id)?;
    let sys_flag = f.num(names.sys_flag)?;
    let born_timestamp = f.num(names.born_timestamp)?;
    let flag = f.num(names.flag)?;
    let properties = Properties::decode(f.raw(names.properties).unwrap_or(""));
    // The 5.x broker dispatches on the batch field; code 320 always means a batch.
    let batch = cmd.code == code::SEND_BATCH_MESSAGE || f.opt_bool(names.batch) == Some(true);
    let body = cmd.body.to_bytes();
    let messages = if batch {
        let mut messages = body::decode_batch(&body).map_err(|e| ErrorReply {
            kind: ErrorKind::MessageIllegal,
            message: format!("malformed batch body: {e}"),
        })?;
        for message in &mut messages {
            merge_batch_properties(message, &properties);
        }
        messages
    } else {
        vec![Message {
            flag,
            body,
            properties,
        }]
    };
    Ok(SendRequest {
        producer_group,
        topic,
        queue_id,
        sys_flag,
        born_timestamp,
        reconsume_times: f.opt_num(names.reconsume_times)?.unwrap_or(0),
        max_reconsume_times: f.opt_num(names.max_reconsume_times)?,
        unit_mode: f.opt_bool(names.unit_mode).unwrap_or(false),
        auto_create: (!default_topic.is_empty()).then_some(AutoCreateTopic {
            template_topic: default_topic,
            queue_nums: default_topic_queue_nums,
        }),
        batch,
        messages,
        broker_name: f
            .opt_string(names.broker_name)
            .or_else(|| f.opt_string("bname")),
    })
}

/// The batch header's properties apply to every inner message (the 4.9 broker appends them to
/// each stored record), but never override what a message carries itself: 5.x clients put the
/// batch's own `UNIQ_KEY` in the header, which must not replace the per-message ids.
fn merge_batch_properties(message: &mut Message, header: &Properties) {
    for (name, value) in header.iter() {
        if name != keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX && !message.properties.contains(name) {
            message.properties.insert(name, value);
        }
    }
}

fn decode_pull(cmd: &RemotingCommand) -> Result<PullRequest, ErrorReply> {
    let f = Fields(&cmd.ext_fields);
    let consumer_group = f.string("consumerGroup")?;
    let queue = queue(&f)?;
    let queue_offset = f.num("queueOffset")?;
    let max_msg_nums = f.num("maxMsgNums")?;
    let sys_flag: i32 = f.num("sysFlag")?;
    let commit_offset: i64 = f.num("commitOffset")?;
    let suspend_timeout_millis: i64 = f.num("suspendTimeoutMillis")?;
    let sub_version = f.num("subVersion")?;
    let subscription = (sys_flag & pull_flag::SUBSCRIPTION != 0).then(|| SubscriptionExpression {
        expression_type: f
            .opt("expressionType")
            .unwrap_or(EXPRESSION_TYPE_TAG)
            .to_string(),
        expression: f.opt("subscription").unwrap_or("").to_string(),
        version: sub_version,
    });
    Ok(PullRequest {
        consumer_group,
        queue,
        queue_offset,
        max_msg_nums,
        max_msg_bytes: f.opt_num("maxMsgBytes")?,
        commit_offset: (sys_flag & pull_flag::COMMIT_OFFSET != 0).then_some(commit_offset),
        suspend_timeout_millis: (sys_flag & pull_flag::SUSPEND != 0)
            .then_some(suspend_timeout_millis.max(0) as u64),
        subscription,
        sub_version,
        lite: cmd.code == code::LITE_PULL_MESSAGE || sys_flag & pull_flag::LITE_PULL != 0,
    })
}

pub(super) fn decode_create_topic(f: &Fields) -> Result<TopicConfig, ErrorReply> {
    let topic_filter_type = match f.opt("topicFilterType") {
        None | Some("SINGLE_TAG") => TopicFilterType::SingleTag,
        Some("MULTI_TAG") => TopicFilterType::MultiTag,
        Some(other) => {
            return Err(system_error(format!(
                "No enum constant org.apache.rocketmq.common.TopicFilterType.{other}"
            )))
        }
    };
    Ok(TopicConfig {
        topic_name: f.string("topic")?,
        read_queue_nums: f.num("readQueueNums")?,
        write_queue_nums: f.num("writeQueueNums")?,
        perm: f.num("perm")?,
        topic_filter_type,
        topic_sys_flag: f.opt_num("topicSysFlag")?.unwrap_or(0),
        order: f.opt_bool("order").unwrap_or(false),
        attributes: parse_attributes(f.opt("attributes").unwrap_or(""))?,
    })
}

/// `AttributeParser.parseToMap`: `+key=value` adds or changes an attribute, `-key` deletes one.
/// The keys keep their sign, as in Java, so the server can tell the two apart.
fn parse_attributes(text: &str) -> Result<std::collections::BTreeMap<String, String>, ErrorReply> {
    let mut attributes = std::collections::BTreeMap::new();
    if text.is_empty() {
        return Ok(attributes);
    }
    for item in text.split(',') {
        let (key, value) = match item.split_once('=') {
            Some((key, value)) if key.contains('+') => (key, value.split('=').next().unwrap_or("")),
            Some((key, _)) => {
                return Err(system_error(format!(
                    "add/alter attribute format is wrong: {key}"
                )))
            }
            None if item.contains('-') => (item, ""),
            None => {
                return Err(system_error(format!(
                    "delete attribute format is wrong: {item}"
                )))
            }
        };
        if attributes
            .insert(key.to_string(), value.to_string())
            .is_some()
        {
            return Err(system_error(format!("key duplication: {key}")));
        }
    }
    Ok(attributes)
}

/// `AttributeParser.parseToString`.
fn format_attributes(attributes: &std::collections::BTreeMap<String, String>) -> String {
    attributes
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn decode_register_broker(cmd: &RemotingCommand) -> Result<BrokerRegistration, ErrorReply> {
    let f = Fields(&cmd.ext_fields);
    let registration = BrokerRegistration {
        cluster_name: f.string("clusterName")?,
        broker_name: f.string("brokerName")?,
        broker_addr: f.string("brokerAddr")?,
        broker_id: f.num("brokerId")?,
        ha_server_addr: f.string("haServerAddr")?,
        heartbeat_timeout_millis: f.opt_num("heartbeatTimeoutMillis")?,
        enable_acting_master: f.opt_bool("enableActingMaster").unwrap_or(false),
        ..BrokerRegistration::default()
    };
    let body = cmd.body.to_bytes();
    let crc: i32 = f.opt_num("bodyCrc32")?.unwrap_or(0);
    if crc != 0 && body_crc(&body) != crc {
        return Err(system_error("crc32 not match"));
    }
    if f.opt_bool("compressed") == Some(true) {
        return Err(system_error(
            "compressed RegisterBrokerBody is not supported; set compressedRegister=false on the broker",
        ));
    }
    if body.is_empty() {
        return Ok(registration);
    }
    // Brokers (Skiff's and Java's) send plain JSON: parsed directly it costs a fraction of the
    // lenient parser, which matters for a registration of 100,000 topics (~10 MB) at start.
    // Anything in fastjson's dialect falls back to the lenient parser.
    let parsed: RegisterBrokerBody = match serde_json::from_slice(&body) {
        Ok(parsed) => parsed,
        Err(_) => fastjson::from_slice(&body)
            .map_err(|e| system_error(format!("Failed to decode RegisterBrokerBody: {e}")))?,
    };
    Ok(BrokerRegistration {
        data_version: parsed.topic_config_serialize_wrapper.data_version,
        topics: parsed.topic_config_serialize_wrapper.topic_config_table,
        topic_queue_mappings: parsed
            .topic_config_serialize_wrapper
            .topic_queue_mapping_info_map,
        filter_server_list: parsed.filter_server_list,
        ..registration
    })
}

/// Client side: the request frame for `request` (JSON header, [`super::SKIFF_VERSION`], JAVA), as
/// Skiff's tools, the broker registering with a name server, or the broker notifying a consumer
/// send it. Sends use SEND_MESSAGE_V2, or SEND_BATCH_MESSAGE for batches.
pub fn encode_request(request: &Request, opaque: i32, oneway: bool) -> RemotingCommand {
    let mut cmd = match request {
        Request::Send(send) => encode_send(send),
        Request::Pull(pull) => encode_pull(pull),
        Request::Pop(pop) => {
            let mut cmd = RemotingCommand::request(0, 0);
            super::pop::encode(pop, &mut cmd);
            cmd
        }
        Request::Admin(admin) => {
            let mut cmd = RemotingCommand::request(0, 0);
            super::admin::encode(admin, &mut cmd);
            cmd
        }
        _ => RemotingCommand::request(0, 0),
    };
    cmd.code = request_code(request);
    cmd.opaque = opaque;
    if oneway {
        cmd.flag |= FLAG_ONEWAY;
    }
    let mut out = FieldsOut(&mut cmd.ext_fields);
    match request {
        Request::Send(_) | Request::Pull(_) | Request::Pop(_) | Request::Admin(_) => {}
        Request::QueryConsumerOffset {
            group,
            queue,
            set_zero_if_not_found,
        } => {
            out.put("consumerGroup", group);
            put_queue(&mut out, queue);
            if !set_zero_if_not_found {
                out.put("setZeroIfNotFound", false);
            }
        }
        Request::UpdateConsumerOffset {
            group,
            queue,
            offset,
        } => {
            out.put("consumerGroup", group).put("commitOffset", offset);
            put_queue(&mut out, queue);
        }
        Request::SearchOffsetByTimestamp {
            queue,
            timestamp,
            boundary,
        } => {
            put_queue(&mut out, queue);
            out.put("timestamp", timestamp).put(
                "boundaryType",
                match boundary {
                    BoundaryType::Lower => "LOWER",
                    BoundaryType::Upper => "UPPER",
                },
            );
        }
        Request::GetMaxOffset { queue }
        | Request::GetMinOffset { queue }
        | Request::GetEarliestMsgStoreTime { queue } => {
            put_queue(&mut out, queue);
        }
        Request::Heartbeat(heartbeat) => {
            cmd.body = Body::from(body::to_json(heartbeat).into_bytes())
        }
        Request::CheckClientConfig(check) => {
            cmd.body = Body::from(body::to_json(check).into_bytes())
        }
        Request::LockBatchMq(lock) | Request::UnlockBatchMq(lock) => {
            cmd.body = Body::from(body::to_json(lock).into_bytes())
        }
        Request::UnregisterClient {
            client_id,
            producer_group,
            consumer_group,
        } => {
            out.put("clientID", client_id)
                .put_opt("producerGroup", producer_group.as_ref())
                .put_opt("consumerGroup", consumer_group.as_ref());
        }
        Request::GetConsumerListByGroup { group } | Request::NotifyConsumerIdsChanged { group } => {
            out.put("consumerGroup", group);
        }
        Request::CreateTopic(topic) => put_create_topic(&mut out, topic),
        Request::DeleteTopicInBroker { topic }
        | Request::GetTopicStats { topic }
        | Request::GetRouteInfo { topic } => {
            out.put("topic", topic);
        }
        Request::GetTopicConfig { topic, lo } => {
            out.put("topic", topic).put("lo", lo);
        }
        Request::QueryMessage {
            topic,
            key,
            max_num,
            begin_timestamp,
            end_timestamp,
            unique_key,
        } => {
            out.put("topic", topic)
                .put("key", key)
                .put("maxNum", max_num)
                .put("beginTimestamp", begin_timestamp)
                .put("endTimestamp", end_timestamp)
                .put(UNIQUE_KEY_QUERY, unique_key);
        }
        Request::ViewMessage { commit_log_offset } => {
            out.put("offset", commit_log_offset);
        }
        Request::ConsumerSendMsgBack(back) => {
            out.put("offset", back.offset)
                .put("group", &back.group)
                .put("delayLevel", back.delay_level)
                .put_opt("originMsgId", back.origin_msg_id.as_ref())
                .put_opt("originTopic", back.origin_topic.as_ref())
                .put("unitMode", back.unit_mode)
                .put_opt("maxReconsumeTimes", back.max_reconsume_times);
        }
        Request::CreateSubscriptionGroup(group) => {
            cmd.body = Body::from(body::to_json(group).into_bytes())
        }
        Request::GetConsumeStats { group, topic } => {
            out.put("consumerGroup", group)
                .put_opt("topic", topic.as_ref());
        }
        Request::RegisterBroker(registration) => {
            let body = body::register_broker_body(registration);
            out.put("clusterName", &registration.cluster_name)
                .put("brokerName", &registration.broker_name)
                .put("brokerAddr", &registration.broker_addr)
                .put("brokerId", registration.broker_id)
                .put("haServerAddr", &registration.ha_server_addr)
                .put_opt(
                    "heartbeatTimeoutMillis",
                    registration.heartbeat_timeout_millis,
                )
                .put("enableActingMaster", registration.enable_acting_master)
                .put("compressed", false)
                .put("bodyCrc32", body_crc(&body));
            cmd.body = Body::from(body);
        }
        Request::UnregisterBroker {
            cluster_name,
            broker_name,
            broker_addr,
            broker_id,
        } => {
            out.put("clusterName", cluster_name)
                .put("brokerName", broker_name)
                .put("brokerAddr", broker_addr)
                .put("brokerId", broker_id);
        }
        Request::DeleteTopicInNamesrv {
            topic,
            cluster_name,
        } => {
            out.put("topic", topic)
                .put_opt("clusterName", cluster_name.as_ref());
        }
        Request::EndTransaction(end) => {
            out.put("producerGroup", &end.producer_group)
                .put("tranStateTableOffset", end.tran_state_table_offset)
                .put("commitLogOffset", end.commit_log_offset)
                .put(
                    "commitOrRollback",
                    match end.resolution {
                        TransactionResolution::Unknown => sys_flag::TRANSACTION_NOT_TYPE,
                        TransactionResolution::Commit => sys_flag::TRANSACTION_COMMIT_TYPE,
                        TransactionResolution::Rollback => sys_flag::TRANSACTION_ROLLBACK_TYPE,
                    },
                )
                .put("fromTransactionCheck", end.from_transaction_check)
                .put("msgId", &end.msg_id)
                .put_opt("transactionId", end.transaction_id.as_ref());
        }
        Request::CheckTransactionState(check) => {
            out.put("topic", &check.topic)
                .put("tranStateTableOffset", check.tran_state_table_offset)
                .put("commitLogOffset", check.commit_log_offset)
                .put_opt("msgId", check.msg_id.as_ref())
                .put_opt("transactionId", check.transaction_id.as_ref())
                .put("offsetMsgId", &check.offset_msg_id)
                .put("bname", &check.broker_name);
            cmd.body = Body::from(check.message.clone());
        }
        Request::ResetConsumerClientOffset {
            topic,
            group,
            timestamp,
            offsets,
        } => {
            // `ResetOffsetRequestHeader` as `Broker2Client.resetOffset` fills it.
            out.put("topic", topic)
                .put("group", group)
                .put("timestamp", timestamp)
                .put("isForce", false)
                .put("queueId", -1);
            cmd.body = Body::from(body::reset_offset_json(offsets).into_bytes());
        }
        Request::GetAllTopicConfig
        | Request::GetBrokerRuntimeInfo
        | Request::GetBrokerClusterInfo
        | Request::GetAllTopicList => {}
    }
    cmd
}

/// The request code Skiff sends for `request`.
/// Java's `RequestCode` name of the code `request` is sent with, for messages and logs.
pub fn request_name(request: &Request) -> &'static str {
    code::name(request_code(request)).unwrap_or("UNKNOWN_REQUEST")
}

pub fn request_code(request: &Request) -> i32 {
    match request {
        Request::Send(send) if send.batch => code::SEND_BATCH_MESSAGE,
        Request::Send(_) => code::SEND_MESSAGE_V2,
        Request::Pull(pull) if pull.lite => code::LITE_PULL_MESSAGE,
        Request::Pull(_) => code::PULL_MESSAGE,
        Request::QueryConsumerOffset { .. } => code::QUERY_CONSUMER_OFFSET,
        Request::UpdateConsumerOffset { .. } => code::UPDATE_CONSUMER_OFFSET,
        Request::GetMaxOffset { .. } => code::GET_MAX_OFFSET,
        Request::GetMinOffset { .. } => code::GET_MIN_OFFSET,
        Request::SearchOffsetByTimestamp { .. } => code::SEARCH_OFFSET_BY_TIMESTAMP,
        Request::GetEarliestMsgStoreTime { .. } => code::GET_EARLIEST_MSG_STORETIME,
        Request::QueryMessage { .. } => code::QUERY_MESSAGE,
        Request::ViewMessage { .. } => code::VIEW_MESSAGE_BY_ID,
        Request::ConsumerSendMsgBack(_) => code::CONSUMER_SEND_MSG_BACK,
        Request::Heartbeat(_) => code::HEART_BEAT,
        Request::UnregisterClient { .. } => code::UNREGISTER_CLIENT,
        Request::GetConsumerListByGroup { .. } => code::GET_CONSUMER_LIST_BY_GROUP,
        Request::CheckClientConfig(_) => code::CHECK_CLIENT_CONFIG,
        Request::LockBatchMq(_) => code::LOCK_BATCH_MQ,
        Request::UnlockBatchMq(_) => code::UNLOCK_BATCH_MQ,
        Request::CreateTopic(_) => code::UPDATE_AND_CREATE_TOPIC,
        Request::DeleteTopicInBroker { .. } => code::DELETE_TOPIC_IN_BROKER,
        Request::GetAllTopicConfig => code::GET_ALL_TOPIC_CONFIG,
        Request::GetTopicConfig { .. } => code::GET_TOPIC_CONFIG,
        Request::CreateSubscriptionGroup(_) => code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        Request::GetTopicStats { .. } => code::GET_TOPIC_STATS_INFO,
        Request::GetConsumeStats { .. } => code::GET_CONSUME_STATS,
        Request::GetBrokerRuntimeInfo => code::GET_BROKER_RUNTIME_INFO,
        Request::RegisterBroker(_) => code::REGISTER_BROKER,
        Request::UnregisterBroker { .. } => code::UNREGISTER_BROKER,
        Request::GetRouteInfo { .. } => code::GET_ROUTEINFO_BY_TOPIC,
        Request::GetBrokerClusterInfo => code::GET_BROKER_CLUSTER_INFO,
        Request::GetAllTopicList => code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        Request::DeleteTopicInNamesrv { .. } => code::DELETE_TOPIC_IN_NAMESRV,
        Request::NotifyConsumerIdsChanged { .. } => code::NOTIFY_CONSUMER_IDS_CHANGED,
        Request::EndTransaction(_) => code::END_TRANSACTION,
        Request::CheckTransactionState(_) => code::CHECK_TRANSACTION_STATE,
        Request::ResetConsumerClientOffset { .. } => code::RESET_CONSUMER_CLIENT_OFFSET,
        Request::Pop(pop) => super::pop::request_code(pop),
        Request::Admin(admin) => super::admin::request_code(admin),
    }
}

/// `CreateTopicRequestHeader`'s fields for `topic` (UPDATE_AND_CREATE_TOPIC and
/// UPDATE_AND_CREATE_STATIC_TOPIC).
pub(super) fn put_create_topic(out: &mut FieldsOut, topic: &TopicConfig) {
    out.put("topic", &topic.topic_name)
        .put("defaultTopic", skiff_model::topic::AUTO_CREATE_TOPIC_KEY)
        .put("readQueueNums", topic.read_queue_nums)
        .put("writeQueueNums", topic.write_queue_nums)
        .put("perm", topic.perm)
        .put(
            "topicFilterType",
            match topic.topic_filter_type {
                TopicFilterType::SingleTag => "SINGLE_TAG",
                TopicFilterType::MultiTag => "MULTI_TAG",
            },
        )
        .put("topicSysFlag", topic.topic_sys_flag)
        .put("order", topic.order);
    if !topic.attributes.is_empty() {
        out.put("attributes", format_attributes(&topic.attributes));
    }
}

fn put_queue(out: &mut FieldsOut, queue: &QueueRef) {
    out.put("topic", &queue.topic)
        .put("queueId", queue.queue_id);
    if queue.physical {
        out.put("lo", false);
    }
}

fn encode_send(send: &SendRequest) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(0, 0);
    let names = &SEND_V2;
    let single = if send.batch {
        None
    } else {
        send.messages.first()
    };
    let mut out = FieldsOut(&mut cmd.ext_fields);
    out.put(names.producer_group, &send.producer_group)
        .put(names.topic, &send.topic)
        .put(
            names.default_topic,
            send.auto_create
                .as_ref()
                .map_or("", |a| a.template_topic.as_str()),
        )
        .put(
            names.default_topic_queue_nums,
            send.auto_create.as_ref().map_or(0, |a| a.queue_nums),
        )
        .put(names.queue_id, send.queue_id)
        .put(names.sys_flag, send.sys_flag)
        .put(names.born_timestamp, send.born_timestamp)
        .put(names.flag, single.map_or(0, |m| m.flag))
        .put(
            names.properties,
            single.map(|m| m.properties.encode()).unwrap_or_default(),
        )
        .put(names.reconsume_times, send.reconsume_times)
        .put(names.unit_mode, send.unit_mode)
        .put_opt(names.max_reconsume_times, send.max_reconsume_times)
        .put(names.batch, send.batch)
        .put_opt(names.broker_name, send.broker_name.as_ref());
    cmd.body = match single {
        Some(message) => Body::from(message.body.clone()),
        None => Body::from(body::encode_batch(&send.messages)),
    };
    cmd
}

fn encode_pull(pull: &PullRequest) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(0, 0);
    let mut sys_flag = 0;
    if pull.commit_offset.is_some() {
        sys_flag |= pull_flag::COMMIT_OFFSET;
    }
    if pull.suspend_timeout_millis.is_some() {
        sys_flag |= pull_flag::SUSPEND;
    }
    if pull.subscription.is_some() {
        sys_flag |= pull_flag::SUBSCRIPTION;
    }
    if pull.lite {
        sys_flag |= pull_flag::LITE_PULL;
    }
    let mut out = FieldsOut(&mut cmd.ext_fields);
    out.put("consumerGroup", &pull.consumer_group)
        .put("queueOffset", pull.queue_offset)
        .put("maxMsgNums", pull.max_msg_nums)
        .put("sysFlag", sys_flag)
        .put("commitOffset", pull.commit_offset.unwrap_or(0))
        .put(
            "suspendTimeoutMillis",
            pull.suspend_timeout_millis.unwrap_or(0),
        )
        .put("subVersion", pull.sub_version)
        .put_opt("maxMsgBytes", pull.max_msg_bytes);
    if let Some(subscription) = &pull.subscription {
        out.put("subscription", &subscription.expression)
            .put("expressionType", &subscription.expression_type);
    }
    put_queue(&mut out, &pull.queue);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(code, 1);
        for (k, v) in fields {
            cmd.set_ext(*k, *v);
        }
        cmd
    }

    #[test]
    fn unknown_codes_are_not_supported_with_javas_remark() {
        let err = decode_request(&cmd(999, &[])).unwrap_err();
        assert_eq!(err.kind, ErrorKind::RequestNotSupported);
        assert_eq!(err.message, " request type 999 not supported");
    }

    #[test]
    fn missing_required_fields_name_the_field() {
        let err = decode_request(&cmd(14, &[("topic", "T"), ("queueId", "0")])).unwrap_err();
        assert_eq!(err.kind, ErrorKind::SystemError);
        assert_eq!(err.message, "the custom field <consumerGroup> is null");
    }

    #[test]
    fn go_empty_strings_are_absent() {
        let fields = [
            ("consumerGroup", "g"),
            ("topic", "T"),
            ("queueId", "0"),
            ("queueOffset", "5"),
            ("maxMsgNums", "32"),
            ("sysFlag", "6"),
            ("commitOffset", "0"),
            ("suspendTimeoutMillis", "20000"),
            ("subscription", ""),
            ("subVersion", "0"),
            ("expressionType", ""),
            ("maxMsgBytes", ""),
        ];
        let Request::Pull(pull) = decode_request(&cmd(11, &fields)).unwrap() else {
            panic!("not a pull")
        };
        assert_eq!(pull.commit_offset, None);
        assert_eq!(pull.suspend_timeout_millis, Some(20000));
        let sub = pull.subscription.unwrap();
        assert_eq!(
            (sub.expression_type.as_str(), sub.expression.as_str()),
            ("TAG", "")
        );
        assert_eq!(pull.max_msg_bytes, None);
    }

    #[test]
    fn end_transaction_follows_the_java_header() {
        let fields = [
            ("producerGroup", "pg"),
            ("tranStateTableOffset", "3"),
            ("commitLogOffset", "4096"),
            ("commitOrRollback", "8"),
            ("fromTransactionCheck", "true"),
            ("msgId", "U1"),
            ("transactionId", "T1"),
        ];
        let Request::EndTransaction(end) = decode_request(&cmd(37, &fields)).unwrap() else {
            panic!("not an end transaction")
        };
        assert_eq!(end.resolution, TransactionResolution::Commit);
        assert!(end.from_transaction_check);
        assert_eq!(
            (end.tran_state_table_offset, end.commit_log_offset),
            (3, 4096)
        );
        let again = encode_request(&Request::EndTransaction(end.clone()), 2, true);
        assert_eq!(
            decode_request(&again).unwrap(),
            Request::EndTransaction(end)
        );

        let mut bad = cmd(37, &fields);
        bad.set_ext("commitOrRollback", "5");
        assert_eq!(
            decode_request(&bad).unwrap_err().message,
            "commitOrRollback field wrong"
        );
        let mut garbage = cmd(37, &fields);
        garbage.set_ext("commitLogOffset", "x");
        assert_eq!(
            decode_request(&garbage).unwrap_err().kind,
            ErrorKind::SystemError
        );
    }

    #[test]
    fn check_transaction_state_round_trips() {
        let check = CheckTransactionStateRequest {
            topic: "T".into(),
            tran_state_table_offset: 7,
            commit_log_offset: 512,
            msg_id: Some("U".into()),
            transaction_id: Some("U".into()),
            offset_msg_id: "7F0000010000000000000200".into(),
            broker_name: "broker-a".into(),
            message: bytes::Bytes::from_static(b"record"),
        };
        let frame = encode_request(&Request::CheckTransactionState(check.clone()), 9, true);
        assert_eq!(frame.code, 39);
        assert_eq!(
            decode_request(&frame).unwrap(),
            Request::CheckTransactionState(check)
        );
    }

    #[test]
    fn a_client_side_reset_carries_the_offsets_as_java_writes_them() {
        let queue = |queue_id| skiff_model::consumer::MessageQueue {
            topic: "T".into(),
            broker_name: "broker-a".into(),
            queue_id,
        };
        let reset = Request::ResetConsumerClientOffset {
            topic: "T".into(),
            group: "G".into(),
            timestamp: 1_700_000_000_000,
            offsets: vec![(queue(0), 3), (queue(1), 0)],
        };
        let frame = encode_request(&reset, 4, true);
        assert_eq!(frame.code, 220);
        assert_eq!(
            String::from_utf8(frame.body.to_bytes().to_vec()).unwrap(),
            r#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:3,{"brokerName":"broker-a","queueId":1,"topic":"T"}:0}}"#
        );
        assert_eq!(decode_request(&frame).unwrap(), reset);
    }

    #[test]
    fn boundary_type_is_case_insensitive() {
        let base = [("topic", "T"), ("queueId", "0"), ("timestamp", "5")];
        for (text, expected) in [
            ("upper", BoundaryType::Upper),
            ("LOWER", BoundaryType::Lower),
            ("x", BoundaryType::Lower),
        ] {
            let mut c = cmd(29, &base);
            c.set_ext("boundaryType", text);
            let Request::SearchOffsetByTimestamp { boundary, .. } = decode_request(&c).unwrap()
            else {
                panic!()
            };
            assert_eq!(boundary, expected);
        }
    }

    #[test]
    fn attributes_follow_attribute_parser() {
        let parsed = parse_attributes("+message.type=NORMAL,-queue.type").unwrap();
        assert_eq!(parsed["+message.type"], "NORMAL");
        assert_eq!(parsed["-queue.type"], "");
        assert_eq!(
            format_attributes(&parsed),
            "+message.type=NORMAL,-queue.type"
        );
        assert!(parse_attributes("k=v").is_err());
        assert!(parse_attributes("k").is_err());
        assert!(parse_attributes("+k=1,+k=2").is_err());
    }

    #[test]
    fn register_broker_checks_crc_and_refuses_compression() {
        let mut c = cmd(
            103,
            &[
                ("clusterName", "c"),
                ("brokerName", "b"),
                ("brokerAddr", "127.0.0.1:10911"),
                ("brokerId", "0"),
                ("haServerAddr", "127.0.0.1:10912"),
                ("bodyCrc32", "12345"),
            ],
        );
        c.body = Body::from(b"{}".to_vec());
        assert_eq!(decode_request(&c).unwrap_err().message, "crc32 not match");
        c.set_ext("bodyCrc32", body_crc(b"{}"));
        assert!(decode_request(&c).is_ok());
        c.set_ext("compressed", "true");
        assert!(decode_request(&c)
            .unwrap_err()
            .message
            .contains("compressed"));
    }

    /// A heartbeat body as rocketmq-client-go/v2 2.1.2 writes it (`jsoniter` over `utils.Set`:
    /// the tag codes as strings, no `heartbeatFingerprint`).
    const GO_HEARTBEAT: &str = r#"{"clientID":"10.0.0.7@4242#1700000000","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"TagA || TagC","tagsSet":["TagA","TagC"],"codeSet":["2598919","2598921"],"subVersion":1700000000123456789,"expressionType":"TAG"}],"unitMode":false}]}"#;

    /// The same as rocketmq-client-cpp writes it (`jsoncpp`: enums as ordinals, `subVersion` as
    /// a string, no `expressionType`).
    const CPP_HEARTBEAT: &str = "{\"clientID\":\"10.0.0.7@4242\",\"consumerDataSet\":[{\"consumeFromWhere\":4,\"consumeType\":1,\"groupName\":\"cg\",\"messageModel\":1,\"subscriptionDataSet\":[{\"codeSet\":[2598919,2598921],\"subString\":\"TagA || TagC\",\"subVersion\":\"1700000000123\",\"tagsSet\":[\"TagA\",\"TagC\"],\"topic\":\"T\"}]}],\"producerDataSet\":[{\"groupName\":\"pg\"}]}\n";

    fn heartbeat_of(body: &str) -> HeartbeatData {
        let mut c = cmd(code::HEART_BEAT, &[]);
        c.body = Body::from(body.as_bytes().to_vec());
        match decode_request(&c).unwrap() {
            Request::Heartbeat(heartbeat) => heartbeat,
            other => panic!("not a heartbeat: {other:?}"),
        }
    }

    #[test]
    fn go_and_cpp_heartbeats_read_as_javas() {
        use skiff_model::consumer::{ConsumeFromWhere, ConsumeType, MessageModel};
        for (body, version) in [
            (GO_HEARTBEAT, 1_700_000_000_123_456_789),
            (CPP_HEARTBEAT, 1_700_000_000_123),
        ] {
            let heartbeat = heartbeat_of(body);
            assert_eq!(heartbeat.producer_data_set[0].group_name, "pg");
            let consumer = &heartbeat.consumer_data_set[0];
            assert_eq!(consumer.group_name, "cg");
            assert_eq!(consumer.consume_type, ConsumeType::ConsumePassively);
            assert_eq!(consumer.message_model, MessageModel::Clustering);
            assert_eq!(
                consumer.consume_from_where,
                ConsumeFromWhere::ConsumeFromFirstOffset
            );
            let sub = &consumer.subscription_data_set[0];
            assert_eq!(
                sub.code_set.iter().copied().collect::<Vec<_>>(),
                [2598919, 2598921]
            );
            assert_eq!(sub.expression_type, "TAG");
            assert_eq!(sub.sub_version, version);
            assert!(sub.matches_tags_code(2598921) && !sub.matches_tags_code(1));
        }
    }

    #[test]
    fn lock_bodies_of_java_go_and_cpp_decode_and_the_reply_is_javas() {
        let java = r#"{"clientId":"c1","consumerGroup":"g","mqSet":[{"brokerName":"b","queueId":0,"topic":"T"}],"onlyThisBroker":false}"#;
        let go = r#"{"consumerGroup":"g","clientId":"c1","mqSet":[{"topic":"T","brokerName":"b","queueId":0}]}"#;
        let cpp = "{\"clientId\":\"c1\",\"consumerGroup\":\"g\",\"mqSet\":[{\"brokerName\":\"b\",\"queueId\":\"0\",\"topic\":\"T\"}]}\n";
        let queue = skiff_model::consumer::MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: 0,
        };
        for (code, body) in [(41, java), (41, go), (42, cpp)] {
            let mut c = cmd(code, &[]);
            c.body = Body::from(body.as_bytes().to_vec());
            let (Request::LockBatchMq(lock) | Request::UnlockBatchMq(lock)) =
                decode_request(&c).unwrap()
            else {
                panic!("not a lock request")
            };
            assert_eq!(lock.consumer_group.as_deref(), Some("g"));
            assert_eq!(lock.client_id.as_deref(), Some("c1"));
            assert_eq!(lock.mq_set, std::slice::from_ref(&queue));
        }
        let mut c = cmd(41, &[]);
        c.body = Body::from(b"{not json".to_vec());
        assert_eq!(decode_request(&c).unwrap_err().kind, ErrorKind::SystemError);
        let reply = crate::remoting::encode_reply(
            &cmd(41, &[]),
            skiff_model::command::Reply::LockedQueues(vec![queue]),
        );
        assert_eq!(
            reply.body.to_bytes().as_ref(),
            br#"{"lockOKMQSet":[{"brokerName":"b","queueId":0,"topic":"T"}]}"#
        );
    }

    #[test]
    fn batch_header_properties_fill_gaps_but_never_replace() {
        let messages = vec![Message {
            flag: 0,
            body: bytes::Bytes::from_static(b"x"),
            properties: Properties::decode("UNIQ_KEY\u{1}inner\u{2}WAIT\u{1}false\u{2}"),
        }];
        let mut c = cmd(
            320,
            &[
                ("a", "pg"),
                ("b", "T"),
                ("c", "TBW102"),
                ("d", "4"),
                ("e", "0"),
                ("f", "0"),
                ("g", "1"),
                ("h", "0"),
                (
                    "i",
                    "UNIQ_KEY\u{1}batch\u{2}WAIT\u{1}true\u{2}TAGS\u{1}t\u{2}",
                ),
            ],
        );
        c.body = Body::from(body::encode_batch(&messages));
        let Request::Send(send) = decode_request(&c).unwrap() else {
            panic!()
        };
        let props = &send.messages[0].properties;
        assert_eq!(props.uniq_key(), Some("inner"));
        assert_eq!(props.get("WAIT"), Some("false"));
        assert_eq!(props.tags(), Some("t"));
        assert!(send.batch);
    }
}
