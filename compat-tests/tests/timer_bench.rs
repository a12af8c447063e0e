//! Timer benchmark (issue 7, "Measure"): schedules `SKIFF_TIMER_BENCH_COUNT` timer messages
//! (100,000) due uniformly over the `SKIFF_TIMER_BENCH_WINDOW` seconds (120) after sending starts,
//! with the official 5.3.3 client, and reports the broker's resident memory (VmRSS, sampled every
//! second: before, peak, at the end) and the lateness percentiles at the consumer. Ignored by
//! default: run it on purpose, against each target, see docs/benchmarks.md.
//!
//! ```sh
//! cargo test -p skiff-compat-tests --test timer_bench -- --ignored --nocapture
//! SKIFF_COMPAT_TARGET=apache cargo test -p skiff-compat-tests --test timer_bench -- --ignored --nocapture
//! ```

use std::fs;
use std::time::{Duration, Instant};

use skiff_compat_tests::java::Client;
use skiff_compat_tests::settings;
use skiff_compat_tests::suite::unique_id;
use skiff_compat_tests::target::{FlushDisk, Target};

/// The broker's resident memory in KiB: `VmRSS`, of which `RssAnon` (heap, stacks) and `RssFile`
/// (mapped file pages: CommitLog, ConsumeQueue, timer files, the JVM's jars).
#[derive(Debug, Clone, Copy, Default)]
struct Rss {
    total: u64,
    anon: u64,
    file: u64,
}

fn rss_kib(pid: i32) -> Option<Rss> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some(Rss {
        total: field("VmRSS:")?,
        anon: field("RssAnon:").unwrap_or(0),
        file: field("RssFile:").unwrap_or(0),
    })
}

#[test]
#[ignore = "a benchmark: minutes long, run on purpose"]
fn timer_bench() {
    let count = settings::number("SKIFF_TIMER_BENCH_COUNT", 100_000).unwrap();
    let window = settings::number("SKIFF_TIMER_BENCH_WINDOW", 120).unwrap();
    let lead = settings::number("SKIFF_TIMER_BENCH_LEAD", 60).unwrap();
    let target = Target::start("timer-bench", FlushDisk::Async).expect("start the target");
    let pid = target.broker_pid().expect("a broker process");
    let client = Client::get("5.3.3").unwrap();
    let id = unique_id("5.3.3");
    let (namesrv, broker) = (target.namesrv(), target.broker());
    let (count_s, window_s, lead_s) = (count.to_string(), window.to_string(), lead.to_string());
    let args = [
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id.as_str()),
        ("count", count_s.as_str()),
        ("window-sec", window_s.as_str()),
        ("lead-sec", lead_s.as_str()),
        ("threads", "8"),
    ];
    let before = rss_kib(pid).unwrap_or_default();
    let dir = target.dir().join("runs").join(format!("timer-bench-{id}"));
    let mut bench = client.spawn("timer-bench", &args, &dir).unwrap();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(window + 300);
    let mut peak = before;
    let mut next_report = 0;
    let status = loop {
        if let Some(rss) = rss_kib(pid) {
            if rss.total > peak.total {
                peak = rss;
            }
            let secs = started.elapsed().as_secs();
            if secs >= next_report {
                next_report = secs + 30;
                println!(
                    "{secs:>5} s: broker VmRSS {} MiB (anon {} MiB, file {} MiB)",
                    rss.total / 1024,
                    rss.anon / 1024,
                    rss.file / 1024
                );
            }
        }
        if let Some(status) = bench.exited().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the benchmark did not finish");
        std::thread::sleep(Duration::from_secs(1));
    };
    let end = rss_kib(pid).unwrap_or_default();
    let out = bench.stdout();
    let result = out
        .lines()
        .find(|l| l.starts_with("RESULT"))
        .map(str::to_string);
    if let Some(sent) = out.lines().find(|l| l.contains("] sent ")) {
        println!("{sent}");
    }
    assert!(
        status.success() && result.is_some(),
        "timer-bench failed ({status}):\n{}\n{}",
        bench.output_tail(40),
        target.logs()
    );
    println!(
        "{:?} broker: {count} timer messages over {window} s (first due after {lead} s): {} ; broker VmRSS before {} MiB, peak {} MiB (anon {} MiB, file {} MiB), end {} MiB; {:.0?}",
        target.kind(),
        result.unwrap(),
        before.total / 1024,
        peak.total / 1024,
        peak.anon / 1024,
        peak.file / 1024,
        end.total / 1024,
        started.elapsed()
    );
}
