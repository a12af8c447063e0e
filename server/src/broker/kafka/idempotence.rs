//! Idempotent producers (InitProducerId, and the sequence numbers of Produce).
//!
//! A producer id is handed out once: ids come from blocks reserved in
//! `config/kafkaProducerIds.json` before the first id of a block is given, so after a restart the
//! broker goes on after the last block it reserved and never gives an id twice.
//!
//! For each (producer id, topic, partition) the broker remembers the producer's epoch and its last
//! five batches (first and last sequence, base offset), as Kafka's `ProducerStateManager` does.
//! [`Sequences::check`] applies Kafka's rules in Kafka's order: a batch seen among the five is a
//! duplicate and gets its original offset; an older epoch is INVALID_PRODUCER_EPOCH; a newer
//! epoch must start at sequence 0 and the same epoch must go on from the last sequence, else
//! OUT_OF_ORDER_SEQUENCE_NUMBER; a producer the broker knows nothing of (new, or forgotten by a
//! restart or after a day of silence) is accepted at any sequence. This state lives in memory.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use skiff_protocol::kafka::error;
use tracing::warn;

use crate::broker::persist;

/// Producer ids reserved at once: one file write per this many InitProducerId requests.
const BLOCK: i64 = 1000;

/// The batches remembered per producer and partition (Kafka's `NUM_BATCHES_TO_RETAIN`).
const RETAINED_BATCHES: usize = 5;

/// A producer silent this long is forgotten (Kafka's `producer.id.expiration.ms` default).
const EXPIRY_MS: i64 = 24 * 60 * 60 * 1000;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reserved {
    /// The first id not reserved yet.
    next_block: i64,
}

/// Hands out producer ids.
pub(super) struct ProducerIds {
    file: PathBuf,
    block: tokio::sync::Mutex<(i64, i64)>,
}

impl ProducerIds {
    /// Continues after the last block reserved in `config_dir`.
    pub(super) fn load(config_dir: PathBuf) -> Self {
        let file = config_dir.join("kafkaProducerIds.json");
        let start = persist::load::<Reserved>(&file).map_or(0, |r| r.next_block.max(0));
        ProducerIds {
            file,
            block: tokio::sync::Mutex::new((start, start)),
        }
    }

    /// A producer id no one had; `Err` when its block could not be reserved on disk.
    pub(super) async fn allocate(&self) -> Result<i64, String> {
        let mut block = self.block.lock().await;
        let (next, end) = *block;
        if next == end {
            let reserved = Reserved {
                next_block: end + BLOCK,
            };
            let content = serde_json::to_string(&reserved).map_err(|e| e.to_string())?;
            let file = self.file.clone();
            let written = tokio::task::spawn_blocking(move || persist::store(&file, &content))
                .await
                .map_err(|e| e.to_string())?;
            if let Err(err) = written {
                warn!(file = %self.file.display(), %err, "cannot reserve Kafka producer ids");
                return Err(err.to_string());
            }
            block.1 = end + BLOCK;
        }
        block.0 = next + 1;
        Ok(next)
    }
}

/// What to do with an idempotent batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Check {
    Append,
    /// Seen before: answer with its base offset, append nothing.
    Duplicate(i64),
    /// Refused with this Kafka error code.
    Refuse(i16),
}

#[derive(Debug, Clone, Copy)]
struct Batch {
    first: i32,
    last: i32,
    base_offset: i64,
}

struct ProducerPartition {
    epoch: i16,
    batches: VecDeque<Batch>,
    last_used_ms: i64,
}

type Key = (i64, String, i32);

/// The sequence state of every (producer id, topic, partition).
#[derive(Default)]
pub(super) struct Sequences {
    partitions: HashMap<Key, ProducerPartition>,
    inserts_since_sweep: usize,
    /// Entries the last sweep left: the next comes after as many records again.
    after_sweep: usize,
}

/// The last sequence of a batch starting at `first` with `count - 1` = `last_offset_delta`
/// (sequences wrap from `i32::MAX` to 0).
pub(super) fn last_sequence(first: i32, last_offset_delta: i32) -> i32 {
    let last = i64::from(first) + i64::from(last_offset_delta);
    if last > i64::from(i32::MAX) {
        (last - i64::from(i32::MAX) - 1) as i32
    } else {
        last as i32
    }
}

fn follows(previous: i32, next: i32) -> bool {
    if previous == i32::MAX {
        next == 0
    } else {
        next == previous + 1
    }
}

impl Sequences {
    pub(super) fn check(&self, key: &Key, epoch: i16, first: i32, last: i32) -> Check {
        let Some(known) = self.partitions.get(key) else {
            return Check::Append;
        };
        if epoch == known.epoch {
            if let Some(seen) = known
                .batches
                .iter()
                .find(|b| b.first == first && b.last == last)
            {
                return Check::Duplicate(seen.base_offset);
            }
        }
        if epoch < known.epoch {
            return Check::Refuse(error::INVALID_PRODUCER_EPOCH);
        }
        if epoch > known.epoch {
            return if first == 0 {
                Check::Append
            } else {
                Check::Refuse(error::OUT_OF_ORDER_SEQUENCE_NUMBER)
            };
        }
        match known.batches.back() {
            Some(previous) if !follows(previous.last, first) => {
                Check::Refuse(error::OUT_OF_ORDER_SEQUENCE_NUMBER)
            }
            _ => Check::Append,
        }
    }

    /// Remembers an appended batch.
    pub(super) fn record(&mut self, key: Key, epoch: i16, batch: (i32, i32, i64), now_ms: i64) {
        let (first, last, base_offset) = batch;
        let entry = self
            .partitions
            .entry(key)
            .or_insert_with(|| ProducerPartition {
                epoch,
                batches: VecDeque::new(),
                last_used_ms: now_ms,
            });
        if entry.epoch != epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        if entry.batches.len() == RETAINED_BATCHES {
            entry.batches.pop_front();
        }
        entry.batches.push_back(Batch {
            first,
            last,
            base_offset,
        });
        entry.last_used_ms = now_ms;
        self.inserts_since_sweep += 1;
        // Amortized O(1): a sweep after as many records as the last sweep left entries.
        if self.inserts_since_sweep >= self.after_sweep.max(1024) {
            self.partitions
                .retain(|_, p| now_ms - p.last_used_ms < EXPIRY_MS);
            self.inserts_since_sweep = 0;
            self.after_sweep = self.partitions.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        (7, "T".to_string(), 0)
    }

    #[test]
    fn kafkas_rules_in_kafkas_order() {
        let mut s = Sequences::default();
        // Unknown producer: any sequence.
        assert_eq!(s.check(&key(), 0, 42, 44), Check::Append);
        s.record(key(), 0, (42, 44, 100), 0);
        // Next in order; a gap; the same batch again.
        assert_eq!(s.check(&key(), 0, 45, 45), Check::Append);
        assert_eq!(
            s.check(&key(), 0, 46, 46),
            Check::Refuse(error::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
        assert_eq!(s.check(&key(), 0, 42, 44), Check::Duplicate(100));
        // Five batches are remembered, not six.
        for (i, seq) in (45..50).enumerate() {
            s.record(key(), 0, (seq, seq, 103 + i as i64), 0);
        }
        assert_eq!(s.check(&key(), 0, 45, 45), Check::Duplicate(103));
        assert_eq!(
            s.check(&key(), 0, 42, 44),
            Check::Refuse(error::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
        // Epochs: older refused, newer from 0 only.
        assert_eq!(
            s.check(&key(), -1, 50, 50),
            Check::Refuse(error::INVALID_PRODUCER_EPOCH)
        );
        assert_eq!(
            s.check(&key(), 1, 50, 50),
            Check::Refuse(error::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
        assert_eq!(s.check(&key(), 1, 0, 3), Check::Append);
        s.record(key(), 1, (0, 3, 200), 0);
        assert_eq!(s.check(&key(), 1, 4, 4), Check::Append);
        // Another partition knows nothing of it.
        assert_eq!(s.check(&(7, "T".into(), 1), 1, 9, 9), Check::Append);
    }

    #[test]
    fn sequences_wrap_and_silent_producers_are_forgotten() {
        assert_eq!(last_sequence(i32::MAX - 1, 2), 0);
        assert_eq!(last_sequence(5, 0), 5);
        let mut s = Sequences::default();
        s.record(key(), 0, (i32::MAX - 1, i32::MAX, 1), 0);
        assert_eq!(s.check(&key(), 0, 0, 1), Check::Append);
        for i in 0..2000 {
            s.record((i, "U".into(), 0), 0, (0, 0, 0), EXPIRY_MS + 1);
        }
        assert!(!s.partitions.contains_key(&key()), "a day of silence");
    }

    #[tokio::test]
    async fn ids_are_never_given_twice_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let ids = ProducerIds::load(dir.path().to_path_buf());
        let first: Vec<i64> = futures::future::join_all((0..3).map(|_| ids.allocate()))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(first.len(), 3);
        let restarted = ProducerIds::load(dir.path().to_path_buf());
        let next = restarted.allocate().await.unwrap();
        assert!(first.iter().all(|id| *id < next), "{first:?} then {next}");
    }
}
