//! Three Kafka client families against a Kafka listener: the official Java client
//! (kafka-clients 4.1.1, and 3.9.1 for the scenarios a user of the older line depends on most),
//! librdkafka (through confluent-kafka 2.16.1, Python) and franz-go 1.22.3. The listener is
//! Skiff's (`skiff standalone --kafka-listen`) or, with `SKIFF_COMPAT_TARGET=apache`, a real
//! Apache Kafka 4.1.1 broker. Each test starts a target of its own and runs one client, so that
//! one client's failure hides no other's (the idempotent producers, quick, share one target and
//! report each client's result). See compat-tests/README.md ("Kafka").
//!
//! Reference run: SKIFF_COMPAT_TARGET=apache cargo test -p skiff-compat-tests --test kafka

use std::time::Instant;

use skiff_compat_tests::kafka::KafkaTarget;
use skiff_compat_tests::kafka_clients::KafkaClient;

/// Every compression codec the clients offer.
const COMPRESSIONS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

/// Records of each `produce-consume` run.
const RECORDS: &str = "10000";

/// Records of each `produce-consume-idempotent` run: the 100k keyed records with headers.
const IDEMPOTENT_RECORDS: &str = "100000";

/// Records of `group-join-leave`: enough that the members are still consuming when one leaves
/// and another joins (the producer paces them at about 4 000 a second).
const GROUP_RECORDS: &str = "20000";

fn start(label: &str) -> KafkaTarget {
    KafkaTarget::start(label).unwrap_or_else(|e| panic!("{e:#}"))
}

/// Runs `scenario` of `client` with `args`, prints how it went as `<client> <what>`, and keeps
/// its failure. Returns the result line when it passed.
fn run(
    target: &mut KafkaTarget,
    client: KafkaClient,
    scenario: &str,
    what: &str,
    args: &[(&str, &str)],
    failures: &mut Vec<String>,
) -> Option<String> {
    let what = format!("{} {what}", client.name());
    let started = Instant::now();
    let result = target.run(client, scenario, args);
    let took = started.elapsed();
    match result {
        Ok(line) => {
            println!("{what}: PASS in {took:.1?}: {line}");
            Some(line)
        }
        Err(e) => {
            println!("{what}: FAIL in {took:.1?}");
            failures.push(format!("{what}: {e:#}"));
            None
        }
    }
}

/// `produce-consume` or `produce-consume-idempotent` of `count` records with `compression` on a
/// topic of its own.
fn produce_consume(
    target: &mut KafkaTarget,
    client: KafkaClient,
    scenario: &str,
    count: &str,
    compression: &str,
    failures: &mut Vec<String>,
) {
    let topic = format!("{scenario}-{}-{compression}", client.name());
    run(
        target,
        client,
        scenario,
        &format!("{scenario} {compression}"),
        &[
            ("topic", &topic),
            ("count", count),
            ("compression", compression),
        ],
        failures,
    );
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
    let mut target = start(&format!("kafka-{}", client.name()));
    let mut failures = Vec::new();
    for compression in COMPRESSIONS {
        produce_consume(
            &mut target,
            client,
            "produce-consume",
            RECORDS,
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
/// producer, which first asks the broker for a producer id (InitProducerId), and 100 000 records.
#[test]
fn idempotent_produce_consume_with_every_client() {
    let mut target = start("kafka-idempotent");
    let mut failures = Vec::new();
    for client in KafkaClient::ALL {
        produce_consume(
            &mut target,
            client,
            "produce-consume-idempotent",
            IDEMPOTENT_RECORDS,
            "none",
            &mut failures,
        );
    }
    assert_no_failures(failures);
}

/// The 3.9 Java client: `produce-consume` without compression and with lz4 (a codec whose
/// library 4.x changed), and `produce-consume-idempotent`.
#[test]
fn java39_produce_consume() {
    let client = KafkaClient::Java39;
    let mut target = start("kafka-java39");
    let mut failures = Vec::new();
    for compression in ["none", "lz4"] {
        produce_consume(
            &mut target,
            client,
            "produce-consume",
            RECORDS,
            compression,
            &mut failures,
        );
    }
    produce_consume(
        &mut target,
        client,
        "produce-consume-idempotent",
        IDEMPOTENT_RECORDS,
        "none",
        &mut failures,
    );
    assert_no_failures(failures);
}

/// `group-join-leave`: three members of a classic consumer group consume 20 000 keyed records
/// while one leaves and a fourth joins; every record is consumed exactly once thanks to the
/// commits each member makes when its partitions are revoked, and DescribeGroups/ListGroups show
/// the group Stable with the expected members after each change.
fn group_join_leave(client: KafkaClient) {
    let mut target = start(&format!("kafka-group-{}", client.name()));
    let mut failures = Vec::new();
    let topic = format!("group-join-leave-{}", client.name());
    run(
        &mut target,
        client,
        "group-join-leave",
        "group-join-leave",
        &[
            ("topic", &topic),
            ("group", &topic),
            ("count", GROUP_RECORDS),
        ],
        &mut failures,
    );
    assert_no_failures(failures);
}

#[test]
fn java_group_join_leave() {
    group_join_leave(KafkaClient::Java);
}

#[test]
fn java39_group_join_leave() {
    group_join_leave(KafkaClient::Java39);
}

#[test]
fn librdkafka_group_join_leave() {
    group_join_leave(KafkaClient::Librdkafka);
}

#[test]
fn franz_go_group_join_leave() {
    group_join_leave(KafkaClient::FranzGo);
}

/// `commit-resume-restart`: a member reads about half of 10 000 records and commits; the broker
/// is stopped with SIGTERM and started again on the same ports and directory; a new member of the
/// same group finds the commits (OffsetFetch) and reads on from exactly there.
fn commit_resume_restart(client: KafkaClient) {
    let mut target = start(&format!("kafka-restart-{}", client.name()));
    let mut failures = Vec::new();
    let topic = format!("commit-resume-restart-{}", client.name());
    let common = [
        ("topic", topic.as_str()),
        ("group", &topic),
        ("count", "10000"),
    ];
    let phase = |name| [common.as_slice(), &[("phase", name)]].concat();
    let Some(line) = run(
        &mut target,
        client,
        "commit-resume-restart",
        "commit-resume-restart before the restart",
        &phase("commit"),
        &mut failures,
    ) else {
        assert_no_failures(failures);
        return;
    };
    let committed = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("committed="))
        .unwrap_or_else(|| panic!("no committed=… in {line}"))
        .to_string();
    match target.restart() {
        Ok((stop, start)) => println!(
            "{} restart: stopped in {stop:.1?}, ready again in {start:.1?}",
            client.name()
        ),
        Err(e) => panic!("{e:#}"),
    }
    run(
        &mut target,
        client,
        "commit-resume-restart",
        "commit-resume-restart after the restart",
        &[phase("resume").as_slice(), &[("expect", &committed)]].concat(),
        &mut failures,
    );
    assert_no_failures(failures);
}

#[test]
fn java_commit_resume_restart() {
    commit_resume_restart(KafkaClient::Java);
}

#[test]
fn librdkafka_commit_resume_restart() {
    commit_resume_restart(KafkaClient::Librdkafka);
}

#[test]
fn franz_go_commit_resume_restart() {
    commit_resume_restart(KafkaClient::FranzGo);
}

/// `admin-topics`: create (also validate-only, a duplicate and an impossible replication
/// factor), list, describe, describe configs and delete a topic through each client's admin API.
fn admin_topics(client: KafkaClient) {
    let mut target = start(&format!("kafka-admin-{}", client.name()));
    let mut failures = Vec::new();
    let topic = format!("admin-topics-{}", client.name());
    run(
        &mut target,
        client,
        "admin-topics",
        "admin-topics",
        &[("topic", &topic)],
        &mut failures,
    );
    assert_no_failures(failures);
}

#[test]
fn java_admin_topics() {
    admin_topics(KafkaClient::Java);
}

#[test]
fn librdkafka_admin_topics() {
    admin_topics(KafkaClient::Librdkafka);
}

#[test]
fn franz_go_admin_topics() {
    admin_topics(KafkaClient::FranzGo);
}
