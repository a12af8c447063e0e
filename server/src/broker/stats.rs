//! Broker message totals for GET_BROKER_RUNTIME_INFO (`BrokerStats` in Apache RocketMQ): messages
//! put and got since start, and the totals at the start of today and of yesterday (UTC days), as
//! `mqadmin clusterList` and `brokerStatus` show them. Rates and store timings come from the
//! store's own runtime info.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

const DAY_MS: i64 = 86_400_000;

struct Mornings {
    /// UTC day number the "today" totals belong to.
    day: i64,
    put_today: u64,
    got_today: u64,
    put_yesterday: u64,
    got_yesterday: u64,
}

pub(super) struct BrokerStats {
    put: AtomicU64,
    got: AtomicU64,
    mornings: Mutex<Mornings>,
}

impl BrokerStats {
    pub(super) fn new(now_millis: i64) -> Self {
        BrokerStats {
            put: AtomicU64::new(0),
            got: AtomicU64::new(0),
            mornings: Mutex::new(Mornings {
                day: now_millis.div_euclid(DAY_MS),
                put_today: 0,
                got_today: 0,
                put_yesterday: 0,
                got_yesterday: 0,
            }),
        }
    }

    pub(super) fn messages_put(&self, n: u64) {
        self.put.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn messages_got(&self, n: u64) {
        self.got.fetch_add(n, Ordering::Relaxed);
    }

    /// Messages put and got since start (the web console's throughput samples).
    pub(super) fn totals(&self) -> (u64, u64) {
        (
            self.put.load(Ordering::Relaxed),
            self.got.load(Ordering::Relaxed),
        )
    }

    /// Moves the morning totals when a new day has begun; called periodically.
    pub(super) fn roll_day(&self, now_millis: i64) {
        let day = now_millis.div_euclid(DAY_MS);
        let mut mornings = self.mornings.lock();
        if day != mornings.day {
            mornings.put_yesterday = mornings.put_today;
            mornings.got_yesterday = mornings.got_today;
            mornings.put_today = self.put.load(Ordering::Relaxed);
            mornings.got_today = self.got.load(Ordering::Relaxed);
            mornings.day = day;
        }
    }

    /// The entries of the runtime info table this module owns.
    pub(super) fn runtime_info(&self) -> Vec<(&'static str, String)> {
        let mornings = self.mornings.lock();
        vec![
            (
                "msgPutTotalTodayNow",
                self.put.load(Ordering::Relaxed).to_string(),
            ),
            (
                "msgGetTotalTodayNow",
                self.got.load(Ordering::Relaxed).to_string(),
            ),
            ("msgPutTotalTodayMorning", mornings.put_today.to_string()),
            ("msgGetTotalTodayMorning", mornings.got_today.to_string()),
            (
                "msgPutTotalYesterdayMorning",
                mornings.put_yesterday.to_string(),
            ),
            (
                "msgGetTotalYesterdayMorning",
                mornings.got_yesterday.to_string(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(stats: &BrokerStats, key: &str) -> String {
        let info = stats.runtime_info();
        info.iter().find(|(k, _)| *k == key).unwrap().1.clone()
    }

    #[test]
    fn totals_and_mornings() {
        let stats = BrokerStats::new(1_000);
        stats.messages_put(50);
        stats.messages_got(7);
        stats.roll_day(2_000);
        assert_eq!(get(&stats, "msgPutTotalTodayNow"), "50");
        assert_eq!(get(&stats, "msgPutTotalTodayMorning"), "0");
        stats.roll_day(DAY_MS + 1);
        assert_eq!(get(&stats, "msgPutTotalTodayMorning"), "50");
        assert_eq!(get(&stats, "msgGetTotalTodayMorning"), "7");
        stats.messages_put(5);
        stats.roll_day(2 * DAY_MS + 1);
        assert_eq!(get(&stats, "msgPutTotalTodayMorning"), "55");
        assert_eq!(get(&stats, "msgPutTotalYesterdayMorning"), "50");
    }
}
