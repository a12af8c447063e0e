//! What `skiff bench` prints: a line per side every interval, and a summary at the end whose
//! `SUMMARY` lines are `key=value` pairs for scripts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::stats::{Stats, Tally};

/// One report line for a window of `elapsed`, `at` seconds into the run.
pub fn interval_line(
    at: Duration,
    label: &str,
    tally: &Tally,
    elapsed: Duration,
    warmup: bool,
) -> String {
    let mut line = format!(
        "[{:>7.1}s] {label:<7} TPS {:>9.0}",
        at.as_secs_f64(),
        tally.tps(elapsed)
    );
    if let Some(l) = tally.latency() {
        line.push_str(&format!(
            " | latency ms avg {:.3} p50 {:.3} p99 {:.3} p99.9 {:.3} max {:.3}",
            l.avg_ms, l.p50_ms, l.p99_ms, l.p999_ms, l.max_ms
        ));
    }
    line.push_str(&format!(" | errors {}", tally.errors));
    if warmup {
        line.push_str(" (warm-up)");
    }
    line
}

/// The summary of one side: a sentence and a `SUMMARY` line.
pub fn summary(label: &str, tally: &Tally, elapsed: Duration) -> [String; 2] {
    let secs = elapsed.as_secs_f64();
    let tps = tally.tps(elapsed);
    let mut human = format!(
        "{label}: {} messages in {secs:.1} s = {tps:.0} TPS, {} errors",
        tally.messages, tally.errors
    );
    let mut machine = format!(
        "SUMMARY {label} messages={} seconds={secs:.3} tps={tps:.1} errors={}",
        tally.messages, tally.errors
    );
    if let Some(l) = tally.latency() {
        human.push_str(&format!(
            "; latency ms avg {:.3} p50 {:.3} p99 {:.3} p99.9 {:.3} max {:.3}",
            l.avg_ms, l.p50_ms, l.p99_ms, l.p999_ms, l.max_ms
        ));
        machine.push_str(&format!(
            " avg_ms={:.3} p50_ms={:.3} p99_ms={:.3} p999_ms={:.3} max_ms={:.3}",
            l.avg_ms, l.p50_ms, l.p99_ms, l.p999_ms, l.max_ms
        ));
    }
    [human, machine]
}

/// Prints interval lines for each side until aborted.
pub async fn every(
    interval: Duration,
    sides: Vec<(&'static str, Arc<Stats>)>,
    started: Instant,
    warmup: Duration,
) {
    let mut ticker = tokio::time::interval_at((started + interval).into(), interval);
    let mut last = started;
    loop {
        let now = ticker.tick().await.into_std();
        let in_warmup = now.duration_since(started) <= warmup && !warmup.is_zero();
        for (label, stats) in &sides {
            let tally = stats.take_interval();
            let at = now.duration_since(started);
            println!(
                "{}",
                interval_line(at, label, &tally, now.duration_since(last), in_warmup)
            );
        }
        last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_carry_rates_and_latencies() {
        let stats = Stats::new();
        for _ in 0..10 {
            stats.record_latency(Duration::from_millis(2));
        }
        stats.record_error();
        let [human, machine] = summary("produce", &stats.total(), Duration::from_secs(2));
        assert!(
            human.starts_with("produce: 10 messages in 2.0 s = 5 TPS, 1 errors"),
            "{human}"
        );
        assert!(
            machine.starts_with(
                "SUMMARY produce messages=10 seconds=2.000 tps=5.0 errors=1 avg_ms=2."
            ),
            "{machine}"
        );
        assert!(machine.contains(" p99_ms=2."), "{machine}");

        let line = interval_line(
            Duration::from_secs(5),
            "consume",
            &stats.take_interval(),
            Duration::from_secs(5),
            true,
        );
        assert!(line.contains("consume TPS         2"), "{line}");
        assert!(line.ends_with("| errors 1 (warm-up)"), "{line}");
    }
}
