//! `skiff bench` against a real `skiff standalone` on free ports: a short produce + consume run
//! must consume exactly what it produced and print a sane report.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{address, Standalone};

/// A `skiff standalone` on free ports and its name server's address.
fn standalone() -> (Standalone, String) {
    let skiff = Standalone::start(&["--broker-listen", "127.0.0.1:0"]);
    let banner = skiff
        .banner(Duration::from_secs(60))
        .expect("standalone printed its addresses");
    let namesrv = address(&banner, "name server").to_string();
    (skiff, namesrv)
}

fn bench(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .arg("bench")
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run skiff bench");
    // Bounded: a hung run fails the test instead of hanging it.
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The `key=value` pairs of the SUMMARY line for `side`.
fn summary(stdout: &str, side: &str) -> Vec<(String, String)> {
    let prefix = format!("SUMMARY {side} ");
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{stdout}"));
    line[prefix.len()..]
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn value(pairs: &[(String, String)], key: &str) -> f64 {
    let (_, v) = pairs
        .iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("no {key} in {pairs:?}"));
    v.parse().unwrap()
}

#[test]
fn both_mode_consumes_what_it_produced() {
    let (_skiff, namesrv) = standalone();
    let out = bench(&[
        "both",
        "--namesrv",
        &namesrv,
        "--messages",
        "2000",
        "--producers",
        "4",
        "--queues",
        "4",
        "--tags",
        "--keys",
        "--interval",
        "500ms",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("created topic SkiffBench with 4 queues"),
        "{stdout}"
    );

    let produce = summary(&stdout, "produce");
    assert_eq!(value(&produce, "messages"), 2000.0);
    assert_eq!(value(&produce, "errors"), 0.0);
    assert!(value(&produce, "tps") > 0.0);
    let (p50, p99, max) = (
        value(&produce, "p50_ms"),
        value(&produce, "p99_ms"),
        value(&produce, "max_ms"),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{produce:?}");

    let consume = summary(&stdout, "consume");
    assert_eq!(value(&consume, "messages"), 2000.0);
    let verify = summary(&stdout, "verify");
    assert_eq!(value(&verify, "produced"), 2000.0);
    assert_eq!(value(&verify, "consumed"), 2000.0);
    assert!(
        stdout.contains("missing=0 duplicates=0 unexpected=0 result=ok"),
        "{stdout}"
    );

    // The backlog it left is read back by a consume-only run, which then stops by itself.
    let out = bench(&["consume", "--namesrv", &namesrv, "--backlog"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(value(&summary(&stdout, "consume"), "messages"), 2000.0);
}

/// Halves committed by END_TRANSACTION reach consumers, each once: the transactional load really
/// is transactions, not plain sends.
#[test]
fn transactional_sends_are_committed_and_consumed() {
    let (_skiff, namesrv) = standalone();
    let out = bench(&[
        "both",
        "--namesrv",
        &namesrv,
        "--transaction",
        "--messages",
        "500",
        "--producers",
        "4",
        "--queues",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(value(&summary(&stdout, "produce"), "errors"), 0.0);
    assert!(
        stdout.contains("produced=500 consumed=500 missing=0 duplicates=0 unexpected=0 result=ok"),
        "{stdout}"
    );
}

#[test]
fn timed_async_run_reports_every_interval() {
    let (_skiff, namesrv) = standalone();
    let out = bench(&[
        "--namesrv",
        &namesrv,
        "--duration",
        "2s",
        "--async",
        "--inflight",
        "4",
        "--producers",
        "2",
        "--interval",
        "500ms",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let reports = stdout
        .lines()
        .filter(|l| l.contains("] produce TPS"))
        .count();
    assert!(reports >= 3, "expected a report every 500 ms:\n{stdout}");
    let produce = summary(&stdout, "produce");
    let seconds = value(&produce, "seconds");
    assert!((1.9..5.0).contains(&seconds), "{produce:?}");
    assert!(stdout.contains("result=ok"), "{stdout}");
}

#[test]
fn help_teaches_with_examples() {
    let out = Command::new(env!("CARGO_BIN_EXE_skiff"))
        .args(["bench", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "Examples:",
        "--producers",
        "--async",
        "--backlog",
        "SUMMARY",
    ] {
        assert!(
            help.contains(expected),
            "{expected:?} missing from:\n{help}"
        );
    }
}
