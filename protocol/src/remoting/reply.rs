//! [`Reply`] ⇄ response frames: response codes, header fields and bodies.

use bytes::{Buf, Bytes};
use skiff_model::command::{
    ErrorReply, PullResult, PullStatus, Reply, Request, SendResult, SendStatus,
};
use skiff_model::route::{ClusterInfo, RegistrationResult, TopicRouteData};

use super::body::{self, ConsumerList, KvTable, LockBatchResponse, TopicConfigWrapper, TopicList};
use super::codes::{error_code, error_kind, response as rc};
use super::command::{Body, LanguageCode, RemotingCommand, SerializeType};
use super::SKIFF_VERSION;
use crate::fastjson::{self, Style};

/// `MQVersion.Version.V4_9_4`: from this client version on, Java's name server sends standard
/// JSON route data; older clients (and Go, which reports 317) get fastjson's bare integer keys,
/// which Go clients before v2.1.2 need (they parse `brokerAddrs` keys without stripping quotes).
const STANDARD_ROUTE_JSON_VERSION: i32 = 401;

/// Why a response could not be read as the answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyDecodeError {
    #[error("the frame is not a response")]
    NotAResponse,
    #[error("the response lacks the field {0}")]
    MissingField(&'static str),
    #[error("the response field {name} is invalid: {value:?}")]
    BadField { name: &'static str, value: String },
    #[error("the response body is malformed: {0}")]
    BadBody(String),
}

/// What answering a request needs of its frame, kept instead of the whole frame (whose body may
/// be megabytes) while a reply is pending: a send waiting for a flush, a held pull.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyTo {
    /// The request code.
    pub code: i32,
    pub opaque: i32,
    /// A oneway request gets no reply.
    pub oneway: bool,
    /// The header type the client wrote, mirrored in the reply.
    pub serialize_type: SerializeType,
    /// The client reads route data as standard JSON (version or `acceptStandardJsonOnly`).
    standard_route_json: bool,
}

impl ReplyTo {
    /// How to answer `request`.
    pub fn of(request: &RemotingCommand) -> ReplyTo {
        ReplyTo {
            code: request.code,
            opaque: request.opaque,
            oneway: request.is_oneway(),
            serialize_type: request.serialize_type,
            standard_route_json: request.version >= STANDARD_ROUTE_JSON_VERSION
                || request
                    .ext("acceptStandardJsonOnly")
                    .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        }
    }
}

/// Server side: the response frame answering `request` ([`encode_reply_to`] of its
/// [`ReplyTo`]).
pub fn encode_reply(request: &RemotingCommand, reply: Reply) -> RemotingCommand {
    encode_reply_to(&ReplyTo::of(request), reply)
}

/// Server side: the response frame answering the request `to` describes. It echoes the
/// request's opaque, sets the response flag, mirrors the request's header type (JSON unless the
/// client sent binary) and is written as JAVA at [`SKIFF_VERSION`].
pub fn encode_reply_to(to: &ReplyTo, reply: Reply) -> RemotingCommand {
    let mut cmd = RemotingCommand::response(rc::SUCCESS, to.opaque);
    cmd.serialize_type = to.serialize_type;
    cmd.language = LanguageCode::Java;
    cmd.version = SKIFF_VERSION;
    match reply {
        Reply::Success => {}
        Reply::Error(error) => {
            cmd.code = error_code(error.kind);
            cmd.remark = Some(error.message);
        }
        Reply::Sent(sent) => {
            cmd.code = match sent.status {
                SendStatus::Ok => rc::SUCCESS,
                SendStatus::FlushDiskTimeout => rc::FLUSH_DISK_TIMEOUT,
                SendStatus::FlushSlaveTimeout => rc::FLUSH_SLAVE_TIMEOUT,
                SendStatus::SlaveNotAvailable => rc::SLAVE_NOT_AVAILABLE,
            };
            cmd.set_ext("msgId", sent.msg_ids.join(","));
            cmd.set_ext("queueId", sent.queue_id);
            cmd.set_ext("queueOffset", sent.queue_offset);
            if let Some(transaction_id) = sent.transaction_id {
                cmd.set_ext("transactionId", transaction_id);
            }
            cmd.set_ext("MSG_REGION", sent.region_id);
            cmd.set_ext("TRACE_ON", sent.trace_on);
        }
        Reply::Pulled(pulled) => {
            cmd.code = match pulled.status {
                PullStatus::Found => rc::SUCCESS,
                PullStatus::NoNewMessage => rc::PULL_NOT_FOUND,
                PullStatus::NoMatchedMessage => rc::PULL_RETRY_IMMEDIATELY,
                PullStatus::OffsetMoved => rc::PULL_OFFSET_MOVED,
            };
            cmd.set_ext("suggestWhichBrokerId", pulled.suggest_which_broker_id);
            cmd.set_ext("nextBeginOffset", pulled.next_begin_offset);
            cmd.set_ext("minOffset", pulled.min_offset);
            cmd.set_ext("maxOffset", pulled.max_offset);
            if let Some(delta) = pulled.offset_delta {
                cmd.set_ext("offsetDelta", delta);
            }
            cmd.body = Body::Chunks(pulled.messages);
        }
        Reply::LockedQueues(queues) => {
            cmd.body = json_body(&LockBatchResponse {
                lock_ok_mq_set: queues,
            });
        }
        Reply::Offset(offset) => cmd.set_ext("offset", offset),
        Reply::Timestamp(timestamp) => cmd.set_ext("timestamp", timestamp),
        Reply::ConsumerIds(ids) => {
            cmd.body = json_body(&ConsumerList {
                consumer_id_list: ids,
            });
        }
        Reply::Route(route) => {
            let style = if to.standard_route_json {
                Style::STANDARD
            } else {
                Style::COMPACT
            };
            let text = fastjson::to_string_with(&route, style).expect("route data serializes");
            cmd.body = Body::from(text.into_bytes());
        }
        // Java's name server writes cluster info with plain fastjson: bare broker id keys.
        Reply::ClusterInfo(info) => cmd.body = json_body(&info),
        Reply::TopicList(topics) => cmd.body = json_body(&TopicList { topic_list: topics }),
        Reply::BrokerRegistered(result) => {
            if let Some(master) = result.master_addr {
                cmd.set_ext("masterAddr", master);
            }
            if let Some(ha) = result.ha_server_addr {
                cmd.set_ext("haServerAddr", ha);
            }
        }
        Reply::TopicConfigs {
            topics,
            data_version,
        } => {
            cmd.body = json_body(&TopicConfigWrapper {
                topic_config_table: topics,
                data_version,
                ..TopicConfigWrapper::default()
            });
        }
        Reply::TopicStats(stats) => {
            cmd.body = Body::from(body::topic_stats_json(&stats).into_bytes())
        }
        Reply::ConsumeStats(stats) => {
            cmd.body = Body::from(body::consume_stats_json(&stats).into_bytes())
        }
        Reply::KeyValues(table) => cmd.body = json_body(&KvTable { table }),
        Reply::TopicConfig { config, mapping } => {
            cmd.body = json_body(&body::TopicConfigAndQueueMapping {
                config: &config,
                mapping_detail: mapping.as_deref(),
            })
        }
        Reply::QueriedMessages {
            messages,
            index_last_update_timestamp,
            index_last_update_phyoffset,
        } => {
            cmd.set_ext("indexLastUpdateTimestamp", index_last_update_timestamp);
            cmd.set_ext("indexLastUpdatePhyoffset", index_last_update_phyoffset);
            cmd.body = Body::Chunks(messages);
        }
        Reply::Message(record) => cmd.body = Body::from(record),
        Reply::Pop(pop) => super::pop::encode_reply(*pop, &mut cmd),
        Reply::Admin(admin) => super::admin::encode_reply(admin, &mut cmd),
    }
    cmd
}

fn json_body<T: serde::Serialize>(value: &T) -> Body {
    Body::from(body::to_json(value).into_bytes())
}

/// Client side: interprets `response` as the answer to `request`. Failure codes become
/// [`Reply::Error`]; success codes are read as the reply the request expects.
pub fn decode_reply(
    request: &Request,
    response: &RemotingCommand,
) -> Result<Reply, ReplyDecodeError> {
    if !response.is_response() {
        return Err(ReplyDecodeError::NotAResponse);
    }
    let code = response.code;
    let error = || {
        Reply::Error(ErrorReply {
            kind: error_kind(code),
            message: response.remark.clone().unwrap_or_default(),
        })
    };
    let reply = match request {
        Request::Send(_) => {
            let status = match code {
                rc::SUCCESS => SendStatus::Ok,
                rc::FLUSH_DISK_TIMEOUT => SendStatus::FlushDiskTimeout,
                rc::FLUSH_SLAVE_TIMEOUT => SendStatus::FlushSlaveTimeout,
                rc::SLAVE_NOT_AVAILABLE => SendStatus::SlaveNotAvailable,
                _ => return Ok(error()),
            };
            decode_sent(response, status)?
        }
        Request::Pull(_) => {
            let status = match code {
                rc::SUCCESS => PullStatus::Found,
                rc::PULL_NOT_FOUND => PullStatus::NoNewMessage,
                rc::PULL_RETRY_IMMEDIATELY => PullStatus::NoMatchedMessage,
                rc::PULL_OFFSET_MOVED => PullStatus::OffsetMoved,
                _ => return Ok(error()),
            };
            decode_pulled(response, status)?
        }
        _ if code != rc::SUCCESS => return Ok(error()),
        Request::QueryConsumerOffset { .. }
        | Request::GetMaxOffset { .. }
        | Request::GetMinOffset { .. }
        | Request::SearchOffsetByTimestamp { .. } => Reply::Offset(num(response, "offset")?),
        Request::GetEarliestMsgStoreTime { .. } => Reply::Timestamp(num(response, "timestamp")?),
        Request::GetConsumerListByGroup { .. } => {
            Reply::ConsumerIds(parse_body::<ConsumerList>(response)?.consumer_id_list)
        }
        Request::LockBatchMq(_) => {
            Reply::LockedQueues(parse_body::<LockBatchResponse>(response)?.lock_ok_mq_set)
        }
        Request::GetRouteInfo { .. } => Reply::Route(parse_body::<TopicRouteData>(response)?),
        Request::GetBrokerClusterInfo => Reply::ClusterInfo(parse_body::<ClusterInfo>(response)?),
        Request::GetAllTopicList => Reply::TopicList(parse_body::<TopicList>(response)?.topic_list),
        Request::RegisterBroker(_) => Reply::BrokerRegistered(RegistrationResult {
            master_addr: response.ext("masterAddr").map(str::to_string),
            ha_server_addr: response.ext("haServerAddr").map(str::to_string),
        }),
        Request::GetAllTopicConfig => {
            let wrapper = parse_body::<TopicConfigWrapper>(response)?;
            Reply::TopicConfigs {
                topics: wrapper.topic_config_table,
                data_version: wrapper.data_version,
            }
        }
        Request::GetTopicStats { .. } => Reply::TopicStats(
            body::parse_topic_stats(&required_body(response)?)
                .map_err(ReplyDecodeError::BadBody)?,
        ),
        Request::GetConsumeStats { .. } => Reply::ConsumeStats(
            body::parse_consume_stats(&required_body(response)?)
                .map_err(ReplyDecodeError::BadBody)?,
        ),
        Request::GetBrokerRuntimeInfo => Reply::KeyValues(parse_body::<KvTable>(response)?.table),
        Request::GetTopicConfig { .. } => Reply::TopicConfig {
            config: Box::new(parse_body(response)?),
            mapping: parse_body::<body::MappingDetailOf>(response)?
                .mapping_detail
                .map(Box::new),
        },
        Request::QueryMessage { .. } => Reply::QueriedMessages {
            messages: split_records(response.body.to_bytes())?,
            index_last_update_timestamp: num(response, "indexLastUpdateTimestamp")?,
            index_last_update_phyoffset: num(response, "indexLastUpdatePhyoffset")?,
        },
        Request::ViewMessage { .. } => Reply::Message(required_body(response)?),
        Request::UpdateConsumerOffset { .. }
        | Request::Heartbeat(_)
        | Request::ConsumerSendMsgBack(_)
        | Request::UnregisterClient { .. }
        | Request::UnlockBatchMq(_)
        | Request::CheckClientConfig(_)
        | Request::CreateTopic(_)
        | Request::DeleteTopicInBroker { .. }
        | Request::CreateSubscriptionGroup(_)
        | Request::UnregisterBroker { .. }
        | Request::DeleteTopicInNamesrv { .. }
        | Request::NotifyConsumerIdsChanged { .. }
        | Request::ResetConsumerClientOffset { .. }
        | Request::EndTransaction(_)
        | Request::CheckTransactionState(_) => Reply::Success,
        // Skiff's own tools never consume by POP: they only learn whether it succeeded.
        Request::Pop(_) => Reply::Success,
        // A slave's metadata sync reads its master's tables; Skiff's tools only learn whether
        // the others succeeded.
        Request::Admin(command) => match super::admin::decode_reply(command, response)? {
            Some(reply) => Reply::Admin(reply),
            None => Reply::Success,
        },
    };
    Ok(reply)
}

fn field<'a>(
    response: &'a RemotingCommand,
    name: &'static str,
) -> Result<&'a str, ReplyDecodeError> {
    response
        .ext(name)
        .ok_or(ReplyDecodeError::MissingField(name))
}

fn num<T: std::str::FromStr>(
    response: &RemotingCommand,
    name: &'static str,
) -> Result<T, ReplyDecodeError> {
    let raw = field(response, name)?;
    raw.parse().map_err(|_| ReplyDecodeError::BadField {
        name,
        value: raw.to_string(),
    })
}

fn required_body(response: &RemotingCommand) -> Result<Bytes, ReplyDecodeError> {
    let body = response.body.to_bytes();
    if body.is_empty() {
        return Err(ReplyDecodeError::BadBody("no body".to_string()));
    }
    Ok(body)
}

pub(super) fn parse_body<T: serde::de::DeserializeOwned>(
    response: &RemotingCommand,
) -> Result<T, ReplyDecodeError> {
    fastjson::from_slice(&required_body(response)?)
        .map_err(|e| ReplyDecodeError::BadBody(e.to_string()))
}

fn decode_sent(response: &RemotingCommand, status: SendStatus) -> Result<Reply, ReplyDecodeError> {
    let msg_id = field(response, "msgId")?;
    Ok(Reply::Sent(SendResult {
        status,
        msg_ids: if msg_id.is_empty() {
            Vec::new()
        } else {
            msg_id.split(',').map(str::to_string).collect()
        },
        queue_id: num(response, "queueId")?,
        queue_offset: num(response, "queueOffset")?,
        transaction_id: response.ext("transactionId").map(str::to_string),
        region_id: response.ext("MSG_REGION").unwrap_or_default().to_string(),
        // The Java client traces unless the broker says exactly "false".
        trace_on: response.ext("TRACE_ON") != Some("false"),
    }))
}

fn decode_pulled(
    response: &RemotingCommand,
    status: PullStatus,
) -> Result<Reply, ReplyDecodeError> {
    Ok(Reply::Pulled(PullResult {
        status,
        next_begin_offset: num(response, "nextBeginOffset")?,
        min_offset: num(response, "minOffset")?,
        max_offset: num(response, "maxOffset")?,
        suggest_which_broker_id: num(response, "suggestWhichBrokerId")?,
        offset_delta: response
            .ext("offsetDelta")
            .and_then(|delta| delta.parse().ok()),
        messages: split_records(response.body.to_bytes())?,
    }))
}

/// Splits a pull body into its records by their leading TOTALSIZE, without copying.
fn split_records(mut body: Bytes) -> Result<Vec<Bytes>, ReplyDecodeError> {
    let mut records = Vec::new();
    while !body.is_empty() {
        if body.len() < 4 {
            return Err(ReplyDecodeError::BadBody(
                "truncated record size".to_string(),
            ));
        }
        let size = (&body[..4]).get_i32();
        if size < 4 || size as usize > body.len() {
            return Err(ReplyDecodeError::BadBody(format!(
                "record size {size} out of range"
            )));
        }
        records.push(body.split_to(size as usize));
    }
    Ok(records)
}
