//! Cross-protocol: one `skiff standalone` serves RocketMQ and Kafka clients over the same topics
//! and store (docs/kafka.md, "Records and messages"). The official Kafka Java client
//! (kafka-clients 4.1.1, `java/kafka-cross/KafkaCross.java`) and the official RocketMQ Java
//! clients (4.9.8 and 5.3.3, the `cross-from-kafka` and `cross-to-kafka` scenarios) each write
//! what the other then reads, and check it field by field, through a manifest of the records
//! (see `KafkaCross.java`). Each test starts a target of its own.
//!
//! No Apache broker speaks both protocols: with `SKIFF_COMPAT_TARGET=apache` these tests say they
//! are skipped and pass.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use skiff_compat_tests::java::{self, Client};
use skiff_compat_tests::kafka::KAFKA_VERSION;
use skiff_compat_tests::process;
use skiff_compat_tests::settings::{self, TargetKind};
use skiff_compat_tests::suite::{unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{FlushDisk, Options, Target};

/// Records (or messages) each run writes and the other protocol reads.
const COUNT: &str = "1000";
/// The partitions the Kafka producer creates its topic with.
const PARTITIONS: &str = "4";

/// The Kafka program's JVM flags, as the scenarios': a small heap and C1 only.
const KAFKA_JVM: [&str; 5] = [
    "-Xms64m",
    "-Xmx256m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
];

/// `compat-tests/java/kafka-cross`: the Kafka client's pom and program.
fn kafka_cross_dir() -> PathBuf {
    java::java_dir().join("kafka-cross")
}

/// Runs `KafkaCross.java <mode>` against `bootstrap` in `run_dir` and returns its result line.
/// Fails with its output unless it exits 0 with a line ending in `result=ok`.
fn run_kafka(bootstrap: &str, mode: &str, args: &[(&str, &str)], run_dir: &Path) -> Result<String> {
    let dir = kafka_cross_dir();
    let pom = fs::read_to_string(dir.join("pom.xml"))?;
    let pin = format!("<kafka.version>{KAFKA_VERSION}</kafka.version>");
    if !pom.contains(&pin) {
        bail!("{}/pom.xml does not pin {pin}", dir.display());
    }
    let cp = java::classpath(&dir, "kafka-cross", KAFKA_VERSION)?;
    fs::create_dir_all(run_dir.join("tmp"))?;
    let mut cmd = Command::new(java::java_bin());
    cmd.current_dir(run_dir)
        .args(KAFKA_JVM)
        // The compression codecs unpack native libraries there.
        .arg(format!(
            "-Djava.io.tmpdir={}",
            run_dir.join("tmp").display()
        ))
        // The client's own log (slf4j-simple, on stderr): warnings and errors only.
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg("-cp")
        .arg(&cp)
        .arg(dir.join("KafkaCross.java"))
        .arg(mode)
        .arg("--bootstrap")
        .arg(bootstrap);
    for (k, v) in args {
        cmd.arg(format!("--{k}")).arg(v);
    }
    let name = format!("kafka-cross-{mode}");
    let out = process::run(&name, cmd, run_dir, SCENARIO_TIMEOUT)?;
    match out.lines().find(|l| l.ends_with("result=ok")) {
        Some(line) => Ok(line.to_string()),
        None => bail!("{name} exited 0 without a result=ok line:\n{out}"),
    }
}

/// Runs the RocketMQ scenario `scenario` with client `version` against `target`, with the
/// harness's usual arguments (`--namesrv`, `--broker`, `--id`) and `extra`.
fn run_rocketmq(
    target: &Target,
    version: &str,
    scenario: &str,
    id: &str,
    extra: &[(&str, &str)],
    run_dir: &Path,
) -> Result<()> {
    let client = Client::get(version)?;
    let (namesrv, broker) = (target.namesrv(), target.broker());
    let mut args = vec![
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id),
    ];
    args.extend_from_slice(extra);
    client.run_with_jvm(
        scenario,
        &args,
        &target.client_jvm_args(),
        run_dir,
        SCENARIO_TIMEOUT,
    )?;
    Ok(())
}

/// A Skiff target with its Kafka listener, or `None` (and a line saying so) for Apache.
fn skiff_target(label: &str) -> Option<Target> {
    let kind = settings::target_kind().unwrap_or_else(|e| panic!("{e:#}"));
    if kind == TargetKind::Apache {
        println!(
            "skipped: SKIFF_COMPAT_TARGET=apache, and no Apache broker serves both RocketMQ and \
             Kafka clients"
        );
        return None;
    }
    let opts = Options {
        kafka_listen: true,
        ..Options::new(FlushDisk::Async).unwrap_or_else(|e| panic!("{e:#}"))
    };
    Some(Target::start_with(label, opts).unwrap_or_else(|e| panic!("{e:#}")))
}

/// Runs `one` once per configured RocketMQ client version against `target`, printing a line per
/// run with the Kafka client's result line; panics listing every failure, with the target's logs.
fn for_all_clients(target: &Target, what: &str, one: impl Fn(&Target, &str) -> Result<String>) {
    let mut failures = Vec::new();
    for version in settings::client_versions() {
        let started = Instant::now();
        let result = one(target, &version).and_then(|line| {
            target.check_alive()?;
            Ok(line)
        });
        let took = started.elapsed();
        match result {
            Ok(line) => println!("{what} with client {version}: PASS in {took:.1?}: {line}"),
            Err(e) => {
                println!("{what} with client {version}: FAIL in {took:.1?}");
                failures.push(format!("{what} with client {version}: {e:#}"));
            }
        }
    }
    if !failures.is_empty() {
        panic!("{}\n\n{}", failures.join("\n\n"), target.logs());
    }
}

/// Kafka → RocketMQ: the Kafka producer creates a topic of 4 partitions (CreateTopics) and
/// sends 1 000 records with UTF-8 (and a few other) keys, text, binary, empty and tombstone
/// values, explicit out-of-order timestamps, and text, binary, null and repeated headers; then a
/// RocketMQ pull consumer (`*`) reads every queue from 0 to its end and finds every record once,
/// as docs/kafka.md maps it.
fn kafka_to_rocketmq_with(target: &Target, version: &str) -> Result<String> {
    let bootstrap = target.kafka_bootstrap().context("no Kafka listener")?;
    let id = unique_id(version);
    let topic = format!("cross_k2r_{id}");
    let run_dir = target.dir().join("runs").join(format!("k2r-{id}"));
    let manifest = run_dir.join("records.tsv");
    let manifest = manifest.to_str().context("a UTF-8 path")?;
    let produced = run_kafka(
        &bootstrap,
        "produce",
        &[
            ("topic", &topic),
            ("count", COUNT),
            ("partitions", PARTITIONS),
            ("manifest", manifest),
        ],
        &run_dir.join("kafka-produce"),
    )
    .context("kafka-clients produce")?;
    run_rocketmq(
        target,
        version,
        "cross-from-kafka",
        &id,
        &[
            ("topic", &topic),
            ("partitions", PARTITIONS),
            ("manifest", manifest),
        ],
        &run_dir.join("rocketmq-consume"),
    )
    .with_context(|| format!("cross-from-kafka after: {produced}"))?;
    Ok(produced)
}

/// RocketMQ → Kafka: the RocketMQ producer sends 1 000 messages with keys, tags, user properties
/// and bodies (text, binary, and 8 KiB ones the client sends zlib-compressed; one by one, the last
/// 20 as a batch) to a topic it creates; then a Kafka consumer without a group reads every message
/// once as docs/kafka.md maps it.
fn rocketmq_to_kafka_with(target: &Target, version: &str) -> Result<String> {
    let bootstrap = target.kafka_bootstrap().context("no Kafka listener")?;
    let id = unique_id(version);
    let topic = format!("cross_r2k_{id}");
    let run_dir = target.dir().join("runs").join(format!("r2k-{id}"));
    let manifest = run_dir.join("messages.tsv");
    let manifest = manifest.to_str().context("a UTF-8 path")?;
    run_rocketmq(
        target,
        version,
        "cross-to-kafka",
        &id,
        &[("topic", &topic), ("count", COUNT), ("manifest", manifest)],
        &run_dir.join("rocketmq-produce"),
    )
    .context("cross-to-kafka")?;
    let consumed = run_kafka(
        &bootstrap,
        "consume",
        &[("topic", &topic), ("manifest", manifest)],
        &run_dir.join("kafka-consume"),
    )
    .context("kafka-clients consume")?;
    Ok(consumed)
}

#[test]
fn kafka_to_rocketmq() {
    let Some(target) = skiff_target("cross-k2r") else {
        return;
    };
    for_all_clients(&target, "kafka-to-rocketmq", kafka_to_rocketmq_with);
}

#[test]
fn rocketmq_to_kafka() {
    let Some(target) = skiff_target("cross-r2k") else {
        return;
    };
    for_all_clients(&target, "rocketmq-to-kafka", rocketmq_to_kafka_with);
}
