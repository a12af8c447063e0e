//! `/metrics` (issue 9): after the official client's clustering scenario, the target started
//! with `metricsExporterType=PROM` serves the metric names and labels of Apache RocketMQ 5.3.3
//! that Skiff claims (docs/operations.md "Metrics"). Run against Apache first
//! (`SKIFF_COMPAT_TARGET=apache`), then against Skiff: the same assertions pass on both.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use skiff_compat_tests::suite::run_for_all_clients;
use skiff_compat_tests::target::{FlushDisk, Options, Target};

fn scrape(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the metrics port is open");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}

/// Whether a sample of `name` has all of `labels`.
fn has(text: &str, name: &str, labels: &[&str]) -> bool {
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")))
        .any(|line| labels.iter().all(|l| line.contains(l)))
}

#[test]
fn java_metric_names_and_labels() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let opts = Options {
        broker_settings: vec![
            ("metricsExporterType", "PROM".into()),
            ("metricsPromExporterHost", "127.0.0.1".into()),
            ("metricsPromExporterPort", port.to_string()),
        ],
        ..Options::new(FlushDisk::Async).expect("settings")
    };
    let target = Target::start_with("metrics", opts).expect("the target starts");
    run_for_all_clients(&target, "clustering", &[]);
    let text = scrape(port);
    let node = [
        r#"cluster="DefaultCluster""#,
        r#"node_type="broker""#,
        r#"node_id="broker-a""#,
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        node.iter().copied().chain(extra.iter().copied()).collect()
    };
    let topic = r#"topic="compat_clustering_"#;
    let checks: Vec<(&str, Vec<&str>)> = vec![
        (
            "rocketmq_messages_in_total",
            with(&[topic, r#"message_type="normal""#, r#"is_system="false""#]),
        ),
        (
            "rocketmq_throughput_in_total",
            with(&[topic, r#"message_type="normal""#]),
        ),
        ("rocketmq_message_size_bucket", with(&[topic, "le="])),
        ("rocketmq_message_size_count", with(&[topic])),
        (
            "rocketmq_messages_out_total",
            with(&[
                topic,
                r#"consumer_group="compat_clustering_"#,
                r#"is_system="false""#,
            ]),
        ),
        (
            "rocketmq_throughput_out_total",
            with(&[topic, r#"consumer_group="#]),
        ),
        (
            "rocketmq_rpc_latency_milliseconds_bucket",
            with(&[
                r#"protocol_type="remoting""#,
                r#"request_code="send_message_v2""#,
                r#"response_code="success""#,
                r#"result="success""#,
                r#"is_long_polling="false""#,
                "le=",
            ]),
        ),
        (
            "rocketmq_rpc_latency_milliseconds_count",
            with(&[
                r#"request_code="update_consumer_offset""#,
                r#"result="oneway""#,
            ]),
        ),
        (
            "rocketmq_rpc_latency_milliseconds_count",
            with(&[
                r#"request_code="pull_message""#,
                r#"is_long_polling="true""#,
            ]),
        ),
        ("rocketmq_topic_number", with(&[])),
        ("rocketmq_consumer_group_number", with(&[])),
        ("rocketmq_broker_permission", with(&[])),
        (
            "rocketmq_storage_size_bytes",
            with(&[r#"storage_type="local""#, r#"storage_medium="disk""#]),
        ),
        (
            "rocketmq_storage_message_reserve_time_milliseconds",
            with(&[r#"storage_type="local""#, r#"storage_medium="disk""#]),
        ),
        (
            "rocketmq_storage_flush_behind_bytes",
            with(&[r#"storage_type="local""#, r#"storage_medium="disk""#]),
        ),
    ];
    let missing: Vec<String> = checks
        .iter()
        .filter(|(name, labels)| !has(&text, name, labels))
        .map(|(name, labels)| format!("{name} with {labels:?}"))
        .collect();
    assert!(missing.is_empty(), "missing: {missing:#?}\n{text}");
}
