//! Metadata: the broker as Kafka's only node (also the controller), and each topic's queues as
//! its partitions, all led by that node.
//!
//! A topic a client asks for that does not exist is created as a producer's send would create it
//! (from `TBW102`, `defaultTopicQueueNums` queues) when the client allows it and the broker has
//! `autoCreateTopicEnable`; the name servers learn of it before the answer goes out. Asked for
//! all topics, a client sees neither RocketMQ's system topics nor retry and dead-letter topics.

use std::sync::Arc;

use skiff_model::route::TopicConfig;
use skiff_model::topic;
use skiff_protocol::kafka::schema::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use skiff_protocol::kafka::schema::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use skiff_protocol::kafka::{error, Response, StrBytes};

use super::{Answer, NODE_ID};
use crate::broker::BrokerState;

pub(super) fn handle(
    state: &Arc<BrokerState>,
    advertised: &(String, u16),
    version: i16,
    request: MetadataRequest,
) -> Answer {
    // v0 has no null: an empty list asks for every topic. From v4 on the client says whether
    // asking creates; before, asking always did.
    let all = match &request.topics {
        None => true,
        Some(topics) => version == 0 && topics.is_empty(),
    };
    let may_create = version < 4 || request.allow_auto_topic_creation;
    let mut created = false;
    let topics = if all {
        let (topics, _) = state.topics.snapshot();
        topics
            .into_values()
            .filter(|config| !is_internal(state, &config.topic_name))
            .map(|config| described(state, &config.topic_name.clone(), Ok(config)))
            .collect()
    } else {
        request
            .topics
            .unwrap_or_default()
            .into_iter()
            .filter_map(|asked| asked.name)
            .map(|name| {
                let name = name.0.to_string();
                let found = find(state, &name, may_create, &mut created);
                described(state, &name, found)
            })
            .collect()
    };
    let mut response = MetadataResponse::default();
    response.brokers = vec![MetadataResponseBroker::default()
        .with_node_id(BrokerId(NODE_ID))
        .with_host(StrBytes::from_string(advertised.0.clone()))
        .with_port(i32::from(advertised.1))];
    response.cluster_id = Some(StrBytes::from_string(
        state.config.broker_cluster_name.clone(),
    ));
    // A real controller: Java's Admin and kafkajs wait for one before creating topics.
    response.controller_id = BrokerId(NODE_ID);
    response.topics = topics;
    if !created {
        return Answer::Now(Response::Metadata(response));
    }
    let state = state.clone();
    Answer::Later(Box::pin(async move {
        // As a producer's send: routes know a new topic before its creator hears of it.
        state.name_servers.register_changed(&state).await;
        Response::Metadata(response)
    }))
}

/// RocketMQ's own topics, which Kafka clients listing topics do not see.
fn is_internal(state: &BrokerState, name: &str) -> bool {
    state.topics.is_system_topic(name) || topic::is_retry_topic(name) || topic::is_dlq_topic(name)
}

/// The topic `name`, created if allowed; `Err` is the Kafka error code.
fn find(
    state: &BrokerState,
    name: &str,
    may_create: bool,
    created: &mut bool,
) -> Result<TopicConfig, i16> {
    if topic::validate_topic(name).is_err() {
        return Err(error::INVALID_TOPIC_EXCEPTION);
    }
    if let Some(found) = state.topics.get(name) {
        return Ok(found);
    }
    if !may_create || is_internal(state, name) {
        return Err(error::UNKNOWN_TOPIC_OR_PARTITION);
    }
    let made = state.topics.create_from_template(
        name,
        topic::AUTO_CREATE_TOPIC_KEY,
        state.config.default_topic_queue_nums,
        0,
    );
    match made {
        Some(config) => {
            *created = true;
            Ok(config)
        }
        None => Err(error::UNKNOWN_TOPIC_OR_PARTITION),
    }
}

/// The number of partitions a topic shows Kafka clients: queues both writable and readable.
pub(super) fn partitions(config: &TopicConfig) -> i32 {
    config.write_queue_nums.min(config.read_queue_nums).max(0)
}

fn described(
    state: &BrokerState,
    name: &str,
    found: Result<TopicConfig, i16>,
) -> MetadataResponseTopic {
    let topic = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
        .with_is_internal(is_internal(state, name))
        .with_topic_authorized_operations(i32::MIN);
    match found {
        Err(code) => topic.with_error_code(code),
        Ok(config) => topic.with_partitions(
            (0..partitions(&config))
                .map(|id| {
                    MetadataResponsePartition::default()
                        .with_partition_index(id)
                        .with_leader_id(BrokerId(NODE_ID))
                        // No leader epochs: clients then skip offset validation (key 23).
                        .with_leader_epoch(-1)
                        .with_replica_nodes(vec![BrokerId(NODE_ID)])
                        .with_isr_nodes(vec![BrokerId(NODE_ID)])
                })
                .collect(),
        ),
    }
}
