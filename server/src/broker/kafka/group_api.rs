//! The group APIs on the wire: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, OffsetFetch, DescribeGroups and ListGroups, turned into calls of the pure
//! [`Coordinator`] and of the committed offsets' store.
//!
//! A JoinGroup or SyncGroup the coordinator parks gets a token and a oneshot: the answer comes
//! when a later request or the timer (every [`TICK`]) completes the rebalance. The broker is the
//! coordinator of every group.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use skiff_protocol::kafka::schema::describe_groups_response::{
    DescribedGroup, DescribedGroupMember,
};
use skiff_protocol::kafka::schema::find_coordinator_response::Coordinator as CoordinatorEntry;
use skiff_protocol::kafka::schema::join_group_response::JoinGroupResponseMember;
use skiff_protocol::kafka::schema::leave_group_response::MemberResponse;
use skiff_protocol::kafka::schema::list_groups_response::ListedGroup;
use skiff_protocol::kafka::schema::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use skiff_protocol::kafka::schema::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use skiff_protocol::kafka::schema::{
    BrokerId, DescribeGroupsRequest, DescribeGroupsResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse, TopicName,
};
use skiff_protocol::kafka::{error, Response, StrBytes};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::groups::{Coordinator, Join, Joined, Ready, State, Synced, Token};
use super::metadata::partitions;
use super::offsets::{Committed, GroupOffsets};
use super::{Answer, NODE_ID};
use crate::broker::{now_millis, BrokerState};

/// How often timeouts (sessions, rebalances, the initial delay) are looked at.
pub(super) const TICK: Duration = Duration::from_millis(100);

/// Kafka's `offset.metadata.max.bytes` default.
const MAX_METADATA: usize = 4096;

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

/// A group's committed offsets by topic: (partition, offset if any).
type FetchedTopics = Vec<(TopicName, Vec<(i32, Option<Committed>)>)>;

/// The groups of the broker's Kafka listener.
pub(super) struct Groups {
    coordinator: Mutex<Coordinator>,
    parked: Mutex<HashMap<Token, oneshot::Sender<Ready>>>,
    next_token: AtomicU64,
    offsets: GroupOffsets,
}

impl Groups {
    pub(super) fn new(offsets: GroupOffsets) -> Self {
        Groups {
            coordinator: Mutex::default(),
            parked: Mutex::default(),
            next_token: AtomicU64::new(1),
            offsets,
        }
    }

    fn park(&self) -> (Token, oneshot::Receiver<Ready>) {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.parked.lock().insert(token, tx);
        (token, rx)
    }

    /// Hands the coordinator's decided answers to the requests waiting for them.
    fn deliver(&self, coordinator: &mut Coordinator) {
        let ready = coordinator.take_ready();
        if ready.is_empty() {
            return;
        }
        let mut parked = self.parked.lock();
        for (token, answer) in ready {
            if let Some(waiting) = parked.remove(&token) {
                let _ = waiting.send(answer);
            }
        }
    }

    /// Runs the coordinator's timeouts until `shutdown`.
    pub(super) async fn run_timers(self: Arc<Self>, shutdown: CancellationToken) {
        let mut ticker = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticker.tick() => {
                    let mut coordinator = self.coordinator.lock();
                    coordinator.tick(now_millis());
                    self.deliver(&mut coordinator);
                }
            }
        }
    }

    /// A topic was deleted: its committed offsets go too, as Kafka drops them.
    pub(super) fn topic_deleted(&self, topic: &str) {
        self.offsets.remove_topic(topic);
    }

    pub(super) fn find_coordinator(
        &self,
        advertised: &(String, u16),
        version: i16,
        request: FindCoordinatorRequest,
    ) -> Answer {
        // Groups only: transactions are not served (a code clients do not retry forever).
        let code = if request.key_type == 0 {
            error::NONE
        } else {
            error::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        };
        let (host, port) = (text(&advertised.0), i32::from(advertised.1));
        let mut response = FindCoordinatorResponse::default();
        if version >= 4 {
            response.coordinators = request
                .coordinator_keys
                .into_iter()
                .map(|key| {
                    CoordinatorEntry::default()
                        .with_key(key)
                        .with_node_id(BrokerId(NODE_ID))
                        .with_host(host.clone())
                        .with_port(port)
                        .with_error_code(code)
                })
                .collect();
        } else {
            response.error_code = code;
            response.node_id = BrokerId(NODE_ID);
            response.host = host;
            response.port = port;
        }
        Answer::Now(Response::FindCoordinator(response))
    }

    pub(super) fn join(
        self: &Arc<Self>,
        peer: SocketAddr,
        client_id: Option<String>,
        version: i16,
        request: JoinGroupRequest,
    ) -> Answer {
        if request.group_id.0.is_empty() {
            return Answer::Now(join_response(
                version,
                error_joined(error::INVALID_GROUP_ID, &request.member_id),
            ));
        }
        let join = Join {
            group: request.group_id.0.to_string(),
            member_id: request.member_id.to_string(),
            instance_id: request.group_instance_id.map(|i| i.to_string()),
            client_id: client_id.unwrap_or_default(),
            client_host: format!("/{}", peer.ip()),
            session_timeout_ms: request.session_timeout_ms,
            // v0 has no rebalance timeout: the session timeout stands for it.
            rebalance_timeout_ms: if version >= 1 {
                request.rebalance_timeout_ms
            } else {
                request.session_timeout_ms
            },
            protocol_type: request.protocol_type.to_string(),
            protocols: request
                .protocols
                .into_iter()
                .map(|p| (p.name.to_string(), p.metadata))
                .collect(),
            requires_known_member_id: version >= 4,
        };
        let (token, answer) = self.park();
        let now = {
            let mut coordinator = self.coordinator.lock();
            let now = coordinator.join(now_millis(), token, join);
            self.deliver(&mut coordinator);
            now
        };
        if let Some(joined) = now {
            self.parked.lock().remove(&token);
            return Answer::Now(join_response(version, joined));
        }
        Answer::Later(Box::pin(async move {
            let joined = match answer.await {
                Ok(Ready::Join(joined)) => joined,
                _ => error_joined(error::UNKNOWN_MEMBER_ID, ""),
            };
            join_response(version, joined)
        }))
    }

    pub(super) fn sync(self: &Arc<Self>, version: i16, request: SyncGroupRequest) -> Answer {
        let (token, answer) = self.park();
        let now = {
            let mut coordinator = self.coordinator.lock();
            let now = coordinator.sync(
                now_millis(),
                token,
                &request.group_id.0,
                &request.member_id,
                request.group_instance_id.as_deref(),
                request.generation_id,
                (
                    request.protocol_type.as_deref(),
                    request.protocol_name.as_deref(),
                ),
                request
                    .assignments
                    .into_iter()
                    .map(|a| (a.member_id.to_string(), a.assignment))
                    .collect(),
            );
            self.deliver(&mut coordinator);
            now
        };
        if let Some(synced) = now {
            self.parked.lock().remove(&token);
            return Answer::Now(sync_response(version, synced));
        }
        Answer::Later(Box::pin(async move {
            let synced = match answer.await {
                Ok(Ready::Sync(synced)) => synced,
                _ => Synced {
                    error: error::UNKNOWN_MEMBER_ID,
                    ..Synced::default()
                },
            };
            sync_response(version, synced)
        }))
    }

    pub(super) fn heartbeat(&self, request: HeartbeatRequest) -> Answer {
        let code = self.coordinator.lock().heartbeat(
            now_millis(),
            &request.group_id.0,
            &request.member_id,
            request.group_instance_id.as_deref(),
            request.generation_id,
        );
        let mut response = HeartbeatResponse::default();
        response.error_code = code;
        Answer::Now(Response::Heartbeat(response))
    }

    pub(super) fn leave(&self, version: i16, request: LeaveGroupRequest) -> Answer {
        let leaving: Vec<(String, Option<String>)> = if version >= 3 {
            request
                .members
                .iter()
                .map(|m| {
                    (
                        m.member_id.to_string(),
                        m.group_instance_id.as_ref().map(|i| i.to_string()),
                    )
                })
                .collect()
        } else {
            vec![(request.member_id.to_string(), None)]
        };
        let codes = {
            let mut coordinator = self.coordinator.lock();
            let codes = coordinator.leave(now_millis(), &request.group_id.0, &leaving);
            self.deliver(&mut coordinator);
            codes
        };
        let mut response = LeaveGroupResponse::default();
        if version >= 3 {
            response.members = leaving
                .into_iter()
                .zip(&codes)
                .map(|((member_id, instance_id), code)| {
                    MemberResponse::default()
                        .with_member_id(text(&member_id))
                        .with_group_instance_id(instance_id.map(|i| text(&i)))
                        .with_error_code(*code)
                })
                .collect();
        } else {
            response.error_code = codes.first().copied().unwrap_or(error::NONE);
        }
        Answer::Now(Response::LeaveGroup(response))
    }

    pub(super) fn commit(
        self: &Arc<Self>,
        state: &BrokerState,
        request: OffsetCommitRequest,
    ) -> Answer {
        let group = request.group_id.0.to_string();
        let allowed = self.coordinator.lock().commit_check(
            &group,
            &request.member_id,
            request.group_instance_id.as_deref(),
            request.generation_id_or_member_epoch,
        );
        let now = now_millis();
        let mut to_store = Vec::new();
        let topics: Vec<OffsetCommitResponseTopic> = request
            .topics
            .into_iter()
            .map(|topic| {
                let name = topic.name.0.to_string();
                let count = state.topics.get(&name).map_or(0, |c| partitions(&c));
                let answered = topic
                    .partitions
                    .into_iter()
                    .map(|p| {
                        let metadata = p
                            .committed_metadata
                            .map(|m| m.to_string())
                            .unwrap_or_default();
                        let code = match allowed {
                            Err(code) => code,
                            Ok(()) if !(0..count).contains(&p.partition_index) => {
                                error::UNKNOWN_TOPIC_OR_PARTITION
                            }
                            Ok(()) if metadata.len() > MAX_METADATA => {
                                error::OFFSET_METADATA_TOO_LARGE
                            }
                            Ok(()) => {
                                to_store.push((
                                    name.clone(),
                                    p.partition_index,
                                    Committed {
                                        offset: p.committed_offset,
                                        leader_epoch: p.committed_leader_epoch,
                                        metadata,
                                        commit_timestamp: now,
                                    },
                                ));
                                error::NONE
                            }
                        };
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(code)
                    })
                    .collect();
                OffsetCommitResponseTopic::default()
                    .with_name(topic.name)
                    .with_partitions(answered)
            })
            .collect();
        let respond = |topics| {
            let mut response = OffsetCommitResponse::default();
            response.topics = topics;
            Response::OffsetCommit(response)
        };
        if to_store.is_empty() {
            return Answer::Now(respond(topics));
        }
        let groups = self.clone();
        Answer::Later(Box::pin(async move {
            let mut topics = topics;
            if !groups.offsets.commit(&group, to_store).await {
                // Not on disk in time: the client commits again.
                for partition in topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                    if partition.error_code == error::NONE {
                        partition.error_code = error::REQUEST_TIMED_OUT;
                    }
                }
            }
            respond(topics)
        }))
    }

    /// One group's committed offsets for `topics` (`None`: every partition it committed).
    fn fetched(&self, group: &str, topics: Option<Vec<(TopicName, Vec<i32>)>>) -> FetchedTopics {
        match topics {
            Some(topics) => topics
                .into_iter()
                .map(|(name, partitions)| {
                    let found = partitions
                        .into_iter()
                        .map(|p| (p, self.offsets.get(group, &name.0, p)))
                        .collect();
                    (name, found)
                })
                .collect(),
            None => {
                let mut by_topic: FetchedTopics = Vec::new();
                for (topic, partition, committed) in self.offsets.partitions(group) {
                    match by_topic.iter_mut().find(|(name, _)| *name.0 == *topic) {
                        Some((_, list)) => list.push((partition, Some(committed))),
                        None => by_topic
                            .push((TopicName(text(&topic)), vec![(partition, Some(committed))])),
                    }
                }
                by_topic
            }
        }
    }

    pub(super) fn offset_fetch(&self, version: i16, request: OffsetFetchRequest) -> Answer {
        // Uncommitted: offset -1 and empty metadata, no error (also for an unknown group).
        let values = |c: Option<Committed>| match c {
            Some(c) => (c.offset, c.leader_epoch, c.metadata),
            None => (-1, -1, String::new()),
        };
        let mut response = OffsetFetchResponse::default();
        if version >= 8 {
            response.groups = request
                .groups
                .into_iter()
                .map(|group| {
                    let topics = group.topics.map(|topics| {
                        topics
                            .into_iter()
                            .map(|t| (t.name, t.partition_indexes))
                            .collect()
                    });
                    let found = self.fetched(&group.group_id.0, topics);
                    OffsetFetchResponseGroup::default()
                        .with_group_id(group.group_id)
                        .with_topics(
                            found
                                .into_iter()
                                .map(|(name, partitions)| {
                                    OffsetFetchResponseTopics::default()
                                        .with_name(name)
                                        .with_partitions(
                                            partitions
                                                .into_iter()
                                                .map(|(p, c)| {
                                                    let (offset, epoch, metadata) = values(c);
                                                    OffsetFetchResponsePartitions::default()
                                                        .with_partition_index(p)
                                                        .with_committed_offset(offset)
                                                        .with_committed_leader_epoch(epoch)
                                                        .with_metadata(Some(text(&metadata)))
                                                })
                                                .collect(),
                                        )
                                })
                                .collect(),
                        )
                })
                .collect();
        } else {
            let topics = request.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| (t.name, t.partition_indexes))
                    .collect()
            });
            response.topics = self
                .fetched(&request.group_id.0, topics)
                .into_iter()
                .map(|(name, partitions)| {
                    OffsetFetchResponseTopic::default()
                        .with_name(name)
                        .with_partitions(
                            partitions
                                .into_iter()
                                .map(|(p, c)| {
                                    let (offset, epoch, metadata) = values(c);
                                    OffsetFetchResponsePartition::default()
                                        .with_partition_index(p)
                                        .with_committed_offset(offset)
                                        .with_committed_leader_epoch(epoch)
                                        .with_metadata(Some(text(&metadata)))
                                })
                                .collect(),
                        )
                })
                .collect();
        }
        Answer::Now(Response::OffsetFetch(response))
    }

    pub(super) fn describe(&self, request: DescribeGroupsRequest) -> Answer {
        let coordinator = self.coordinator.lock();
        let groups = request
            .groups
            .into_iter()
            .map(|name| {
                let described = DescribedGroup::default()
                    .with_group_id(name.clone())
                    .with_authorized_operations(i32::MIN);
                match coordinator.describe(&name.0) {
                    Some(view) => described
                        .with_group_state(text(view.state.name()))
                        .with_protocol_type(text(&view.protocol_type))
                        .with_protocol_data(text(&view.protocol))
                        .with_members(
                            view.members
                                .into_iter()
                                .map(|m| {
                                    DescribedGroupMember::default()
                                        .with_member_id(text(&m.member_id))
                                        .with_group_instance_id(m.instance_id.map(|i| text(&i)))
                                        .with_client_id(text(&m.client_id))
                                        .with_client_host(text(&m.client_host))
                                        .with_member_metadata(m.metadata)
                                        .with_member_assignment(m.assignment)
                                })
                                .collect(),
                        ),
                    // As Kafka: a group with only committed offsets is Empty, an unknown one Dead.
                    None if self.offsets.groups().iter().any(|g| *g == *name.0) => {
                        described.with_group_state(text(State::Empty.name()))
                    }
                    None => described.with_group_state(StrBytes::from_static_str("Dead")),
                }
            })
            .collect();
        let mut response = DescribeGroupsResponse::default();
        response.groups = groups;
        Answer::Now(Response::DescribeGroups(response))
    }

    pub(super) fn list(&self, request: ListGroupsRequest) -> Answer {
        let mut listed: Vec<(String, String, String)> = self
            .coordinator
            .lock()
            .list()
            .into_iter()
            .map(|(name, state, protocol_type)| (name, state.name().to_string(), protocol_type))
            .collect();
        for group in self.offsets.groups() {
            if !listed.iter().any(|(name, _, _)| *name == group) {
                listed.push((group, State::Empty.name().to_string(), String::new()));
            }
        }
        let wanted = |state: &str| {
            request.states_filter.is_empty()
                || request
                    .states_filter
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(state))
        };
        let mut response = ListGroupsResponse::default();
        response.groups = listed
            .into_iter()
            .filter(|(_, state, _)| wanted(state))
            .map(|(name, state, protocol_type)| {
                ListedGroup::default()
                    .with_group_id(GroupId(text(&name)))
                    .with_protocol_type(text(&protocol_type))
                    .with_group_state(text(&state))
            })
            .collect();
        Answer::Now(Response::ListGroups(response))
    }
}

fn error_joined(code: i16, member_id: &str) -> Joined {
    Joined {
        error: code,
        generation: -1,
        member_id: member_id.to_string(),
        ..Joined::default()
    }
}

fn join_response(version: i16, joined: Joined) -> Response {
    let mut response = JoinGroupResponse::default();
    response.error_code = joined.error;
    response.generation_id = joined.generation;
    // Before v7 the protocol name is not nullable and there is no protocol type.
    response.protocol_type = if version >= 7 {
        joined.protocol_type.map(|t| text(&t))
    } else {
        None
    };
    response.protocol_name = match joined.protocol_name {
        Some(name) => Some(text(&name)),
        None if version >= 7 => None,
        None => Some(StrBytes::default()),
    };
    response.leader = text(&joined.leader);
    response.member_id = text(&joined.member_id);
    response.members = joined
        .members
        .into_iter()
        .map(|(id, instance, metadata)| {
            JoinGroupResponseMember::default()
                .with_member_id(text(&id))
                .with_group_instance_id(instance.map(|i| text(&i)))
                .with_metadata(metadata)
        })
        .collect();
    Response::JoinGroup(response)
}

fn sync_response(version: i16, synced: Synced) -> Response {
    let mut response = SyncGroupResponse::default();
    response.error_code = synced.error;
    if version >= 5 {
        response.protocol_type = synced.protocol_type.map(|t| text(&t));
        response.protocol_name = synced.protocol_name.map(|n| text(&n));
    }
    response.assignment = if synced.error == error::NONE {
        synced.assignment
    } else {
        Bytes::new()
    };
    Response::SyncGroup(response)
}
