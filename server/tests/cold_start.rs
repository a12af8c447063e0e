//! What a new client meets on a broker that just started (issue 12's cold start): every step
//! answers at once, none waits for a periodic task. The broker is routable when `Broker::start`
//! returns (not after its first periodic registration), and a held pull is answered as soon as a
//! message lands on its queue (not on a hold-service tick, as Java's `PullRequestHoldService`
//! does every 5 s without long polling's notifier).

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_model::command::{
    PullRequest, PullStatus, QueueRef, Reply, Request, SendRequest, SubscriptionExpression,
};
use skiff_model::message::{Message, Properties};
use skiff_model::route::{TopicConfig, MASTER_ID};

use common::{Cluster, TIMEOUT};

/// Well under the pull's 15 s hold and a periodic registration (30 s), and well above the
/// scheduling noise of a two-core CI machine at a load average of 20 or more.
const PROMPT: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_is_listed_when_start_returns() {
    let cluster = Cluster::start(|_| {}).await;
    let namesrv = cluster.namesrv_client().await;
    let broker_addr = cluster.broker.local_addr().to_string();
    match namesrv
        .invoke(&Request::GetBrokerClusterInfo, TIMEOUT)
        .await
        .unwrap()
    {
        Reply::ClusterInfo(info) => {
            let masters: Vec<&String> = info
                .broker_addr_table
                .values()
                .filter_map(|b| b.broker_addrs.get(&MASTER_ID))
                .collect();
            assert_eq!(masters, [&broker_addr], "{info:?}");
        }
        other => panic!("{other:?}"),
    }
    drop(namesrv);
    cluster.stop().await;
}

/// A push consumer's first pull of a new group on an empty queue (held for up to 15 s, as the
/// Java client asks), then a producer's send: the pull answers with the message at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_pull_is_answered_as_soon_as_a_message_arrives() {
    let cluster = Cluster::start(|_| {}).await;
    let admin = cluster.broker_client().await;
    let created = admin
        .invoke(
            &Request::CreateTopic(TopicConfig::new("ColdHeld", 1)),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(created, Reply::Success);

    let consumer = cluster.broker_client().await;
    let pull = Request::Pull(PullRequest {
        consumer_group: "cold-held-consumer".into(),
        queue: QueueRef {
            topic: "ColdHeld".into(),
            queue_id: 0,
            physical: false,
        },
        queue_offset: 0,
        max_msg_nums: 32,
        suspend_timeout_millis: Some(15_000),
        subscription: Some(SubscriptionExpression {
            expression_type: "TAG".into(),
            expression: "*".into(),
            version: 1,
        }),
        ..PullRequest::default()
    });
    let held = tokio::spawn(async move {
        let reply = consumer.invoke(&pull, Duration::from_secs(30)).await;
        (reply, Instant::now())
    });
    let deadline = Instant::now() + TIMEOUT;
    while held_count(&admin).await != 1 {
        assert!(Instant::now() < deadline, "the pull was not held");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let sent = admin
        .invoke(
            &Request::Send(SendRequest {
                producer_group: "cold-held-producer".into(),
                topic: "ColdHeld".into(),
                queue_id: 0,
                messages: vec![Message {
                    flag: 0,
                    body: Bytes::from_static(b"hello"),
                    properties: Properties::new(),
                }],
                ..SendRequest::default()
            }),
            TIMEOUT,
        )
        .await
        .unwrap();
    let sent_at = Instant::now();
    assert!(matches!(sent, Reply::Sent(_)), "{sent:?}");

    let (reply, answered_at) = tokio::time::timeout(TIMEOUT, held).await.unwrap().unwrap();
    match reply.unwrap() {
        Reply::Pulled(result) => {
            assert_eq!(result.status, PullStatus::Found);
            assert_eq!(result.messages.len(), 1);
        }
        other => panic!("{other:?}"),
    }
    let late = answered_at.saturating_duration_since(sent_at);
    assert!(
        late < PROMPT,
        "the held pull answered {late:?} after the send"
    );
    drop(admin);
    cluster.stop().await;
}

async fn held_count(client: &skiff_server::remoting_client::RemotingClient) -> usize {
    match client
        .invoke(&Request::GetBrokerRuntimeInfo, TIMEOUT)
        .await
        .unwrap()
    {
        Reply::KeyValues(table) => table["pullRequestsHeld"].parse().unwrap(),
        other => panic!("{other:?}"),
    }
}
