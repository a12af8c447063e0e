//! Hostile admin and client requests against an in-process broker (issue 8): each gets a clear
//! error and the broker keeps serving. Skiff-specific limits live here rather than in
//! compat-tests/tests/bad_input.rs, where Java 5.3.3 answers differently (it takes any queue
//! count).

mod common;

use std::time::{Duration, Instant};

use skiff_model::command::{ErrorKind, PullRequest, QueueRef, Reply, Request};
use skiff_model::route::TopicConfig;
use skiff_server::remoting_client::RemotingClient;

use common::{Cluster, TIMEOUT};

fn error_kind(reply: &Reply) -> Option<(ErrorKind, &str)> {
    match reply {
        Reply::Error(e) => Some((e.kind, e.message.as_str())),
        _ => None,
    }
}

async fn call(client: &RemotingClient, request: Request) -> Reply {
    client.invoke(&request, TIMEOUT).await.unwrap()
}

fn topic(name: &str, read: i32, write: i32) -> TopicConfig {
    TopicConfig {
        read_queue_nums: read,
        write_queue_nums: write,
        ..TopicConfig::new(name, 1)
    }
}

#[tokio::test]
async fn absurd_queue_counts_are_refused() {
    let cluster = Cluster::start(|_| {}).await;
    let client = cluster.broker_client().await;
    for n in [0, -1, 100_000, i32::MAX] {
        for (read, write) in [(n, 4), (4, n)] {
            let reply = call(&client, Request::CreateTopic(topic("Absurd", read, write))).await;
            let (kind, remark) = error_kind(&reply).expect("refused");
            assert_eq!(kind, ErrorKind::InvalidParameter, "{remark}");
            assert!(remark.contains("out of range [1, 1024]"), "{remark}");
        }
    }
    let reply = call(
        &client,
        Request::GetTopicStats {
            topic: "Absurd".into(),
        },
    )
    .await;
    assert_eq!(error_kind(&reply).unwrap().0, ErrorKind::TopicNotExist);
    let ok = call(&client, Request::CreateTopic(topic("Sane", 1024, 1024))).await;
    assert_eq!(ok, Reply::Success);
    cluster.stop().await;
}

#[tokio::test]
async fn a_persisted_absurd_topic_does_not_crash_stats() {
    let cluster = Cluster::start(|config| {
        let dir = config.store_path_root_dir.join("config");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("topics.json"),
            r#"{"topicConfigTable":{"Huge":{"topicName":"Huge","readQueueNums":2147483647,"writeQueueNums":2147483647,"perm":6}}}"#,
        )
        .unwrap();
    })
    .await;
    let client = cluster.broker_client().await;
    let started = Instant::now();
    match call(
        &client,
        Request::GetTopicStats {
            topic: "Huge".into(),
        },
    )
    .await
    {
        Reply::TopicStats(stats) => assert_eq!(stats.offset_table.len(), 1024),
        other => panic!("{other:?}"),
    }
    let reply = call(
        &client,
        Request::GetConsumeStats {
            group: "g".into(),
            topic: Some("Huge".into()),
        },
    )
    .await;
    assert!(matches!(reply, Reply::ConsumeStats(ref s) if s.offset_table.len() <= 1024));
    assert!(started.elapsed() < Duration::from_secs(5));
    cluster.stop().await;
}

#[tokio::test]
async fn topic_deletion_never_leaves_the_store() {
    let cluster = Cluster::start(|_| {}).await;
    let client = cluster.broker_client().await;
    // Siblings of the store directory: where `../../<name>` from consumequeue/ lands.
    let victim = tempfile::tempdir().unwrap();
    let name = victim.path().file_name().unwrap().to_str().unwrap();
    let absolute = victim.path().to_str().unwrap().to_string();
    for hostile in [format!("../../{name}"), absolute, "..".into(), "a/b".into()] {
        let reply = call(
            &client,
            Request::DeleteTopicInBroker {
                topic: hostile.clone(),
            },
        )
        .await;
        let (kind, remark) = error_kind(&reply).expect("refused");
        assert_eq!(kind, ErrorKind::InvalidParameter, "{hostile}: {remark}");
        assert!(remark.contains("illegal characters"), "{remark}");
    }
    assert!(victim.path().exists());
    // A legal topic is deleted (off the request worker) and the broker keeps serving.
    assert_eq!(
        call(&client, Request::CreateTopic(topic("Doomed", 2, 2))).await,
        Reply::Success
    );
    let reply = call(
        &client,
        Request::DeleteTopicInBroker {
            topic: "Doomed".into(),
        },
    )
    .await;
    assert_eq!(reply, Reply::Success);
    cluster.stop().await;
}

#[tokio::test]
async fn system_topics_cannot_be_deleted() {
    let cluster = Cluster::start(|_| {}).await;
    let client = cluster.broker_client().await;
    for name in [
        "DefaultCluster",
        "broker-a",
        "DefaultCluster_REPLY_TOPIC",
        "SCHEDULE_TOPIC_XXXX",
        "TBW102",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "rmq_sys_anything",
    ] {
        let reply = call(&client, Request::DeleteTopicInBroker { topic: name.into() }).await;
        let (kind, remark) = error_kind(&reply).expect("refused");
        assert_eq!(kind, ErrorKind::InvalidParameter);
        assert_eq!(
            remark,
            format!("The topic[{name}] is conflict with system topic.")
        );
    }
    cluster.stop().await;
}

#[tokio::test]
async fn pulls_do_not_auto_create_illegal_groups() {
    let cluster = Cluster::start(|_| {}).await;
    let client = cluster.broker_client().await;
    assert_eq!(
        call(&client, Request::CreateTopic(topic("PullMe", 1, 1))).await,
        Reply::Success
    );
    for group in ["../../etc", "g\u{0}", &"g".repeat(300)] {
        let reply = call(
            &client,
            Request::Pull(PullRequest {
                consumer_group: group.to_string(),
                queue: QueueRef {
                    topic: "PullMe".into(),
                    queue_id: 0,
                    physical: false,
                },
                max_msg_nums: 1,
                lite: true,
                ..PullRequest::default()
            }),
        )
        .await;
        let (kind, _) = error_kind(&reply).expect("refused");
        assert_eq!(kind, ErrorKind::SubscriptionGroupNotExist, "{group}");
    }
    cluster.stop().await;
}
