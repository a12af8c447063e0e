//! `/metrics` (issue 9): a broker with `metricsExporterType=PROM` serves Apache RocketMQ 5's
//! metric names and labels over HTTP, counts what was sent and pulled, and survives bad HTTP
//! clients.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use skiff_model::command::{
    PullRequest, QueueRef, Reply, Request, SendRequest, SubscriptionExpression,
};
use skiff_model::consumer::{ConsumerData, HeartbeatData, ProducerData, SubscriptionData};
use skiff_model::message::{Message, Properties};
use skiff_model::route::TopicConfig;
use skiff_server::config::{FlushDiskType, MetricsExporterType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::{Cluster, TIMEOUT};

async fn start() -> Cluster {
    Cluster::start(|config| {
        config.metrics_exporter_type = MetricsExporterType::Prom;
        config.metrics_prom_exporter_host = Some("127.0.0.1".parse().unwrap());
        config.metrics_prom_exporter_port = 0;
        // So that sends wait for group commits, which the skiff_ histograms time.
        config.flush_disk_type = FlushDiskType::SyncFlush;
    })
    .await
}

/// One HTTP/1.1 exchange; the whole response as text.
async fn http(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut response))
        .await
        .expect("the endpoint answers and closes")
        .unwrap();
    String::from_utf8(response).unwrap()
}

async fn scrape(addr: SocketAddr) -> String {
    let response = http(
        addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("content-type: text/plain; version=0.0.4"),
        "{response}"
    );
    response
}

/// The value of the sample `name{labels}` whose labels contain all of `wanted`.
fn sample(text: &str, name: &str, wanted: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")))
        .find(|line| wanted.iter().all(|w| line.contains(w)))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

fn send(topic: &str, body: &'static [u8]) -> Request {
    Request::Send(SendRequest {
        producer_group: "metrics-producer".into(),
        topic: topic.into(),
        queue_id: 0,
        messages: vec![Message {
            flag: 0,
            body: Bytes::from_static(body),
            properties: Properties::new(),
        }],
        ..SendRequest::default()
    })
}

#[tokio::test]
async fn scrape_shows_java_names_labels_and_counts() {
    let cluster = start().await;
    let addr = cluster.broker.metrics_addr().expect("metrics are served");
    let client = cluster.broker_client().await;
    let topic = "MetricsTopic";
    let reply = client
        .invoke(&Request::CreateTopic(TopicConfig::new(topic, 1)), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    for _ in 0..3 {
        let sent = client
            .invoke(&send(topic, b"hello"), TIMEOUT)
            .await
            .unwrap();
        assert!(matches!(sent, Reply::Sent(_)), "{sent:?}");
    }
    // A live consumer of the group (for lag and connections) and a producer.
    let heartbeat = HeartbeatData {
        client_id: "metrics-client".into(),
        producer_data_set: vec![ProducerData {
            group_name: "metrics-producer".into(),
        }],
        consumer_data_set: vec![ConsumerData {
            group_name: "metrics-group".into(),
            subscription_data_set: vec![SubscriptionData {
                topic: topic.into(),
                sub_string: "*".into(),
                ..SubscriptionData::default()
            }],
            ..ConsumerData::default()
        }],
        ..HeartbeatData::default()
    };
    let reply = client
        .invoke(&Request::Heartbeat(heartbeat), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    let pulled = client
        .invoke(
            &Request::Pull(PullRequest {
                consumer_group: "metrics-group".into(),
                queue: QueueRef {
                    topic: topic.into(),
                    queue_id: 0,
                    physical: false,
                },
                queue_offset: 0,
                max_msg_nums: 2,
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
    match pulled {
        Reply::Pulled(result) => assert_eq!(result.messages.len(), 2),
        other => panic!("{other:?}"),
    }
    // The consumer committed 2 of 3.
    let reply = client
        .invoke(
            &Request::UpdateConsumerOffset {
                group: "metrics-group".into(),
                queue: QueueRef {
                    topic: topic.into(),
                    queue_id: 0,
                    physical: false,
                },
                offset: 2,
            },
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);

    let text = scrape(addr).await;
    let node = [
        r#"cluster="DefaultCluster""#,
        r#"node_type="broker""#,
        r#"node_id="broker-a""#,
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        node.iter().copied().chain(extra.iter().copied()).collect()
    };
    let topic_label = r#"topic="MetricsTopic""#;
    assert_eq!(
        sample(
            &text,
            "rocketmq_messages_in_total",
            &with(&[
                topic_label,
                r#"message_type="normal""#,
                r#"is_system="false""#
            ])
        ),
        Some(3.0),
        "{text}"
    );
    let stored = sample(&text, "rocketmq_throughput_in_total", &with(&[topic_label])).unwrap();
    assert!(stored > 15.0, "stored record sizes, not bodies: {stored}");
    assert_eq!(
        sample(&text, "rocketmq_message_size_count", &with(&[topic_label])),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &text,
            "rocketmq_messages_out_total",
            &with(&[topic_label, r#"consumer_group="metrics-group""#])
        ),
        Some(2.0)
    );
    assert!(
        sample(
            &text,
            "rocketmq_throughput_out_total",
            &with(&[topic_label])
        )
        .unwrap()
            > 0.0
    );
    assert_eq!(
        sample(
            &text,
            "rocketmq_consumer_lag_messages",
            &with(&[
                topic_label,
                r#"consumer_group="metrics-group""#,
                r#"is_retry="false""#
            ])
        ),
        Some(1.0)
    );
    assert!(
        sample(
            &text,
            "rocketmq_consumer_lag_latency_milliseconds",
            &with(&[topic_label])
        )
        .is_some(),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "rocketmq_consumer_connections",
            &with(&[
                r#"consumer_group="metrics-group""#,
                r#"consume_mode="push""#,
                r#"protocol_type="remoting""#
            ])
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "rocketmq_producer_connections", &with(&[])),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "rocketmq_rpc_latency_milliseconds_count",
            &with(&[
                r#"request_code="send_message_v2""#,
                r#"response_code="success""#,
                r#"result="success""#,
                r#"is_long_polling="false""#,
                r#"protocol_type="remoting""#,
            ])
        ),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &text,
            "rocketmq_rpc_latency_milliseconds_count",
            &with(&[r#"request_code="update_consumer_offset""#])
        ),
        Some(1.0)
    );
    assert!(sample(&text, "rocketmq_topic_number", &with(&[])).unwrap() >= 1.0);
    assert!(sample(&text, "rocketmq_consumer_group_number", &with(&[])).unwrap() >= 1.0);
    assert_eq!(
        sample(&text, "rocketmq_broker_permission", &with(&[])),
        Some(6.0)
    );
    assert!(
        sample(
            &text,
            "rocketmq_storage_size_bytes",
            &with(&[r#"storage_type="local""#, r#"storage_medium="disk""#])
        )
        .unwrap()
            > 0.0
    );
    assert!(sample(&text, "rocketmq_storage_flush_behind_bytes", &with(&[])).is_some());
    assert!(sample(&text, "skiff_store_recovery_seconds", &with(&[])).is_some());
    let reserve = sample(
        &text,
        "rocketmq_storage_message_reserve_time_milliseconds",
        &with(&[r#"storage_type="local""#]),
    )
    .expect("the oldest message's age");
    assert!((0.0..60_000.0).contains(&reserve), "{reserve}");
    assert_eq!(sample(&text, "skiff_pulls_held", &with(&[])), Some(0.0));
    assert_eq!(sample(&text, "skiff_connections", &with(&[])), Some(1.0));
    assert!(text.contains("# TYPE skiff_commitlog_flush_latency_milliseconds histogram\n"));
    // At most one wait per SYNC_FLUSH send (a put already covered by a flush does not wait).
    let waits = sample(
        &text,
        "skiff_group_commit_wait_latency_milliseconds_count",
        &with(&[]),
    )
    .unwrap();
    assert!((1.0..=3.0).contains(&waits), "{waits}");
    assert!(
        sample(
            &text,
            "skiff_commitlog_flush_latency_milliseconds_count",
            &with(&[])
        )
        .unwrap()
            >= 1.0
    );
    cluster.stop().await;
}

#[tokio::test]
async fn endpoint_survives_bad_clients() {
    let cluster = start().await;
    let addr = cluster.broker.metrics_addr().unwrap();

    // Garbage: answered 400 (or closed), never a hang.
    let garbage = http(addr, b"\x00\x01\x02 not http at all\r\n\r\n").await;
    assert!(
        garbage.is_empty() || garbage.starts_with("HTTP/1.1 400"),
        "{garbage}"
    );

    // A header far over the limit.
    let mut huge = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 256 * 1024));
    huge.extend_from_slice(b"\r\n\r\n");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // The server may close before all is written.
    let _ = stream.write_all(&huge).await;
    let mut response = Vec::new();
    let _ = tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut response))
        .await
        .expect("a huge header gets the connection closed");
    let response = String::from_utf8_lossy(&response);
    assert!(
        response.is_empty() || response.starts_with("HTTP/1.1 431"),
        "{response}"
    );

    // Other paths and methods.
    let missing = http(
        addr,
        b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    let post = http(
        addr,
        b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(post.starts_with("HTTP/1.1 405"), "{post}");

    // Slow clients that never finish their request head are closed after the header timeout,
    // and meanwhile do not keep others out.
    let mut slow = Vec::new();
    for _ in 0..4 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET /metr").await.unwrap();
        slow.push(stream);
    }
    scrape(addr).await;
    for mut stream in slow {
        let mut buf = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut buf)).await;
        assert!(
            closed.is_ok(),
            "a slow client is closed by the header timeout"
        );
    }
    // Still serving.
    let text = scrape(addr).await;
    assert!(text.contains("rocketmq_topic_number{"));
    cluster.stop().await;
}

#[tokio::test]
async fn disabled_by_default() {
    let cluster = Cluster::start(|_| {}).await;
    assert_eq!(cluster.broker.metrics_addr(), None);
    cluster.stop().await;
}
