//! The client scenarios of issue #2, each run with every configured official Java client version
//! against one shared target (distinct topics and groups per run). See compat-tests/README.md.

use skiff_compat_tests::suite::{run_for_all_clients, shared_target};

/// 1. Sync, async, oneway, batch and queue-selected sends with tags, keys, properties and bodies
///    up to ~4 MiB, all read back identical with the ids and offsets the send results named.
#[test]
fn producer() {
    run_for_all_clients(shared_target(), "producer", &[]);
}

/// 2. Clustering push consumers: exactly once between members in steady state, nothing lost when
///    a member joins or leaves.
#[test]
fn clustering() {
    run_for_all_clients(shared_target(), "clustering", &[]);
}

/// 3. Broadcasting: every consumer of the group receives every message.
#[test]
fn broadcasting() {
    run_for_all_clients(shared_target(), "broadcasting", &[]);
}

/// 4. A `TagA || TagB` subscription receives exactly the TagA and TagB messages.
#[test]
fn tag_filter() {
    run_for_all_clients(shared_target(), "tag-filter", &[]);
}

/// 5. DefaultLitePullConsumer assign() + seek() reads exactly the messages from the offset on.
#[test]
fn lite_pull_seek() {
    run_for_all_clients(shared_target(), "lite-pull-seek", &[]);
}

/// 6. A consumer group restarted after a clean shutdown resumes from its committed offsets.
#[test]
fn consumer_resume() {
    run_for_all_clients(shared_target(), "consumer-resume", &[]);
}

/// 8. DefaultMQAdminExt: cluster info, topic creation with 8 queues, topic and consume stats.
#[test]
fn admin() {
    run_for_all_clients(shared_target(), "admin", &[]);
}

/// 9. Messages found by key (DefaultMQAdminExt.queryMessage), by client id and by offset id
///    (queryMessageByUniqKey, viewMessage), identical to what a pull returns.
#[test]
fn query() {
    run_for_all_clients(shared_target(), "query", &[]);
}
