//! The official Go client (`github.com/apache/rocketmq-client-go/v2` 2.1.2) against one shared
//! target, one scenario of `compat-tests/go/` per test (distinct topics and groups per run). See
//! compat-tests/README.md.

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
