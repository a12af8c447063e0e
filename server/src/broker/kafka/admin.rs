//! CreateTopics, DeleteTopics and DescribeConfigs: what `kafka-topics.sh` and Kafka's Admin
//! client do, on the broker's topics.
//!
//! A topic is created and deleted as RocketMQ's admin codes do it (`broker::admin`: the same name
//! rules, queue-count limits and system-topic protection), so a Kafka admin can do nothing an
//! mqadmin user could not. DescribeConfigs reports the settings that exist, in Kafka's names.

use std::sync::Arc;

use skiff_model::command::Reply;
use skiff_model::route::TopicConfig;
use skiff_model::topic;
use skiff_protocol::kafka::schema::create_topics_response::CreatableTopicResult;
use skiff_protocol::kafka::schema::delete_topics_response::DeletableTopicResult;
use skiff_protocol::kafka::schema::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use skiff_protocol::kafka::schema::{
    CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    DescribeConfigsRequest, DescribeConfigsResponse, TopicName,
};
use skiff_protocol::kafka::{error, Response, StrBytes};

use super::group_api::Groups;
use super::{Answer, NODE_ID};
use crate::broker::{admin, BrokerState};
use crate::net::Handled;

/// Kafka's `ConfigResource.Type` codes.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
/// `DescribeConfigsResponse.ConfigSource`: DEFAULT_CONFIG and STATIC_BROKER_CONFIG.
const DEFAULT_CONFIG: i8 = 5;
const STATIC_BROKER_CONFIG: i8 = 4;

async fn finished(handled: Handled) -> Reply {
    match handled {
        Handled::Now(reply) => reply,
        Handled::Later(pending) => pending.await,
    }
}

fn remark(reply: &Reply) -> Option<StrBytes> {
    match reply {
        Reply::Error(err) => Some(StrBytes::from_string(err.message.clone())),
        _ => None,
    }
}

pub(super) fn create_topics(
    state: &Arc<BrokerState>,
    version: i16,
    request: CreateTopicsRequest,
) -> Answer {
    let state = state.clone();
    Answer::Later(Box::pin(async move {
        let mut results = Vec::with_capacity(request.topics.len());
        for wanted in request.topics {
            let name = wanted.name.0.to_string();
            let count = match wanted.num_partitions {
                -1 => state.config.default_topic_queue_nums,
                n => n,
            };
            // kafka-protocol's default message is Some(""); Kafka sends none on success.
            let result = CreatableTopicResult::default()
                .with_error_message(None)
                .with_name(wanted.name.clone())
                .with_num_partitions(count)
                .with_replication_factor(1);
            let refused = if topic::validate_topic(&name).is_err() {
                Some(error::INVALID_TOPIC_EXCEPTION)
            } else if state.topics.get(&name).is_some() {
                Some(error::TOPIC_ALREADY_EXISTS)
            } else if count < 1 || count > state.config.max_topic_queue_nums {
                Some(error::INVALID_PARTITIONS)
            } else if !matches!(wanted.replication_factor, -1 | 1) {
                // One broker holds every partition.
                Some(error::INVALID_REPLICATION_FACTOR)
            } else if !wanted.assignments.is_empty() {
                Some(error::INVALID_REPLICA_ASSIGNMENT)
            } else {
                None
            };
            if let Some(code) = refused {
                results.push(
                    result
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "topic {name} refused with Kafka error {code}"
                        ))))
                        .with_num_partitions(-1)
                        .with_replication_factor(-1),
                );
                continue;
            }
            if request.validate_only {
                results.push(result);
                continue;
            }
            let config = TopicConfig::new(&name, count);
            let reply = finished(admin::create_topic(&state, config)).await;
            results.push(match reply {
                Reply::Success => result,
                other => result
                    .with_error_code(error::INVALID_TOPIC_EXCEPTION)
                    .with_error_message(remark(&other)),
            });
        }
        let mut response = CreateTopicsResponse::default();
        // Before v5 the answer has no partition count, replication factor or configs.
        if version < 5 {
            for result in &mut results {
                result.num_partitions = -1;
                result.replication_factor = -1;
            }
        }
        response.topics = results;
        Response::CreateTopics(response)
    }))
}

pub(super) fn delete_topics(
    state: &Arc<BrokerState>,
    groups: &Arc<Groups>,
    version: i16,
    request: DeleteTopicsRequest,
) -> Answer {
    let names: Vec<TopicName> = if version >= 6 {
        request.topics.into_iter().filter_map(|t| t.name).collect()
    } else {
        request.topic_names
    };
    let state = state.clone();
    let groups = groups.clone();
    Answer::Later(Box::pin(async move {
        let mut results = Vec::with_capacity(names.len());
        for name in names {
            let result = DeletableTopicResult::default().with_name(Some(name.clone()));
            if state.topics.get(&name.0).is_none() {
                results.push(result.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION));
                continue;
            }
            let reply = finished(admin::delete_topic(&state, &name.0)).await;
            results.push(match reply {
                Reply::Success => {
                    groups.topic_deleted(&name.0);
                    result
                }
                other => result
                    .with_error_code(error::TOPIC_DELETION_DISABLED)
                    .with_error_message(remark(&other)),
            });
        }
        let mut response = DeleteTopicsResponse::default();
        response.responses = results;
        Response::DeleteTopics(response)
    }))
}

fn entry(name: &str, value: String, source: i8, config_type: i8) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(name.to_string()))
        .with_value(Some(StrBytes::from_string(value)))
        .with_read_only(true)
        .with_config_source(source)
        .with_config_type(config_type)
}

/// Kafka's `ConfigType` codes.
const BOOLEAN: i8 = 1;
const STRING: i8 = 2;
const INT: i8 = 3;
const LONG: i8 = 5;

pub(super) fn describe_configs(
    state: &Arc<BrokerState>,
    request: DescribeConfigsRequest,
) -> Answer {
    let config = &state.config;
    let retention_ms = (config.file_reserved_time * 3_600_000).to_string();
    let max_bytes = config.max_message_size.to_string();
    let results = request
        .resources
        .into_iter()
        .map(|resource| {
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            let entries = match resource.resource_type {
                TOPIC => {
                    if state.topics.get(&resource.resource_name).is_none() {
                        return result.with_error_code(error::UNKNOWN_TOPIC_OR_PARTITION);
                    }
                    vec![
                        entry("cleanup.policy", "delete".into(), DEFAULT_CONFIG, STRING),
                        entry(
                            "retention.ms",
                            retention_ms.clone(),
                            STATIC_BROKER_CONFIG,
                            LONG,
                        ),
                        entry(
                            "max.message.bytes",
                            max_bytes.clone(),
                            STATIC_BROKER_CONFIG,
                            INT,
                        ),
                        entry(
                            "message.timestamp.type",
                            "CreateTime".into(),
                            DEFAULT_CONFIG,
                            STRING,
                        ),
                        entry(
                            "compression.type",
                            "producer".into(),
                            DEFAULT_CONFIG,
                            STRING,
                        ),
                        entry("min.insync.replicas", "1".into(), DEFAULT_CONFIG, INT),
                        entry(
                            "segment.bytes",
                            config.mapped_file_size_commit_log.to_string(),
                            STATIC_BROKER_CONFIG,
                            INT,
                        ),
                    ]
                }
                BROKER => vec![
                    entry("broker.id", NODE_ID.to_string(), STATIC_BROKER_CONFIG, INT),
                    entry(
                        "num.partitions",
                        config.default_topic_queue_nums.to_string(),
                        STATIC_BROKER_CONFIG,
                        INT,
                    ),
                    entry(
                        "auto.create.topics.enable",
                        config.auto_create_topic_enable.to_string(),
                        STATIC_BROKER_CONFIG,
                        BOOLEAN,
                    ),
                    entry(
                        "message.max.bytes",
                        max_bytes.clone(),
                        STATIC_BROKER_CONFIG,
                        INT,
                    ),
                    entry(
                        "log.retention.hours",
                        config.file_reserved_time.to_string(),
                        STATIC_BROKER_CONFIG,
                        INT,
                    ),
                    entry(
                        "default.replication.factor",
                        "1".into(),
                        DEFAULT_CONFIG,
                        INT,
                    ),
                ],
                _ => return result.with_error_code(error::INVALID_REQUEST),
            };
            let wanted = |name: &StrBytes| {
                resource
                    .configuration_keys
                    .as_ref()
                    .is_none_or(|keys| keys.iter().any(|k| k == name))
            };
            result.with_configs(entries.into_iter().filter(|e| wanted(&e.name)).collect())
        })
        .collect();
    let mut response = DescribeConfigsResponse::default();
    response.results = results;
    Answer::Now(Response::DescribeConfigs(response))
}
