//! Transaction and SQL92 benchmarks (issue 7, "Measure"), with the official 5.3.3 client against
//! the target the harness starts (ASYNC_FLUSH). Ignored by default: run them on purpose, against
//! each target one right after the other, see docs/benchmarks.md.
//!
//! - `tx_bench`: transactional send TPS of one `TransactionMQProducer` shared by
//!   `SKIFF_TX_BENCH_THREADS` (16) threads, `SKIFF_TX_BENCH_SIZE` (1024) byte bodies, the local
//!   transaction commits at once (scenario "tx-bench" in FeatureBench.java).
//! - `sql_bench`: a backlog of `SKIFF_SQL_BENCH_COUNT` (1,000,000) messages with `a = i % 10`, then
//!   fresh push consumer groups with `MessageSelector.bySql("a = 0")`: matched messages consumed
//!   per second, the listener taking up to `SKIFF_SQL_BENCH_CONSUME_BATCH` (32) a call (scenario
//!   "sql-bench").
//!
//! Each round also reports the broker's CPU time per transaction or per matching message (from
//! `/proc/<pid>/stat`): on a shared machine that is steadier than the rates.
//!
//! Both measure `SKIFF_BENCH_ROUNDS` (3) rounds after a warm-up (`SKIFF_BENCH_WARMUP`, 10 s, and
//! `SKIFF_BENCH_DURATION`, 30 s per transaction round) and report the median. The Apache broker
//! runs with runbroker.sh's production JVM flags unless `SKIFF_BENCH_APACHE_JVM=harness`; the
//! load generator JVM has a 1 GiB G1 heap and the full JIT.
//!
//! ```sh
//! SKIFF_BIN=$PWD/target/release/skiff cargo test -p skiff-compat-tests --test feature_bench -- --ignored --nocapture --test-threads 1
//! SKIFF_COMPAT_TARGET=apache cargo test -p skiff-compat-tests --test feature_bench -- --ignored --nocapture --test-threads 1
//! ```

use std::fs;
use std::time::{Duration, Instant};

use skiff_compat_tests::java::Client;
use skiff_compat_tests::settings;
use skiff_compat_tests::suite::unique_id;
use skiff_compat_tests::target::{FlushDisk, Options, Target};

/// Apache's runbroker.sh (JDK 9+ branch), as shipped (scripts/bench-compare.sh uses the same).
const RUNBROKER_JVM: [&str; 12] = [
    "-server",
    "-Xms8g",
    "-Xmx8g",
    "-XX:+UseG1GC",
    "-XX:G1HeapRegionSize=16m",
    "-XX:G1ReservePercent=25",
    "-XX:InitiatingHeapOccupancyPercent=30",
    "-XX:SoftRefLRUPolicyMSPerMB=0",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+AlwaysPreTouch",
    "-XX:MaxDirectMemorySize=15g",
    "-XX:-UseLargePages",
];

/// The load generator's JVM: a real heap and C2, unlike the quick-starting test scenarios.
const CLIENT_JVM: [&str; 3] = ["-Xms1g", "-Xmx1g", "-XX:+UseG1GC"];

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// User + system CPU seconds the process has used.
fn cpu_secs(pid: i32) -> Option<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn start(label: &str) -> Target {
    let mut opts = Options::new(FlushDisk::Async).expect("options");
    if std::env::var("SKIFF_BENCH_APACHE_JVM").as_deref() != Ok("harness") {
        opts.apache_broker_jvm = Some(RUNBROKER_JVM.iter().map(|s| s.to_string()).collect());
    }
    // Segments as a production store has them, so the run does not measure segment rolls.
    opts.commit_log_size = 1024 * 1024 * 1024;
    Target::start_with(label, opts).expect("start the target")
}

/// Runs `scenario` against a fresh target and prints its RESULT line with the load averages and
/// the broker's CPU use.
fn run(label: &str, scenario: &str, args: &[(&str, String)], timeout: Duration) {
    let load_before = loadavg();
    let target = start(label);
    let pid = target.broker_pid().expect("a broker process");
    let client = Client::get("5.3.3").unwrap();
    let id = unique_id("5.3.3");
    let (namesrv, broker) = (target.namesrv(), target.broker());
    let pid_s = pid.to_string();
    let mut all = vec![
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id.as_str()),
        ("broker-pid", pid_s.as_str()),
    ];
    all.extend(args.iter().map(|(k, v)| (*k, v.as_str())));
    let dir = target.dir().join("runs").join(format!("{label}-{id}"));
    let cpu_before = cpu_secs(pid).unwrap_or(0.0);
    let started = Instant::now();
    let mut bench = client
        .spawn_with_jvm(scenario, &all, &dir, &CLIENT_JVM)
        .unwrap();
    let status = loop {
        if let Some(status) = bench.exited().unwrap() {
            break status;
        }
        assert!(started.elapsed() < timeout, "{scenario} did not finish");
        std::thread::sleep(Duration::from_millis(500));
    };
    let cpu = cpu_secs(pid).unwrap_or(0.0) - cpu_before;
    let out = bench.stdout();
    let result = out
        .lines()
        .find(|l| l.starts_with("RESULT"))
        .map(str::to_string);
    assert!(
        status.success() && result.is_some(),
        "{scenario} failed ({status}):\n{}\n{}",
        bench.output_tail(40),
        target.logs()
    );
    for line in out
        .lines()
        .filter(|l| l.contains("round") || l.contains("warm-up") || l.contains("backlog"))
    {
        println!("{line}");
    }
    println!(
        "{:?} broker: {} ; broker CPU {cpu:.1} s in {:.0?}; load before {load_before}, after {}",
        target.kind(),
        result.unwrap(),
        started.elapsed(),
        loadavg()
    );
}

fn knob(name: &str, default: u64) -> String {
    settings::number(name, default).unwrap().to_string()
}

#[test]
#[ignore = "a benchmark: minutes long, run on purpose"]
fn tx_bench() {
    let warmup = knob("SKIFF_BENCH_WARMUP", 10);
    let duration = knob("SKIFF_BENCH_DURATION", 30);
    let rounds = knob("SKIFF_BENCH_ROUNDS", 3);
    let total: u64 = warmup.parse::<u64>().unwrap()
        + duration.parse::<u64>().unwrap() * rounds.parse::<u64>().unwrap();
    let args = [
        ("threads", knob("SKIFF_TX_BENCH_THREADS", 16)),
        ("size", knob("SKIFF_TX_BENCH_SIZE", 1024)),
        ("warmup-sec", warmup),
        ("duration-sec", duration),
        ("rounds", rounds),
    ];
    run(
        "tx-bench",
        "tx-bench",
        &args,
        Duration::from_secs(total + 300),
    );
}

#[test]
#[ignore = "a benchmark: minutes long, run on purpose"]
fn sql_bench() {
    let args = [
        ("count", knob("SKIFF_SQL_BENCH_COUNT", 1_000_000)),
        ("size", knob("SKIFF_SQL_BENCH_SIZE", 128)),
        ("consume-batch", knob("SKIFF_SQL_BENCH_CONSUME_BATCH", 32)),
        ("rounds", knob("SKIFF_BENCH_ROUNDS", 3)),
    ];
    run("sql-bench", "sql-bench", &args, Duration::from_secs(1800));
}
