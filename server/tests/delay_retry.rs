//! Delay levels, CONSUMER_SEND_MSG_BACK, retry and dead-letter topics, in process: a broker with
//! short delay levels, spoken to through the neutral model; and the properties every stored
//! message gets from the broker.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_model::command::{
    AutoCreateTopic, ErrorKind, PullRequest, PullStatus, QueueRef, Reply, Request, SendBackRequest,
    SendRequest, SubscriptionExpression,
};
use skiff_model::message::{Message, Properties};
use skiff_model::record::Record;
use skiff_server::remoting_client::RemotingClient;

use common::{Cluster, TIMEOUT};

const LEVELS: &str = "1s 2s 1s 1s 1s";

fn tune(config: &mut skiff_server::config::BrokerConfig) {
    config.message_delay_level = LEVELS.into();
    config.flush_delay_offset_interval = 200;
}

async fn send(client: &RemotingClient, topic: &str, properties: &[(&str, &str)]) -> (i32, i64) {
    let mut props = Properties::new();
    for (k, v) in properties {
        props.insert(*k, *v);
    }
    let reply = client
        .invoke(
            &Request::Send(SendRequest {
                producer_group: "p".into(),
                topic: topic.into(),
                queue_id: 1,
                born_timestamp: now(),
                auto_create: Some(AutoCreateTopic {
                    template_topic: "TBW102".into(),
                    queue_nums: 4,
                }),
                messages: vec![Message {
                    flag: 0,
                    body: Bytes::from_static(b"delayed"),
                    properties: props,
                }],
                ..SendRequest::default()
            }),
            TIMEOUT,
        )
        .await
        .unwrap();
    match reply {
        Reply::Sent(sent) => (sent.queue_id, sent.queue_offset),
        other => panic!("send failed: {other:?}"),
    }
}

async fn pull(client: &RemotingClient, topic: &str, queue_id: i32) -> Vec<Bytes> {
    let reply = client
        .invoke(
            &Request::Pull(PullRequest {
                consumer_group: "reader".into(),
                queue: QueueRef {
                    topic: topic.into(),
                    queue_id,
                    physical: false,
                },
                queue_offset: 0,
                max_msg_nums: 32,
                subscription: Some(SubscriptionExpression {
                    expression_type: "TAG".into(),
                    expression: "*".into(),
                    version: 0,
                }),
                lite: true,
                ..PullRequest::default()
            }),
            TIMEOUT,
        )
        .await
        .unwrap();
    match reply {
        Reply::Pulled(pulled) if pulled.status == PullStatus::Found => pulled.messages,
        Reply::Pulled(_) => Vec::new(),
        other => panic!("pull failed: {other:?}"),
    }
}

/// Polls until `topic`/`queue_id` holds `count` messages (bounded).
async fn wait_for(client: &RemotingClient, topic: &str, queue_id: i32, count: usize) -> Vec<Bytes> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = pull(client, topic, queue_id).await;
        if found.len() >= count || Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn properties(bytes: &Bytes) -> (Record<'_>, Properties) {
    let record = Record::decode(bytes, true).unwrap();
    let props = Properties::decode_bytes(record.properties);
    (record, props)
}

fn send_back(offset: i64, group: &str, delay_level: i32, max: Option<i32>) -> Request {
    Request::ConsumerSendMsgBack(SendBackRequest {
        offset,
        group: group.into(),
        delay_level,
        origin_msg_id: None,
        origin_topic: Some("DelayT".into()),
        unit_mode: false,
        max_reconsume_times: max,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_messages_wait_for_their_level() {
    let cluster = Cluster::start(tune).await;
    let client = cluster.broker_client().await;
    let sent_at = now();
    let (queue_id, _) = send(&client, "DelayT", &[("DELAY", "2"), ("TAGS", "a")]).await;
    assert_eq!(queue_id, 1, "the reply names the queue sent to");
    send(&client, "DelayT", &[("DELAY", "99")]).await;
    assert!(
        pull(&client, "DelayT", 1).await.is_empty(),
        "delivered early"
    );
    // Level 2 waits in queue 1 of the schedule topic, the clamped level 99 in queue 4 (level 5).
    let scheduled = pull(&client, "SCHEDULE_TOPIC_XXXX", 1).await;
    let (record, props) = properties(&scheduled[0]);
    assert_eq!(record.topic, "SCHEDULE_TOPIC_XXXX");
    assert_eq!(props.get("REAL_TOPIC"), Some("DelayT"));
    assert_eq!(props.get("REAL_QID"), Some("1"));
    let clamped = pull(&client, "SCHEDULE_TOPIC_XXXX", 4).await;
    assert_eq!(properties(&clamped[0]).1.get("DELAY"), Some("5"));

    let delivered = wait_for(&client, "DelayT", 1, 2).await;
    assert_eq!(delivered.len(), 2);
    let arrived = now();
    for bytes in &delivered {
        let (record, props) = properties(bytes);
        assert_eq!(record.body, b"delayed");
        assert_eq!(record.topic, "DelayT");
        assert_eq!(props.get("REAL_TOPIC"), Some("DelayT"));
        assert!(props.uniq_key().is_some());
    }
    // The 1 s of level 5 went first, then the 2 s of level 2; neither early, neither > 1 s late.
    let (second, _) = properties(&delivered[1]);
    assert!(second.store_timestamp >= sent_at + 2_000, "early");
    assert!(arrived - sent_at < 3_000, "late: {} ms", arrived - sent_at);
    drop(client);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_back_climbs_the_ladder_then_goes_to_the_dead_letters() {
    let cluster = Cluster::start(tune).await;
    let client = cluster.broker_client().await;
    send(&client, "DelayT", &[("TAGS", "a"), ("KEYS", "k1")]).await;
    let original = pull(&client, "DelayT", 1).await;
    let (first, first_props) = properties(&original[0]);
    let first_offset = first.physical_offset;

    // delayLevel 0: level 3 + reconsume times = 3, which waits 1 s.
    let reply = client
        .invoke(&send_back(first_offset, "G1", 0, Some(2)), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    let scheduled = pull(&client, "SCHEDULE_TOPIC_XXXX", 2).await;
    assert_eq!(properties(&scheduled[0]).1.get("DELAY"), Some("3"));
    let retried = wait_for(&client, "%RETRY%G1", 0, 1).await;
    let (retry, props) = properties(&retried[0]);
    assert_eq!(retry.reconsume_times, 1);
    assert_eq!(retry.body, b"delayed");
    assert_eq!(retry.born_timestamp, first.born_timestamp);
    assert_eq!(props.get("RETRY_TOPIC"), Some("DelayT"));
    assert_eq!(props.get("REAL_TOPIC"), Some("%RETRY%G1"));
    assert_eq!(props.get("WAIT"), Some("false"));
    assert_eq!(props.get("KEYS"), Some("k1"));
    assert_eq!(props.uniq_key(), first_props.uniq_key());
    let origin = props.get("ORIGIN_MESSAGE_ID").unwrap().to_string();
    assert_eq!(
        origin,
        skiff_model::record::offset_msg_id(first.store_host, first_offset)
    );

    // Second failure: level 4; third: past maxReconsumeTimes 2, the dead letters.
    let reply = client
        .invoke(&send_back(retry.physical_offset, "G1", 0, Some(2)), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    let retried = wait_for(&client, "%RETRY%G1", 0, 2).await;
    let (again, props) = properties(&retried[1]);
    assert_eq!(again.reconsume_times, 2);
    assert_eq!(props.get("DELAY"), Some("4"));
    assert_eq!(props.get("ORIGIN_MESSAGE_ID"), Some(origin.as_str()));
    let reply = client
        .invoke(&send_back(again.physical_offset, "G1", 0, Some(2)), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    let dead = pull(&client, "%DLQ%G1", 0).await;
    let (dlq, props) = properties(&dead[0]);
    assert_eq!(dlq.reconsume_times, 3);
    assert_eq!(props.get("DELAY"), Some("0"));
    assert_eq!(props.get("RETRY_TOPIC"), Some("DelayT"));
    assert_eq!(props.get("ORIGIN_MESSAGE_ID"), Some(origin.as_str()));

    // delayLevel -1: straight to the dead letters, whatever the count.
    let reply = client
        .invoke(&send_back(first_offset, "G2", -1, None), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    assert_eq!(pull(&client, "%DLQ%G2", 0).await.len(), 1);
    let dlq_config = client
        .invoke(
            &Request::GetTopicConfig {
                topic: "%DLQ%G2".into(),
                lo: true,
            },
            TIMEOUT,
        )
        .await
        .unwrap();
    match dlq_config {
        Reply::TopicConfig { config, .. } => {
            assert_eq!((config.read_queue_nums, config.perm), (1, 6));
        }
        other => panic!("{other:?}"),
    }
    drop(client);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_back_refusals_are_javas() {
    let cluster = Cluster::start(|c| {
        tune(c);
        c.auto_create_subscription_group = false;
    })
    .await;
    let client = cluster.broker_client().await;
    let error = |reply: Reply| match reply {
        Reply::Error(e) => (e.kind, e.message),
        other => panic!("expected an error, got {other:?}"),
    };
    let (kind, message) = error(
        client
            .invoke(&send_back(0, "NoSuchGroup", 0, None), TIMEOUT)
            .await
            .unwrap(),
    );
    assert_eq!(kind, ErrorKind::SubscriptionGroupNotExist);
    assert_eq!(
        message,
        "subscription group not exist, NoSuchGroup \nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
    );
    drop(client);
    cluster.stop().await;

    let cluster = Cluster::start(tune).await;
    let client = cluster.broker_client().await;
    for offset in [123_456_789, -1, i64::MAX] {
        let (kind, message) = error(
            client
                .invoke(&send_back(offset, "G", 0, None), TIMEOUT)
                .await
                .unwrap(),
        );
        assert_eq!(kind, ErrorKind::SystemError);
        assert_eq!(message, format!("look message by offset failed, {offset}"));
    }
    let (kind, _) = error(
        client
            .invoke(&send_back(0, "../evil", 0, None), TIMEOUT)
            .await
            .unwrap(),
    );
    assert_eq!(kind, ErrorKind::SubscriptionGroupNotExist);
    // An absurd level is clamped to the highest.
    send(&client, "DelayT", &[("TAGS", "a")]).await;
    let offset = properties(&pull(&client, "DelayT", 1).await[0])
        .0
        .physical_offset;
    let reply = client
        .invoke(&send_back(offset, "G", i32::MAX, None), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    let scheduled = pull(&client, "SCHEDULE_TOPIC_XXXX", 4).await;
    assert_eq!(properties(&scheduled[0]).1.get("DELAY"), Some("5"));
    drop(client);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_delays_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let with_dir = |c: &mut skiff_server::config::BrokerConfig| {
        tune(c);
        c.store_path_root_dir = root.clone();
    };
    let cluster = Cluster::start(with_dir).await;
    let client = cluster.broker_client().await;
    send(&client, "DelayT", &[("DELAY", "1")]).await;
    assert_eq!(wait_for(&client, "DelayT", 1, 1).await.len(), 1);
    send(&client, "DelayT", &[("DELAY", "2")]).await;
    drop(client);
    cluster.stop().await;
    let offsets = std::fs::read_to_string(root.join("config/delayOffset.json")).unwrap();
    let compact: String = offsets.split_whitespace().collect();
    assert!(compact.contains("\"offsetTable\":{1:1"), "{offsets}");

    let cluster = Cluster::start(with_dir).await;
    let client = cluster.broker_client().await;
    let delivered = wait_for(&client, "DelayT", 1, 2).await;
    assert_eq!(delivered.len(), 2, "the pending message was lost");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(pull(&client, "DelayT", 1).await.len(), 2, "delivered twice");
    drop(client);
    cluster.stop().await;
}

/// The orderly consumer's own path: a plain send to `%RETRY%<group>` whose reconsume times are past
/// its maximum goes to the dead letters (`handleRetryAndDLQ`), with `DELAY=-1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_sends_past_the_limit_go_to_the_dead_letters() {
    let cluster = Cluster::start(tune).await;
    let client = cluster.broker_client().await;
    let retry_send = |reconsume_times| {
        let mut properties = Properties::new();
        properties.insert("DELAY", "5");
        properties.insert("RETRY_TOPIC", "OrderlyT");
        Request::Send(SendRequest {
            producer_group: "p".into(),
            topic: "%RETRY%OrderlyG".into(),
            queue_id: 0,
            reconsume_times,
            max_reconsume_times: Some(2),
            messages: vec![Message {
                flag: 0,
                body: Bytes::from_static(b"orderly"),
                properties,
            }],
            ..SendRequest::default()
        })
    };
    let reply = client.invoke(&retry_send(3), TIMEOUT).await.unwrap();
    assert!(matches!(reply, Reply::Sent(_)), "{reply:?}");
    let dead = pull(&client, "%DLQ%OrderlyG", 0).await;
    let (record, props) = properties(&dead[0]);
    assert_eq!(record.reconsume_times, 3);
    assert_eq!(props.get("DELAY"), Some("-1"));
    // Within the limit it is an ordinary delayed retry.
    let reply = client.invoke(&retry_send(2), TIMEOUT).await.unwrap();
    assert!(matches!(reply, Reply::Sent(_)), "{reply:?}");
    assert_eq!(pull(&client, "%DLQ%OrderlyG", 0).await.len(), 1);
    assert_eq!(wait_for(&client, "%RETRY%OrderlyG", 0, 1).await.len(), 1);
    drop(client);
    cluster.stop().await;
}

/// As Java's send processor, every stored message names the broker's region and trace switch,
/// whatever the producer put there.
#[tokio::test]
async fn stored_messages_carry_the_brokers_region_and_trace_switch() {
    let cluster = Cluster::start(|config| {
        config.region_id = "east".into();
        config.trace_on = false;
    })
    .await;
    let client = cluster.broker_client().await;
    let (queue_id, _) = send(&client, "RegionT", &[("MSG_REGION", "forged")]).await;
    let stored = pull(&client, "RegionT", queue_id).await;
    let (_, props) = properties(&stored[0]);
    assert_eq!(props.get("MSG_REGION"), Some("east"));
    assert_eq!(props.get("TRACE_ON"), Some("false"));
    cluster.stop().await;
}
