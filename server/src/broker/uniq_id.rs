//! Message unique ids for messages that arrive without one (`MessageClientIDSetter`).
//!
//! The id is 16 bytes shown as 32 uppercase hex digits: IPv4 address, process id (2 bytes), a
//! per-process random number standing in for Java's class-loader hash (4 bytes), milliseconds since
//! the start of the current month (4 bytes) and a counter (2 bytes). Tools decode the time part to
//! narrow index searches, so it follows Java's layout (months are taken in UTC).

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU16, Ordering};

pub struct UniqIdGenerator {
    prefix: [u8; 10],
    counter: AtomicU16,
}

impl UniqIdGenerator {
    pub fn new(ip: Ipv4Addr) -> Self {
        let mut prefix = [0u8; 10];
        prefix[..4].copy_from_slice(&ip.octets());
        prefix[4..6].copy_from_slice(&(std::process::id() as u16).to_be_bytes());
        prefix[6..10].copy_from_slice(&random_u32().to_be_bytes());
        UniqIdGenerator {
            prefix,
            counter: AtomicU16::new(0),
        }
    }

    /// A new id for a message stored at `now_millis`.
    pub fn next(&self, now_millis: i64) -> String {
        let since_month = (now_millis - start_of_month_utc(now_millis)) as i32;
        let counter = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut raw = [0u8; 16];
        raw[..10].copy_from_slice(&self.prefix);
        raw[10..14].copy_from_slice(&since_month.to_be_bytes());
        raw[14..].copy_from_slice(&counter.to_be_bytes());
        let mut hex = String::with_capacity(32);
        for byte in raw {
            hex.push_str(&format!("{byte:02X}"));
        }
        hex
    }
}

/// A random-enough number without a dependency: the std hasher is seeded randomly per process.
fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(std::process::id().into());
    hasher.finish() as u32
}

/// Milliseconds of 00:00 UTC on the first day of `millis`'s month.
fn start_of_month_utc(millis: i64) -> i64 {
    const DAY_MS: i64 = 86_400_000;
    let days = millis.div_euclid(DAY_MS);
    let (year, month, _) = skiff_model::calendar::civil_from_days(days);
    skiff_model::calendar::days_from_civil(year, month, 1) * DAY_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn month_start_is_exact() {
        // 2026-11-29T07:07:59Z → 2026-11-01T00:00:00Z
        assert_eq!(start_of_month_utc(1_795_936_079_000), 1_793_491_200_000);
        // 2024-02-29 (leap day) → 2024-02-01
        assert_eq!(start_of_month_utc(1_709_164_800_000), 1_706_745_600_000);
    }

    #[test]
    fn ids_have_java_layout() {
        let generator = UniqIdGenerator::new(Ipv4Addr::new(127, 0, 0, 1));
        let now = 1_795_936_079_000;
        let first = generator.next(now);
        let second = generator.next(now);
        assert_eq!(first.len(), 32);
        assert!(first.starts_with("7F000001"));
        assert_ne!(first, second);
        // Java casts to int and reads the field back as unsigned (`getNearlyTimeFromID`): late in
        // a month it wraps, and unsigned it is exact again.
        let since_month = u32::from_str_radix(&first[20..28], 16).unwrap();
        assert_eq!(i64::from(since_month), now - 1_793_491_200_000);
    }
}
