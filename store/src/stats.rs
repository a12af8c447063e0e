//! Counters behind `runtime_info`, named as Java's `StoreStatsService` names them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Samples kept for the TPS windows (10 min at one sample a second).
const MAX_SAMPLES: usize = 601;

#[derive(Default)]
pub(crate) struct Stats {
    pub put_message_times_total: AtomicU64,
    pub put_message_size_total: AtomicU64,
    pub put_message_failed_times: AtomicU64,
    pub put_message_entire_time_max: AtomicU64,
    pub get_message_times_total_found: AtomicU64,
    pub get_message_times_total_miss: AtomicU64,
    pub get_message_transferred_msg_count: AtomicU64,
    pub get_message_entire_time_max: AtomicU64,
    /// CommitLog flushes that wrote something (not a Java name; shows group commit at work).
    pub commit_log_flush_times: AtomicU64,
    /// How long each of those flushes (msync/fsync of the dirty range) took.
    pub commit_log_flush_latency: DurationHistogram,
    /// How long each SYNC_FLUSH put waited for its group commit.
    pub group_commit_wait: DurationHistogram,
    samples: Mutex<VecDeque<Sample>>,
}

/// Upper bounds, in milliseconds, of the buckets of [`DurationHistogram`].
pub const LATENCY_BOUNDS_MS: [f64; 12] = [
    0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 500.0, 1000.0,
];

/// A histogram of durations over [`LATENCY_BOUNDS_MS`], updated with atomics by the store's
/// threads and read by whoever exports it (the store knows no metrics format).
#[derive(Default)]
pub struct DurationHistogram {
    /// Per bucket (not cumulative); the last one is above every bound.
    buckets: [AtomicU64; LATENCY_BOUNDS_MS.len() + 1],
    sum_ns: AtomicU64,
}

/// A duration histogram of the store as read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySnapshot {
    /// (upper bound in ms, observations above the previous bound and at or below this one).
    pub buckets: Vec<(f64, u64)>,
    /// Every observation, those above the last bound too.
    pub count: u64,
    pub sum_ms: f64,
}

impl DurationHistogram {
    pub(crate) fn record(&self, took: std::time::Duration) {
        let ms = took.as_secs_f64() * 1000.0;
        let bucket = LATENCY_BOUNDS_MS
            .iter()
            .position(|&bound| ms <= bound)
            .unwrap_or(LATENCY_BOUNDS_MS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(
            took.as_nanos().min(u128::from(u64::MAX)) as u64,
            Ordering::Relaxed,
        );
    }

    pub fn snapshot(&self) -> LatencySnapshot {
        let mut total = 0;
        let mut buckets = Vec::with_capacity(LATENCY_BOUNDS_MS.len());
        for (bound, count) in LATENCY_BOUNDS_MS.iter().zip(&self.buckets) {
            let count = count.load(Ordering::Relaxed);
            total += count;
            buckets.push((*bound, count));
        }
        total += self.buckets[LATENCY_BOUNDS_MS.len()].load(Ordering::Relaxed);
        LatencySnapshot {
            buckets,
            count: total,
            sum_ms: self.sum_ns.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

#[derive(Clone, Copy)]
struct Sample {
    at_ms: i64,
    put: u64,
    found: u64,
    miss: u64,
    transferred: u64,
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Keeps the longest put so far (`putMessageEntireTimeMax`), flush wait included.
    pub(crate) fn record_put_time(&self, begin: std::time::Instant) {
        self.put_message_entire_time_max
            .fetch_max(begin.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Records the counters now; the flush thread calls this about once a second.
    pub(crate) fn sample(&self, now_ms: i64) {
        let sample = Sample {
            at_ms: now_ms,
            put: Self::get(&self.put_message_times_total),
            found: Self::get(&self.get_message_times_total_found),
            miss: Self::get(&self.get_message_times_total_miss),
            transferred: Self::get(&self.get_message_transferred_msg_count),
        };
        let mut samples = self.samples.lock();
        if samples.len() == MAX_SAMPLES {
            samples.pop_front();
        }
        samples.push_back(sample);
    }

    /// "tps10 tps60 tps600" of one counter; a window without enough history is empty, as in Java.
    fn tps(&self, pick: impl Fn(&Sample) -> u64) -> String {
        self.tps_or(pick, "")
    }

    /// [`Stats::tps`] with `missing` for a window without enough history: Java's `getTotalTps`
    /// prints `0.0` there (the Dashboard averages its three values).
    fn tps_or(&self, pick: impl Fn(&Sample) -> u64, missing: &str) -> String {
        let samples = self.samples.lock();
        let Some(last) = samples.back() else {
            return format!("{missing} {missing} {missing}");
        };
        let window = |seconds: i64| {
            samples
                .iter()
                .rev()
                .find(|s| last.at_ms - s.at_ms >= seconds * 1000)
                .map(|begin| {
                    let calls = pick(last).saturating_sub(pick(begin)) as f64;
                    // Debug formatting prints doubles as Java does ("100.0").
                    format!("{:?}", calls / (last.at_ms - begin.at_ms) as f64 * 1000.0)
                })
                .unwrap_or_else(|| missing.to_string())
        };
        format!("{} {} {}", window(10), window(60), window(600))
    }

    pub(crate) fn runtime_info(&self, boot_ms: i64, now_ms: i64) -> Vec<(String, String)> {
        let put_times = Self::get(&self.put_message_times_total).max(1);
        let put_size = Self::get(&self.put_message_size_total);
        let elapsed = (now_ms - boot_ms).max(0);
        let runtime = format!(
            "[ {} days, {} hours, {} minutes, {} seconds ]",
            elapsed / 86_400_000,
            elapsed % 86_400_000 / 3_600_000,
            elapsed % 3_600_000 / 60_000,
            elapsed % 60_000 / 1000
        );
        let mut info = vec![
            ("bootTimestamp".to_string(), boot_ms.to_string()),
            ("runtime".to_string(), runtime),
            ("putMessageTimesTotal".to_string(), put_times.to_string()),
            ("putMessageSizeTotal".to_string(), put_size.to_string()),
            (
                "putMessageAverageSize".to_string(),
                format!("{:?}", put_size as f64 / put_times as f64),
            ),
            (
                "putMessageFailedTimes".to_string(),
                Self::get(&self.put_message_failed_times).to_string(),
            ),
            (
                "putMessageEntireTimeMax".to_string(),
                Self::get(&self.put_message_entire_time_max).to_string(),
            ),
            (
                "getMessageEntireTimeMax".to_string(),
                Self::get(&self.get_message_entire_time_max).to_string(),
            ),
        ];
        info.push((
            "commitLogFlushTimes".to_string(),
            Self::get(&self.commit_log_flush_times).to_string(),
        ));
        info.push(("putTps".to_string(), self.tps(|s| s.put)));
        info.push(("getFoundTps".to_string(), self.tps(|s| s.found)));
        info.push(("getMissTps".to_string(), self.tps(|s| s.miss)));
        info.push((
            "getTotalTps".to_string(),
            self.tps_or(|s| s.found + s.miss, "0.0"),
        ));
        info.push(("getTransferredTps".to_string(), self.tps(|s| s.transferred)));
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tps_windows() {
        let stats = Stats::default();
        for second in 0..=20 {
            Stats::add(&stats.put_message_times_total, 100);
            stats.sample(second * 1000);
        }
        let info = stats.runtime_info(0, 20_000);
        let get = |key: &str| info.iter().find(|(k, _)| k == key).unwrap().1.clone();
        assert_eq!(get("putTps"), "100.0  ");
        assert_eq!(get("getTotalTps"), "0.0 0.0 0.0");
        assert_eq!(get("runtime"), "[ 0 days, 0 hours, 0 minutes, 20 seconds ]");
        assert_eq!(get("putMessageTimesTotal"), "2100");
    }

    #[test]
    fn duration_histogram_buckets() {
        let h = DurationHistogram::default();
        h.record(std::time::Duration::from_micros(50));
        h.record(std::time::Duration::from_micros(300));
        h.record(std::time::Duration::from_secs(2));
        let snap = h.snapshot();
        assert_eq!(snap.count, 3);
        assert_eq!(snap.buckets[0], (0.1, 1));
        assert_eq!(snap.buckets[1], (0.25, 0));
        assert_eq!(snap.buckets[2], (0.5, 1));
        assert_eq!(snap.buckets.iter().map(|b| b.1).sum::<u64>(), 2);
        assert!((snap.sum_ms - 2000.35).abs() < 1e-6, "{}", snap.sum_ms);
    }
}
