//! Operator requests answered from the broker's tables: who consumes a topic
//! (QUERY_TOPIC_CONSUME_BY_WHO, which `mqadmin queryMsgById` and the dashboard use to track a
//! message) and the replication status (GET_BROKER_HA_STATUS, `mqadmin haStatus`); the broker's
//! settings and subscription groups (GET_BROKER_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
//! DELETE_SUBSCRIPTIONGROUP); who is connected (GET_CONSUMER_CONNECTION_LIST,
//! GET_PRODUCER_CONNECTION_LIST), the system topics (GET_SYSTEM_TOPIC_LIST_FROM_BROKER), traffic
//! statistics (VIEW_BROKER_STATS_DATA) and a consumer's own running state, which the broker asks
//! the consumer for (GET_CONSUMER_RUNNING_INFO).

use std::sync::Arc;
use std::time::Duration;

use skiff_model::admin::{AdminCommand, AdminReply, ClientAnswer, HaStatus};
use skiff_model::command::{BoundaryType, ErrorKind, Reply, Request};
use skiff_model::consumer::MessageQueue;
use skiff_model::route::DataVersion;

use tracing::info;

use super::BrokerState;
use crate::net::{ClientRequestError, Handled};

/// How long the broker waits for a client it asks on an operator's behalf (`callClient`).
const CALL_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) fn handle(state: &Arc<BrokerState>, command: AdminCommand) -> Handled {
    match command {
        AdminCommand::ConsumerRunningInfo {
            group,
            client_id,
            jstack,
        } => call_consumer(state, group, client_id, jstack),
        other => Handled::Now(answer(state, other)),
    }
}

fn answer(state: &BrokerState, command: AdminCommand) -> Reply {
    match command {
        AdminCommand::ConsumerConnections { group } => match state.consumers.connections(&group) {
            Some(group) => Reply::Admin(AdminReply::ConsumerConnections(group)),
            None => Reply::error(
                ErrorKind::ConsumerNotOnline,
                format!("the consumer group[{group}] not online"),
            ),
        },
        AdminCommand::ProducerConnections { group } => match state.producers.connections(&group) {
            Some(list) => Reply::Admin(AdminReply::ProducerConnections(list)),
            None => Reply::error(
                ErrorKind::SystemError,
                format!("the producer group[{group}] not exist"),
            ),
        },
        AdminCommand::SystemTopicsFromBroker => Reply::Admin(AdminReply::SystemTopics {
            topics: state.topics.system_topics(),
            broker_addr: None,
        }),
        AdminCommand::ResetOffset {
            topic,
            group,
            timestamp,
            queue_id,
            offset,
        } => reset_offset(state, &topic, &group, timestamp, queue_id, offset),
        AdminCommand::StatsData { name, key } => match state.traffic.data(&name, &key) {
            Some(data) => Reply::Admin(AdminReply::StatsData(data)),
            None => Reply::error(
                ErrorKind::SystemError,
                format!("The stats <{name}> <{key}> not exist"),
            ),
        },
        AdminCommand::TopicConsumers { topic } => Reply::Admin(AdminReply::Groups(merge_groups(
            state.consumers.groups_subscribing(&topic),
            state.offsets.groups_of_topic(&topic),
        ))),
        AdminCommand::HaStatus => Reply::Admin(AdminReply::HaStatus(master_without_slaves(
            state.store.commit_log_max_offset(),
        ))),
        AdminCommand::GetBrokerConfig => Reply::Admin(AdminReply::Config {
            properties: state
                .config
                .java_properties()
                .into_iter()
                .map(|(key, value)| (key.to_string(), value))
                .collect(),
            data_version: Some(DataVersion::default()),
        }),
        AdminCommand::GetAllSubscriptionGroups => {
            let (groups, data_version) = state.groups.snapshot();
            Reply::Admin(AdminReply::SubscriptionGroups {
                groups,
                data_version,
            })
        }
        AdminCommand::DeleteSubscriptionGroup {
            group,
            clean_offset,
        } => {
            let existed = state.groups.remove(&group);
            if clean_offset {
                state.offsets.remove_group(&group);
            }
            info!(group, existed, clean_offset, "subscription group deleted");
            Reply::Success
        }
        other => Reply::error(
            ErrorKind::RequestNotSupported,
            format!(
                "the broker does not serve {}; send it to a name server",
                super::request_name(&Request::Admin(other))
            ),
        ),
    }
}

/// INVOKE_BROKER_TO_RESET_OFFSET as Java 5's server-side reset (`resetOffsetInner`): the offsets
/// are committed and each queue's next pull by the group is told (answered OFFSET_MOVED), which is
/// how a live consumer learns of it.
fn reset_offset(
    state: &BrokerState,
    topic: &str,
    group: &str,
    timestamp: i64,
    queue_id: i32,
    offset: Option<i64>,
) -> Reply {
    let Some(config) = state.topics.get(topic) else {
        return Reply::error(
            ErrorKind::TopicNotExist,
            format!("Topic {topic} does not exist"),
        );
    };
    if !state.groups.contains(group) {
        return Reply::error(
            ErrorKind::SubscriptionGroupNotExist,
            format!("Group {group} does not exist"),
        );
    }
    let by_time = |queue: i32| {
        if timestamp < 0 {
            state.store.max_offset_in_queue(topic, queue)
        } else {
            state
                .store
                .offset_by_time(topic, queue, timestamp, BoundaryType::Lower)
        }
    };
    let targets: Vec<(i32, i64)> = if queue_id >= 0 {
        let target = match offset.filter(|o| *o != -1) {
            Some(offset) => {
                let min = state.store.min_offset_in_queue(topic, queue_id);
                let max = state.store.max_offset_in_queue(topic, queue_id);
                if (min >= 0 && offset < min) || offset > max + 1 {
                    return Reply::error(
                        ErrorKind::SystemError,
                        format!("Target offset {offset} not in consume queue range [{min}-{max}]"),
                    );
                }
                offset
            }
            None => by_time(queue_id),
        };
        vec![(queue_id, target)]
    } else {
        (0..config.read_queue_nums.max(0))
            .map(|queue| (queue, by_time(queue)))
            .collect()
    };
    if targets.is_empty() {
        return Reply::error(ErrorKind::SystemError, "No queues to reset.");
    }
    for (queue, offset) in &targets {
        state.offsets.assign_reset(group, topic, *queue, *offset);
        // A pull held on the queue answers now (it reads the reset), not at its timeout; held
        // pulls of other groups answer early with nothing, which clients simply repeat.
        state.pull_holds.notify_arrival(topic, *queue, i64::MAX);
    }
    info!(topic, group, timestamp, queues = ?targets, "consumer offsets reset");
    let broker_name = &state.config.broker_name;
    Reply::Admin(AdminReply::ResetOffsets(
        targets
            .into_iter()
            .map(|(queue_id, offset)| {
                let queue = MessageQueue {
                    topic: topic.to_string(),
                    broker_name: broker_name.clone(),
                    queue_id,
                };
                (queue, offset)
            })
            .collect(),
    ))
}

/// GET_CONSUMER_RUNNING_INFO: passed on to the consumer, whose answer goes back as it is
/// (`AdminBrokerProcessor.callConsumer`, with its remarks).
fn call_consumer(
    state: &Arc<BrokerState>,
    group: String,
    client_id: String,
    jstack: bool,
) -> Handled {
    let Some(channel) = state.consumers.find_channel(&group, &client_id) else {
        return Handled::Now(Reply::error(
            ErrorKind::SystemError,
            format!("The Consumer <{group}> <{client_id}> not online"),
        ));
    };
    Handled::Later(Box::pin(async move {
        let request = Request::Admin(AdminCommand::ConsumerRunningInfo {
            group: group.clone(),
            client_id: client_id.clone(),
            jstack,
        });
        match channel.request(&request, CALL_CLIENT_TIMEOUT).await {
            Ok(response) => Reply::Admin(AdminReply::FromClient(ClientAnswer {
                code: response.code,
                remark: response.remark,
                body: response.body.to_bytes(),
            })),
            Err(err @ ClientRequestError::Timeout(..)) => Reply::error(
                ErrorKind::ConsumeMessageTimeout,
                format!("consumer <{group}> <{client_id}> Timeout: {err}"),
            ),
            Err(err) => Reply::error(
                ErrorKind::SystemError,
                format!("invoke consumer <{group}> <{client_id}> Exception: {err}"),
            ),
        }
    }))
}

/// Java answers the union of live subscribers and groups that hold offsets on the topic.
fn merge_groups(mut live: Vec<String>, with_offsets: Vec<String>) -> Vec<String> {
    live.extend(with_offsets);
    live.sort();
    live.dedup();
    live
}

/// Skiff brokers are masters and replicate to no one: Java's `DefaultHAService.getRuntimeInfo`
/// of a master with an empty connection list.
fn master_without_slaves(commit_log_max_offset: i64) -> HaStatus {
    HaStatus {
        master: true,
        master_commit_log_max_offset: commit_log_max_offset,
        in_sync_slave_nums: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumers_are_live_and_offset_holding_groups_once_each() {
        let groups = merge_groups(vec!["b".into(), "c".into()], vec!["a".into(), "b".into()]);
        assert_eq!(groups, ["a", "b", "c"]);
        assert!(merge_groups(vec![], vec![]).is_empty());
    }

    #[test]
    fn ha_status_is_a_master_without_slaves() {
        let status = master_without_slaves(1234);
        assert!(status.master);
        assert_eq!(status.master_commit_log_max_offset, 1234);
        assert_eq!(status.in_sync_slave_nums, 0);
    }
}
