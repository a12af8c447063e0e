//! The official Kafka Java client (kafka-clients 4.1.1) against a Kafka listener: Skiff's
//! (`skiff standalone --kafka-listen`) or, with `SKIFF_COMPAT_TARGET=apache`, a real Apache Kafka
//! 4.1.1 broker. See compat-tests/README.md ("Kafka").
//!
//! Reference run: SKIFF_COMPAT_TARGET=apache cargo test -p skiff-compat-tests --test kafka

use std::time::Instant;

use skiff_compat_tests::kafka::KafkaTarget;

/// Every compression codec the client offers, each on a topic of its own, against one target:
/// 10 000 records with keys, empty, large and null values, timestamps and text, binary and
/// repeated headers are produced to a topic that Metadata creates, acknowledged, read back exactly
/// once where they were acknowledged, intact, and found again by their offsets and timestamps.
#[test]
fn produce_consume_with_every_compression() {
    let mut target = KafkaTarget::start("kafka").unwrap_or_else(|e| panic!("{e:#}"));
    let mut failures = Vec::new();
    for compression in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("produce-consume-{compression}");
        let started = Instant::now();
        let result = target.run(
            "produce-consume",
            &[
                ("topic", &topic),
                ("count", "10000"),
                ("compression", compression),
            ],
        );
        let took = started.elapsed();
        match result {
            Ok(line) => println!("produce-consume {compression}: PASS in {took:.1?}: {line}"),
            Err(e) => {
                println!("produce-consume {compression}: FAIL in {took:.1?}");
                failures.push(format!("produce-consume {compression}: {e:#}"));
            }
        }
    }
    if !failures.is_empty() {
        panic!("{}", failures.join("\n\n"));
    }
}
