//! Counting messages, errors and latencies, per report interval and in total.
//!
//! Latencies go into HDR histograms (microseconds, 3 significant digits), so percentiles stay
//! exact enough at any rate without keeping every sample.

use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Largest latency recorded, in microseconds; longer ones are counted as this.
const MAX_LATENCY_US: u64 = 60_000_000;

/// Counters shared by all producers (or all consumers) of a run.
pub struct Stats {
    inner: Mutex<Windows>,
}

struct Windows {
    interval: Tally,
    total: Tally,
}

/// What happened in one window: messages, errors and their latencies.
#[derive(Clone)]
pub struct Tally {
    pub messages: u64,
    pub errors: u64,
    latency: Histogram<u64>,
}

impl Tally {
    fn new() -> Self {
        Tally {
            messages: 0,
            errors: 0,
            latency: Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
                .expect("static histogram bounds are valid"),
        }
    }

    fn reset(&mut self) {
        self.messages = 0;
        self.errors = 0;
        self.latency.reset();
    }

    /// Latency figures, if any latency was recorded.
    pub fn latency(&self) -> Option<Latency> {
        let h = &self.latency;
        if h.is_empty() {
            return None;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Some(Latency {
            avg_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        })
    }

    /// Messages per second over `elapsed`.
    pub fn tps(&self, elapsed: Duration) -> f64 {
        let secs = elapsed.as_secs_f64();
        if secs > 0.0 {
            self.messages as f64 / secs
        } else {
            0.0
        }
    }
}

/// Latency figures of a window, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Stats {
    pub fn new() -> Self {
        Stats {
            inner: Mutex::new(Windows {
                interval: Tally::new(),
                total: Tally::new(),
            }),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Windows) -> R) -> R {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    /// One message acknowledged after `latency`.
    pub fn record_latency(&self, latency: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, MAX_LATENCY_US);
        self.with(|w| {
            for tally in [&mut w.interval, &mut w.total] {
                tally.messages += 1;
                tally.latency.saturating_record(us);
            }
        });
    }

    /// `count` messages received (consumers time nothing per message).
    pub fn record_messages(&self, count: u64) {
        self.with(|w| {
            w.interval.messages += count;
            w.total.messages += count;
        });
    }

    pub fn record_error(&self) {
        self.with(|w| {
            w.interval.errors += 1;
            w.total.errors += 1;
        });
    }

    /// The interval since the last call; starts a new one.
    pub fn take_interval(&self) -> Tally {
        self.with(|w| {
            let tally = w.interval.clone();
            w.interval.reset();
            tally
        })
    }

    /// Forgets the totals (the end of the warm-up).
    pub fn reset_total(&self) {
        self.with(|w| w.total.reset());
    }

    pub fn total(&self) -> Tally {
        self.with(|w| w.total.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_reset_and_totals_accumulate() {
        let stats = Stats::new();
        for ms in 1..=100 {
            stats.record_latency(Duration::from_millis(ms));
        }
        stats.record_error();
        let first = stats.take_interval();
        assert_eq!((first.messages, first.errors), (100, 1));
        let latency = first.latency().unwrap();
        assert!((latency.p50_ms - 50.0).abs() < 0.1, "{latency:?}");
        assert!((latency.p99_ms - 99.0).abs() < 0.1, "{latency:?}");
        assert!((latency.max_ms - 100.0).abs() < 0.1, "{latency:?}");
        assert!((latency.avg_ms - 50.5).abs() < 0.1, "{latency:?}");

        stats.record_messages(7);
        let second = stats.take_interval();
        assert_eq!((second.messages, second.errors), (7, 0));
        assert!(second.latency().is_none());
        assert_eq!(stats.total().messages, 107);

        stats.reset_total();
        assert_eq!(stats.total().messages, 0);
        assert_eq!(stats.total().tps(Duration::from_secs(1)), 0.0);
    }

    #[test]
    fn tps_divides_by_elapsed_time() {
        let stats = Stats::new();
        stats.record_messages(500);
        assert_eq!(stats.total().tps(Duration::from_millis(250)), 2000.0);
        assert_eq!(stats.total().tps(Duration::ZERO), 0.0);
    }
}
