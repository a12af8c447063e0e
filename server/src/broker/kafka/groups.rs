//! Kafka's classic consumer groups as a state machine with no I/O and no clock of its own: the
//! handlers feed it requests with the current time, a timer feeds it [`Coordinator::tick`], and
//! what it decides to answer to requests it parked comes out of [`Coordinator::take_ready`] (the
//! shape of raft-rs's `RawNode` and `Ready`). Unit tests drive it with chosen times.
//!
//! A group goes Empty → PreparingRebalance → CompletingRebalance → Stable, as Kafka's
//! `GroupCoordinator`:
//!
//! - **JoinGroup** parks until every known member has rejoined or the largest rebalance timeout
//!   passes (members that did not rejoin are then removed); a new group first waits
//!   [`INITIAL_REBALANCE_DELAY_MS`] (Kafka's `group.initial.rebalance.delay.ms`), longer with each
//!   new member, so that members starting together land in one generation. A dynamic member
//!   without an id (v4+) gets MEMBER_ID_REQUIRED and an id to rejoin with. The generation then
//!   grows by one, the protocol is chosen by vote among those every member supports, and only the
//!   leader's answer lists the members.
//! - **SyncGroup** parks until the leader sends the assignments; each member then gets its own.
//! - **Heartbeat** says REBALANCE_IN_PROGRESS while a rebalance prepares, so members rejoin; a
//!   member silent for its session timeout is removed and the group rebalances.
//! - **Static members** (`group.instance.id`) keep their place across restarts: a rejoin with a
//!   known instance id takes over the old member id's place without a rebalance when the group is
//!   stable and the member is not the leader; the old id is then fenced.
//!
//! Offsets are not kept here (see `offsets`); [`Coordinator::commit_check`] says whether a commit
//! may be stored.

use std::collections::HashMap;

use bytes::Bytes;
use skiff_protocol::kafka::error;

/// Kafka's `group.initial.rebalance.delay.ms` default.
pub(super) const INITIAL_REBALANCE_DELAY_MS: i64 = 3000;
/// Kafka's `group.min.session.timeout.ms` and `group.max.session.timeout.ms` defaults.
const SESSION_TIMEOUT_RANGE_MS: std::ops::RangeInclusive<i32> = 6_000..=1_800_000;

/// Identifies a parked request; its answer comes out of [`Coordinator::take_ready`].
pub(super) type Token = u64;

/// A group's state, with Kafka's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl State {
    pub(super) fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
        }
    }
}

/// A JoinGroup request.
#[derive(Debug, Clone)]
pub(super) struct Join {
    pub group: String,
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    /// (name, metadata), in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// From v4 a dynamic member without an id is told MEMBER_ID_REQUIRED.
    pub requires_known_member_id: bool,
}

/// A JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Joined {
    pub error: i16,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// The leader's answer only: (member id, instance id, metadata of the chosen protocol).
    pub members: Vec<(String, Option<String>, Bytes)>,
}

/// A SyncGroup answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Synced {
    pub error: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

/// An answer to a parked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ready {
    Join(Joined),
    Sync(Synced),
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub(super) struct MemberView {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Bytes,
    pub assignment: Bytes,
}

/// A group as DescribeGroups and ListGroups show it.
#[derive(Debug, Clone)]
pub(super) struct GroupView {
    pub state: State,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<MemberView>,
}

#[derive(Debug)]
struct Member {
    id: String,
    instance_id: Option<String>,
    client_id: String,
    client_host: String,
    session_timeout_ms: i64,
    rebalance_timeout_ms: i64,
    protocols: Vec<(String, Bytes)>,
    assignment: Bytes,
    awaiting_join: Option<Token>,
    awaiting_sync: Option<Token>,
    last_heartbeat_ms: i64,
}

impl Member {
    fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, metadata)| metadata.clone())
            .unwrap_or_default()
    }
}

#[derive(Debug)]
struct Group {
    state: State,
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    /// In joining order (the first is leader when the leader left).
    members: Vec<Member>,
    /// Ids handed out with MEMBER_ID_REQUIRED, by when they must rejoin.
    pending: HashMap<String, i64>,
    /// When a preparing rebalance completes at the latest.
    rebalance_deadline_ms: i64,
    /// A new group's first rebalance does not complete before this.
    initial_delay_until_ms: i64,
}

impl Group {
    fn new() -> Self {
        Group {
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: Vec::new(),
            pending: HashMap::new(),
            rebalance_deadline_ms: 0,
            initial_delay_until_ms: 0,
        }
    }

    fn member(&self, id: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.id == id)
    }

    fn member_mut(&mut self, id: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.id == id)
    }

    fn by_instance(&self, instance: &str) -> Option<&Member> {
        self.members
            .iter()
            .find(|m| m.instance_id.as_deref() == Some(instance))
    }

    /// Names every member supports, in the first member's order.
    fn candidates(&self) -> Vec<String> {
        let Some(first) = self.members.first() else {
            return Vec::new();
        };
        first
            .protocols
            .iter()
            .map(|(name, _)| name.clone())
            .filter(|name| {
                self.members
                    .iter()
                    .all(|m| m.protocols.iter().any(|(n, _)| n == name))
            })
            .collect()
    }

    /// Whether a joining member's protocols fit the group's.
    fn accepts(&self, join: &Join) -> bool {
        if join.protocols.is_empty() || join.protocol_type.is_empty() {
            return false;
        }
        if self.members.is_empty() {
            return true;
        }
        if self.protocol_type.as_deref() != Some(join.protocol_type.as_str()) {
            return false;
        }
        let candidates = self.candidates();
        join.protocols
            .iter()
            .any(|(name, _)| candidates.contains(name))
    }

    /// The protocol most members prefer among those all support (Kafka's vote).
    fn vote(&self) -> Option<String> {
        let candidates = self.candidates();
        let mut votes: Vec<(String, usize)> = candidates.iter().map(|c| (c.clone(), 0)).collect();
        for member in &self.members {
            if let Some((name, _)) = member
                .protocols
                .iter()
                .find(|(name, _)| candidates.contains(name))
            {
                if let Some(entry) = votes.iter_mut().find(|(c, _)| c == name) {
                    entry.1 += 1;
                }
            }
        }
        let best = votes.iter().map(|(_, n)| *n).max()?;
        votes.into_iter().find(|(_, n)| *n == best).map(|(c, _)| c)
    }

    fn all_joined(&self) -> bool {
        self.pending.is_empty() && self.members.iter().all(|m| m.awaiting_join.is_some())
    }
}

/// Every group of the broker's Kafka listener.
#[derive(Default)]
pub(super) struct Coordinator {
    groups: HashMap<String, Group>,
    ready: Vec<(Token, Ready)>,
    next_member: u64,
}

fn join_error(code: i16, member_id: &str) -> Joined {
    Joined {
        error: code,
        generation: -1,
        member_id: member_id.to_string(),
        ..Joined::default()
    }
}

fn sync_error(code: i16) -> Synced {
    Synced {
        error: code,
        ..Synced::default()
    }
}

impl Coordinator {
    /// Answers to parked requests decided since the last call.
    pub(super) fn take_ready(&mut self) -> Vec<(Token, Ready)> {
        std::mem::take(&mut self.ready)
    }

    fn new_member_id(&mut self, client_id: &str, now_ms: i64) -> String {
        self.next_member += 1;
        // Unique in the process (counter) and across restarts (time).
        format!("{client_id}-{now_ms:x}-{:08x}", self.next_member)
    }

    /// JoinGroup: `Some` answers now; `None` parked it under `token`.
    pub(super) fn join(&mut self, now_ms: i64, token: Token, join: Join) -> Option<Joined> {
        if !SESSION_TIMEOUT_RANGE_MS.contains(&join.session_timeout_ms) {
            return Some(join_error(error::INVALID_SESSION_TIMEOUT, &join.member_id));
        }
        let new_id =
            (join.member_id.is_empty()).then(|| self.new_member_id(&join.client_id, now_ms));
        let group = self
            .groups
            .entry(join.group.clone())
            .or_insert_with(Group::new);
        if !group.accepts(&join) {
            return Some(join_error(
                error::INCONSISTENT_GROUP_PROTOCOL,
                &join.member_id,
            ));
        }
        let member_id = match new_id {
            None => join.member_id.clone(),
            Some(new_id) => {
                if let Some(instance) = &join.instance_id {
                    if let Some(old) = group.by_instance(instance).map(|m| m.id.clone()) {
                        return self.rejoin_static(now_ms, token, join, old, new_id);
                    }
                } else if join.requires_known_member_id {
                    let deadline = now_ms + i64::from(join.session_timeout_ms);
                    group.pending.insert(new_id.clone(), deadline);
                    return Some(join_error(error::MEMBER_ID_REQUIRED, &new_id));
                }
                new_id
            }
        };
        let known = group.member(&member_id).is_some();
        if !known && group.pending.remove(&member_id).is_none() && join.member_id == member_id {
            return Some(join_error(error::UNKNOWN_MEMBER_ID, &member_id));
        }
        if let (Some(instance), Some(member)) = (&join.instance_id, group.member(&member_id)) {
            if member.instance_id.as_deref() != Some(instance) {
                return Some(join_error(error::FENCED_INSTANCE_ID, &member_id));
            }
        }
        if known {
            let unchanged = {
                let member = group.member(&member_id).expect("known");
                member.protocols == join.protocols
            };
            // A member that rejoins with nothing new while the leader assigns: the current
            // generation, without another rebalance (Kafka's `doJoinGroup`).
            if group.state == State::CompletingRebalance && unchanged {
                let member = group.member(&member_id).expect("known");
                let is_leader = group.leader.as_deref() == Some(member_id.as_str());
                return Some(Self::joined(group, member, is_leader));
            }
            let member = group.member_mut(&member_id).expect("known");
            member.protocols = join.protocols;
            member.session_timeout_ms = i64::from(join.session_timeout_ms);
            member.rebalance_timeout_ms = i64::from(join.rebalance_timeout_ms);
            member.awaiting_join = Some(token);
        } else {
            group.members.push(Member {
                id: member_id,
                instance_id: join.instance_id,
                client_id: join.client_id,
                client_host: join.client_host,
                session_timeout_ms: i64::from(join.session_timeout_ms),
                rebalance_timeout_ms: i64::from(join.rebalance_timeout_ms),
                protocols: join.protocols,
                assignment: Bytes::new(),
                awaiting_join: Some(token),
                awaiting_sync: None,
                last_heartbeat_ms: now_ms,
            });
        }
        if group.protocol_type.is_none() {
            group.protocol_type = Some(join.protocol_type);
        }
        let group_name = join.group;
        self.prepare_rebalance(&group_name, now_ms);
        self.try_complete_join(&group_name, now_ms);
        None
    }

    /// A static member rejoining under a new member id.
    fn rejoin_static(
        &mut self,
        now_ms: i64,
        token: Token,
        join: Join,
        old: String,
        new_id: String,
    ) -> Option<Joined> {
        let group = self.groups.get_mut(&join.group).expect("joined above");
        let was_leader = group.leader.as_deref() == Some(old.as_str());
        let member = group.member_mut(&old).expect("found by instance");
        let unchanged = member.protocols == join.protocols;
        member.id = new_id.clone();
        member.last_heartbeat_ms = now_ms;
        if let Some(parked) = member.awaiting_join.take() {
            self.ready.push((
                parked,
                Ready::Join(join_error(error::FENCED_INSTANCE_ID, &old)),
            ));
        }
        let member = group.member_mut(&new_id).expect("renamed");
        if let Some(parked) = member.awaiting_sync.take() {
            self.ready
                .push((parked, Ready::Sync(sync_error(error::FENCED_INSTANCE_ID))));
        }
        if group.state == State::Stable && unchanged && !was_leader {
            let member = group.member(&new_id).expect("renamed");
            return Some(Self::joined(group, member, false));
        }
        if was_leader {
            group.leader = Some(new_id.clone());
        }
        let member = group.member_mut(&new_id).expect("renamed");
        member.protocols = join.protocols;
        member.awaiting_join = Some(token);
        self.prepare_rebalance(&join.group, now_ms);
        self.try_complete_join(&join.group, now_ms);
        None
    }

    fn joined(group: &Group, member: &Member, is_leader: bool) -> Joined {
        let protocol = group.protocol.clone().unwrap_or_default();
        Joined {
            error: error::NONE,
            generation: group.generation,
            protocol_type: group.protocol_type.clone(),
            protocol_name: group.protocol.clone(),
            leader: group.leader.clone().unwrap_or_default(),
            member_id: member.id.clone(),
            members: if is_leader {
                group
                    .members
                    .iter()
                    .map(|m| (m.id.clone(), m.instance_id.clone(), m.metadata(&protocol)))
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    /// Moves a group to PreparingRebalance (parked syncs learn of it).
    fn prepare_rebalance(&mut self, group_name: &str, now_ms: i64) {
        let Some(group) = self.groups.get_mut(group_name) else {
            return;
        };
        if group.state == State::PreparingRebalance {
            if now_ms < group.initial_delay_until_ms {
                // Each member joining a new group extends its first wait, within the timeout.
                group.initial_delay_until_ms =
                    (now_ms + INITIAL_REBALANCE_DELAY_MS).min(group.rebalance_deadline_ms);
            }
            return;
        }
        let timeout = group
            .members
            .iter()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0);
        if group.state == State::Empty {
            group.initial_delay_until_ms = now_ms + INITIAL_REBALANCE_DELAY_MS.min(timeout);
        }
        group.rebalance_deadline_ms = now_ms + timeout;
        for member in &mut group.members {
            member.assignment = Bytes::new();
            if let Some(parked) = member.awaiting_sync.take() {
                self.ready.push((
                    parked,
                    Ready::Sync(sync_error(error::REBALANCE_IN_PROGRESS)),
                ));
            }
        }
        group.state = State::PreparingRebalance;
    }

    fn try_complete_join(&mut self, group_name: &str, now_ms: i64) {
        let Some(group) = self.groups.get_mut(group_name) else {
            return;
        };
        if group.state != State::PreparingRebalance || now_ms < group.initial_delay_until_ms {
            return;
        }
        if !group.all_joined() && now_ms < group.rebalance_deadline_ms {
            return;
        }
        // Members that did not rejoin in time leave the group.
        group.members.retain(|m| m.awaiting_join.is_some());
        group.pending.clear();
        group.generation += 1;
        if group.members.is_empty() {
            group.state = State::Empty;
            group.protocol = None;
            group.protocol_type = None;
            group.leader = None;
            return;
        }
        group.protocol = group.vote();
        if group
            .leader
            .as_ref()
            .is_none_or(|leader| group.member(leader).is_none())
        {
            group.leader = group.members.first().map(|m| m.id.clone());
        }
        group.state = State::CompletingRebalance;
        let leader = group.leader.clone().unwrap_or_default();
        let answers: Vec<(Token, Joined)> = group
            .members
            .iter()
            .filter_map(|m| {
                let token = m.awaiting_join?;
                Some((token, Self::joined(group, m, m.id == leader)))
            })
            .collect();
        for member in &mut group.members {
            member.awaiting_join = None;
            member.last_heartbeat_ms = now_ms;
        }
        self.ready
            .extend(answers.into_iter().map(|(t, j)| (t, Ready::Join(j))));
    }

    /// Checks that `member_id` (and its instance id) belong to `group` at `generation`.
    fn check_member(
        group: &Group,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), i16> {
        let Some(member) = group.member(member_id) else {
            if let Some(instance) = instance_id {
                if group.by_instance(instance).is_some() {
                    return Err(error::FENCED_INSTANCE_ID);
                }
            }
            return Err(error::UNKNOWN_MEMBER_ID);
        };
        if instance_id.is_some() && member.instance_id.as_deref() != instance_id {
            return Err(error::FENCED_INSTANCE_ID);
        }
        if generation != group.generation {
            return Err(error::ILLEGAL_GENERATION);
        }
        Ok(())
    }

    /// SyncGroup: `Some` answers now; `None` parked it under `token`. `assignments` are the
    /// leader's (empty from the others).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sync(
        &mut self,
        now_ms: i64,
        token: Token,
        group_name: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol: (Option<&str>, Option<&str>),
        assignments: Vec<(String, Bytes)>,
    ) -> Option<Synced> {
        let Some(group) = self.groups.get_mut(group_name) else {
            return Some(sync_error(error::UNKNOWN_MEMBER_ID));
        };
        if let Err(code) = Self::check_member(group, member_id, instance_id, generation) {
            return Some(sync_error(code));
        }
        let (protocol_type, protocol_name) = protocol;
        if protocol_type.is_some_and(|t| Some(t) != group.protocol_type.as_deref())
            || protocol_name.is_some_and(|n| Some(n) != group.protocol.as_deref())
        {
            return Some(sync_error(error::INCONSISTENT_GROUP_PROTOCOL));
        }
        let answer = |group: &Group, member: &Member| Synced {
            error: error::NONE,
            protocol_type: group.protocol_type.clone(),
            protocol_name: group.protocol.clone(),
            assignment: member.assignment.clone(),
        };
        match group.state {
            State::Empty => Some(sync_error(error::UNKNOWN_MEMBER_ID)),
            State::PreparingRebalance => Some(sync_error(error::REBALANCE_IN_PROGRESS)),
            State::Stable => {
                let member = group.member_mut(member_id).expect("checked");
                member.last_heartbeat_ms = now_ms;
                let member = group.member(member_id).expect("checked");
                Some(answer(group, member))
            }
            State::CompletingRebalance => {
                let member = group.member_mut(member_id).expect("checked");
                member.awaiting_sync = Some(token);
                member.last_heartbeat_ms = now_ms;
                if group.leader.as_deref() != Some(member_id) {
                    return None;
                }
                for member in &mut group.members {
                    member.assignment = assignments
                        .iter()
                        .find(|(id, _)| *id == member.id)
                        .map(|(_, a)| a.clone())
                        .unwrap_or_default();
                }
                group.state = State::Stable;
                let answers: Vec<(Token, Synced)> = group
                    .members
                    .iter()
                    .filter_map(|m| Some((m.awaiting_sync?, answer(group, m))))
                    .collect();
                for member in &mut group.members {
                    member.awaiting_sync = None;
                }
                self.ready
                    .extend(answers.into_iter().map(|(t, s)| (t, Ready::Sync(s))));
                None
            }
        }
    }

    /// Heartbeat: Kafka's error code.
    pub(super) fn heartbeat(
        &mut self,
        now_ms: i64,
        group_name: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> i16 {
        let Some(group) = self.groups.get_mut(group_name) else {
            return error::UNKNOWN_MEMBER_ID;
        };
        if let Err(code) = Self::check_member(group, member_id, instance_id, generation) {
            return code;
        }
        let state = group.state;
        if let Some(member) = group.member_mut(member_id) {
            member.last_heartbeat_ms = now_ms;
        }
        match state {
            State::Empty => error::UNKNOWN_MEMBER_ID,
            State::PreparingRebalance => error::REBALANCE_IN_PROGRESS,
            State::CompletingRebalance | State::Stable => error::NONE,
        }
    }

    /// LeaveGroup of each (member id, instance id); the per-member codes.
    pub(super) fn leave(
        &mut self,
        now_ms: i64,
        group_name: &str,
        leaving: &[(String, Option<String>)],
    ) -> Vec<i16> {
        let Some(group) = self.groups.get_mut(group_name) else {
            return leaving.iter().map(|_| error::UNKNOWN_MEMBER_ID).collect();
        };
        let mut codes = Vec::with_capacity(leaving.len());
        let mut removed = false;
        for (member_id, instance_id) in leaving {
            // v3+ static members may leave by instance id alone.
            let id = match (member_id.is_empty(), instance_id) {
                (true, Some(instance)) => group.by_instance(instance).map(|m| m.id.clone()),
                _ => Some(member_id.clone()),
            };
            let found = id.as_deref().and_then(|id| group.member(id));
            let code = match found {
                None => error::UNKNOWN_MEMBER_ID,
                Some(m) if instance_id.is_some() && m.instance_id != *instance_id => {
                    error::FENCED_INSTANCE_ID
                }
                Some(_) => error::NONE,
            };
            if code == error::NONE {
                let id = id.expect("found");
                if let Some(index) = group.members.iter().position(|m| m.id == id) {
                    let member = group.members.remove(index);
                    if let Some(parked) = member.awaiting_join {
                        self.ready.push((
                            parked,
                            Ready::Join(join_error(error::UNKNOWN_MEMBER_ID, &id)),
                        ));
                    }
                    if let Some(parked) = member.awaiting_sync {
                        self.ready
                            .push((parked, Ready::Sync(sync_error(error::UNKNOWN_MEMBER_ID))));
                    }
                    removed = true;
                }
            }
            codes.push(code);
        }
        if removed {
            self.members_left(group_name, now_ms);
        }
        codes
    }

    /// After members left: rebalance, or become Empty.
    fn members_left(&mut self, group_name: &str, now_ms: i64) {
        let Some(group) = self.groups.get_mut(group_name) else {
            return;
        };
        if group.members.is_empty() && group.state != State::PreparingRebalance {
            group.state = State::Empty;
            group.generation += 1;
            group.protocol = None;
            group.protocol_type = None;
            group.leader = None;
            return;
        }
        self.prepare_rebalance(group_name, now_ms);
        self.try_complete_join(group_name, now_ms);
    }

    /// Expires silent members and pending ids, completes rebalances whose time came, and drops
    /// empty groups.
    pub(super) fn tick(&mut self, now_ms: i64) {
        let names: Vec<String> = self.groups.keys().cloned().collect();
        for name in names {
            let Some(group) = self.groups.get_mut(&name) else {
                continue;
            };
            group.pending.retain(|_, deadline| *deadline > now_ms);
            let preparing = group.state == State::PreparingRebalance;
            let expired: Vec<String> = group
                .members
                .iter()
                .filter(|m| {
                    // Waiting for its join answer, a member needs no heartbeat.
                    !(preparing && m.awaiting_join.is_some())
                        && now_ms - m.last_heartbeat_ms > m.session_timeout_ms
                })
                .map(|m| m.id.clone())
                .collect();
            if !expired.is_empty() {
                let leaving: Vec<(String, Option<String>)> =
                    expired.into_iter().map(|id| (id, None)).collect();
                self.leave(now_ms, &name, &leaving);
            }
            self.try_complete_join(&name, now_ms);
            if self
                .groups
                .get(&name)
                .is_some_and(|g| g.state == State::Empty && g.pending.is_empty())
            {
                self.groups.remove(&name);
            }
        }
    }

    /// Whether an OffsetCommit may be stored: `Err` is Kafka's code. Generation -1 with no member
    /// is a consumer that assigns partitions itself: allowed while the group has no members.
    pub(super) fn commit_check(
        &self,
        group_name: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), i16> {
        let Some(group) = self.groups.get(group_name) else {
            return if generation < 0 {
                Ok(())
            } else {
                Err(error::ILLEGAL_GENERATION)
            };
        };
        if generation < 0 && member_id.is_empty() {
            return if group.members.is_empty() {
                Ok(())
            } else {
                Err(error::UNKNOWN_MEMBER_ID)
            };
        }
        Self::check_member(group, member_id, instance_id, generation)?;
        if group.state == State::CompletingRebalance {
            return Err(error::REBALANCE_IN_PROGRESS);
        }
        Ok(())
    }

    /// The groups with members, for ListGroups: (name, state, protocol type).
    pub(super) fn list(&self) -> Vec<(String, State, String)> {
        let mut groups: Vec<_> = self
            .groups
            .iter()
            .map(|(name, g)| {
                (
                    name.clone(),
                    g.state,
                    g.protocol_type.clone().unwrap_or_default(),
                )
            })
            .collect();
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        groups
    }

    /// A group as DescribeGroups shows it; `None` for a group without members.
    pub(super) fn describe(&self, group_name: &str) -> Option<GroupView> {
        let group = self.groups.get(group_name)?;
        let protocol = group.protocol.clone().unwrap_or_default();
        let stable = group.state == State::Stable;
        Some(GroupView {
            state: group.state,
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocol: protocol.clone(),
            members: group
                .members
                .iter()
                .map(|m| MemberView {
                    member_id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: m.metadata(&protocol),
                    // As Kafka: assignments are shown once the group is stable.
                    assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Bytes::new()
                    },
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests;
