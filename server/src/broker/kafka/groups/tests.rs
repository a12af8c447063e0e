use super::*;

const SESSION: i32 = 10_000;
const REBALANCE: i32 = 30_000;

fn join(group: &str, member: &str, protocols: &[&str]) -> Join {
    Join {
        group: group.into(),
        member_id: member.into(),
        instance_id: None,
        client_id: "consumer".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: SESSION,
        rebalance_timeout_ms: REBALANCE,
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|p| (p.to_string(), Bytes::from(format!("meta-{p}"))))
            .collect(),
        requires_known_member_id: true,
    }
}

/// A member id as MEMBER_ID_REQUIRED hands it out.
fn member_id(c: &mut Coordinator, now: i64, group: &str) -> String {
    let answer = c.join(now, 0, join(group, "", &["range"])).unwrap();
    assert_eq!(answer.error, error::MEMBER_ID_REQUIRED);
    answer.member_id
}

fn joined(ready: &[(Token, Ready)], token: Token) -> &Joined {
    ready
        .iter()
        .find_map(|(t, r)| match r {
            Ready::Join(j) if *t == token => Some(j),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no join answer for {token}: {ready:?}"))
}

fn synced(ready: &[(Token, Ready)], token: Token) -> &Synced {
    ready
        .iter()
        .find_map(|(t, r)| match r {
            Ready::Sync(s) if *t == token => Some(s),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no sync answer for {token}: {ready:?}"))
}

#[test]
fn two_members_join_after_the_initial_delay_and_sync_the_leaders_assignment() {
    let mut c = Coordinator::default();
    let a = member_id(&mut c, 0, "g");
    let b = member_id(&mut c, 0, "g");
    assert_ne!(a, b);
    assert!(c.join(10, 1, join("g", &a, &["range", "sticky"])).is_none());
    assert!(c.join(20, 2, join("g", &b, &["sticky", "range"])).is_none());
    // Parked through the initial delay, which the second join extended.
    c.tick(INITIAL_REBALANCE_DELAY_MS);
    assert!(c.take_ready().is_empty());
    c.tick(20 + INITIAL_REBALANCE_DELAY_MS);
    let ready = c.take_ready();
    let (ja, jb) = (joined(&ready, 1), joined(&ready, 2));
    assert_eq!((ja.generation, jb.generation), (1, 1));
    // One vote each: the first candidate in the first member's order wins the tie.
    assert_eq!(ja.protocol_name.as_deref(), Some("range"));
    assert_eq!(ja.leader, a);
    assert_eq!(ja.members.len(), 2, "the leader sees the members");
    assert_eq!(ja.members[1].2, Bytes::from_static(b"meta-range"));
    assert!(jb.members.is_empty());
    assert_eq!(c.describe("g").unwrap().state, State::CompletingRebalance);

    // The follower waits for the leader's assignments.
    let now = 5000;
    assert!(c
        .sync(
            now,
            3,
            "g",
            &b,
            None,
            1,
            (Some("consumer"), Some("range")),
            vec![]
        )
        .is_none());
    assert!(c.take_ready().is_empty());
    let assignments = vec![
        (a.clone(), Bytes::from_static(b"A")),
        (b.clone(), Bytes::from_static(b"B")),
    ];
    assert!(c
        .sync(now, 4, "g", &a, None, 1, (None, None), assignments)
        .is_none());
    let ready = c.take_ready();
    assert_eq!(synced(&ready, 3).assignment, Bytes::from_static(b"B"));
    assert_eq!(synced(&ready, 4).assignment, Bytes::from_static(b"A"));
    assert_eq!(c.describe("g").unwrap().state, State::Stable);
    assert_eq!(c.heartbeat(now, "g", &b, None, 1), error::NONE);
    assert_eq!(
        c.heartbeat(now, "g", &b, None, 0),
        error::ILLEGAL_GENERATION
    );
    assert_eq!(
        c.heartbeat(now, "g", "nobody", None, 1),
        error::UNKNOWN_MEMBER_ID
    );
    assert_eq!(c.commit_check("g", &a, None, 1), Ok(()));
    assert_eq!(
        c.commit_check("g", "", None, -1),
        Err(error::UNKNOWN_MEMBER_ID)
    );
}

/// A group of `a` (leader) and `b`, stable at generation 1, at time 5000.
fn stable_pair(c: &mut Coordinator) -> (String, String) {
    let a = member_id(c, 0, "g");
    let b = member_id(c, 0, "g");
    c.join(0, 1, join("g", &a, &["range"]));
    c.join(0, 2, join("g", &b, &["range"]));
    c.tick(INITIAL_REBALANCE_DELAY_MS);
    c.take_ready();
    c.sync(4000, 3, "g", &b, None, 1, (None, None), vec![]);
    c.sync(4000, 4, "g", &a, None, 1, (None, None), vec![]);
    c.take_ready();
    (a, b)
}

#[test]
fn a_leaving_member_rebalances_the_rest_and_heartbeats_say_so() {
    let mut c = Coordinator::default();
    let (a, b) = stable_pair(&mut c);
    assert_eq!(c.leave(5000, "g", &[(b.clone(), None)]), vec![error::NONE]);
    assert_eq!(
        c.heartbeat(5000, "g", &a, None, 1),
        error::REBALANCE_IN_PROGRESS
    );
    // Commits are still accepted while the rebalance prepares.
    assert_eq!(c.commit_check("g", &a, None, 1), Ok(()));
    // Only `a` is left: its rejoin completes the rebalance at once (no initial delay).
    assert!(c.join(5100, 5, join("g", &a, &["range"])).is_none());
    let ready = c.take_ready();
    assert_eq!(joined(&ready, 5).generation, 2);
    assert_eq!(
        c.leave(5200, "g", &[(b, None)]),
        vec![error::UNKNOWN_MEMBER_ID]
    );
}

#[test]
fn a_silent_member_is_removed_and_one_that_does_not_rejoin_too() {
    let mut c = Coordinator::default();
    let (a, b) = stable_pair(&mut c);
    // `a` heartbeats, `b` falls silent.
    for now in (5000..16_000).step_by(3000) {
        c.heartbeat(now, "g", &a, None, 1);
        c.tick(now);
    }
    c.tick(16_000);
    assert_eq!(
        c.heartbeat(16_000, "g", &b, None, 1),
        error::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        c.heartbeat(16_000, "g", &a, None, 1),
        error::REBALANCE_IN_PROGRESS
    );
    // `a` never rejoins: at the rebalance timeout the group empties.
    c.tick(16_000 + i64::from(REBALANCE) + 1);
    assert!(c.describe("g").is_none(), "an empty group is dropped");
    assert_eq!(c.commit_check("g", "", None, -1), Ok(()));
}

#[test]
fn bad_joins_are_refused() {
    let mut c = Coordinator::default();
    let mut short = join("g", "", &["range"]);
    short.session_timeout_ms = 10;
    assert_eq!(
        c.join(0, 1, short).unwrap().error,
        error::INVALID_SESSION_TIMEOUT
    );
    assert_eq!(
        c.join(0, 1, join("g", "made-up", &["range"]))
            .unwrap()
            .error,
        error::UNKNOWN_MEMBER_ID
    );
    stable_pair(&mut c);
    let other = member_id(&mut c, 6000, "g");
    assert_eq!(
        c.join(6000, 9, join("g", &other, &["roundrobin"]))
            .unwrap()
            .error,
        error::INCONSISTENT_GROUP_PROTOCOL
    );
    assert_eq!(
        c.sync(6000, 9, "nope", "x", None, 1, (None, None), vec![])
            .unwrap()
            .error,
        error::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn a_static_member_comes_back_without_a_rebalance() {
    let mut c = Coordinator::default();
    let mut first = join("s", "", &["range"]);
    first.instance_id = Some("instance-1".into());
    // Static members get no MEMBER_ID_REQUIRED.
    assert!(c.join(0, 1, first.clone()).is_none());
    let mut leader = join("s", "", &["range"]);
    leader.instance_id = Some("instance-0".into());
    // (joins after, so instance-1 leads)
    assert!(c.join(0, 2, leader).is_none());
    c.tick(INITIAL_REBALANCE_DELAY_MS);
    let ready = c.take_ready();
    let old_id = joined(&ready, 1).member_id.clone();
    let other = joined(&ready, 2).member_id.clone();
    assert_eq!(joined(&ready, 1).leader, old_id);
    c.sync(
        4000,
        3,
        "s",
        &old_id,
        Some("instance-1"),
        1,
        (None, None),
        vec![
            (old_id.clone(), Bytes::from_static(b"one")),
            (other.clone(), Bytes::from_static(b"zero")),
        ],
    );
    c.sync(
        4000,
        4,
        "s",
        &other,
        Some("instance-0"),
        1,
        (None, None),
        vec![],
    );
    c.take_ready();
    // instance-0 restarts (no member id): same generation at once, no rebalance.
    let mut back = join("s", "", &["range"]);
    back.instance_id = Some("instance-0".into());
    let answer = c.join(5000, 5, back).expect("answered at once");
    assert_eq!((answer.error, answer.generation), (error::NONE, 1));
    assert_ne!(answer.member_id, other);
    assert_eq!(c.describe("s").unwrap().state, State::Stable);
    // The old id is fenced.
    assert_eq!(
        c.heartbeat(5000, "s", &other, Some("instance-0"), 1),
        error::FENCED_INSTANCE_ID
    );
    assert_eq!(
        c.heartbeat(5000, "s", &answer.member_id, Some("instance-0"), 1),
        error::NONE
    );
}
