//! Orderly consumption (queue locks) and SQL92 filters, issue #7 items 4 and 5: the official
//! Java clients' scenarios (`Orderly.java`, `Sql92.java`) and raw frames for the bad input of
//! LOCK_BATCH_MQ, UNLOCK_BATCH_MQ and CHECK_CLIENT_CONFIG. Every case passes against Apache
//! RocketMQ first (`SKIFF_COMPAT_TARGET=apache`), with `enablePropertyFilter=true` on the shared
//! target and `false` on the one of `sql92_refused_when_property_filter_is_off`.

use std::time::Duration;

use serde_json::{json, Value};
use skiff_compat_tests::remoting::{empty_heartbeat, Conn};
use skiff_compat_tests::suite::{run_for_all_clients, shared_target};
use skiff_compat_tests::target::{FlushDisk, Options, Target};

const LOCK_BATCH_MQ: i32 = 41;
const UNLOCK_BATCH_MQ: i32 = 42;
const HEART_BEAT: i32 = 34;
const CHECK_CLIENT_CONFIG: i32 = 46;
const SUCCESS: i64 = 0;
const SYSTEM_ERROR: i64 = 1;
const SUBSCRIPTION_PARSE_FAILED: i64 = 23;
const WAIT: Duration = Duration::from_secs(10);

/// Per-key order over four queues and global order over one, with MessageListenerOrderly
/// consumers joining, leaving and restarting; nothing lost.
#[test]
fn orderly_per_key_and_global_across_rebalances_and_restarts() {
    run_for_all_clients(shared_target(), "orderly", &[]);
}

/// SQL92 push, pull and lite-pull consumers receive exactly the matching messages; a bad
/// expression is refused when the consumer starts.
#[test]
fn sql92_push_pull_and_lite_pull() {
    run_for_all_clients(shared_target(), "sql92", &[]);
}

/// With `enablePropertyFilter=false` (Java's default) a SQL92 consumer is refused at start.
#[test]
fn sql92_refused_when_property_filter_is_off() {
    let mut opts = Options::new(FlushDisk::Async).expect("target options");
    opts.enable_property_filter = false;
    let target = Target::start_with("sql92-off", opts).expect("start the target");
    run_for_all_clients(&target, "sql92-disabled", &[]);
    let mut conn = Conn::connect(&target.broker(), WAIT).expect("connect");
    let r = conn
        .call(CHECK_CLIENT_CONFIG, 7, &[], &check_body("a > 1"), WAIT)
        .expect("CHECK_CLIENT_CONFIG");
    assert_eq!(r.code(), SYSTEM_ERROR, "{}", r.remark());
    assert_eq!(
        r.remark(),
        "The broker does not support consumer to filter message by SQL92"
    );
}

fn check_body(sql: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "clientId": "127.0.0.1@compat",
        "group": "compat_check_group",
        "subscriptionData": {
            "classFilterMode": false, "codeSet": [], "expressionType": "SQL92",
            "subString": sql, "subVersion": 1, "tagsSet": [], "topic": "compat_check_topic",
        },
    }))
    .expect("JSON")
}

fn lock_body(group: &str, client: &str, topic: &str, queues: &[i32]) -> Vec<u8> {
    let mq_set: Vec<Value> = queues
        .iter()
        .map(|q| json!({"brokerName": "broker-a", "queueId": q, "topic": topic}))
        .collect();
    serde_json::to_vec(&json!({"clientId": client, "consumerGroup": group, "mqSet": mq_set}))
        .expect("JSON")
}

fn locked_ids(body: &[u8]) -> Vec<i64> {
    let value: Value = serde_json::from_slice(body).expect("lockOKMQSet body is JSON");
    let mut ids: Vec<i64> = value["lockOKMQSet"]
        .as_array()
        .expect("lockOKMQSet")
        .iter()
        .map(|q| q["queueId"].as_i64().expect("queueId"))
        .collect();
    ids.sort_unstable();
    ids
}

/// The broker still answers a heartbeat on a fresh connection.
fn still_serving(target: &Target) {
    let mut conn = Conn::connect(&target.broker(), WAIT).expect("connect");
    let r = conn
        .call(HEART_BEAT, 99, &[], &empty_heartbeat(), WAIT)
        .expect("heartbeat after bad input");
    assert_eq!(r.code(), SUCCESS);
    target.check_alive().expect("the broker is still running");
}

/// Locks of queues of a topic that does not exist are granted, as Java's RebalanceLockManager
/// does (it never looks at topics); one client's lock keeps others out; only the owner unlocks.
#[test]
fn locks_follow_javas_rebalance_lock_manager() {
    let target = shared_target();
    let mut conn = Conn::connect(&target.broker(), WAIT).expect("connect");
    let topic = format!("compat_no_such_topic_{}", std::process::id());
    let group = format!("compat_lock_group_{}", std::process::id());
    let r = conn
        .call(
            LOCK_BATCH_MQ,
            1,
            &[],
            &lock_body(&group, "A", &topic, &[0, 1, 7]),
            WAIT,
        )
        .expect("lock");
    assert_eq!(r.code(), SUCCESS, "{}", r.remark());
    assert_eq!(locked_ids(&r.body), [0, 1, 7]);
    let r = conn
        .call(
            LOCK_BATCH_MQ,
            2,
            &[],
            &lock_body(&group, "B", &topic, &[1, 2]),
            WAIT,
        )
        .expect("lock by another client");
    assert_eq!(locked_ids(&r.body), [2]);
    // Not the owner: nothing released.
    let r = conn
        .call(
            UNLOCK_BATCH_MQ,
            3,
            &[],
            &lock_body(&group, "B", &topic, &[0, 1]),
            WAIT,
        )
        .expect("unlock by another client");
    assert_eq!(r.code(), SUCCESS, "{}", r.remark());
    let r = conn
        .call(
            LOCK_BATCH_MQ,
            4,
            &[],
            &lock_body(&group, "B", &topic, &[0]),
            WAIT,
        )
        .expect("lock held by A");
    assert!(locked_ids(&r.body).is_empty());
    let r = conn
        .call(
            UNLOCK_BATCH_MQ,
            5,
            &[],
            &lock_body(&group, "A", &topic, &[0]),
            WAIT,
        )
        .expect("unlock by the owner");
    assert_eq!(r.code(), SUCCESS);
    let r = conn
        .call(
            LOCK_BATCH_MQ,
            6,
            &[],
            &lock_body(&group, "B", &topic, &[0]),
            WAIT,
        )
        .expect("lock after the owner unlocked");
    assert_eq!(locked_ids(&r.body), [0]);
    // Re-locking renews and keeps the lock.
    let r = conn
        .call(
            LOCK_BATCH_MQ,
            7,
            &[],
            &lock_body(&group, "A", &topic, &[1, 7]),
            WAIT,
        )
        .expect("relock");
    assert_eq!(locked_ids(&r.body), [1, 7]);
    still_serving(target);
}

/// Garbage and empty lock bodies and garbage SQL get Java's codes; the broker keeps serving.
#[test]
fn bad_lock_bodies_and_bad_sql_get_javas_codes() {
    let target = shared_target();
    let mut conn = Conn::connect(&target.broker(), WAIT).expect("connect");
    for (opaque, code, body) in [
        (11, LOCK_BATCH_MQ, b"{not json".to_vec()),
        (12, UNLOCK_BATCH_MQ, b"[1,2".to_vec()),
        (13, LOCK_BATCH_MQ, Vec::new()),
        (14, LOCK_BATCH_MQ, br#"{"mqSet":"nope"}"#.to_vec()),
    ] {
        let r = conn.call(code, opaque, &[], &body, WAIT).expect("answer");
        assert_eq!(
            r.code(),
            SYSTEM_ERROR,
            "code {code} body {body:?}: {}",
            r.remark()
        );
    }
    for sql in [
        "a >",
        "a between 10 and 0",
        "a > 'x'",
        "((((",
        "a = NULL",
        "' unterminated",
    ] {
        let r = conn
            .call(CHECK_CLIENT_CONFIG, 20, &[], &check_body(sql), WAIT)
            .expect("CHECK_CLIENT_CONFIG");
        assert_eq!(r.code(), SUBSCRIPTION_PARSE_FAILED, "{sql}: {}", r.remark());
        assert!(!r.remark().is_empty(), "{sql}: a remark says why");
    }
    let r = conn
        .call(
            CHECK_CLIENT_CONFIG,
            21,
            &[],
            &check_body("a > 1 AND TAGS IN ('x')"),
            WAIT,
        )
        .expect("CHECK_CLIENT_CONFIG");
    assert_eq!(r.code(), SUCCESS, "{}", r.remark());
    still_serving(target);
}
