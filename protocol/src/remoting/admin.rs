//! Operator codes ⇄ [`AdminCommand`] / [`AdminReply`]: the name server's KV config
//! (PUT_/GET_/DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE), WIPE_/ADD_WRITE_PERM_OF_BROKER,
//! QUERY_TOPIC_CONSUME_BY_WHO and GET_BROKER_HA_STATUS, the connection lists, system topic lists,
//! GET_CONSUMER_RUNNING_INFO and VIEW_BROKER_STATS_DATA, the storage-tuning codes (cold-read flow
//! control, readahead), with the header and body names of Java's
//! `PutKVConfigRequestHeader`, `WipeWritePermOfBrokerResponseHeader`, `GroupList`,
//! `HARuntimeInfo`, `ConsumerConnection`, `BrokerStatsData`, ...

use serde::{Deserialize, Serialize};
use skiff_model::admin::{
    AclInfo, AdminCommand, AdminReply, ClientConnection, ColdReadInfo, ConsumerConnections,
    StatsData, StatsWindow, TimerMetric, UserInfo,
};
use std::collections::BTreeMap;

use skiff_model::command::{ErrorKind, ErrorReply};
use skiff_model::consumer::{
    ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData, SubscriptionGroupConfig,
};
use skiff_model::pop::RequestModeSetting;
use skiff_model::route::{DataVersion, TopicConfig};

use super::body::{to_json, KvTable};
use super::codes::request as code;
use super::command::{Body, RemotingCommand};
use super::fields::{Fields, FieldsOut};
use super::request::{decode_create_topic, json_body, put_create_topic};

/// Whether `code` is one of the codes this module decodes.
pub(super) fn is_admin_code(code: i32) -> bool {
    matches!(
        code,
        code::PUT_KV_CONFIG
            | code::GET_KV_CONFIG
            | code::DELETE_KV_CONFIG
            | code::GET_KVLIST_BY_NAMESPACE
            | code::WIPE_WRITE_PERM_OF_BROKER
            | code::ADD_WRITE_PERM_OF_BROKER
            | code::QUERY_TOPIC_CONSUME_BY_WHO
            | code::GET_BROKER_HA_STATUS
            | code::GET_BROKER_CONFIG
            | code::GET_NAMESRV_CONFIG
            | code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG
            | code::GET_ALL_CONSUMER_OFFSET
            | code::GET_ALL_DELAY_OFFSET
            | code::GET_ALL_MESSAGE_REQUEST_MODE
            | code::GET_TIMER_CHECK_POINT
            | code::GET_TIMER_METRICS
            | code::DELETE_SUBSCRIPTIONGROUP
            | code::GET_CONSUMER_CONNECTION_LIST
            | code::GET_PRODUCER_CONNECTION_LIST
            | code::GET_SYSTEM_TOPIC_LIST_FROM_NS
            | code::GET_SYSTEM_TOPIC_LIST_FROM_BROKER
            | code::GET_CONSUMER_RUNNING_INFO
            | code::VIEW_BROKER_STATS_DATA
            | code::INVOKE_BROKER_TO_RESET_OFFSET
            | code::GET_BROKER_CONSUME_STATS
            | code::GET_ALL_PRODUCER_INFO
            | code::CONSUME_MESSAGE_DIRECTLY
            | code::QUERY_CONSUME_QUEUE
            | code::GET_CONSUMER_STATUS_FROM_CLIENT
            | code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS
            | code::CLONE_GROUP_OFFSET
            | code::UPDATE_BROKER_CONFIG
            | code::UPDATE_NAMESRV_CONFIG
            | code::CLEAN_UNUSED_TOPIC
            | code::CLEAN_EXPIRED_CONSUMEQUEUE
            | code::UPDATE_AND_CREATE_TOPIC_LIST
            | code::UPDATE_AND_CREATE_STATIC_TOPIC
            | code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
            | code::DELETE_EXPIRED_COMMITLOG
            | code::EXPORT_ROCKSDB_CONFIG_TO_JSON
            | code::CHECK_ROCKSDB_CQ_WRITE_PROGRESS
            | code::RESET_MASTER_FLUSH_OFFSET
            | code::UPDATE_COLD_DATA_FLOW_CTR_CONFIG
            | code::REMOVE_COLD_DATA_FLOW_CTR_CONFIG
            | code::GET_COLD_DATA_FLOW_CTR_INFO
            | code::SET_COMMITLOG_READ_MODE
            | code::POP_ROLLBACK
            | code::AUTH_CREATE_USER
            | code::AUTH_UPDATE_USER
            | code::AUTH_DELETE_USER
            | code::AUTH_GET_USER
            | code::AUTH_LIST_USER
            | code::AUTH_CREATE_ACL
            | code::AUTH_UPDATE_ACL
            | code::AUTH_DELETE_ACL
            | code::AUTH_GET_ACL
            | code::AUTH_LIST_ACL
    )
}

/// Required header fields are `@CFNotNull` in Java: a missing one is Java's "the custom field
/// <name> is null".
pub(super) fn decode(cmd: &RemotingCommand) -> Result<AdminCommand, ErrorReply> {
    let f = Fields(&cmd.ext_fields);
    Ok(match cmd.code {
        code::PUT_KV_CONFIG => AdminCommand::PutKvConfig {
            namespace: f.string("namespace")?,
            key: f.string("key")?,
            value: f.string("value")?,
        },
        code::GET_KV_CONFIG => AdminCommand::GetKvConfig {
            namespace: f.string("namespace")?,
            key: f.string("key")?,
        },
        code::DELETE_KV_CONFIG => AdminCommand::DeleteKvConfig {
            namespace: f.string("namespace")?,
            key: f.string("key")?,
        },
        code::GET_KVLIST_BY_NAMESPACE => AdminCommand::GetKvList {
            namespace: f.string("namespace")?,
        },
        code::WIPE_WRITE_PERM_OF_BROKER | code::ADD_WRITE_PERM_OF_BROKER => {
            AdminCommand::WritePerm {
                broker_name: f.string("brokerName")?,
                writable: cmd.code == code::ADD_WRITE_PERM_OF_BROKER,
            }
        }
        code::QUERY_TOPIC_CONSUME_BY_WHO => AdminCommand::TopicConsumers {
            topic: f.string("topic")?,
        },
        code::GET_BROKER_HA_STATUS => AdminCommand::HaStatus,
        code::GET_BROKER_CONFIG => AdminCommand::GetBrokerConfig,
        code::GET_NAMESRV_CONFIG => AdminCommand::GetNamesrvConfig,
        code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => AdminCommand::GetAllSubscriptionGroups,
        code::GET_ALL_CONSUMER_OFFSET => AdminCommand::GetAllConsumerOffsets,
        code::GET_ALL_DELAY_OFFSET => AdminCommand::GetAllDelayOffsets,
        code::GET_ALL_MESSAGE_REQUEST_MODE => AdminCommand::GetAllMessageRequestModes,
        code::GET_TIMER_CHECK_POINT => AdminCommand::GetTimerCheckpoint,
        code::GET_TIMER_METRICS => AdminCommand::GetTimerMetrics,
        code::DELETE_SUBSCRIPTIONGROUP => AdminCommand::DeleteSubscriptionGroup {
            group: f.string("groupName")?,
            clean_offset: f.opt_bool("cleanOffset") == Some(true),
        },
        code::GET_CONSUMER_CONNECTION_LIST => AdminCommand::ConsumerConnections {
            group: f.string("consumerGroup")?,
        },
        code::GET_PRODUCER_CONNECTION_LIST => AdminCommand::ProducerConnections {
            group: f.string("producerGroup")?,
        },
        code::GET_SYSTEM_TOPIC_LIST_FROM_NS => AdminCommand::SystemTopicsFromNamesrv,
        code::GET_SYSTEM_TOPIC_LIST_FROM_BROKER => AdminCommand::SystemTopicsFromBroker,
        code::GET_CONSUMER_RUNNING_INFO => AdminCommand::ConsumerRunningInfo {
            group: f.string("consumerGroup")?,
            client_id: f.string("clientId")?,
            jstack: f.opt_bool("jstackEnable") == Some(true),
        },
        // `ResetOffsetRequestHeader`: `queueId` defaults to -1 and `offset` to null; `isForce`
        // (required by Java) matters to the client-side reset only.
        code::INVOKE_BROKER_TO_RESET_OFFSET => AdminCommand::ResetOffset {
            topic: f.string("topic")?,
            group: f.string("group")?,
            timestamp: f.num("timestamp")?,
            queue_id: f.opt_num("queueId")?.unwrap_or(-1),
            offset: f.opt_num("offset")?,
            force: f.opt_bool("isForce") == Some(true),
        },
        code::GET_ALL_PRODUCER_INFO => AdminCommand::AllProducerInfo,
        code::CLEAN_UNUSED_TOPIC => AdminCommand::CleanUnusedTopic,
        code::CLEAN_EXPIRED_CONSUMEQUEUE => AdminCommand::CleanExpiredConsumeQueue,
        // `CreateTopicListRequestBody` and `SubscriptionGroupList`.
        code::UPDATE_AND_CREATE_TOPIC_LIST => {
            AdminCommand::CreateTopicList(json_body::<TopicConfigList>(cmd)?.topic_config_list)
        }
        // `CreateTopicRequestHeader` with `force`, and the broker's `TopicQueueMappingDetail`.
        code::UPDATE_AND_CREATE_STATIC_TOPIC => AdminCommand::CreateStaticTopic {
            config: decode_create_topic(&f)?,
            mapping: json_body(cmd)?,
            force: f.opt_bool("force") == Some(true),
        },
        code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST => {
            AdminCommand::CreateSubscriptionGroupList(
                json_body::<GroupConfigList>(cmd)?.group_config_list,
            )
        }
        code::DELETE_EXPIRED_COMMITLOG => AdminCommand::DeleteExpiredCommitLog,
        code::EXPORT_ROCKSDB_CONFIG_TO_JSON => AdminCommand::ExportRocksDbConfig {
            config_types: f.string("configType")?,
        },
        // The body is `MixAll.properties2String`; Java reads it as UTF-8.
        code::UPDATE_BROKER_CONFIG => AdminCommand::UpdateBrokerConfig {
            properties: String::from_utf8_lossy(&cmd.body.to_bytes()).into_owned(),
        },
        code::UPDATE_NAMESRV_CONFIG => AdminCommand::UpdateNamesrvConfig {
            properties: String::from_utf8_lossy(&cmd.body.to_bytes()).into_owned(),
        },
        // `GetConsumerStatusRequestHeader`: `clientAddr` holds the client id asked about.
        code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS => AdminCommand::ConsumerStatus {
            topic: f.string("topic")?,
            group: f.string("group")?,
            client_id: f.opt_string("clientAddr").unwrap_or_default(),
        },
        code::GET_CONSUMER_STATUS_FROM_CLIENT => AdminCommand::ConsumerStatusFromClient {
            topic: f.string("topic")?,
            group: f.string("group")?,
        },
        code::CLONE_GROUP_OFFSET => AdminCommand::CloneGroupOffset {
            src_group: f.string("srcGroup")?,
            dest_group: f.string("destGroup")?,
            topic: f.opt_string("topic").unwrap_or_default(),
            offline: f.opt_bool("offline") == Some(true),
        },
        code::QUERY_CONSUME_QUEUE => AdminCommand::QueryConsumeQueue {
            topic: f.string("topic")?,
            queue_id: f.num("queueId")?,
            index: f.num("index")?,
            count: f.num("count")?,
            group: f.opt_string("consumerGroup"),
        },
        // `ConsumeMessageDirectlyResultRequestHeader`.
        code::CONSUME_MESSAGE_DIRECTLY => AdminCommand::ConsumeMessageDirectly {
            group: f.string("consumerGroup")?,
            client_id: f.opt_string("clientId").unwrap_or_default(),
            msg_id: f.opt_string("msgId").unwrap_or_default(),
            topic: f.opt_string("topic"),
            broker_name: f.opt_string("brokerName"),
            message: None,
        },
        code::GET_BROKER_CONSUME_STATS => AdminCommand::BrokerConsumeStats {
            order_only: f.opt_bool("isOrder") == Some(true),
        },
        code::VIEW_BROKER_STATS_DATA => AdminCommand::StatsData {
            name: f.string("statsName")?,
            key: f.string("statsKey")?,
        },
        // Bodies: properties text `group=threshold`, and the bare group name.
        code::UPDATE_COLD_DATA_FLOW_CTR_CONFIG => AdminCommand::UpdateColdReadThresholds {
            properties: String::from_utf8_lossy(&cmd.body.to_bytes()).into_owned(),
        },
        code::REMOVE_COLD_DATA_FLOW_CTR_CONFIG => AdminCommand::RemoveColdReadThreshold {
            group: String::from_utf8_lossy(&cmd.body.to_bytes()).into_owned(),
        },
        code::GET_COLD_DATA_FLOW_CTR_INFO => AdminCommand::ColdReadInfo,
        // `FIleReadaheadMode.READ_AHEAD_MODE`; Java answers a missing or non-numeric one with
        // SYSTEM_ERROR "set commitlog readahead mode failed".
        code::SET_COMMITLOG_READ_MODE => AdminCommand::SetCommitLogReadAhead {
            mode: f.num("READ_AHEAD_MODE").map_err(|_| ErrorReply {
                kind: ErrorKind::SystemError,
                message: "set commitlog readahead mode failed".to_string(),
            })?,
        },
        code::RESET_MASTER_FLUSH_OFFSET => AdminCommand::ResetMasterFlushOffset {
            offset: f.num("masterFlushOffset")?,
        },
        code::CHECK_ROCKSDB_CQ_WRITE_PROGRESS => AdminCommand::CheckRocksDbCqWriteProgress {
            topic: f.string("topic")?,
            check_store_time: f.opt_num("checkStoreTime")?.unwrap_or(0),
        },
        code::POP_ROLLBACK => AdminCommand::ExportPopRecords,
        // `CreateUserRequestHeader` and the rest have no required field: a blank name is the
        // handler's error. The body is `UserInfo`; the header's name wins over the body's.
        code::AUTH_CREATE_USER | code::AUTH_UPDATE_USER => {
            // The `UserInfo` body (Java fails on a missing one).
            let mut user: UserInfo = json_body(cmd)?;
            user.username = f.opt_string("username").unwrap_or_default();
            let caller = f.opt_string(super::access::ACCESS_KEY);
            if cmd.code == code::AUTH_CREATE_USER {
                AdminCommand::CreateUser { caller, user }
            } else {
                AdminCommand::UpdateUser { caller, user }
            }
        }
        code::AUTH_DELETE_USER => AdminCommand::DeleteUser {
            caller: f.opt_string(super::access::ACCESS_KEY),
            username: f.opt_string("username").unwrap_or_default(),
        },
        code::AUTH_GET_USER => AdminCommand::GetUser {
            username: f.opt_string("username").unwrap_or_default(),
        },
        code::AUTH_LIST_USER => AdminCommand::ListUsers {
            filter: f.opt_string("filter"),
        },
        // A missing or empty body is the handler's error, as in Java.
        code::AUTH_CREATE_ACL | code::AUTH_UPDATE_ACL => AdminCommand::CreateAcl {
            subject: f.opt_string("subject").unwrap_or_default(),
            acl: acl_info_body(cmd)?,
            update: cmd.code == code::AUTH_UPDATE_ACL,
        },
        code::AUTH_DELETE_ACL => AdminCommand::DeleteAcl {
            subject: f.opt_string("subject").unwrap_or_default(),
            policy_type: f.opt_string("policyType"),
            resource: f.opt_string("resource"),
        },
        code::AUTH_GET_ACL => AdminCommand::GetAcl {
            subject: f.opt_string("subject"),
        },
        code::AUTH_LIST_ACL => AdminCommand::ListAcls {
            subject_filter: f.opt_string("subjectFilter"),
            resource_filter: f.opt_string("resourceFilter"),
        },
        other => unreachable!("is_admin_code admitted {other}"),
    })
}

pub(super) fn request_code(command: &AdminCommand) -> i32 {
    match command {
        AdminCommand::PutKvConfig { .. } => code::PUT_KV_CONFIG,
        AdminCommand::GetKvConfig { .. } => code::GET_KV_CONFIG,
        AdminCommand::DeleteKvConfig { .. } => code::DELETE_KV_CONFIG,
        AdminCommand::GetKvList { .. } => code::GET_KVLIST_BY_NAMESPACE,
        AdminCommand::WritePerm {
            writable: false, ..
        } => code::WIPE_WRITE_PERM_OF_BROKER,
        AdminCommand::WritePerm { writable: true, .. } => code::ADD_WRITE_PERM_OF_BROKER,
        AdminCommand::TopicConsumers { .. } => code::QUERY_TOPIC_CONSUME_BY_WHO,
        AdminCommand::HaStatus => code::GET_BROKER_HA_STATUS,
        AdminCommand::GetBrokerConfig => code::GET_BROKER_CONFIG,
        AdminCommand::GetNamesrvConfig => code::GET_NAMESRV_CONFIG,
        AdminCommand::GetAllSubscriptionGroups => code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        AdminCommand::GetAllConsumerOffsets => code::GET_ALL_CONSUMER_OFFSET,
        AdminCommand::GetAllDelayOffsets => code::GET_ALL_DELAY_OFFSET,
        AdminCommand::GetAllMessageRequestModes => code::GET_ALL_MESSAGE_REQUEST_MODE,
        AdminCommand::GetTimerCheckpoint => code::GET_TIMER_CHECK_POINT,
        AdminCommand::GetTimerMetrics => code::GET_TIMER_METRICS,
        AdminCommand::DeleteSubscriptionGroup { .. } => code::DELETE_SUBSCRIPTIONGROUP,
        AdminCommand::ConsumerConnections { .. } => code::GET_CONSUMER_CONNECTION_LIST,
        AdminCommand::ProducerConnections { .. } => code::GET_PRODUCER_CONNECTION_LIST,
        AdminCommand::SystemTopicsFromNamesrv => code::GET_SYSTEM_TOPIC_LIST_FROM_NS,
        AdminCommand::SystemTopicsFromBroker => code::GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
        AdminCommand::ConsumerRunningInfo { .. } => code::GET_CONSUMER_RUNNING_INFO,
        AdminCommand::StatsData { .. } => code::VIEW_BROKER_STATS_DATA,
        AdminCommand::ResetOffset { .. } => code::INVOKE_BROKER_TO_RESET_OFFSET,
        AdminCommand::AllProducerInfo => code::GET_ALL_PRODUCER_INFO,
        AdminCommand::CleanUnusedTopic => code::CLEAN_UNUSED_TOPIC,
        AdminCommand::CleanExpiredConsumeQueue => code::CLEAN_EXPIRED_CONSUMEQUEUE,
        AdminCommand::CreateTopicList(_) => code::UPDATE_AND_CREATE_TOPIC_LIST,
        AdminCommand::CreateStaticTopic { .. } => code::UPDATE_AND_CREATE_STATIC_TOPIC,
        AdminCommand::CreateSubscriptionGroupList(_) => {
            code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
        }
        AdminCommand::DeleteExpiredCommitLog => code::DELETE_EXPIRED_COMMITLOG,
        AdminCommand::ExportRocksDbConfig { .. } => code::EXPORT_ROCKSDB_CONFIG_TO_JSON,
        AdminCommand::UpdateBrokerConfig { .. } => code::UPDATE_BROKER_CONFIG,
        AdminCommand::UpdateNamesrvConfig { .. } => code::UPDATE_NAMESRV_CONFIG,
        AdminCommand::ConsumerStatus { .. } => code::INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
        AdminCommand::ConsumerStatusFromClient { .. } => code::GET_CONSUMER_STATUS_FROM_CLIENT,
        AdminCommand::CloneGroupOffset { .. } => code::CLONE_GROUP_OFFSET,
        AdminCommand::QueryConsumeQueue { .. } => code::QUERY_CONSUME_QUEUE,
        AdminCommand::ConsumeMessageDirectly { .. } => code::CONSUME_MESSAGE_DIRECTLY,
        AdminCommand::BrokerConsumeStats { .. } => code::GET_BROKER_CONSUME_STATS,
        AdminCommand::UpdateColdReadThresholds { .. } => code::UPDATE_COLD_DATA_FLOW_CTR_CONFIG,
        AdminCommand::RemoveColdReadThreshold { .. } => code::REMOVE_COLD_DATA_FLOW_CTR_CONFIG,
        AdminCommand::ColdReadInfo => code::GET_COLD_DATA_FLOW_CTR_INFO,
        AdminCommand::SetCommitLogReadAhead { .. } => code::SET_COMMITLOG_READ_MODE,
        AdminCommand::ResetMasterFlushOffset { .. } => code::RESET_MASTER_FLUSH_OFFSET,
        AdminCommand::CheckRocksDbCqWriteProgress { .. } => code::CHECK_ROCKSDB_CQ_WRITE_PROGRESS,
        AdminCommand::ExportPopRecords => code::POP_ROLLBACK,
        AdminCommand::CreateUser { .. } => code::AUTH_CREATE_USER,
        AdminCommand::UpdateUser { .. } => code::AUTH_UPDATE_USER,
        AdminCommand::DeleteUser { .. } => code::AUTH_DELETE_USER,
        AdminCommand::GetUser { .. } => code::AUTH_GET_USER,
        AdminCommand::ListUsers { .. } => code::AUTH_LIST_USER,
        AdminCommand::CreateAcl { update: false, .. } => code::AUTH_CREATE_ACL,
        AdminCommand::CreateAcl { update: true, .. } => code::AUTH_UPDATE_ACL,
        AdminCommand::DeleteAcl { .. } => code::AUTH_DELETE_ACL,
        AdminCommand::GetAcl { .. } => code::AUTH_GET_ACL,
        AdminCommand::ListAcls { .. } => code::AUTH_LIST_ACL,
    }
}

/// Client side: the header fields of `command`.
pub(super) fn encode(command: &AdminCommand, cmd: &mut RemotingCommand) {
    let mut out = FieldsOut(&mut cmd.ext_fields);
    match command {
        AdminCommand::PutKvConfig {
            namespace,
            key,
            value,
        } => {
            out.put("namespace", namespace)
                .put("key", key)
                .put("value", value);
        }
        AdminCommand::GetKvConfig { namespace, key }
        | AdminCommand::DeleteKvConfig { namespace, key } => {
            out.put("namespace", namespace).put("key", key);
        }
        AdminCommand::GetKvList { namespace } => {
            out.put("namespace", namespace);
        }
        AdminCommand::WritePerm { broker_name, .. } => {
            out.put("brokerName", broker_name);
        }
        AdminCommand::TopicConsumers { topic } => {
            out.put("topic", topic);
        }
        AdminCommand::DeleteSubscriptionGroup {
            group,
            clean_offset,
        } => {
            out.put("groupName", group).put("cleanOffset", clean_offset);
        }
        AdminCommand::ConsumerConnections { group } => {
            out.put("consumerGroup", group);
        }
        AdminCommand::ProducerConnections { group } => {
            out.put("producerGroup", group);
        }
        // What the broker passes on to the consumer: Java forwards the admin's own fields.
        AdminCommand::ConsumerRunningInfo {
            group,
            client_id,
            jstack,
        } => {
            out.put("consumerGroup", group)
                .put("clientId", client_id)
                .put("jstackEnable", jstack);
        }
        AdminCommand::StatsData { name, key } => {
            out.put("statsName", name).put("statsKey", key);
        }
        AdminCommand::ResetOffset {
            topic,
            group,
            timestamp,
            queue_id,
            offset,
            force,
        } => {
            out.put("topic", topic)
                .put("group", group)
                .put("timestamp", timestamp)
                .put("isForce", force)
                .put("queueId", queue_id);
            if let Some(offset) = offset {
                out.put("offset", offset);
            }
        }
        AdminCommand::BrokerConsumeStats { order_only } => {
            out.put("isOrder", order_only);
        }
        AdminCommand::ExportRocksDbConfig { config_types } => {
            out.put("configType", config_types);
        }
        AdminCommand::UpdateBrokerConfig { properties }
        | AdminCommand::UpdateNamesrvConfig { properties }
        | AdminCommand::UpdateColdReadThresholds { properties } => {
            cmd.body = Body::from(properties.clone().into_bytes());
        }
        AdminCommand::ConsumerStatus {
            topic,
            group,
            client_id,
        } => {
            out.put("topic", topic)
                .put("group", group)
                .put("clientAddr", client_id);
        }
        AdminCommand::ConsumerStatusFromClient { topic, group } => {
            out.put("topic", topic).put("group", group);
        }
        AdminCommand::CloneGroupOffset {
            src_group,
            dest_group,
            topic,
            offline,
        } => {
            out.put("srcGroup", src_group)
                .put("destGroup", dest_group)
                .put("topic", topic)
                .put("offline", offline);
        }
        AdminCommand::QueryConsumeQueue {
            topic,
            queue_id,
            index,
            count,
            group,
        } => {
            out.put("topic", topic)
                .put("queueId", queue_id)
                .put("index", index)
                .put("count", count)
                .put_opt("consumerGroup", group.as_ref());
        }
        AdminCommand::ConsumeMessageDirectly {
            group,
            client_id,
            msg_id,
            topic,
            broker_name,
            message,
        } => {
            out.put("consumerGroup", group)
                .put("clientId", client_id)
                .put("msgId", msg_id)
                .put_opt("topic", topic.as_ref())
                .put_opt("brokerName", broker_name.as_ref());
            if let Some(message) = message {
                cmd.body = Body::from(message.clone());
            }
        }
        AdminCommand::CreateTopicList(topics) => {
            cmd.body = Body::from(
                to_json(&TopicConfigListOut {
                    topic_config_list: topics,
                })
                .into_bytes(),
            );
        }
        AdminCommand::CreateStaticTopic {
            config,
            mapping,
            force,
        } => {
            put_create_topic(&mut out, config);
            out.put("force", force);
            cmd.body = Body::from(to_json(mapping).into_bytes());
        }
        AdminCommand::CreateSubscriptionGroupList(groups) => {
            cmd.body = Body::from(
                to_json(&GroupConfigListOut {
                    group_config_list: groups,
                })
                .into_bytes(),
            );
        }
        AdminCommand::RemoveColdReadThreshold { group } => {
            cmd.body = Body::from(group.clone().into_bytes());
        }
        AdminCommand::SetCommitLogReadAhead { mode } => {
            out.put("READ_AHEAD_MODE", mode);
        }
        AdminCommand::ResetMasterFlushOffset { offset } => {
            out.put("masterFlushOffset", offset);
        }
        AdminCommand::CheckRocksDbCqWriteProgress {
            topic,
            check_store_time,
        } => {
            out.put("topic", topic)
                .put("checkStoreTime", check_store_time);
        }
        // The caller is the signature's `AccessKey`, which the signing adds.
        AdminCommand::CreateUser { user, .. } | AdminCommand::UpdateUser { user, .. } => {
            out.put("username", &user.username);
            cmd.body = Body::from(to_json(user).into_bytes());
        }
        AdminCommand::DeleteUser { username, .. } | AdminCommand::GetUser { username } => {
            out.put("username", username);
        }
        AdminCommand::ListUsers { filter } => {
            out.put_opt("filter", filter.as_ref());
        }
        AdminCommand::CreateAcl { subject, acl, .. } => {
            out.put("subject", subject);
            if let Some(acl) = acl {
                cmd.body = Body::from(to_json(acl).into_bytes());
            }
        }
        AdminCommand::DeleteAcl {
            subject,
            policy_type,
            resource,
        } => {
            out.put("subject", subject)
                .put_opt("policyType", policy_type.as_ref())
                .put_opt("resource", resource.as_ref());
        }
        AdminCommand::GetAcl { subject } => {
            out.put_opt("subject", subject.as_ref());
        }
        AdminCommand::ListAcls {
            subject_filter,
            resource_filter,
        } => {
            out.put_opt("subjectFilter", subject_filter.as_ref())
                .put_opt("resourceFilter", resource_filter.as_ref());
        }
        AdminCommand::HaStatus
        | AdminCommand::ColdReadInfo
        | AdminCommand::ExportPopRecords
        | AdminCommand::AllProducerInfo
        | AdminCommand::CleanExpiredConsumeQueue
        | AdminCommand::CleanUnusedTopic
        | AdminCommand::DeleteExpiredCommitLog
        | AdminCommand::GetBrokerConfig
        | AdminCommand::GetNamesrvConfig
        | AdminCommand::GetAllSubscriptionGroups
        | AdminCommand::GetAllConsumerOffsets
        | AdminCommand::GetAllDelayOffsets
        | AdminCommand::GetAllMessageRequestModes
        | AdminCommand::GetTimerCheckpoint
        | AdminCommand::GetTimerMetrics
        | AdminCommand::SystemTopicsFromNamesrv
        | AdminCommand::SystemTopicsFromBroker => {}
    }
}

/// `CreateTopicListRequestBody`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TopicConfigList {
    topic_config_list: Vec<TopicConfig>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TopicConfigListOut<'a> {
    topic_config_list: &'a [TopicConfig],
}

/// `SubscriptionGroupList`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupConfigList {
    group_config_list: Vec<SubscriptionGroupConfig>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupConfigListOut<'a> {
    group_config_list: &'a [SubscriptionGroupConfig],
}

/// `GroupList`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupList<'a> {
    group_list: &'a [String],
}

/// `SubscriptionGroupWrapper` (fastjson's alphabetical order; Skiff forbids nothing).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SubscriptionGroupWrapper<'a> {
    data_version: DataVersion,
    forbidden_table: BTreeMap<String, ()>,
    subscription_group_table: &'a BTreeMap<String, SubscriptionGroupConfig>,
}

/// `ConsumerOffsetSerializeWrapper`: GET_ALL_CONSUMER_OFFSET's body (integer queue ids are
/// written as fastjson does, without quotes, by [`to_json`]).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConsumerOffsetWrapper {
    #[serde(default)]
    data_version: DataVersion,
    #[serde(default)]
    offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
}

/// `delayOffset.json`: GET_ALL_DELAY_OFFSET's body.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DelayOffsetWrapper {
    #[serde(default)]
    data_version: DataVersion,
    #[serde(default)]
    offset_table: BTreeMap<i32, i64>,
}

/// `QueryConsumeQueueResponseBody` as a client reads it (the subscription is left out).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryConsumeQueueIn {
    #[serde(default)]
    filter_data: Option<String>,
    #[serde(default)]
    max_queue_index: i64,
    #[serde(default)]
    min_queue_index: i64,
    #[serde(default)]
    queue_data: Vec<ConsumeQueueDataIn>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConsumeQueueDataIn {
    physic_offset: i64,
    physic_size: i32,
    #[serde(default)]
    tags_code: i64,
}

/// `MessageRequestModeSerializeWrapper` (the text of `messageRequestMode.json`).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageRequestModes {
    #[serde(default)]
    message_request_mode_map: BTreeMap<String, BTreeMap<String, RequestModeSetting>>,
}

/// `TimerMetrics.TimerMetricsSerializeWrapper`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TimerMetricsWrapper {
    data_version: DataVersion,
    timing_count: BTreeMap<String, TimerMetric>,
}

/// `SubscriptionGroupWrapper` as a slave reads it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubscriptionGroupWrapperIn {
    #[serde(default)]
    data_version: DataVersion,
    #[serde(default)]
    subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
}

/// Client side: the answer to an admin request Skiff's broker sends itself (a slave's metadata
/// sync); `None` for the others, whose callers only learn that they succeeded.
pub(super) fn decode_reply(
    command: &AdminCommand,
    response: &RemotingCommand,
) -> Result<Option<AdminReply>, super::reply::ReplyDecodeError> {
    use super::reply::parse_body as parse;
    Ok(Some(match command {
        AdminCommand::GetAllConsumerOffsets => {
            let wrapper: ConsumerOffsetWrapper = parse(response)?;
            AdminReply::ConsumerOffsets {
                table: wrapper.offset_table,
                data_version: wrapper.data_version,
            }
        }
        AdminCommand::GetAllDelayOffsets => {
            let wrapper: DelayOffsetWrapper = parse(response)?;
            AdminReply::DelayOffsets {
                table: wrapper.offset_table,
                data_version: wrapper.data_version,
            }
        }
        // `mqadmin queryCq`'s answer; an index outside the queue is a bare remark.
        AdminCommand::QueryConsumeQueue { .. } if response.body.is_empty() => {
            AdminReply::ConsumeQueue(Box::new(skiff_model::admin::ConsumeQueueView {
                subscription: None,
                filter_data: None,
                max_queue_index: 0,
                min_queue_index: 0,
                entries: None,
                remark: response.remark.clone(),
            }))
        }
        AdminCommand::QueryConsumeQueue { .. } => {
            let body: QueryConsumeQueueIn = parse(response)?;
            AdminReply::ConsumeQueue(Box::new(skiff_model::admin::ConsumeQueueView {
                subscription: None,
                filter_data: body.filter_data,
                max_queue_index: body.max_queue_index,
                min_queue_index: body.min_queue_index,
                entries: Some(
                    body.queue_data
                        .into_iter()
                        .map(|e| skiff_model::admin::ConsumeQueueEntry {
                            physical_offset: e.physic_offset,
                            size: e.physic_size,
                            tags_code: e.tags_code,
                        })
                        .collect(),
                ),
                remark: response.remark.clone(),
            }))
        }
        AdminCommand::GetAllMessageRequestModes => {
            let wrapper: MessageRequestModes = parse(response)?;
            AdminReply::MessageRequestModes(wrapper.message_request_mode_map)
        }
        AdminCommand::GetAllSubscriptionGroups => {
            let wrapper: SubscriptionGroupWrapperIn = parse(response)?;
            AdminReply::SubscriptionGroups {
                groups: wrapper.subscription_group_table,
                data_version: wrapper.data_version,
            }
        }
        // A slave compares its master's settings (`mappedFileSizeCommitLog`) before replicating.
        AdminCommand::GetBrokerConfig => AdminReply::Config {
            properties: parse_properties(&String::from_utf8_lossy(&response.body.to_bytes())),
            data_version: response
                .ext("version")
                .and_then(|json| serde_json::from_str(json).ok()),
        },
        _ => return Ok(None),
    }))
}

/// `HARuntimeInfo` as fastjson writes it: members in alphabetical order, a null `masterAddr`
/// left out. `HAClientRuntimeInfo.isActivated` has no getter, so Java never writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HaRuntimeInfo<'a> {
    ha_client_runtime_info: HaClientRuntimeInfo<'a>,
    ha_connection_info: Vec<HaConnectionRuntimeInfo<'a>>,
    in_sync_slave_nums: i32,
    master: bool,
    master_commit_log_max_offset: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HaClientRuntimeInfo<'a> {
    last_read_timestamp: i64,
    last_write_timestamp: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    master_addr: Option<&'a str>,
    master_flush_offset: i64,
    max_offset: i64,
    transferred_byte_in_second: i64,
}

/// `HAConnectionRuntimeInfo` (`isInSync()` is the property `inSync`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HaConnectionRuntimeInfo<'a> {
    addr: &'a str,
    diff: i64,
    in_sync: bool,
    slave_ack_offset: i64,
    transfer_from_where: i64,
    transferred_byte_in_second: i64,
}

/// `Connection` (fastjson's alphabetical order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Connection<'a> {
    client_addr: &'a str,
    client_id: &'a str,
    language: &'a str,
    version: i32,
}

fn connections(list: &[ClientConnection]) -> Vec<Connection<'_>> {
    list.iter()
        .map(|c| Connection {
            client_addr: &c.client_addr,
            client_id: &c.client_id,
            language: &c.language,
            version: c.version,
        })
        .collect()
}

/// `ConsumerConnection`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumerConnection<'a> {
    connection_set: Vec<Connection<'a>>,
    consume_from_where: ConsumeFromWhere,
    consume_type: ConsumeType,
    message_model: MessageModel,
    subscription_table: &'a BTreeMap<String, SubscriptionData>,
}

/// `ProducerConnection`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProducerConnection<'a> {
    connection_set: Vec<Connection<'a>>,
}

/// `TopicList` with its `brokerAddr` (left out when null, as fastjson does).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SystemTopicList<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    broker_addr: Option<&'a str>,
    topic_list: &'a [String],
}

/// `QueryConsumeQueueResponseBody` (nulls left out, as fastjson does).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryConsumeQueueResponseBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    filter_data: Option<&'a str>,
    max_queue_index: i64,
    min_queue_index: i64,
    queue_data: Vec<ConsumeQueueData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subscription_data: Option<&'a SubscriptionData>,
}

/// `ConsumeQueueData` of an entry without a ConsumeQueue extension (Skiff writes none).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumeQueueData {
    eval: bool,
    physic_offset: i64,
    physic_size: i32,
    tags_code: i64,
}

/// `ProducerTableInfo`.
#[derive(Serialize)]
struct ProducerTableInfo<'a> {
    data: BTreeMap<&'a str, Vec<ProducerInfoJson<'a>>>,
}

/// `ProducerInfo`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProducerInfoJson<'a> {
    client_id: &'a str,
    language: &'a str,
    last_update_timestamp: i64,
    #[serde(rename = "remoteIP")]
    remote_ip: String,
    version: i32,
}

/// `BrokerStatsData`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BrokerStatsData {
    stats_day: BrokerStatsItem,
    stats_hour: BrokerStatsItem,
    stats_minute: BrokerStatsItem,
}

/// `BrokerStatsItem`.
#[derive(Serialize)]
struct BrokerStatsItem {
    avgpt: f64,
    sum: i64,
    tps: f64,
}

impl From<StatsWindow> for BrokerStatsItem {
    fn from(w: StatsWindow) -> Self {
        BrokerStatsItem {
            avgpt: w.avgpt,
            sum: w.sum,
            tps: w.tps,
        }
    }
}

pub(super) fn encode_reply(reply: AdminReply, cmd: &mut RemotingCommand) {
    match reply {
        AdminReply::ConsumerConnections(ConsumerConnections {
            connections: list,
            subscriptions,
            consume_type,
            message_model,
            consume_from_where,
        }) => {
            let body = ConsumerConnection {
                connection_set: connections(&list),
                consume_from_where,
                consume_type,
                message_model,
                subscription_table: &subscriptions,
            };
            cmd.body = Body::from(to_json(&body).into_bytes());
        }
        AdminReply::ProducerConnections(list) => {
            let body = ProducerConnection {
                connection_set: connections(&list),
            };
            cmd.body = Body::from(to_json(&body).into_bytes());
        }
        AdminReply::SystemTopics {
            topics,
            broker_addr,
        } => {
            let body = SystemTopicList {
                broker_addr: broker_addr.as_deref(),
                topic_list: &topics,
            };
            cmd.body = Body::from(to_json(&body).into_bytes());
        }
        AdminReply::FromClient(answer) => {
            cmd.code = answer.code;
            cmd.remark = answer.remark;
            cmd.body = Body::from(answer.body);
        }
        AdminReply::ProducerTable(table) => {
            let data: BTreeMap<&str, Vec<ProducerInfoJson>> = table
                .iter()
                .map(|(group, list)| {
                    let list = list
                        .iter()
                        .map(|p| ProducerInfoJson {
                            client_id: &p.connection.client_id,
                            language: &p.connection.language,
                            last_update_timestamp: p.last_update_timestamp,
                            // Netty's `remoteAddress().toString()`.
                            remote_ip: format!("/{}", p.connection.client_addr),
                            version: p.connection.version,
                        })
                        .collect();
                    (group.as_str(), list)
                })
                .collect();
            cmd.body = Body::from(to_json(&ProducerTableInfo { data }).into_bytes());
        }
        AdminReply::BrokerConsumeStats {
            broker_addr,
            groups,
            total_diff,
            total_inflight_diff,
        } => {
            let json = super::body::consume_stats_list_json(
                &broker_addr,
                &groups,
                total_diff,
                total_inflight_diff,
            );
            cmd.body = Body::from(json.into_bytes());
        }
        AdminReply::ConsumeQueue(view) => match &view.entries {
            None => cmd.remark = view.remark.clone(),
            Some(entries) => {
                let body = QueryConsumeQueueResponseBody {
                    filter_data: view.filter_data.as_deref(),
                    max_queue_index: view.max_queue_index,
                    min_queue_index: view.min_queue_index,
                    queue_data: entries
                        .iter()
                        .map(|e| ConsumeQueueData {
                            eval: false,
                            physic_offset: e.physical_offset,
                            physic_size: e.size,
                            tags_code: e.tags_code,
                        })
                        .collect(),
                    subscription_data: view.subscription.as_ref(),
                };
                cmd.body = Body::from(to_json(&body).into_bytes());
            }
        },
        AdminReply::ConsumerStatus(table) => {
            cmd.body = Body::from(super::body::consumer_status_json(&table).into_bytes());
        }
        AdminReply::Done(remark) => cmd.remark = Some(remark),
        AdminReply::ColdReadInfo(info) => {
            cmd.body = Body::from(cold_read_info_json(&info).into_bytes());
        }
        AdminReply::User(user) => {
            if let Some(user) = &user {
                cmd.body = Body::from(to_json(user).into_bytes());
            }
        }
        AdminReply::Acl(acl) => {
            if let Some(acl) = &acl {
                cmd.body = Body::from(to_json(acl).into_bytes());
            }
        }
        AdminReply::Acls(acls) => {
            if !acls.is_empty() {
                cmd.body = Body::from(to_json(&acls).into_bytes());
            }
        }
        AdminReply::Users(users) => {
            if !users.is_empty() {
                cmd.body = Body::from(to_json(&users).into_bytes());
            }
        }
        // `CheckRocksdbCqWriteResult` with `CheckStatus.CHECK_IN_PROGRESS`.
        AdminReply::CheckInProgress => {
            cmd.body =
                Body::from(to_json(&CheckRocksDbCqWriteResult { check_status: 2 }).into_bytes());
        }
        AdminReply::ResetOffsets(offsets) => {
            cmd.body = Body::from(super::body::reset_offset_json(&offsets).into_bytes());
        }
        AdminReply::StatsData(StatsData { minute, hour, day }) => {
            let body = BrokerStatsData {
                stats_day: day.into(),
                stats_hour: hour.into(),
                stats_minute: minute.into(),
            };
            cmd.body = Body::from(to_json(&body).into_bytes());
        }
        AdminReply::KvValue(value) => cmd.set_ext("value", value),
        AdminReply::KvList(table) => {
            cmd.body = Body::from(to_json(&KvTable { table }).into_bytes());
        }
        AdminReply::WritePermChanged {
            writable,
            topic_count,
        } => cmd.set_ext(
            if writable {
                "addTopicCount"
            } else {
                "wipeTopicCount"
            },
            topic_count,
        ),
        AdminReply::Groups(groups) => {
            cmd.body = Body::from(
                to_json(&GroupList {
                    group_list: &groups,
                })
                .into_bytes(),
            );
        }
        AdminReply::HaStatus(status) => {
            let client = &status.client;
            let info = HaRuntimeInfo {
                ha_client_runtime_info: HaClientRuntimeInfo {
                    last_read_timestamp: client.last_read_timestamp,
                    last_write_timestamp: client.last_write_timestamp,
                    master_addr: client.master_addr.as_deref(),
                    master_flush_offset: client.master_flush_offset,
                    max_offset: client.max_offset,
                    transferred_byte_in_second: client.transferred_bytes_per_second,
                },
                ha_connection_info: status
                    .connections
                    .iter()
                    .map(|c| HaConnectionRuntimeInfo {
                        addr: &c.addr,
                        diff: c.diff,
                        in_sync: c.in_sync,
                        slave_ack_offset: c.slave_ack_offset,
                        transfer_from_where: c.transfer_from_where,
                        transferred_byte_in_second: c.transferred_bytes_per_second,
                    })
                    .collect(),
                in_sync_slave_nums: status.in_sync_slave_nums,
                master: status.master,
                master_commit_log_max_offset: status.master_commit_log_max_offset,
            };
            cmd.body = Body::from(to_json(&info).into_bytes());
        }
        // `Configuration.getAllConfigsFormatString`: `key=value` lines, read back by
        // `MixAll.string2Properties`; the `version` header is required by the Java client.
        AdminReply::ConsumerOffsets {
            table,
            data_version,
        } => {
            cmd.body = Body::from(
                to_json(&ConsumerOffsetWrapper {
                    data_version,
                    offset_table: table,
                })
                .into_bytes(),
            );
        }
        // Java sends the text of `delayOffset.json` as it is (`getAllDelayOffset`).
        AdminReply::DelayOffsets {
            table,
            data_version,
        } => {
            let file = DelayOffsetWrapper {
                data_version,
                offset_table: table,
            };
            let text = crate::fastjson::to_string_pretty(&file).expect("integer maps serialize");
            cmd.body = Body::from(text.into_bytes());
        }
        AdminReply::MessageRequestModes(table) => {
            let body = MessageRequestModes {
                message_request_mode_map: table,
            };
            cmd.body = Body::from(to_json(&body).into_bytes());
        }
        // `TimerCheckpoint.encode`: seven big-endian longs.
        AdminReply::TimerCheckpoint(c) => {
            let mut body = Vec::with_capacity(56);
            for v in [
                c.last_read_time_ms,
                c.last_timer_log_flush_pos,
                c.last_timer_queue_offset,
                c.master_timer_queue_offset,
                c.data_version.state_version,
                c.data_version.timestamp,
                c.data_version.counter,
            ] {
                body.extend_from_slice(&v.to_be_bytes());
            }
            cmd.body = Body::from(body);
        }
        AdminReply::TimerMetrics {
            timing_count,
            data_version,
        } => {
            let body = TimerMetricsWrapper {
                data_version,
                timing_count,
            };
            cmd.body = Body::from(to_json(&body).into_bytes());
        }
        AdminReply::SubscriptionGroups {
            groups,
            data_version,
        } => {
            let wrapper = SubscriptionGroupWrapper {
                data_version,
                forbidden_table: BTreeMap::new(),
                subscription_group_table: &groups,
            };
            cmd.body = Body::from(to_json(&wrapper).into_bytes());
        }
        AdminReply::Config {
            properties,
            data_version,
        } => {
            let mut text = String::new();
            for (key, value) in properties {
                text.push_str(&key);
                text.push('=');
                text.push_str(&escape_property(&value));
                text.push('\n');
            }
            if let Some(version) = data_version {
                cmd.set_ext("version", to_json(&version));
            }
            cmd.body = Body::from(text.into_bytes());
        }
    }
}

/// What `Properties.load` would otherwise read as an escape or a line break (Java writes values
/// unescaped, so a Windows path or a newline would come out garbled there).
fn escape_property(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ => out.push(c),
        }
    }
    out
}

/// `key=value` lines as `Properties.load` reads them (`:` also separates; `#` and `!` start
/// comments), undoing [`escape_property`]; Java's own unescaped values come through as written.
fn parse_properties(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim_start)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with('!'))
        .map(|line| {
            let (key, value) = line.split_once(['=', ':']).unwrap_or((line, ""));
            (
                key.trim_end().to_string(),
                unescape_property(value.trim_start()),
            )
        })
        .collect()
}

fn unescape_property(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remoting::{
        decode_reply, decode_request, encode_reply as encode_any_reply, encode_request,
    };
    use skiff_model::admin::{
        HaClientStatus, HaConnectionStatus, HaStatus, PolicyEntryInfo, PolicyInfo,
    };
    use skiff_model::command::{Reply, Request};

    fn request(code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(code, 7);
        for (k, v) in fields {
            cmd.set_ext(*k, *v);
        }
        cmd
    }

    #[test]
    fn decodes_kv_and_perm_headers() {
        let put = request(
            code::PUT_KV_CONFIG,
            &[
                ("namespace", "ORDER_TOPIC_CONFIG"),
                ("key", "t"),
                ("value", "b:4"),
            ],
        );
        assert_eq!(
            decode_request(&put).unwrap(),
            Request::Admin(AdminCommand::PutKvConfig {
                namespace: "ORDER_TOPIC_CONFIG".into(),
                key: "t".into(),
                value: "b:4".into(),
            })
        );
        let wipe = request(code::WIPE_WRITE_PERM_OF_BROKER, &[("brokerName", "b")]);
        assert_eq!(
            decode_request(&wipe).unwrap(),
            Request::Admin(AdminCommand::WritePerm {
                broker_name: "b".into(),
                writable: false
            })
        );
    }

    #[test]
    fn decodes_javas_list_bodies() {
        // What DefaultMQAdminExt sends for `mqadmin updateTopicList` / `updateSubGroupList`.
        let mut topics = request(code::UPDATE_AND_CREATE_TOPIC_LIST, &[]);
        topics.body = Body::from(
            br#"{"topicConfigList":[{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"t1","topicSysFlag":0,"writeQueueNums":8}]}"#.to_vec(),
        );
        assert_eq!(
            decode_request(&topics).unwrap(),
            Request::Admin(AdminCommand::CreateTopicList(vec![TopicConfig::new(
                "t1", 8
            )]))
        );
        let mut groups = request(code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, &[]);
        groups.body = Body::from(
            br#"{"groupConfigList":[{"groupName":"g1","consumeEnable":false,"retryMaxTimes":3}]}"#
                .to_vec(),
        );
        let Request::Admin(AdminCommand::CreateSubscriptionGroupList(list)) =
            decode_request(&groups).unwrap()
        else {
            panic!("not a group list")
        };
        assert_eq!(list.len(), 1);
        assert_eq!(
            (
                list[0].group_name.as_str(),
                list[0].consume_enable,
                list[0].retry_max_times
            ),
            ("g1", false, 3)
        );
        // No body: Java's decode fails too.
        let empty = request(code::UPDATE_AND_CREATE_TOPIC_LIST, &[]);
        assert!(decode_request(&empty).is_err());
    }

    #[test]
    fn decodes_javas_static_topic_request() {
        // What `mqadmin updateStaticTopic` sends (`MQClientAPIImpl.createStaticTopic`): the
        // topic in the header, the mapping as fastjson writes it (bare integer keys).
        let mut create = request(
            code::UPDATE_AND_CREATE_STATIC_TOPIC,
            &[
                ("topic", "st"),
                ("defaultTopic", "TBW102"),
                ("readQueueNums", "2"),
                ("writeQueueNums", "2"),
                ("perm", "6"),
                ("topicFilterType", "SINGLE_TAG"),
                ("topicSysFlag", "0"),
                ("order", "false"),
                ("force", "false"),
            ],
        );
        create.body = Body::from(
            br#"{"bname":"broker-a","currIdMap":{},"dirty":false,"epoch":1700000000000,"hostedQueues":{0:[{"bname":"broker-a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}],1:[{"bname":"broker-a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":1,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]},"scope":"__global__","topic":"st","totalQueues":2}"#.to_vec(),
        );
        let Request::Admin(AdminCommand::CreateStaticTopic {
            config,
            mapping,
            force,
        }) = decode_request(&create).unwrap()
        else {
            panic!("not a static topic")
        };
        assert_eq!((config, force), (TopicConfig::new("st", 2), false));
        assert_eq!(
            (mapping.bname.as_str(), mapping.epoch, mapping.total_queues),
            ("broker-a", 1_700_000_000_000, 2)
        );
        assert_eq!(mapping.hosted_queues[&1][0].queue_id, 1);
        assert_eq!(mapping.hosted_queues[&1][0].end_offset, -1);
        // Encoded by Skiff's client, it decodes to itself.
        let command = AdminCommand::CreateStaticTopic {
            config: TopicConfig::new("st", 2),
            mapping,
            force: true,
        };
        let request = Request::Admin(command);
        assert_eq!(
            decode_request(&encode_request(&request, 1, false)).unwrap(),
            request
        );
    }

    #[test]
    fn a_static_topics_config_carries_its_mapping_detail() {
        use skiff_model::static_topic::{LogicQueueMappingItem, TopicQueueMappingDetail};
        let get = Request::GetTopicConfig {
            topic: "st".into(),
            lo: true,
        };
        let req = encode_request(&get, 3, false);
        assert_eq!(req.ext("lo"), Some("true"));
        let mapping = TopicQueueMappingDetail {
            topic: "st".into(),
            total_queues: 1,
            bname: "broker-a".into(),
            epoch: 5,
            hosted_queues: BTreeMap::from([(
                0,
                vec![LogicQueueMappingItem {
                    bname: "broker-a".into(),
                    ..LogicQueueMappingItem::default()
                }],
            )]),
            ..TopicQueueMappingDetail::default()
        };
        let reply = Reply::TopicConfig {
            config: Box::new(TopicConfig::new("st", 1)),
            mapping: Some(Box::new(mapping)),
        };
        let cmd = encode_any_reply(&req, reply.clone());
        let body = String::from_utf8(cmd.body.to_bytes().to_vec()).unwrap();
        assert!(body.contains(r#""topicName":"st""#), "{body}");
        assert!(
            body.contains(r#""hostedQueues":{0:[{"bname":"broker-a""#),
            "{body}"
        );
        assert_eq!(decode_reply(&get, &cmd).unwrap(), reply);
        // A plain topic's answer has no mappingDetail at all (fastjson leaves out nulls).
        let plain = Reply::TopicConfig {
            config: Box::new(TopicConfig::new("t", 1)),
            mapping: None,
        };
        let cmd = encode_any_reply(&req, plain.clone());
        assert!(!String::from_utf8_lossy(&cmd.body.to_bytes()).contains("mappingDetail"));
        assert_eq!(decode_reply(&get, &cmd).unwrap(), plain);
    }

    #[test]
    fn a_readahead_mode_that_is_not_a_number_is_javas_error() {
        let set = request(code::SET_COMMITLOG_READ_MODE, &[("READ_AHEAD_MODE", "x")]);
        let err = decode_request(&set).unwrap_err();
        assert_eq!(
            (err.kind, err.message.as_str()),
            (
                ErrorKind::SystemError,
                "set commitlog readahead mode failed"
            )
        );
    }

    #[test]
    fn missing_field_is_javas_error() {
        let put = request(code::PUT_KV_CONFIG, &[("namespace", "n"), ("key", "k")]);
        let err = decode_request(&put).unwrap_err();
        assert_eq!(err.message, "the custom field <value> is null");
    }

    #[test]
    fn round_trips_request_codes() {
        for command in [
            AdminCommand::GetKvList {
                namespace: "n".into(),
            },
            AdminCommand::WritePerm {
                broker_name: "b".into(),
                writable: true,
            },
            AdminCommand::TopicConsumers { topic: "t".into() },
            AdminCommand::HaStatus,
            AdminCommand::CleanExpiredConsumeQueue,
            AdminCommand::CreateTopicList(vec![TopicConfig::new("t", 2)]),
            AdminCommand::CreateSubscriptionGroupList(vec![SubscriptionGroupConfig::new("g")]),
            AdminCommand::DeleteSubscriptionGroup {
                group: "g".into(),
                clean_offset: true,
            },
            AdminCommand::UpdateColdReadThresholds {
                properties: "g=1024\n".into(),
            },
            AdminCommand::RemoveColdReadThreshold { group: "g".into() },
            AdminCommand::ColdReadInfo,
            AdminCommand::ExportPopRecords,
            AdminCommand::CreateUser {
                caller: None,
                user: UserInfo {
                    username: "alice".into(),
                    password: Some("pw".into()),
                    user_type: Some("Normal".into()),
                    user_status: None,
                },
            },
            AdminCommand::DeleteUser {
                caller: None,
                username: "alice".into(),
            },
            AdminCommand::ListUsers {
                filter: Some("al".into()),
            },
            AdminCommand::CreateAcl {
                subject: "User:alice".into(),
                acl: Some(AclInfo {
                    subject: Some("User:alice".into()),
                    policies: Some(vec![PolicyInfo {
                        policy_type: Some("Custom".into()),
                        entries: Some(vec![PolicyEntryInfo {
                            resource: Some("Topic:t".into()),
                            actions: Some(vec!["Pub".into()]),
                            source_ips: None,
                            decision: Some("Allow".into()),
                        }]),
                    }]),
                }),
                update: true,
            },
            AdminCommand::DeleteAcl {
                subject: "User:alice".into(),
                policy_type: None,
                resource: Some("Topic:t".into()),
            },
            AdminCommand::ListAcls {
                subject_filter: None,
                resource_filter: Some("Topic".into()),
            },
            AdminCommand::SetCommitLogReadAhead { mode: 1 },
            AdminCommand::ResetMasterFlushOffset { offset: 42 },
            AdminCommand::CheckRocksDbCqWriteProgress {
                topic: String::new(),
                check_store_time: 7,
            },
        ] {
            let request = Request::Admin(command);
            let cmd = crate::remoting::encode_request(&request, 1, false);
            assert_eq!(decode_request(&cmd).unwrap(), request);
        }
    }

    #[test]
    fn encodes_replies_as_java_does() {
        let req = request(code::ADD_WRITE_PERM_OF_BROKER, &[("brokerName", "b")]);
        let reply = Reply::Admin(AdminReply::WritePermChanged {
            writable: true,
            topic_count: 3,
        });
        assert_eq!(
            encode_any_reply(&req, reply).ext("addTopicCount"),
            Some("3")
        );

        let req = request(code::GET_BROKER_HA_STATUS, &[]);
        let reply = Reply::Admin(AdminReply::HaStatus(HaStatus {
            master: true,
            master_commit_log_max_offset: 42,
            in_sync_slave_nums: 0,
            ..HaStatus::default()
        }));
        let body = encode_any_reply(&req, reply).body.to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\"haClientRuntimeInfo\":{\"lastReadTimestamp\":0,\"lastWriteTimestamp\":0,\
             \"masterFlushOffset\":0,\"maxOffset\":0,\"transferredByteInSecond\":0},\
             \"haConnectionInfo\":[],\"inSyncSlaveNums\":0,\"master\":true,\
             \"masterCommitLogMaxOffset\":42}"
        );
        // A master with a slave, as fastjson writes `HAConnectionRuntimeInfo`.
        let reply = Reply::Admin(AdminReply::HaStatus(HaStatus {
            master: true,
            master_commit_log_max_offset: 300,
            in_sync_slave_nums: 1,
            connections: vec![HaConnectionStatus {
                addr: "127.0.0.1:51234".into(),
                slave_ack_offset: 200,
                diff: 100,
                in_sync: true,
                transferred_bytes_per_second: 4096,
                transfer_from_where: 300,
            }],
            ..HaStatus::default()
        }));
        let body = encode_any_reply(&req, reply).body.to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\"haClientRuntimeInfo\":{\"lastReadTimestamp\":0,\"lastWriteTimestamp\":0,\
             \"masterFlushOffset\":0,\"maxOffset\":0,\"transferredByteInSecond\":0},\
             \"haConnectionInfo\":[{\"addr\":\"127.0.0.1:51234\",\"diff\":100,\
             \"inSync\":true,\"slaveAckOffset\":200,\"transferFromWhere\":300,\
             \"transferredByteInSecond\":4096}],\"inSyncSlaveNums\":1,\"master\":true,\
             \"masterCommitLogMaxOffset\":300}"
        );
        // A slave: its client, with the master's HA address.
        let reply = Reply::Admin(AdminReply::HaStatus(HaStatus {
            client: HaClientStatus {
                master_addr: Some("10.0.0.1:10912".into()),
                transferred_bytes_per_second: 8,
                max_offset: 1000,
                last_read_timestamp: 1700000000001,
                last_write_timestamp: 1700000000002,
                master_flush_offset: 0,
            },
            ..HaStatus::default()
        }));
        let body = encode_any_reply(&req, reply).body.to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\"haClientRuntimeInfo\":{\"lastReadTimestamp\":1700000000001,\
             \"lastWriteTimestamp\":1700000000002,\"masterAddr\":\"10.0.0.1:10912\",\
             \"masterFlushOffset\":0,\"maxOffset\":1000,\"transferredByteInSecond\":8},\
             \"haConnectionInfo\":[],\"inSyncSlaveNums\":0,\"master\":false,\
             \"masterCommitLogMaxOffset\":0}"
        );

        let req = request(code::GET_BROKER_CONFIG, &[]);
        let reply = Reply::Admin(AdminReply::Config {
            properties: vec![
                ("brokerName".into(), "broker-a".into()),
                ("storePathRootDir".into(), "C:\\store\nx".into()),
            ],
            data_version: Some(Default::default()),
        });
        let cmd = encode_any_reply(&req, reply.clone());
        assert_eq!(
            &cmd.body.to_bytes()[..],
            b"brokerName=broker-a\nstorePathRootDir=C:\\\\store\\nx\n"
        );
        assert_eq!(
            cmd.ext("version"),
            Some("{\"counter\":0,\"stateVersion\":0,\"timestamp\":0}")
        );
        // A slave reads its master's settings back.
        let get = Request::Admin(AdminCommand::GetBrokerConfig);
        assert_eq!(decode_reply(&get, &cmd).unwrap(), reply);
        // Java's `MixAll.properties2String` writes values unescaped and no version.
        let mut java = RemotingCommand::response(0, 0);
        java.body =
            Body::from(b"brokerName = broker-a\n#x\nmappedFileSizeCommitLog=1073741824\n".to_vec());
        assert_eq!(
            decode_reply(&get, &java).unwrap(),
            Reply::Admin(AdminReply::Config {
                properties: vec![
                    ("brokerName".into(), "broker-a".into()),
                    ("mappedFileSizeCommitLog".into(), "1073741824".into()),
                ],
                data_version: None,
            })
        );

        let req = request(code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, &[]);
        let mut groups = BTreeMap::new();
        groups.insert("g".to_string(), SubscriptionGroupConfig::new("g"));
        let reply = Reply::Admin(AdminReply::SubscriptionGroups {
            groups,
            data_version: DataVersion::default(),
        });
        let body = encode_any_reply(&req, reply).body.to_bytes();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(
            text.starts_with(
                "{\"dataVersion\":{\"counter\":0,\"stateVersion\":0,\"timestamp\":0},\
                 \"forbiddenTable\":{},\"subscriptionGroupTable\":{\"g\":{"
            ),
            "{text}"
        );
        assert!(text.contains("\"groupName\":\"g\""), "{text}");

        let req = request(code::QUERY_TOPIC_CONSUME_BY_WHO, &[("topic", "t")]);
        let reply = Reply::Admin(AdminReply::Groups(vec!["g1".into(), "g2".into()]));
        let body = encode_any_reply(&req, reply).body.to_bytes();
        assert_eq!(&body[..], b"{\"groupList\":[\"g1\",\"g2\"]}");
    }

    /// A slave's metadata sync: the master's tables go out as Java writes them and read back.
    #[test]
    fn sync_tables_round_trip_in_javas_format() {
        let version = DataVersion {
            state_version: 0,
            timestamp: 5,
            counter: 2,
        };
        let mut table = BTreeMap::new();
        table.insert("T@g".to_string(), BTreeMap::from([(0, 12_i64), (3, 7)]));
        let req = request(code::GET_ALL_CONSUMER_OFFSET, &[]);
        let command = decode(&req).unwrap();
        assert_eq!(command, AdminCommand::GetAllConsumerOffsets);
        let reply = Reply::Admin(AdminReply::ConsumerOffsets {
            table: table.clone(),
            data_version: version,
        });
        let mut cmd = encode_any_reply(&req, reply.clone());
        let text = String::from_utf8(cmd.body.to_bytes().to_vec()).unwrap();
        // fastjson's integer keys are bare.
        assert!(
            text.contains("\"offsetTable\":{\"T@g\":{0:12,3:7}}"),
            "{text}"
        );
        cmd.flag |= crate::remoting::FLAG_RESPONSE;
        let back = decode_reply(&Request::Admin(command), &cmd).unwrap();
        assert_eq!(back, reply);

        let req = request(code::GET_ALL_DELAY_OFFSET, &[]);
        let command = decode(&req).unwrap();
        let reply = Reply::Admin(AdminReply::DelayOffsets {
            table: BTreeMap::from([(1, 40_i64), (2, 3)]),
            data_version: version,
        });
        let mut cmd = encode_any_reply(&req, reply.clone());
        cmd.flag |= crate::remoting::FLAG_RESPONSE;
        assert_eq!(decode_reply(&Request::Admin(command), &cmd).unwrap(), reply);
        // Java's own delayOffset.json, as a Java master sends it.
        cmd.body = Body::from(
            b"{\n\t\"dataVersion\":{\n\t\t\"counter\":2,\n\t\t\"stateVersion\":0,\n\t\t\
              \"timestamp\":5\n\t},\n\t\"offsetTable\":{1:40,2:3\n\t}\n}"
                .to_vec(),
        );
        assert_eq!(
            decode_reply(&Request::Admin(AdminCommand::GetAllDelayOffsets), &cmd).unwrap(),
            reply
        );
    }

    /// `skiff migrate verify` reads a queue's entry back from either kind of broker.
    #[test]
    fn consume_queue_entries_read_back() {
        use skiff_model::admin::{ConsumeQueueEntry, ConsumeQueueView};

        let command = AdminCommand::QueryConsumeQueue {
            topic: "T".into(),
            queue_id: 1,
            index: 5,
            count: 1,
            group: None,
        };
        let view = ConsumeQueueView {
            subscription: None,
            filter_data: None,
            max_queue_index: 9,
            min_queue_index: 0,
            entries: Some(vec![ConsumeQueueEntry {
                physical_offset: 4096,
                size: 210,
                tags_code: 7,
            }]),
            remark: None,
        };
        let req = crate::remoting::encode_request(&Request::Admin(command.clone()), 3, false);
        let reply = Reply::Admin(AdminReply::ConsumeQueue(Box::new(view)));
        let mut cmd = encode_any_reply(&req, reply.clone());
        cmd.flag |= crate::remoting::FLAG_RESPONSE;
        assert_eq!(
            decode_reply(&Request::Admin(command.clone()), &cmd).unwrap(),
            reply
        );
        // Java's body carries more fields per entry.
        cmd.body = Body::from(
            br#"{"maxQueueIndex":9,"minQueueIndex":0,"queueData":[{"bitMap":null,"eval":false,"extendDataJson":null,"msg":null,"physicOffset":4096,"physicSize":210,"tagsCode":7}]}"#
                .to_vec(),
        );
        assert_eq!(decode_reply(&Request::Admin(command), &cmd).unwrap(), reply);
    }

    /// What a 5.x slave asks besides the four tables: request modes, timer checkpoint and metrics.
    #[test]
    fn request_modes_and_timer_progress_are_javas() {
        use skiff_model::admin::TimerCheckpoint;
        use skiff_model::pop::MessageRequestMode;

        let req = request(code::GET_ALL_MESSAGE_REQUEST_MODE, &[]);
        let command = decode(&req).unwrap();
        assert_eq!(command, AdminCommand::GetAllMessageRequestModes);
        let setting = RequestModeSetting {
            topic: "T".into(),
            consumer_group: "g".into(),
            mode: MessageRequestMode::Pop,
            pop_share_queue_num: 2,
        };
        let table = BTreeMap::from([(
            "T".to_string(),
            BTreeMap::from([("g".to_string(), setting)]),
        )]);
        let reply = Reply::Admin(AdminReply::MessageRequestModes(table));
        let mut cmd = encode_any_reply(&req, reply.clone());
        let text = String::from_utf8(cmd.body.to_bytes().to_vec()).unwrap();
        assert_eq!(
            text,
            r#"{"messageRequestModeMap":{"T":{"g":{"consumerGroup":"g","mode":"POP","popShareQueueNum":2,"topic":"T"}}}}"#
        );
        cmd.flag |= crate::remoting::FLAG_RESPONSE;
        assert_eq!(decode_reply(&Request::Admin(command), &cmd).unwrap(), reply);

        let req = request(code::GET_TIMER_CHECK_POINT, &[]);
        assert_eq!(decode(&req).unwrap(), AdminCommand::GetTimerCheckpoint);
        let checkpoint = TimerCheckpoint {
            last_read_time_ms: 1,
            last_timer_log_flush_pos: 2,
            last_timer_queue_offset: 3,
            master_timer_queue_offset: 4,
            data_version: DataVersion {
                state_version: 5,
                timestamp: 6,
                counter: 7,
            },
        };
        let cmd = encode_any_reply(&req, Reply::Admin(AdminReply::TimerCheckpoint(checkpoint)));
        let body = cmd.body.to_bytes();
        assert_eq!(body.len(), 56);
        assert_eq!(&body[..8], &1_i64.to_be_bytes());
        assert_eq!(&body[48..], &7_i64.to_be_bytes());

        let req = request(code::GET_TIMER_METRICS, &[]);
        assert_eq!(decode(&req).unwrap(), AdminCommand::GetTimerMetrics);
        let reply = Reply::Admin(AdminReply::TimerMetrics {
            timing_count: BTreeMap::from([(
                "T".to_string(),
                TimerMetric {
                    count: 3,
                    time_stamp: 9,
                },
            )]),
            data_version: DataVersion::default(),
        });
        let cmd = encode_any_reply(&req, reply);
        let text = String::from_utf8(cmd.body.to_bytes().to_vec()).unwrap();
        assert_eq!(
            text,
            r#"{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"timingCount":{"T":{"count":3,"timeStamp":9}}}"#
        );
    }

    #[test]
    fn connection_stats_and_reset_bodies_are_javas() {
        use skiff_model::admin::ProducerInfo;
        use skiff_model::consumer::MessageQueue;

        let connection = ClientConnection {
            client_id: "10.0.0.1@c".into(),
            client_addr: "10.0.0.1:5000".into(),
            language: "GO".into(),
            version: 317,
        };
        let mut subscriptions = BTreeMap::new();
        subscriptions.insert(
            "T".to_string(),
            SubscriptionData::from_expression("T", "TAG", "*", 1),
        );
        let req = request(
            code::GET_CONSUMER_CONNECTION_LIST,
            &[("consumerGroup", "g")],
        );
        assert_eq!(
            decode_request(&req).unwrap(),
            Request::Admin(AdminCommand::ConsumerConnections { group: "g".into() })
        );
        let reply = Reply::Admin(AdminReply::ConsumerConnections(ConsumerConnections {
            connections: vec![connection.clone()],
            subscriptions,
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        }));
        let body = encode_any_reply(&req, reply).body.to_bytes();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(
            text.starts_with(
                "{\"connectionSet\":[{\"clientAddr\":\"10.0.0.1:5000\",\"clientId\":\"10.0.0.1@c\",\
                 \"language\":\"GO\",\"version\":317}],\"consumeFromWhere\":\"CONSUME_FROM_FIRST_OFFSET\",\
                 \"consumeType\":\"CONSUME_PASSIVELY\",\"messageModel\":\"CLUSTERING\",\
                 \"subscriptionTable\":{\"T\":{"
            ),
            "{text}"
        );

        let req = request(code::GET_ALL_PRODUCER_INFO, &[]);
        let mut table = BTreeMap::new();
        table.insert(
            "pg".to_string(),
            vec![ProducerInfo {
                connection,
                last_update_timestamp: 42,
            }],
        );
        let body = encode_any_reply(&req, Reply::Admin(AdminReply::ProducerTable(table)))
            .body
            .to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\"data\":{\"pg\":[{\"clientId\":\"10.0.0.1@c\",\"language\":\"GO\",\
             \"lastUpdateTimestamp\":42,\"remoteIP\":\"/10.0.0.1:5000\",\"version\":317}]}}"
        );

        let req = request(
            code::VIEW_BROKER_STATS_DATA,
            &[("statsName", "TOPIC_PUT_NUMS"), ("statsKey", "T")],
        );
        let window = StatsWindow {
            sum: 5,
            tps: 0.5,
            avgpt: 1.0,
        };
        let reply = Reply::Admin(AdminReply::StatsData(StatsData {
            minute: window,
            hour: StatsWindow::default(),
            day: StatsWindow::default(),
        }));
        let body = encode_any_reply(&req, reply).body.to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\"statsDay\":{\"avgpt\":0.0,\"sum\":0,\"tps\":0.0},\
             \"statsHour\":{\"avgpt\":0.0,\"sum\":0,\"tps\":0.0},\
             \"statsMinute\":{\"avgpt\":1.0,\"sum\":5,\"tps\":0.5}}"
        );

        // ResetOffsetRequestHeader without queueId and offset: every queue, by time.
        let req = request(
            code::INVOKE_BROKER_TO_RESET_OFFSET,
            &[
                ("topic", "T"),
                ("group", "g"),
                ("timestamp", "0"),
                ("isForce", "true"),
            ],
        );
        assert_eq!(
            decode_request(&req).unwrap(),
            Request::Admin(AdminCommand::ResetOffset {
                topic: "T".into(),
                group: "g".into(),
                timestamp: 0,
                queue_id: -1,
                offset: None,
                force: true,
            })
        );
        let queue = MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: 1,
        };
        let reply = Reply::Admin(AdminReply::ResetOffsets(vec![(queue, 7)]));
        let body = encode_any_reply(&req, reply).body.to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\"offsetTable\":{{\"brokerName\":\"b\",\"queueId\":1,\"topic\":\"T\"}:7}}"
        );
    }

    #[test]
    fn a_relayed_answer_keeps_the_clients_code_remark_and_body() {
        let req = request(
            code::GET_CONSUMER_RUNNING_INFO,
            &[
                ("consumerGroup", "g"),
                ("clientId", "c"),
                ("jstackEnable", "false"),
            ],
        );
        let reply = Reply::Admin(AdminReply::FromClient(skiff_model::admin::ClientAnswer {
            code: 1,
            remark: Some("busy".into()),
            body: bytes::Bytes::from_static(b"{}"),
        }));
        let cmd = encode_any_reply(&req, reply);
        assert_eq!(
            (cmd.code, cmd.remark.as_deref(), &cmd.body.to_bytes()[..]),
            (1, Some("busy"), &b"{}"[..])
        );
    }
}

/// The `AclInfo` body of AUTH_CREATE_ACL / AUTH_UPDATE_ACL; none when the body is empty.
fn acl_info_body(cmd: &RemotingCommand) -> Result<Option<AclInfo>, ErrorReply> {
    if cmd.body.to_bytes().is_empty() {
        return Ok(None);
    }
    json_body(cmd).map(Some)
}

/// `CheckRocksdbCqWriteResult` (its `checkResult` is null until the check ends).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CheckRocksDbCqWriteResult {
    check_status: i32,
}

/// `ColdDataCgCtrService.getColdDataFlowCtrInfo`: fastjson's rendering of its tables
/// (`AccAndTimeStamp`'s public fields).
fn cold_read_info_json(info: &ColdReadInfo) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Account {
        cold_acc: i64,
        create_time_mills: i64,
        last_cold_read_time_mills: i64,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Info<'a> {
        cg_cold_read_threshold: i64,
        config_table: &'a BTreeMap<String, i64>,
        global_acc: i64,
        global_cold_read_threshold: i64,
        runtime_table: BTreeMap<&'a str, Account>,
    }
    to_json(&Info {
        cg_cold_read_threshold: info.group_threshold,
        config_table: &info.config,
        global_acc: info.global_acc,
        global_cold_read_threshold: info.global_threshold,
        runtime_table: info
            .runtime
            .iter()
            .map(|(group, a)| {
                (
                    group.as_str(),
                    Account {
                        cold_acc: a.cold_acc,
                        create_time_mills: a.created_ms,
                        last_cold_read_time_mills: a.last_cold_read_ms,
                    },
                )
            })
            .collect(),
    })
}
