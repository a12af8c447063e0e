//! The POP bookkeeping as a pure state machine: no store, no clock, no sockets.
//!
//! Inputs are the [`PopRecord`]s the broker writes to the revive log (a checkpoint for every
//! pop, an ack for every ack, change of invisible time or revive) together with the log offset
//! each got, and the current time. Outputs are the checkpoints whose invisible time has passed
//! ([`PopState::due`]: the shell re-sends their un-acked messages through the POP retry topic and
//! writes an ack record for them) and, per revive queue, how far the log may be forgotten
//! ([`PopState::progress`]). Because the live path and recovery both go through
//! [`PopState::apply`], recovery after a restart or `kill -9` is a replay of the log from the
//! saved progress: nothing else needs persisting.
//!
//! Orderly pops (`ConsumerOrderInfoManager`) keep no checkpoint: a queue is locked to the pop
//! that read it ([`OrderLocks`]) until every message is acked or the invisible time passes; the
//! group's offset only moves on acks, so an expired lock simply lets the same messages be popped
//! again, with their pop count raised.

use std::collections::{BTreeSet, HashMap};

/// Identifies one pop of one queue: the checkpoint a popped message's `POP_CK` names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CkKey {
    pub group: String,
    /// The topic read (the POP retry topic for retried messages).
    pub topic: String,
    pub queue_id: i32,
    /// The queue offset the pop started at.
    pub start_offset: i64,
    pub pop_time: i64,
}

/// What the revive log holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PopRecord {
    /// Messages at `offsets` were popped and are invisible until `pop_time + invisible_time`.
    Checkpoint {
        key: CkKey,
        invisible_time: i64,
        revive_qid: i32,
        offsets: Vec<i64>,
    },
    /// Messages of a checkpoint are done with (acked, moved to a new checkpoint, or revived).
    Ack { key: CkKey, offsets: Vec<i64> },
}

#[derive(Debug, Clone)]
struct Checkpoint {
    invisible_time: i64,
    revive_qid: i32,
    /// (queue offset, acked), ascending by offset.
    offsets: Vec<(i64, bool)>,
    log_offset: i64,
}

impl Checkpoint {
    fn revive_time(&self, key: &CkKey) -> i64 {
        key.pop_time.saturating_add(self.invisible_time)
    }
}

/// A checkpoint whose invisible time has passed with messages still un-acked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revive {
    pub key: CkKey,
    pub revive_qid: i32,
    /// The un-acked queue offsets, ascending.
    pub offsets: Vec<i64>,
}

/// Live checkpoints, ordered by revive time.
#[derive(Debug, Default)]
pub struct PopState {
    checkpoints: HashMap<CkKey, Checkpoint>,
    by_revive_time: BTreeSet<(i64, CkKey)>,
    /// Revive queue → offset after the last record applied from it.
    log_end: HashMap<i32, i64>,
}

impl PopState {
    /// Applies a record that the revive log holds at `log_offset` of `revive_qid`.
    pub fn apply(&mut self, record: PopRecord, revive_qid: i32, log_offset: i64) {
        let end = self.log_end.entry(revive_qid).or_insert(0);
        *end = (*end).max(log_offset + 1);
        match record {
            PopRecord::Checkpoint {
                key,
                invisible_time,
                revive_qid,
                mut offsets,
            } => {
                if offsets.is_empty() || self.checkpoints.contains_key(&key) {
                    return;
                }
                offsets.sort_unstable();
                offsets.dedup();
                let ck = Checkpoint {
                    invisible_time,
                    revive_qid,
                    offsets: offsets.into_iter().map(|o| (o, false)).collect(),
                    log_offset,
                };
                self.by_revive_time
                    .insert((ck.revive_time(&key), key.clone()));
                self.checkpoints.insert(key, ck);
            }
            PopRecord::Ack { key, offsets } => {
                let Some(ck) = self.checkpoints.get_mut(&key) else {
                    // Acks of checkpoints already done with (or never known) change nothing,
                    // as Java's revive ignores acks without a checkpoint.
                    return;
                };
                for offset in offsets {
                    if let Ok(i) = ck.offsets.binary_search_by_key(&offset, |(o, _)| *o) {
                        ck.offsets[i].1 = true;
                    }
                }
                if ck.offsets.iter().all(|(_, acked)| *acked) {
                    self.remove(&key);
                }
            }
        }
    }

    fn remove(&mut self, key: &CkKey) {
        if let Some(ck) = self.checkpoints.remove(key) {
            self.by_revive_time
                .remove(&(ck.revive_time(key), key.clone()));
        }
    }

    /// The revive log of `revive_qid` ends at `end` (after a replay that found nothing there,
    /// progress must not fall back below it).
    pub fn log_ends_at(&mut self, revive_qid: i32, end: i64) {
        let known = self.log_end.entry(revive_qid).or_insert(0);
        *known = (*known).max(end);
    }

    /// Whether `offset` belongs to a live checkpoint `key` and is not acked yet.
    pub fn is_in_flight(&self, key: &CkKey, offset: i64) -> bool {
        self.checkpoints.get(key).is_some_and(|ck| {
            ck.offsets
                .binary_search_by_key(&offset, |(o, _)| *o)
                .is_ok_and(|i| !ck.offsets[i].1)
        })
    }

    /// Checkpoints whose revive time is at or before `now`, oldest first, at most `limit`.
    /// They stay live until the shell applies the ack it writes after re-sending them.
    pub fn due(&self, now: i64, limit: usize) -> Vec<Revive> {
        self.by_revive_time
            .iter()
            .take_while(|(time, _)| *time <= now)
            .take(limit)
            .filter_map(|(_, key)| {
                let ck = self.checkpoints.get(key)?;
                Some(Revive {
                    key: key.clone(),
                    revive_qid: ck.revive_qid,
                    offsets: ck
                        .offsets
                        .iter()
                        .filter(|(_, acked)| !acked)
                        .map(|(o, _)| *o)
                        .collect(),
                })
            })
            .collect()
    }

    /// How far the revive log of `revive_qid` is no longer needed: the log offset of its oldest
    /// live checkpoint, or the end of what was applied when none is live. A restart replays the
    /// log from here.
    pub fn progress(&self, revive_qid: i32) -> i64 {
        self.checkpoints
            .values()
            .filter(|ck| ck.revive_qid == revive_qid)
            .map(|ck| ck.log_offset)
            .min()
            .unwrap_or_else(|| self.log_end.get(&revive_qid).copied().unwrap_or(0))
    }

    /// Messages popped and neither acked nor revived yet.
    pub fn in_flight_count(&self) -> usize {
        self.checkpoints
            .values()
            .map(|ck| ck.offsets.iter().filter(|(_, acked)| !acked).count())
            .sum()
    }
}

/// The lock of one queue of a group in orderly pop.
#[derive(Debug, Clone)]
struct OrderLock {
    pop_time: i64,
    /// When the lock expires (`pop_time + invisible_time`, moved by a change of invisible time).
    visible_at: i64,
    /// (queue offset, acked), ascending.
    offsets: Vec<(i64, bool)>,
    attempt_id: Option<String>,
    /// How often each offset was popped before (the message's reconsume times).
    counts: HashMap<i64, i32>,
}

/// A queue of a group on a topic.
pub type QueueKey = (String, String, i32);

/// Orderly POP: which queues are locked to which pop (`ConsumerOrderInfoManager`).
#[derive(Debug, Default)]
pub struct OrderLocks {
    locks: HashMap<QueueKey, OrderLock>,
}

/// What an orderly ack decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderAck {
    /// Commit the group's offset here (the first offset not acked yet, or past the last).
    Commit(i64),
    /// Acked, but an earlier message is still out: the offset stays.
    Pending,
    /// The offset is not part of the pop the ack names (Java's `commitAndNext` = -1).
    Illegal,
}

impl OrderLocks {
    /// Whether the queue is held by a pop that is neither fully acked nor expired. A retry of
    /// the same pop (same attempt id) is not blocked.
    pub fn is_blocked(&self, key: &QueueKey, attempt_id: Option<&str>, now: i64) -> bool {
        self.locks.get(key).is_some_and(|lock| {
            let same_attempt = attempt_id.is_some() && lock.attempt_id.as_deref() == attempt_id;
            !same_attempt && now < lock.visible_at && lock.offsets.iter().any(|(_, a)| !a)
        })
    }

    /// A pop read `offsets` from the queue: lock it, and give each offset's pop count (0 the
    /// first time it is popped).
    pub fn popped(
        &mut self,
        key: QueueKey,
        pop_time: i64,
        invisible_time: i64,
        offsets: &[i64],
        attempt_id: Option<String>,
    ) -> Vec<(i64, i32)> {
        let previous = self.locks.remove(&key);
        let mut counts = HashMap::new();
        let mut out = Vec::with_capacity(offsets.len());
        for &offset in offsets {
            let count = previous
                .as_ref()
                .and_then(|p| {
                    let was_out = p.offsets.iter().any(|(o, acked)| *o == offset && !acked);
                    was_out.then(|| p.counts.get(&offset).copied().unwrap_or(0) + 1)
                })
                .unwrap_or(0);
            counts.insert(offset, count);
            out.push((offset, count));
        }
        let mut sorted: Vec<i64> = offsets.to_vec();
        sorted.sort_unstable();
        self.locks.insert(
            key,
            OrderLock {
                pop_time,
                visible_at: pop_time.saturating_add(invisible_time),
                offsets: sorted.into_iter().map(|o| (o, false)).collect(),
                attempt_id,
                counts,
            },
        );
        out
    }

    /// An ack of `offset` from the pop at `pop_time`.
    pub fn ack(&mut self, key: &QueueKey, offset: i64, pop_time: i64) -> OrderAck {
        let Some(lock) = self.locks.get_mut(key) else {
            return OrderAck::Illegal;
        };
        if lock.pop_time != pop_time {
            return OrderAck::Illegal;
        }
        let Ok(i) = lock.offsets.binary_search_by_key(&offset, |(o, _)| *o) else {
            return OrderAck::Illegal;
        };
        let was_first_open = lock.offsets.iter().position(|(_, a)| !a);
        lock.offsets[i].1 = true;
        let next = match lock.offsets.iter().find(|(_, a)| !a) {
            Some((o, _)) => *o,
            None => lock.offsets.last().map_or(offset, |(o, _)| o + 1),
        };
        if lock.offsets.iter().all(|(_, a)| *a) {
            self.locks.remove(key);
            return OrderAck::Commit(next);
        }
        if was_first_open == Some(i) {
            OrderAck::Commit(next)
        } else {
            OrderAck::Pending
        }
    }

    /// Moves the lock's expiry (CHANGE_MESSAGE_INVISIBLETIME of an orderly message). `false`
    /// if the pop is no longer the queue's lock holder.
    pub fn change_visible_at(&mut self, key: &QueueKey, pop_time: i64, visible_at: i64) -> bool {
        match self.locks.get_mut(key) {
            Some(lock) if lock.pop_time == pop_time => {
                lock.visible_at = visible_at;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start: i64, pop_time: i64) -> CkKey {
        CkKey {
            group: "G".into(),
            topic: "T".into(),
            queue_id: 0,
            start_offset: start,
            pop_time,
        }
    }

    fn ck(start: i64, pop_time: i64, invisible: i64, offsets: &[i64]) -> PopRecord {
        PopRecord::Checkpoint {
            key: key(start, pop_time),
            invisible_time: invisible,
            revive_qid: 0,
            offsets: offsets.to_vec(),
        }
    }

    fn ack(start: i64, pop_time: i64, offsets: &[i64]) -> PopRecord {
        PopRecord::Ack {
            key: key(start, pop_time),
            offsets: offsets.to_vec(),
        }
    }

    #[test]
    fn popped_messages_revive_only_after_their_invisible_time() {
        let mut state = PopState::default();
        state.apply(ck(0, 1_000, 60_000, &[0, 1, 2]), 0, 0);
        assert!(state.due(60_999, 10).is_empty());
        let due = state.due(61_000, 10);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].offsets, vec![0, 1, 2]);
    }

    #[test]
    fn acked_messages_never_revive_and_a_fully_acked_checkpoint_is_gone() {
        let mut state = PopState::default();
        state.apply(ck(0, 1_000, 10, &[0, 1, 2]), 0, 0);
        state.apply(ack(0, 1_000, &[1]), 0, 1);
        assert!(state.is_in_flight(&key(0, 1_000), 0));
        assert!(!state.is_in_flight(&key(0, 1_000), 1));
        assert_eq!(state.due(i64::MAX, 10)[0].offsets, vec![0, 2]);
        state.apply(ack(0, 1_000, &[0, 2]), 0, 2);
        assert!(state.due(i64::MAX, 10).is_empty());
        assert_eq!(state.in_flight_count(), 0);
        assert_eq!(state.progress(0), 3);
    }

    #[test]
    fn acks_of_unknown_checkpoints_change_nothing() {
        let mut state = PopState::default();
        state.apply(ck(0, 1_000, 10, &[0]), 0, 0);
        state.apply(ack(5, 1_000, &[5]), 0, 1);
        state.apply(ack(0, 999, &[0]), 0, 2);
        state.apply(ack(0, 1_000, &[7]), 0, 3);
        assert_eq!(state.in_flight_count(), 1);
    }

    #[test]
    fn change_of_invisible_time_is_a_new_checkpoint_and_an_ack_of_the_old() {
        let mut state = PopState::default();
        state.apply(ck(0, 1_000, 60_000, &[0, 1]), 0, 0);
        // Change offset 1 to be invisible for 10 s from t = 2000.
        state.apply(ck(1, 2_000, 10_000, &[1]), 0, 1);
        state.apply(ack(0, 1_000, &[1]), 0, 2);
        let due = state.due(12_000, 10);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].key, key(1, 2_000));
        assert_eq!(state.due(61_000, 10).len(), 2);
    }

    #[test]
    fn progress_stays_at_the_oldest_live_checkpoint_so_replay_restores_the_state() {
        let records = [
            ck(0, 1_000, 10, &[0, 1]),
            ck(2, 1_001, 10, &[2]),
            ack(2, 1_001, &[2]),
            ack(0, 1_000, &[0]),
        ];
        let mut live = PopState::default();
        for (i, r) in records.iter().enumerate() {
            live.apply(r.clone(), 0, i as i64);
        }
        assert_eq!(live.progress(0), 0);
        // A restart replays the log from the saved progress and ends where the live state was.
        let mut recovered = PopState::default();
        for (i, r) in records.iter().enumerate().skip(live.progress(0) as usize) {
            recovered.apply(r.clone(), 0, i as i64);
        }
        assert_eq!(recovered.due(i64::MAX, 10), live.due(i64::MAX, 10));
        assert_eq!(recovered.due(i64::MAX, 10)[0].offsets, vec![1]);
        // Once revived (the shell writes an ack), progress moves past everything.
        live.apply(ack(0, 1_000, &[1]), 0, 4);
        assert_eq!(live.progress(0), 5);
        // A replay that found nothing keeps the saved progress.
        let mut empty = PopState::default();
        empty.log_ends_at(0, 7);
        assert_eq!(empty.progress(0), 7);
    }

    #[test]
    fn absurd_invisible_times_do_not_overflow() {
        let mut state = PopState::default();
        state.apply(ck(0, i64::MAX - 1, i64::MAX, &[0]), 0, 0);
        assert!(state.due(i64::MAX - 2, 10).is_empty());
        state.apply(ck(1, 5, i64::MIN, &[1]), 0, 1);
        assert_eq!(state.due(0, 10).len(), 1);
    }

    #[test]
    fn orderly_queue_is_locked_until_acked_or_expired() {
        let mut locks = OrderLocks::default();
        let q: QueueKey = ("G".into(), "T".into(), 0);
        assert!(!locks.is_blocked(&q, None, 0));
        assert_eq!(
            locks.popped(q.clone(), 100, 1_000, &[0, 1], None),
            vec![(0, 0), (1, 0)]
        );
        assert!(locks.is_blocked(&q, None, 500));
        assert!(!locks.is_blocked(&q, None, 1_100), "expired");
        assert_eq!(locks.ack(&q, 1, 100), OrderAck::Pending);
        assert_eq!(locks.ack(&q, 5, 100), OrderAck::Illegal);
        assert_eq!(locks.ack(&q, 0, 99), OrderAck::Illegal);
        assert_eq!(locks.ack(&q, 0, 100), OrderAck::Commit(2));
        assert!(!locks.is_blocked(&q, None, 500));
    }

    #[test]
    fn orderly_re_pop_after_expiry_counts_the_attempts() {
        let mut locks = OrderLocks::default();
        let q: QueueKey = ("G".into(), "T".into(), 0);
        locks.popped(q.clone(), 100, 1_000, &[0, 1], None);
        assert_eq!(locks.ack(&q, 0, 100), OrderAck::Commit(1));
        // Offset 1 was never acked: popped again after the lock expired, its count is 1.
        let again = locks.popped(q.clone(), 2_000, 1_000, &[1, 2], Some("a".into()));
        assert_eq!(again, vec![(1, 1), (2, 0)]);
        assert!(!locks.is_blocked(&q, Some("a"), 2_500), "same attempt");
        assert!(locks.change_visible_at(&q, 2_000, 10_000));
        assert!(locks.is_blocked(&q, None, 5_000));
        assert!(!locks.change_visible_at(&q, 100, 10_000));
    }
}
