//! The official Go client (`github.com/apache/rocketmq-client-go/v2` 2.1.2) against one shared
//! target, one scenario of `compat-tests/go/` per test (distinct topics and groups per run). See
//! compat-tests/README.md.
//!
//! Every scenario passes against Apache RocketMQ 5.3.3 first
//! (`SKIFF_COMPAT_TARGET=apache cargo test -p skiff-compat-tests --test go_client`).

use skiff_compat_tests::suite::{run_go_client, shared_target};

/// Sync, async, oneway and batch sends with tags, keys and user properties, read back by a push
/// consumer exactly once, intact, with the msgIds, queues and offsets the send results named.
#[test]
fn send() {
    run_go_client(shared_target(), "send");
}

/// Two push consumers of one group: nothing lost while they settle, then exactly once between
/// them with both consuming.
#[test]
fn clustering() {
    run_go_client(shared_target(), "clustering");
}

/// A `TagA || TagC` push consumer (the Go heartbeat sends the codeSet as strings).
#[test]
fn tag_filter() {
    run_go_client(shared_target(), "tag-filter");
}

/// Hash queue selector + orderly push consumer (LOCK_BATCH_MQ): per-key order.
#[test]
fn orderly() {
    run_go_client(shared_target(), "orderly");
}

/// DelayTimeLevel 2 and 3: delivered no earlier than the delay, and not much later.
#[test]
fn delay() {
    run_go_client(shared_target(), "delay");
}

/// Transactional sends: commit, rollback, and unknown then committed by the check-back.
#[test]
fn transaction() {
    run_go_client(shared_target(), "transaction");
}

/// ConsumeRetryLater twice: the message comes back with reconsume times 1, then 2.
#[test]
fn retry() {
    run_go_client(shared_target(), "retry");
}

/// A group shut down (offsets committed) and restarted as a new client resumes where it left off.
#[test]
fn resume() {
    run_go_client(shared_target(), "resume");
}

/// Two broadcasting consumers of one group each receive every message exactly once.
#[test]
fn broadcasting() {
    run_go_client(shared_target(), "broadcasting");
}

/// Sends to a topic nobody created (through TBW102's route, auto-created by the broker), read back.
#[test]
fn auto_create() {
    run_go_client(shared_target(), "auto-create");
}
