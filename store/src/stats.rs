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
    samples: Mutex<VecDeque<Sample>>,
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
        let samples = self.samples.lock();
        let Some(last) = samples.back() else {
            return "  ".to_string();
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
                .unwrap_or_default()
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
        info.push(("getTotalTps".to_string(), self.tps(|s| s.found + s.miss)));
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
        assert_eq!(get("runtime"), "[ 0 days, 0 hours, 0 minutes, 20 seconds ]");
        assert_eq!(get("putMessageTimesTotal"), "2100");
    }
}
