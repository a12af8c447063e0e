//! Three Kafka client families against a Kafka listener: the official Java client
//! (kafka-clients 4.1.1), librdkafka (through confluent-kafka 2.16.1, Python) and franz-go 1.22.3.
//! The listener is Skiff's (`skiff standalone --kafka-listen`) or, with
//! `SKIFF_COMPAT_TARGET=apache`, a real Apache Kafka 4.1.1 broker. Each test starts a target of its
//! own, so that one client's failure hides no other's. See compat-tests/README.md ("Kafka").
//!
//! Reference run: SKIFF_COMPAT_TARGET=apache cargo test -p skiff-compat-tests --test kafka

use std::time::Instant;

use skiff_compat_tests::kafka::KafkaTarget;
use skiff_compat_tests::kafka_clients::KafkaClient;

/// Every compression codec the clients offer.
const COMPRESSIONS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// Runs `scenario` of `client` with `compression` on a topic of its own, prints how it went, and
/// keeps its failure.
fn run(
    target: &mut KafkaTarget,
    client: KafkaClient,
    scenario: &str,
    compression: &str,
    failures: &mut Vec<String>,
) {
    let what = format!("{} {scenario} {compression}", client.name());
    let topic = format!("{scenario}-{}-{compression}", client.name());
    let started = Instant::now();
    let result = target.run(
        client,
        scenario,
        &[
            ("topic", &topic),
            ("count", "10000"),
            ("compression", compression),
        ],
    );
    let took = started.elapsed();
    match result {
        Ok(line) => println!("{what}: PASS in {took:.1?}: {line}"),
        Err(e) => {
            println!("{what}: FAIL in {took:.1?}");
            failures.push(format!("{what}: {e:#}"));
        }
    }
}

fn assert_no_failures(failures: Vec<String>) {
    if !failures.is_empty() {
        panic!("{}", failures.join("\n\n"));
    }
}

/// `produce-consume` once per compression, each on a topic of its own, against one target:
/// 10 000 records with keys, empty, large and null values, timestamps and text, binary and
/// repeated headers are produced (acks=all, no idempotence) to a topic that Metadata creates,
/// acknowledged, read back exactly once where they were acknowledged, intact, by a consumer that
/// joins no group, and found again by their offsets and timestamps.
fn produce_consume_with_every_compression(client: KafkaClient) {
    let mut target =
        KafkaTarget::start(&format!("kafka-{}", client.name())).unwrap_or_else(|e| panic!("{e:#}"));
    let mut failures = Vec::new();
    for compression in COMPRESSIONS {
        run(
            &mut target,
            client,
            "produce-consume",
            compression,
            &mut failures,
        );
    }
    assert_no_failures(failures);
}

#[test]
fn java_produce_consume() {
    produce_consume_with_every_compression(KafkaClient::Java);
}

#[test]
fn librdkafka_produce_consume() {
    produce_consume_with_every_compression(KafkaClient::Librdkafka);
}

#[test]
fn franz_go_produce_consume() {
    produce_consume_with_every_compression(KafkaClient::FranzGo);
}

/// `produce-consume-idempotent`, without compression: the same with each client's idempotent
/// producer, which first asks the broker for a producer id (InitProducerId).
#[test]
fn idempotent_produce_consume_with_every_client() {
    let mut target = KafkaTarget::start("kafka-idempotent").unwrap_or_else(|e| panic!("{e:#}"));
    let mut failures = Vec::new();
    for client in KafkaClient::ALL {
        run(
            &mut target,
            client,
            "produce-consume-idempotent",
            "none",
            &mut failures,
        );
    }
    assert_no_failures(failures);
}
