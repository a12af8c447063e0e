//! Retention end to end: with `fileReservedTime=0` and every hour a `deleteWhen` hour, the broker
//! deletes old CommitLog segments on its next clean round, the queue's min offset moves, and a
//! consumer still behind it gets PULL_OFFSET_MOVED with the new start and can carry on from there.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_model::command::{
    AutoCreateTopic, PullRequest, PullStatus, QueueRef, Reply, Request, SendRequest,
    SubscriptionExpression,
};
use skiff_model::message::{Message, Properties};
use skiff_model::record::Record;

use common::{Cluster, TIMEOUT};
const TOPIC: &str = "RetentionTopic";

fn send(topic: &str, body: Bytes) -> Request {
    Request::Send(SendRequest {
        producer_group: "retention-producer".into(),
        topic: topic.into(),
        queue_id: 0,
        auto_create: Some(AutoCreateTopic {
            template_topic: "TBW102".into(),
            queue_nums: 1,
        }),
        messages: vec![Message {
            flag: 0,
            body,
            properties: Properties::new(),
        }],
        ..SendRequest::default()
    })
}

fn pull(offset: i64) -> Request {
    Request::Pull(PullRequest {
        consumer_group: "retention-consumer".into(),
        queue: QueueRef {
            topic: TOPIC.into(),
            queue_id: 0,
            physical: false,
        },
        queue_offset: offset,
        max_msg_nums: 32,
        subscription: Some(SubscriptionExpression {
            expression_type: "TAG".into(),
            expression: "*".into(),
            version: 0,
        }),
        lite: true,
        ..PullRequest::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_behind_retention_are_moved_to_the_new_start() {
    let every_hour = (0..24)
        .map(|h| format!("{h:02}"))
        .collect::<Vec<_>>()
        .join(";");
    let cluster = Cluster::start(|config| {
        config.mapped_file_size_commit_log = 64 * 1024;
        config.max_message_size = 16 * 1024;
        config.file_reserved_time = 0;
        config.delete_when = every_hour;
        config.clean_resource_interval = 100;
    })
    .await;
    let client = cluster.broker_client().await;

    // About five segments' worth of 1 KiB messages.
    for i in 0..320 {
        let body = Bytes::from(format!("{i:05}").repeat(200));
        match client.invoke(&send(TOPIC, body), TIMEOUT).await.unwrap() {
            Reply::Sent(sent) => assert_eq!(sent.queue_offset, i),
            other => panic!("send {i} failed: {other:?}"),
        }
    }

    let min_offset = Request::GetMinOffset {
        queue: QueueRef {
            topic: TOPIC.into(),
            queue_id: 0,
            physical: false,
        },
    };
    // Every full segment has expired; retention deletes them a round at a time, so wait until the
    // start stays put for five rounds (only the segment being written is left).
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut min, mut unchanged) = (0, 0);
    while min == 0 || unchanged < 5 {
        match client.invoke(&min_offset, TIMEOUT).await.unwrap() {
            Reply::Offset(now) if now > 0 && now == min => unchanged += 1,
            Reply::Offset(now) => (min, unchanged) = (now, 0),
            other => panic!("GET_MIN_OFFSET failed: {other:?}"),
        }
        assert!(
            Instant::now() < deadline,
            "retention never deleted a segment, or never stopped"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(min < 320, "the segment being written is kept");

    let Reply::Pulled(moved) = client.invoke(&pull(0), TIMEOUT).await.unwrap() else {
        panic!("pull from 0 did not answer a pull result");
    };
    assert_eq!(moved.status, PullStatus::OffsetMoved);
    assert_eq!(moved.next_begin_offset, min);
    assert_eq!(moved.min_offset, min);

    let Reply::Pulled(found) = client.invoke(&pull(min), TIMEOUT).await.unwrap() else {
        panic!("pull from the new min did not answer a pull result");
    };
    assert_eq!(found.status, PullStatus::Found);
    let first = Record::decode(&found.messages[0], true).unwrap();
    assert_eq!(first.queue_offset, min);
    assert_eq!(first.body, format!("{min:05}").repeat(200).as_bytes());

    drop(client);
    cluster.stop().await;
}
