//! Message ids of a run and the consumed == produced check.
//!
//! Every message carries a unique id (`UNIQ_KEY`, 32 hex digits like the Java client's): 16 for
//! the run, 16 for the message's sequence number. Consumers recognise their run's messages by the
//! first half and report the sequence numbers; the check compares them with what producers had
//! acknowledged.

use std::fmt;

/// The `UNIQ_KEY` of message `seq` in run `run`.
pub fn uniq_key(run: u64, seq: u64) -> String {
    format!("{run:016X}{seq:016X}")
}

/// The sequence number in `key` if it belongs to run `run`.
pub fn seq_of(run: u64, key: &str) -> Option<u64> {
    if key.len() != 32 || !key.is_ascii() {
        return None;
    }
    let (prefix, seq) = key.split_at(16);
    if u64::from_str_radix(prefix, 16).ok()? != run {
        return None;
    }
    u64::from_str_radix(seq, 16).ok()
}

/// A run id unlikely to repeat: the clock mixed with the process id.
pub fn new_run_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 40)
}

/// Sequence numbers as each side saw them.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Acknowledged by the broker.
    pub acked: Vec<u64>,
    /// Sent but failed or timed out: they may or may not be stored.
    pub failed: Vec<u64>,
    /// Pulled by consumers, repeats included.
    pub consumed: Vec<u64>,
}

/// The outcome of comparing a ledger.
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    pub produced: u64,
    pub consumed: u64,
    /// Acknowledged but never consumed.
    pub missing: u64,
    /// Consumed more than once.
    pub duplicates: u64,
    /// Consumed but never sent (a failed send may legitimately be stored; those are not counted).
    pub unexpected: u64,
}

impl Verdict {
    pub fn ok(&self) -> bool {
        self.missing == 0 && self.duplicates == 0 && self.unexpected == 0
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "produced={} consumed={} missing={} duplicates={} unexpected={} result={}",
            self.produced,
            self.consumed,
            self.missing,
            self.duplicates,
            self.unexpected,
            if self.ok() { "ok" } else { "FAILED" }
        )
    }
}

impl Ledger {
    pub fn verdict(mut self) -> Verdict {
        self.acked.sort_unstable();
        self.failed.sort_unstable();
        self.consumed.sort_unstable();
        let consumed_total = self.consumed.len() as u64;
        let before = self.consumed.len();
        self.consumed.dedup();
        let duplicates = (before - self.consumed.len()) as u64;
        let missing = self
            .acked
            .iter()
            .filter(|seq| self.consumed.binary_search(seq).is_err())
            .count() as u64;
        let unexpected = self
            .consumed
            .iter()
            .filter(|seq| {
                self.acked.binary_search(seq).is_err() && self.failed.binary_search(seq).is_err()
            })
            .count() as u64;
        Verdict {
            produced: self.acked.len() as u64,
            consumed: consumed_total,
            missing,
            duplicates,
            unexpected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_within_their_run() {
        let key = uniq_key(0xABCD, 42);
        assert_eq!(key.len(), 32);
        assert_eq!(seq_of(0xABCD, &key), Some(42));
        assert_eq!(seq_of(0xABCE, &key), None);
        assert_eq!(seq_of(0xABCD, "7F00000100002A9F0000000000000001X"), None);
        assert_eq!(seq_of(0xABCD, "short"), None);
    }

    #[test]
    fn exact_match_passes() {
        let ledger = Ledger {
            acked: vec![2, 0, 1],
            failed: vec![],
            consumed: vec![1, 2, 0],
        };
        let verdict = ledger.verdict();
        assert!(verdict.ok(), "{verdict}");
        assert_eq!((verdict.produced, verdict.consumed), (3, 3));
    }

    #[test]
    fn missing_duplicate_and_unexpected_fail() {
        let ledger = Ledger {
            acked: vec![0, 1, 2],
            failed: vec![5],
            consumed: vec![0, 0, 2, 5, 9],
        };
        let verdict = ledger.verdict();
        assert_eq!(
            verdict,
            Verdict {
                produced: 3,
                consumed: 5,
                missing: 1,
                duplicates: 1,
                unexpected: 1,
            }
        );
        assert!(!verdict.ok());
        assert!(verdict.to_string().ends_with("result=FAILED"));
    }
}
