//! Operator requests (the ones `mqadmin` and the Dashboard send) answered from the broker's
//! tables, or by asking a client:
//!
//! - who consumes a topic (QUERY_TOPIC_CONSUME_BY_WHO) and who is connected
//!   (GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST, GET_ALL_PRODUCER_INFO);
//! - replication status (GET_BROKER_HA_STATUS), system topics (GET_SYSTEM_TOPIC_LIST_FROM_BROKER),
//!   traffic statistics (VIEW_BROKER_STATS_DATA), consume statistics (GET_BROKER_CONSUME_STATS),
//!   ConsumeQueue entries (QUERY_CONSUME_QUEUE);
//! - settings (GET_/UPDATE_BROKER_CONFIG) and subscription groups
//!   (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, DELETE_SUBSCRIPTIONGROUP);
//! - offsets (INVOKE_BROKER_TO_RESET_OFFSET, CLONE_GROUP_OFFSET) and maintenance
//!   (CLEAN_UNUSED_TOPIC, DELETE_EXPIRED_COMMITLOG, EXPORT_ROCKSDB_CONFIG_TO_JSON,
//!   CHECK_ROCKSDB_CQ_WRITE_PROGRESS, RESET_MASTER_FLUSH_OFFSET, POP_ROLLBACK);
//! - ACL 2.0 users (AUTH_CREATE_/UPDATE_/DELETE_/GET_/LIST_USER, see `auth`) and ACLs
//!   (AUTH_CREATE_/UPDATE_/DELETE_/GET_/LIST_ACL, see `acls`);
//! - storage tuning: the cold-read flow control's tables (UPDATE_/REMOVE_COLD_DATA_FLOW_CTR_CONFIG,
//!   GET_COLD_DATA_FLOW_CTR_INFO) and CommitLog readahead (SET_COMMITLOG_READ_MODE);
//! - what only a consumer knows, asked through its connection and relayed
//!   (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY, INVOKE_BROKER_TO_GET_CONSUMER_STATUS).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use skiff_model::admin::{AdminCommand, AdminReply, ConsumeQueueEntry, ConsumeQueueView, HaStatus};
use skiff_model::command::{ErrorKind, Reply, Request};
use skiff_model::consumer::MessageQueue;
use skiff_model::record;
use skiff_model::route::DataVersion;
use skiff_protocol::remoting;
use tracing::{debug, info, warn};

use super::auth::AuthError;
use super::BrokerState;
use crate::net::{ClientRequestError, Handled};

/// How long the broker waits for a client it asks on an operator's behalf (`callClient`).
const CALL_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a user or ACL change waits for its file to be written.
const AUTH_WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long it waits for each consumer's status (`getConsumeStatus`).
const CONSUMER_STATUS_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) fn handle(state: &Arc<BrokerState>, command: AdminCommand) -> Handled {
    match command {
        AdminCommand::ConsumerRunningInfo {
            group,
            client_id,
            jstack,
        } => {
            let forward = AdminCommand::ConsumerRunningInfo {
                group: group.clone(),
                client_id: client_id.clone(),
                jstack,
            };
            call_consumer(state, group, client_id, async move { Ok(forward) })
        }
        AdminCommand::ConsumeMessageDirectly {
            group,
            client_id,
            msg_id,
            topic,
            ..
        } => {
            let lookup = {
                let state = state.clone();
                let (group, client_id) = (group.clone(), client_id.clone());
                async move {
                    let message = read_by_offset_msg_id(&state, &msg_id).await?;
                    Ok(AdminCommand::ConsumeMessageDirectly {
                        group,
                        client_id,
                        msg_id,
                        topic,
                        broker_name: Some(state.config.broker_name.clone()),
                        message: Some(message),
                    })
                }
            };
            call_consumer(state, group, client_id, lookup)
        }
        AdminCommand::ConsumerStatus {
            topic,
            group,
            client_id,
        } => consumer_status(state, topic, group, client_id),
        AdminCommand::UpdateBrokerConfig { properties } => update_config(state, &properties),
        AdminCommand::CleanUnusedTopic => clean_unused_topics(state),
        AdminCommand::CleanExpiredConsumeQueue => clean_expired_queues(state),
        AdminCommand::CreateTopicList(topics) => super::admin::create_topics(state, topics),
        AdminCommand::CreateStaticTopic {
            config,
            mapping,
            force,
        } => super::admin::create_static_topic(state, config, mapping, force),
        AdminCommand::CreateUser { caller, user } => {
            change_users(state, move |users| users.create(caller.as_deref(), user))
        }
        AdminCommand::UpdateUser { caller, user } => {
            change_users(state, move |users| users.update(caller.as_deref(), user))
        }
        AdminCommand::DeleteUser { caller, username } => {
            let acls = state.acls.clone();
            change_users(state, move |users| {
                users.delete(caller.as_deref(), &username)?;
                if let Some(acls) = &acls {
                    acls.remove_user(&username);
                }
                Ok(())
            })
        }
        AdminCommand::CreateAcl { subject, acl, .. } => {
            change_acls(state, move |users, acls| acls.create(users, &subject, acl))
        }
        AdminCommand::DeleteAcl {
            subject,
            policy_type,
            resource,
        } => change_acls(state, move |users, acls| {
            acls.delete(users, &subject, policy_type.as_deref(), resource.as_deref())
        }),
        AdminCommand::CreateSubscriptionGroupList(groups) => {
            Handled::Now(super::admin::create_subscription_groups(state, groups))
        }
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
        AdminCommand::QueryConsumeQueue {
            topic,
            queue_id,
            index,
            count,
            group,
        } => query_consume_queue(state, &topic, queue_id, index, count, group.as_deref()),
        AdminCommand::CloneGroupOffset {
            src_group,
            dest_group,
            topic,
            offline,
        } => clone_group_offset(state, &src_group, &dest_group, &topic, offline),
        AdminCommand::ExportRocksDbConfig { config_types } => export_rocksdb_config(&config_types),
        AdminCommand::GetUser { username } => match &state.users {
            Some(users) => match users.get(&username) {
                Ok(user) => Reply::Admin(AdminReply::User(user)),
                Err(refused) => refused,
            },
            None => AuthError::System.into(),
        },
        AdminCommand::GetAcl { subject } => match (&state.users, &state.acls) {
            (Some(users), Some(acls)) => match acls.get(users, subject.as_deref()) {
                Ok(acl) => Reply::Admin(AdminReply::Acl(acl)),
                Err(refused) => refused,
            },
            _ => AuthError::System.into(),
        },
        AdminCommand::ListAcls {
            subject_filter,
            resource_filter,
        } => match &state.acls {
            Some(acls) => Reply::Admin(AdminReply::Acls(
                acls.list(subject_filter.as_deref(), resource_filter.as_deref()),
            )),
            None => AuthError::System.into(),
        },
        AdminCommand::ListUsers { filter } => match &state.users {
            Some(users) => Reply::Admin(AdminReply::Users(users.list(filter.as_deref()))),
            None => AuthError::System.into(),
        },
        AdminCommand::UpdateColdReadThresholds { properties } => {
            match state.cold_read_control.set_thresholds(&properties) {
                Ok(skipped) => {
                    if !skipped.is_empty() {
                        warn!(?skipped, "cold-read thresholds that are not numbers were skipped (UPDATE_COLD_DATA_FLOW_CTR_CONFIG)");
                    }
                    info!(%properties, "cold-read thresholds set (UPDATE_COLD_DATA_FLOW_CTR_CONFIG)");
                    Reply::Success
                }
                Err(why) => {
                    warn!(%why, "cold-read thresholds refused (UPDATE_COLD_DATA_FLOW_CTR_CONFIG)");
                    Reply::error(ErrorKind::SystemError, "string2Properties error")
                }
            }
        }
        AdminCommand::RemoveColdReadThreshold { group } => {
            info!(%group, "cold-read threshold removed (REMOVE_COLD_DATA_FLOW_CTR_CONFIG)");
            state.cold_read_control.remove_threshold(&group);
            Reply::Success
        }
        AdminCommand::ColdReadInfo => {
            Reply::Admin(AdminReply::ColdReadInfo(state.cold_read_control.info()))
        }
        AdminCommand::SetCommitLogReadAhead { mode } => set_commit_log_read_ahead(state, mode),
        // Skiff keeps POP checkpoints and acks in the revive topic's files only, as a Java broker
        // without `popConsumerKVServiceInit`, which answers the same: nothing to move.
        AdminCommand::ExportPopRecords => {
            info!("POP_ROLLBACK: POP records are in the revive topic's files already");
            Reply::Success
        }
        // Only a slave keeps its master's flushed offset; a master ignores it, as Java's does.
        AdminCommand::ResetMasterFlushOffset { offset } => {
            info!(
                offset,
                "RESET_MASTER_FLUSH_OFFSET ignored: this broker is a master"
            );
            Reply::Success
        }
        // Java answers "in progress" at once and logs the outcome; with no RocksDB ConsumeQueue
        // written alongside the files (`rocksdbCQDoubleWriteEnable`), that outcome is this.
        AdminCommand::CheckRocksDbCqWriteProgress { topic, .. } => {
            info!(%topic, "checkRocksdbCqWriteProgress result: rocksdbCQWriteEnable is false, checkRocksdbCqWriteProgressCommand is invalid");
            Reply::Admin(AdminReply::CheckInProgress)
        }
        AdminCommand::DeleteExpiredCommitLog => {
            info!("expired commit log segments to be deleted now (DELETE_EXPIRED_COMMITLOG)");
            state.store.delete_expired_files_manually();
            Reply::Success
        }
        AdminCommand::AllProducerInfo => Reply::Admin(AdminReply::ProducerTable(
            state.producers.table(super::now_millis()),
        )),
        AdminCommand::BrokerConsumeStats { order_only } => {
            super::admin::broker_consume_stats(state, order_only)
        }
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
            force,
        } => {
            // Read at each reset, as Java does: UPDATE_BROKER_CONFIG switches it at once.
            if state.settings.read().use_server_side_reset_offset {
                reset_offset(state, &topic, &group, timestamp, queue_id, offset)
            } else {
                reset_offset_on_clients(state, &topic, &group, timestamp, force)
            }
        }
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
        AdminCommand::HaStatus => Reply::Admin(AdminReply::HaStatus(ha_status(state))),
        AdminCommand::GetBrokerConfig => Reply::Admin(AdminReply::Config {
            properties: state
                .settings
                .read()
                .java_properties()
                .into_iter()
                .map(|(key, value)| (key.to_string(), value))
                .collect(),
            data_version: Some(DataVersion::default()),
        }),
        AdminCommand::GetAllConsumerOffsets => Reply::Admin(AdminReply::ConsumerOffsets {
            table: state.offsets.snapshot(),
            data_version: DataVersion::default(),
        }),
        AdminCommand::GetAllDelayOffsets => {
            let (table, data_version) = state.schedule.snapshot();
            Reply::Admin(AdminReply::DelayOffsets {
                table,
                data_version,
            })
        }
        AdminCommand::GetAllMessageRequestModes => {
            Reply::Admin(AdminReply::MessageRequestModes(state.pop.modes.table()))
        }
        AdminCommand::GetTimerCheckpoint => match *state.timer_progress.lock() {
            Some(checkpoint) => Reply::Admin(AdminReply::TimerCheckpoint(checkpoint)),
            // Java's answer when the broker has no timer checkpoint.
            None => Reply::error(ErrorKind::SystemError, "The checkpoint is null"),
        },
        // Skiff keeps no per-topic count of pending timer messages: the table is empty, under
        // a version that never changes, so a Java slave copies it once.
        AdminCommand::GetTimerMetrics => Reply::Admin(AdminReply::TimerMetrics {
            timing_count: Default::default(),
            data_version: DataVersion::default(),
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
                skiff_protocol::remoting::request_name(&Request::Admin(other))
            ),
        ),
    }
}

/// Most entries one QUERY_CONSUME_QUEUE returns (Java has no bound; the count is the client's).
const MAX_CONSUME_QUEUE_ENTRIES: i32 = 1_000;

/// QUERY_CONSUME_QUEUE (`queryConsumeQueue`): entries of one queue from `index`, each with its
/// CommitLog position, size and tag code.
fn query_consume_queue(
    state: &BrokerState,
    topic: &str,
    queue_id: i32,
    index: i64,
    count: i32,
    group: Option<&str>,
) -> Reply {
    if !state.store.queue_ids(topic).contains(&queue_id) {
        return Reply::error(
            ErrorKind::SystemError,
            format!("{queue_id}@{topic} is not exist!"),
        );
    }
    let min = state.store.min_offset_in_queue(topic, queue_id);
    let max = state.store.max_offset_in_queue(topic, queue_id);
    let (subscription, filter_data) = match group {
        None => (None, None),
        Some(group) => match state.consumers.subscription(group, topic) {
            Some(subscription) => (Some(subscription), Some("null".to_string())),
            None => (None, Some(format!("{group}@{topic} is not online!"))),
        },
    };
    let mut view = ConsumeQueueView {
        subscription,
        filter_data,
        max_queue_index: max,
        min_queue_index: min,
        entries: None,
        remark: None,
    };
    if index < min || index >= max {
        view.remark = Some(format!("Index {index} of {queue_id}@{topic} is not exist!"));
        return Reply::Admin(AdminReply::ConsumeQueue(Box::new(view)));
    }
    let end = max.min(index.saturating_add(i64::from(count.clamp(0, MAX_CONSUME_QUEUE_ENTRIES))));
    view.entries = Some(
        (index..end)
            .map_while(|offset| state.store.queue_entry(topic, queue_id, offset))
            .map(|entry| ConsumeQueueEntry {
                physical_offset: entry.physical_offset,
                size: entry.record.as_ref().map_or(0, |r| r.len() as i32),
                tags_code: entry.tags_code,
            })
            .collect(),
    );
    Reply::Admin(AdminReply::ConsumeQueue(Box::new(view)))
}

/// INVOKE_BROKER_TO_RESET_OFFSET with `useServerSideResetOffset=false`, as Java's
/// `Broker2Client.resetOffset`: for each queue the offset of `timestamp` (-1: the end), unless it
/// is past the committed one and not `force`; the table is pushed to every live consumer of the
/// group (RESET_CONSUMER_CLIENT_OFFSET), which moves to it and commits it, and is the answer.
/// Without a live consumer the answer is CONSUMER_NOT_ONLINE, on which mqadmin commits the
/// offsets itself. C++ clients get the same JSON body as the others (Java sends them a list).
fn reset_offset_on_clients(
    state: &BrokerState,
    topic: &str,
    group: &str,
    timestamp: i64,
    force: bool,
) -> Reply {
    let Some(config) = state.topics.get(topic) else {
        return Reply::error(
            ErrorKind::TopicNotExist,
            format!("[reset-offset] reset offset failed, no topic in this broker. topic={topic}"),
        );
    };
    let mut offsets = Vec::new();
    for queue_id in 0..config.write_queue_nums.max(0) {
        let Some(committed) = state.offsets.query(group, topic, queue_id) else {
            return Reply::error(
                ErrorKind::SystemError,
                format!("THe consumer group <{group}> not exist"),
            );
        };
        let at_time = if timestamp == -1 {
            state.store.max_offset_in_queue(topic, queue_id)
        } else {
            state
                .store
                .offset_by_time(topic, queue_id, timestamp, skiff_store::Boundary::Lower)
        }
        .max(0);
        let queue = MessageQueue {
            topic: topic.to_string(),
            broker_name: state.config.broker_name.clone(),
            queue_id,
        };
        offsets.push((
            queue,
            if force || at_time < committed {
                at_time
            } else {
                committed
            },
        ));
    }
    let consumers = state.consumers.channels(group);
    if consumers.is_empty() {
        return Reply::error(
            ErrorKind::ConsumerNotOnline,
            format!("Consumer not online, so can not reset offset, Group: {group} Topic: {topic} Timestamp: {timestamp}"),
        );
    }
    let push = Request::ResetConsumerClientOffset {
        topic: topic.to_string(),
        group: group.to_string(),
        timestamp,
        offsets: offsets.clone(),
    };
    for channel in &consumers {
        channel.send_oneway(&push);
    }
    info!(
        topic,
        group,
        timestamp,
        force,
        consumers = consumers.len(),
        "consumer offsets reset on the clients"
    );
    Reply::Admin(AdminReply::ResetOffsets(offsets))
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
                .offset_by_time(topic, queue, timestamp, skiff_store::Boundary::Lower)
        }
    };
    let queues = config.read_queue_nums.max(config.write_queue_nums).max(0);
    if queue_id >= queues {
        // Java would keep a reset for a queue that does not exist; one per absurd id adds up.
        return Reply::error(
            ErrorKind::InvalidParameter,
            format!(
                "queueId {queue_id} is not a queue of {topic} (0 to {})",
                queues - 1
            ),
        );
    }
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

/// GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY: passed on to the consumer (what
/// `forward` makes), whose answer goes back as it is (`AdminBrokerProcessor.callConsumer`, with its
/// remarks).
fn call_consumer(
    state: &Arc<BrokerState>,
    group: String,
    client_id: String,
    forward: impl std::future::Future<Output = Result<AdminCommand, Reply>> + Send + 'static,
) -> Handled {
    let Some(channel) = state.consumers.find_channel(&group, &client_id) else {
        return Handled::Now(Reply::error(
            ErrorKind::SystemError,
            format!("The Consumer <{group}> <{client_id}> not online"),
        ));
    };
    Handled::Later(Box::pin(async move {
        let request = match forward.await {
            Ok(command) => Request::Admin(command),
            Err(reply) => return reply,
        };
        match channel.request(&request, CALL_CLIENT_TIMEOUT).await {
            Ok(answer) => Reply::Admin(AdminReply::FromClient(answer)),
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

/// CLEAN_UNUSED_TOPIC (`cleanUnusedTopic`): the ConsumeQueues of topics that are neither in the
/// topic table nor system topics are deleted, on a blocking thread (files are unlinked).
fn clean_unused_topics(state: &Arc<BrokerState>) -> Handled {
    let unused: Vec<String> = state
        .store
        .topics()
        .into_iter()
        .filter(|t| state.topics.get(t).is_none() && !state.topics.is_system_topic(t))
        .collect();
    if unused.is_empty() {
        return Handled::Now(Reply::Success);
    }
    let store = state.store.clone();
    Handled::Later(Box::pin(async move {
        info!(topics = ?unused, "deleting the queues of unused topics (CLEAN_UNUSED_TOPIC)");
        let deleting = tokio::task::spawn_blocking(move || {
            let names: Vec<&str> = unused.iter().map(String::as_str).collect();
            store.delete_topics(&names);
        });
        match deleting.await {
            Ok(()) => Reply::Success,
            Err(e) => Reply::error(
                ErrorKind::SystemError,
                format!("cleaning unused topics: {e}"),
            ),
        }
    }))
}

/// CLEAN_EXPIRED_CONSUMEQUEUE (`cleanExpiredCQ`): the ConsumeQueues none of whose messages is
/// stored any more are deleted (system topics kept), on a blocking thread.
fn clean_expired_queues(state: &Arc<BrokerState>) -> Handled {
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        let store = state.store.clone();
        let topics = state.clone();
        let cleaning = tokio::task::spawn_blocking(move || {
            store.clean_expired_queues(|topic| topics.topics.is_system_topic(topic))
        });
        match cleaning.await {
            Ok(dropped) => {
                info!(queues = ?dropped, "expired consume queues deleted (CLEAN_EXPIRED_CONSUMEQUEUE)");
                Reply::Success
            }
            Err(e) => Reply::error(
                ErrorKind::SystemError,
                format!("cleaning expired consume queues: {e}"),
            ),
        }
    }))
}

/// EXPORT_ROCKSDB_CONFIG_TO_JSON: Skiff keeps topics, subscription groups and consumer offsets
/// in JSON files already (`config/*.json`), as a Java broker without RocksDB configs does, for
/// which Java also exports nothing and answers `export done.`. Unknown types are refused as
/// Java's `ConfigType.getConfigTypeByName` refuses them.
fn export_rocksdb_config(config_types: &str) -> Reply {
    const TYPES: [&str; 3] = ["topics", "subscriptionGroups", "consumerOffsets"];
    for name in config_types
        .split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        if !TYPES.iter().any(|t| t.eq_ignore_ascii_case(name)) {
            return Reply::error(
                ErrorKind::SystemError,
                format!("Unknown config type: {name}"),
            );
        }
    }
    Reply::Admin(AdminReply::Done("export done.".to_string()))
}

/// SET_COMMITLOG_READ_MODE (`setCommitLogReadAheadMode`): `MADV_NORMAL` (0) turns readahead on
/// the CommitLog's pages on, `MADV_RANDOM` (1) off, for the segments there are and those to
/// come, until the next start (which reads `dataReadAheadEnable`), as in Java.
fn set_commit_log_read_ahead(state: &BrokerState, mode: i32) -> Reply {
    const MADV_NORMAL: i32 = 0;
    const MADV_RANDOM: i32 = 1;
    if mode != MADV_NORMAL && mode != MADV_RANDOM {
        return Reply::error(
            ErrorKind::InvalidParameter,
            "set commitlog readahead mode param value error",
        );
    }
    match state.store.set_commit_log_read_ahead(mode == MADV_NORMAL) {
        Ok(()) => {
            info!(
                mode,
                read_ahead = mode == MADV_NORMAL,
                "CommitLog readahead changed (SET_COMMITLOG_READ_MODE)"
            );
            Reply::Admin(AdminReply::Done(format!(
                "set commitlog readahead mode success, mode: {mode}"
            )))
        }
        Err(e) => {
            warn!(mode, error = %e, "set commitlog readahead mode failed");
            Reply::error(
                ErrorKind::SystemError,
                "set commitlog readahead mode failed",
            )
        }
    }
}

/// AUTH_CREATE_/UPDATE_/DELETE_USER: answered once `config/users.json` holds the change (Java's
/// RocksDB write is done before it answers), and `config/acls.json` too (a deleted user's ACL
/// goes with it). Without a users store (`authenticationMetadataProvider`) Java's generic error.
fn change_users(
    state: &Arc<BrokerState>,
    change: impl FnOnce(&super::auth::UserStore) -> Result<(), Reply>,
) -> Handled {
    let Some(users) = state.users.clone() else {
        warn!("a user request, but authenticationMetadataProvider is not set: the broker has no users store");
        return Handled::Now(AuthError::System.into());
    };
    if let Err(refused) = change(&users) {
        return Handled::Now(refused);
    }
    let acls = state.acls.clone();
    answer_once_written(move |timeout| {
        users.flush(timeout) && acls.is_none_or(|acls| acls.flush(timeout))
    })
}

/// AUTH_CREATE_/UPDATE_/DELETE_ACL: answered once `config/acls.json` holds the change. Both
/// stores are needed (an ACL's subject must be a user), or Java's generic error.
fn change_acls(
    state: &Arc<BrokerState>,
    change: impl FnOnce(&super::auth::UserStore, &super::acls::AclStore) -> Result<(), Reply>,
) -> Handled {
    let (Some(users), Some(acls)) = (state.users.clone(), state.acls.clone()) else {
        warn!("an ACL request, but authenticationMetadataProvider or authorizationMetadataProvider is not set");
        return Handled::Now(AuthError::System.into());
    };
    if let Err(refused) = change(&users, &acls) {
        return Handled::Now(refused);
    }
    answer_once_written(move |timeout| acls.flush(timeout))
}

/// Success once `flush` (blocking, on a blocking thread) says the files are written.
fn answer_once_written(flush: impl FnOnce(Duration) -> bool + Send + 'static) -> Handled {
    Handled::Later(Box::pin(async move {
        match tokio::task::spawn_blocking(move || flush(AUTH_WRITE_TIMEOUT)).await {
            Ok(true) => Reply::Success,
            _ => Reply::error(
                ErrorKind::SystemError,
                "config/users.json or config/acls.json could not be written; see the broker's log",
            ),
        }
    }))
}

/// How long UPDATE_BROKER_CONFIG waits for its settings to be in the config file.
const SETTINGS_FILE_TIMEOUT: Duration = Duration::from_secs(3);

/// Keys UPDATE_BROKER_CONFIG refuses (Java's default `configBlackList`).
const CONFIG_BLACK_LIST: [&str; 2] = ["configBlackList", "brokerConfigPath"];

/// UPDATE_BROKER_CONFIG (`updateBrokerConfig`): the settings are checked and applied together, so
/// a request with one bad value changes nothing (Java skips such a value silently; Skiff names
/// it). `brokerPermission` takes effect at once and is announced to the name servers (as Java's
/// `registerBrokerAll`); so do `autoCreateTopicEnable` and `autoCreateSubscriptionGroup`, which
/// Java reads at each creation, and the retention settings (`fileReservedTime`, `deleteWhen`,
/// the disk ratios, `cleanFileForciblyEnable`, `deleteFileBatchMax`), which its clean service
/// reads at each round, `haTransferBatchSize`, which its HA connections read at each frame, and
/// `useServerSideResetOffset`; other settings are shown by
/// GET_BROKER_CONFIG and take effect after a restart. All are written into the config file the broker started from before the answer, as
/// Java's `Configuration.persist` writes its `brokerConfigPath`.
fn update_config(state: &Arc<BrokerState>, properties: &str) -> Handled {
    // Held throughout, so that two updates at once do not lose one (Java's is `synchronized`).
    let mut settings = state.settings.write();
    let (updated, changes) = match crate::config::with_updates(
        &*settings,
        properties,
        &CONFIG_BLACK_LIST,
        crate::config::BrokerConfig::validate,
    ) {
        Ok(updated) => updated,
        Err(refused) => return Handled::Now(refused.into()),
    };
    let keys: Vec<&str> = changes.iter().map(|(key, _)| key.as_str()).collect();
    let permission_changed = keys.contains(&"brokerPermission");
    let role_changed =
        updated.broker_role != settings.broker_role || updated.broker_id != settings.broker_id;
    match &state.settings_file {
        Some(file) => {
            info!(?keys, file = %file.path().display(), "broker settings updated (UPDATE_BROKER_CONFIG) and written into the config file; brokerPermission, autoCreateTopicEnable, autoCreateSubscriptionGroup, haTransferBatchSize and the retention settings apply at once, brokerRole and brokerId by a restart in place, the others after a restart");
            file.record(&changes);
        }
        None => {
            info!(?keys, "broker settings updated (UPDATE_BROKER_CONFIG); brokerPermission, autoCreateTopicEnable, autoCreateSubscriptionGroup, haTransferBatchSize and the retention settings apply at once, brokerRole and brokerId by a restart in place, the others would after a restart, but the broker started without a config file: they are lost at a restart (start with -c FILE to keep them)");
        }
    }
    state.broker_permission.store(
        updated.broker_permission,
        std::sync::atomic::Ordering::Relaxed,
    );
    state
        .topics
        .set_auto_create(updated.auto_create_topic_enable);
    state
        .groups
        .set_auto_create(updated.auto_create_subscription_group);
    state
        .store
        .set_retention(super::retention_settings(&updated));
    state.ha_transfer_batch_size.store(
        updated.ha_transfer_batch_size,
        std::sync::atomic::Ordering::Relaxed,
    );
    *settings = updated;
    drop(settings);
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        // As Java's `Configuration.update`, the file is written before the answer.
        let written = {
            let state = state.clone();
            tokio::task::spawn_blocking(move || {
                state
                    .settings_file
                    .as_ref()
                    .is_none_or(|file| file.flush(SETTINGS_FILE_TIMEOUT))
            })
            .await
            .unwrap_or(false)
        };
        if !written {
            warn!("the config file is not written yet (see the earlier warning); the settings hold until a restart");
        }
        if role_changed {
            // Unlike Java (the role changes at the next restart), at once: whoever runs the
            // broker starts it again in place, after this answer has gone out.
            info!(
                role = %state.settings.read().broker_role,
                broker_id = state.settings.read().broker_id,
                "brokerRole or brokerId updated: the broker restarts in place to take its new role"
            );
            state.restart.notify_one();
        } else if permission_changed {
            // A new data version, so that name servers take the routes with the new permission.
            state.topics.touch();
            state.name_servers.register(&state).await;
        }
        Reply::Success
    }))
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (`Broker2Client.getConsumeStatus`): every member of the
/// group (or only `client_id`) is asked for its offsets on `topic` (GET_CONSUMER_STATUS_FROM_CLIENT,
/// 5 s each); members that fail or time out are left out, as in Java.
fn consumer_status(
    state: &Arc<BrokerState>,
    topic: String,
    group: String,
    client_id: String,
) -> Handled {
    let members = state.consumers.members(&group);
    if members.is_empty() {
        return Handled::Now(Reply::error(
            ErrorKind::SystemError,
            format!("No Any Consumer online in the consumer group: [{group}]"),
        ));
    }
    Handled::Later(Box::pin(async move {
        let request = Request::Admin(AdminCommand::ConsumerStatusFromClient {
            topic: topic.clone(),
            group: group.clone(),
        });
        let mut table = BTreeMap::new();
        for (id, channel) in members {
            if !client_id.is_empty() && id != client_id {
                continue;
            }
            match channel.request(&request, CONSUMER_STATUS_TIMEOUT).await {
                Ok(response) if response.code == 0 => {
                    match remoting::parse_client_consumer_status(&response.body) {
                        Ok(offsets) => {
                            table.insert(id, offsets);
                        }
                        Err(err) => warn!(client = %id, %err, "bad consumer status answer"),
                    }
                }
                Ok(response) => {
                    debug!(client = %id, code = response.code, "consumer status refused")
                }
                Err(err) => warn!(client = %id, %err, "consumer status not answered"),
            }
        }
        info!(
            topic,
            group,
            clients = table.len(),
            "consumer status collected"
        );
        Reply::Admin(AdminReply::ConsumerStatus(table))
    }))
}

/// CLONE_GROUP_OFFSET (`cloneGroupOffset`): the source group's committed offsets on the topic
/// copied to the destination group.
fn clone_group_offset(
    state: &BrokerState,
    src_group: &str,
    dest_group: &str,
    topic: &str,
    offline: bool,
) -> Reply {
    if let Err(remark) = skiff_model::topic::validate_group(dest_group) {
        return Reply::error(ErrorKind::InvalidParameter, remark);
    }
    let topics = if topic.trim().is_empty() {
        state.offsets.topics_of_group(src_group)
    } else {
        vec![topic.to_string()]
    };
    for topic in topics {
        if state.topics.get(&topic).is_none() {
            continue;
        }
        let live = state.consumers.subscription_count(src_group).unwrap_or(0) > 0;
        if !offline && live && state.consumers.subscription(src_group, &topic).is_none() {
            continue;
        }
        if state.offsets.clone_offsets(src_group, dest_group, &topic) {
            info!(topic, src_group, dest_group, "group offsets cloned");
        }
    }
    Reply::Success
}

/// The stored record an offset message id names, read on a blocking thread (it may be cold).
async fn read_by_offset_msg_id(state: &Arc<BrokerState>, msg_id: &str) -> Result<Bytes, Reply> {
    let Some((_, offset)) = record::decode_offset_msg_id(msg_id) else {
        return Err(Reply::error(
            ErrorKind::SystemError,
            format!("{msg_id} is not an offset message id"),
        ));
    };
    let store = state.store.clone();
    let read = tokio::task::spawn_blocking(move || store.read_message(offset)).await;
    match read {
        Ok(Some(record)) => Ok(record),
        _ => Err(Reply::error(
            ErrorKind::SystemError,
            format!("can not find message by the offset, {offset}"),
        )),
    }
}

/// Java answers the union of live subscribers and groups that hold offsets on the topic.
fn merge_groups(mut live: Vec<String>, with_offsets: Vec<String>) -> Vec<String> {
    live.extend(with_offsets);
    live.sort();
    live.dedup();
    live
}

/// Java's `DefaultHAService.getRuntimeInfo`: a slave shows its client, a master its slave
/// connections (none without an HA port).
fn ha_status(state: &BrokerState) -> HaStatus {
    let end = state.store.commit_log_max_offset();
    let now = super::now_millis();
    if let Some(client) = &state.ha_client {
        return HaStatus {
            client: client.snapshot(end, now),
            ..HaStatus::default()
        };
    }
    let (connections, in_sync_slave_nums) = state.replicas.as_ref().map_or((Vec::new(), 0), |r| {
        r.status(end, state.config.ha_max_gap_not_in_sync, now)
    });
    HaStatus {
        master: true,
        master_commit_log_max_offset: end,
        in_sync_slave_nums,
        connections,
        client: Default::default(),
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
}
