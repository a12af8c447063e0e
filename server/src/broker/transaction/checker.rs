//! The transaction check as a pure state machine (`TransactionalMessageServiceImpl.check`).
//!
//! One [`CheckRound`] walks the half queue once, from the progress saved under
//! [`skiff_model::transaction::SYSTEM_GROUP`]. It is fed the op records (the resolved halves) and
//! then, one by one, the halves; for each half it answers a [`Verdict`] that the caller carries
//! out (re-put and ask the producer, discard, renew an immune half) before it moves on with
//! [`CheckRound::advance`]. It reads no file and opens no socket, so every rule is unit-tested
//! here with plain numbers; `service.rs` is the shell that does the I/O.
//!
//! The rules, in Java's order, for the half at the cursor:
//! 1. an op record names it: resolved, skip;
//! 2. checked `transactionCheckMax` times already, or older than the CommitLog retention: discard;
//! 3. stored after the round began (a copy this round re-put): stop;
//! 4. younger than its immunity (`CHECK_IMMUNITY_TIME_IN_SECONDS`, else `transactionTimeOut`):
//!    stop, or for a half with its own immunity, re-put it (so it does not hold the queue back)
//!    unless its first copy was resolved;
//! 5. otherwise: re-put it with `TRANSACTION_CHECK_TIMES` + 1 and ask a producer.

use std::collections::{BTreeSet, HashMap, HashSet};

/// The settings a round runs with (BrokerConfig / MessageStoreConfig names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckConfig {
    /// `transactionTimeOut`, ms: how old an unresolved half must be before it is checked.
    pub transaction_timeout_ms: i64,
    /// `transactionCheckMax`: checks before a half is discarded.
    pub transaction_check_max: i32,
    /// `fileReservedTime` in ms: a half older than this is discarded unasked.
    pub file_reserved_ms: i64,
}

/// What a round needs to know of one half message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HalfView<'a> {
    pub queue_offset: i64,
    pub born_timestamp: i64,
    pub store_timestamp: i64,
    /// `TRANSACTION_CHECK_TIMES` as stored.
    pub check_times: Option<&'a str>,
    /// `CHECK_IMMUNITY_TIME_IN_SECONDS` as stored.
    pub check_immunity_secs: Option<&'a str>,
    /// `TRAN_PREPARED_QUEUE_OFFSET` as stored.
    pub prepared_queue_offset: Option<&'a str>,
}

/// What to do with the half at the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Committed or rolled back already: nothing to do.
    Resolved,
    /// Put it in `TRANS_CHECK_MAX_TIME_TOPIC`; nobody will ask about it again.
    Discard,
    /// Re-put it with `TRANSACTION_CHECK_TIMES = check_times`, then ask a producer about the copy.
    Check { check_times: i32 },
    /// Re-put it with `TRAN_PREPARED_QUEUE_OFFSET = prepared_queue_offset` and go on: it is still
    /// immune, and its copy will be looked at in a later round. Like Java 5.3.3, the copy also
    /// carries `TRANSACTION_CHECK_TIMES = check_times`: a renewal counts towards
    /// `transactionCheckMax` as a check does.
    RenewImmunity {
        prepared_queue_offset: i64,
        check_times: i32,
    },
    /// Too young: the round ends here and the next one starts from this half.
    NotYet,
}

/// One walk over the half queue.
#[derive(Debug)]
pub struct CheckRound {
    config: CheckConfig,
    /// When the round began, ms.
    started: i64,
    /// The saved progress the round began from.
    half_start: i64,
    op_start: i64,
    /// The next half to look at.
    cursor: i64,
    /// Half offset → the op record that resolved it.
    removed: HashMap<i64, i64>,
    /// Op record → the halves it names that the walk has not passed yet.
    op_pending: HashMap<i64, HashSet<i64>>,
    /// Op records with nothing left to resolve.
    done_ops: BTreeSet<i64>,
    /// Every op record up to the op queue's end was fed: an unresolved half really is unresolved.
    ops_complete: bool,
    stopped: bool,
}

impl CheckRound {
    /// A round at `now` (ms) from the saved progress of the half and op queues.
    pub fn new(config: CheckConfig, now: i64, half_progress: i64, op_progress: i64) -> Self {
        CheckRound {
            config,
            started: now,
            half_start: half_progress,
            op_start: op_progress,
            cursor: half_progress,
            removed: HashMap::new(),
            op_pending: HashMap::new(),
            done_ops: BTreeSet::new(),
            ops_complete: true,
            stopped: false,
        }
    }

    /// Feeds the op record at `op_offset`: the half offsets it resolves, or `None` if it is not a
    /// removal (wrong tag, no body), which Java logs and passes over.
    pub fn add_op(&mut self, op_offset: i64, half_offsets: Option<&[i64]>) {
        let pending: HashSet<i64> = half_offsets
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(|half| *half >= self.half_start)
            .collect();
        if pending.is_empty() {
            self.done_ops.insert(op_offset);
            return;
        }
        for half in &pending {
            self.removed.insert(*half, op_offset);
        }
        self.op_pending.insert(op_offset, pending);
    }

    /// More op records exist than were fed (the caller bounds what one round loads): halves not
    /// named by the fed ones may be resolved by the others, so none is checked or discarded.
    pub fn ops_incomplete(&mut self) {
        self.ops_complete = false;
    }

    /// The queue offset of the half to look at next, if the round goes on below `end` (the half
    /// queue's max offset when the round began).
    pub fn next_half(&self, end: i64) -> Option<i64> {
        (!self.stopped && self.cursor < end).then_some(self.cursor)
    }

    /// The half at the cursor is gone (retention) or unreadable: go on at `next_offset`.
    pub fn skip_to(&mut self, next_offset: i64) {
        self.cursor = self.cursor.max(next_offset);
    }

    /// Ends the round where it is (a verdict could not be carried out, or the broker stops).
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Decides about the half at the cursor, read at `now` (ms). After a verdict other than
    /// [`Verdict::NotYet`] is carried out, call [`CheckRound::advance`].
    pub fn decide(&mut self, half: &HalfView, now: i64) -> Verdict {
        if self.resolve(half.queue_offset) {
            return Verdict::Resolved;
        }
        if !self.ops_complete {
            self.stopped = true;
            return Verdict::NotYet;
        }
        let age = now - half.born_timestamp;
        let next_check_times = match half.check_times {
            None => 1,
            Some(text) => {
                let times = text.trim().parse::<i32>().unwrap_or(-1);
                if times >= self.config.transaction_check_max {
                    return Verdict::Discard;
                }
                times + 1
            }
        };
        if age > self.config.file_reserved_ms {
            return Verdict::Discard;
        }
        if half.store_timestamp >= self.started {
            self.stopped = true;
            return Verdict::NotYet;
        }
        let timeout = self.config.transaction_timeout_ms;
        let mut immunity = timeout;
        if let Some(text) = half.check_immunity_secs {
            // `TransactionalMessageServiceImpl.getImmunityTime`: seconds, or the timeout if the
            // text is not a number.
            immunity = match text.trim().parse::<i64>() {
                Ok(-1) | Err(_) => timeout,
                Ok(secs) => secs.saturating_mul(1000),
            };
            if age < immunity {
                match half.prepared_queue_offset.map(|p| p.trim().parse::<i64>()) {
                    None => {
                        return Verdict::RenewImmunity {
                            prepared_queue_offset: half.queue_offset,
                            check_times: next_check_times,
                        }
                    }
                    Some(Ok(first)) if first != -1 => {
                        if let Some(op) = self.removed.remove(&first) {
                            self.op_done_with(op, first);
                            return Verdict::Resolved;
                        }
                        return Verdict::RenewImmunity {
                            prepared_queue_offset: first,
                            check_times: next_check_times,
                        };
                    }
                    Some(_) => {}
                }
            }
        } else if (0..timeout).contains(&age) {
            self.stopped = true;
            return Verdict::NotYet;
        }
        if age > immunity || age <= -1 {
            Verdict::Check {
                check_times: next_check_times,
            }
        } else {
            self.stopped = true;
            Verdict::NotYet
        }
    }

    /// The verdict on the half at the cursor was carried out: move on.
    pub fn advance(&mut self) {
        self.cursor += 1;
    }

    /// The progress to save: the first half not passed, and the first op record that still
    /// resolves a half not passed (`calculateOpOffset`).
    pub fn progress(&self) -> (i64, i64) {
        let mut op = self.op_start;
        while self.done_ops.contains(&op) {
            op += 1;
        }
        (self.cursor, op)
    }

    /// Whether the round changed the saved progress.
    pub fn moved(&self) -> bool {
        self.progress() != (self.half_start, self.op_start)
    }

    fn resolve(&mut self, half_offset: i64) -> bool {
        match self.removed.remove(&half_offset) {
            Some(op) => {
                self.op_done_with(op, half_offset);
                true
            }
            None => false,
        }
    }

    fn op_done_with(&mut self, op: i64, half_offset: i64) {
        if let Some(pending) = self.op_pending.get_mut(&op) {
            pending.remove(&half_offset);
            if pending.is_empty() {
                self.op_pending.remove(&op);
                self.done_ops.insert(op);
            }
        }
    }
}

/// Java's immunity for END_TRANSACTION (`TransactionalMessageUtil.getImmunityTime`): the
/// message's seconds, never less than the timeout.
pub fn end_transaction_immunity_ms(check_immunity_secs: &str, timeout_ms: i64) -> i64 {
    let immunity = check_immunity_secs
        .trim()
        .parse::<i64>()
        .map_or(0, |secs| secs.saturating_mul(1000));
    immunity.max(timeout_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: CheckConfig = CheckConfig {
        transaction_timeout_ms: 6_000,
        transaction_check_max: 15,
        file_reserved_ms: 72 * 3_600_000,
    };
    const NOW: i64 = 1_000_000;

    fn half(queue_offset: i64, born: i64) -> HalfView<'static> {
        HalfView {
            queue_offset,
            born_timestamp: born,
            store_timestamp: born + 1,
            check_times: None,
            check_immunity_secs: None,
            prepared_queue_offset: None,
        }
    }

    /// Runs a round over `halves` (offsets from `start`), carrying out every verdict.
    fn walk(round: &mut CheckRound, halves: &[HalfView], start: i64) -> Vec<Verdict> {
        let end = start + halves.len() as i64;
        let mut verdicts = Vec::new();
        while let Some(offset) = round.next_half(end) {
            let verdict = round.decide(&halves[(offset - start) as usize], NOW);
            verdicts.push(verdict);
            if verdict != Verdict::NotYet {
                round.advance();
            }
        }
        verdicts
    }

    #[test]
    fn old_unresolved_halves_are_checked_and_resolved_ones_skipped() {
        let mut round = CheckRound::new(CONFIG, NOW, 0, 0);
        round.add_op(0, Some(&[1]));
        let halves = [half(0, NOW - 10_000), half(1, NOW - 10_000)];
        assert_eq!(
            walk(&mut round, &halves, 0),
            vec![Verdict::Check { check_times: 1 }, Verdict::Resolved]
        );
        assert_eq!(round.progress(), (2, 1));
        assert!(round.moved());
    }

    #[test]
    fn a_young_half_stops_the_round_where_it_is() {
        let mut round = CheckRound::new(CONFIG, NOW, 5, 0);
        let halves = [
            half(5, NOW - 10_000),
            half(6, NOW - 1_000),
            half(7, NOW - 9_000),
        ];
        assert_eq!(
            walk(&mut round, &halves, 5),
            vec![Verdict::Check { check_times: 1 }, Verdict::NotYet]
        );
        assert_eq!(round.progress(), (6, 0));
    }

    #[test]
    fn halves_stored_after_the_round_began_wait_for_the_next_round() {
        let mut round = CheckRound::new(CONFIG, NOW, 0, 0);
        let mut copy = half(0, NOW - 60_000);
        copy.store_timestamp = NOW;
        assert_eq!(walk(&mut round, &[copy], 0), vec![Verdict::NotYet]);
        assert!(!round.moved());
    }

    #[test]
    fn check_times_count_up_to_the_maximum_then_discard() {
        let mut times = half(0, NOW - 10_000);
        times.check_times = Some("3");
        let mut round = CheckRound::new(CONFIG, NOW, 0, 0);
        assert_eq!(round.decide(&times, NOW), Verdict::Check { check_times: 4 });
        times.check_times = Some("15");
        let mut round = CheckRound::new(CONFIG, NOW, 0, 0);
        assert_eq!(round.decide(&times, NOW), Verdict::Discard);
        // Java discards before looking at the age: even a young half at the maximum goes.
        let mut young = half(0, NOW - 10);
        young.check_times = Some("15");
        assert_eq!(round.decide(&young, NOW), Verdict::Discard);
        // Garbage counts as Java's -1, so the next count is 0.
        times.check_times = Some("x");
        assert_eq!(round.decide(&times, NOW), Verdict::Check { check_times: 0 });
    }

    #[test]
    fn halves_older_than_the_retention_are_discarded() {
        let mut round = CheckRound::new(CONFIG, NOW, 0, 0);
        let ancient = half(0, NOW - CONFIG.file_reserved_ms - 1);
        assert_eq!(round.decide(&ancient, NOW), Verdict::Discard);
    }

    #[test]
    fn immune_halves_are_renewed_until_their_time_then_checked() {
        let mut immune = half(4, NOW - 10_000);
        immune.check_immunity_secs = Some("60");
        let mut round = CheckRound::new(CONFIG, NOW, 4, 0);
        assert_eq!(
            round.decide(&immune, NOW),
            Verdict::RenewImmunity {
                prepared_queue_offset: 4,
                check_times: 1,
            }
        );
        // The copy keeps the first copy's offset; the renewal counted as a check.
        immune.prepared_queue_offset = Some("4");
        immune.check_times = Some("1");
        immune.queue_offset = 9;
        let mut round = CheckRound::new(CONFIG, NOW, 9, 0);
        assert_eq!(
            round.decide(&immune, NOW),
            Verdict::RenewImmunity {
                prepared_queue_offset: 4,
                check_times: 2,
            }
        );
        // Renewals use up the checks, as in Java: at the maximum the half is discarded.
        let mut worn = immune.clone();
        worn.check_times = Some("15");
        assert_eq!(round.decide(&worn, NOW), Verdict::Discard);
        // Once the first copy is resolved, the copy is too.
        let mut round = CheckRound::new(CONFIG, NOW, 4, 0);
        round.add_op(2, Some(&[4]));
        round.skip_to(9);
        assert_eq!(round.decide(&immune, NOW), Verdict::Resolved);
        round.advance();
        assert_eq!(round.progress(), (10, 0));
        // Past its immunity it is checked like any other.
        let mut old = half(9, NOW - 61_000);
        old.check_immunity_secs = Some("60");
        let mut round = CheckRound::new(CONFIG, NOW, 9, 0);
        assert_eq!(round.decide(&old, NOW), Verdict::Check { check_times: 1 });
        // A bad immunity means the timeout.
        let mut bad = half(9, NOW - 7_000);
        bad.check_immunity_secs = Some("soon");
        assert_eq!(round.decide(&bad, NOW), Verdict::Check { check_times: 1 });
    }

    #[test]
    fn halves_born_in_the_future_are_checked_at_once() {
        let mut round = CheckRound::new(CONFIG, NOW, 0, 0);
        let future = HalfView {
            store_timestamp: NOW - 5,
            ..half(0, NOW + 5_000)
        };
        assert_eq!(
            round.decide(&future, NOW),
            Verdict::Check { check_times: 1 }
        );
    }

    #[test]
    fn op_progress_moves_only_over_ops_with_nothing_left_to_resolve() {
        let mut round = CheckRound::new(CONFIG, NOW, 10, 20);
        round.add_op(20, Some(&[10]));
        round.add_op(21, Some(&[3])); // below the half progress: already done
        round.add_op(22, Some(&[12, 11]));
        round.add_op(23, None); // not a removal
        round.add_op(24, Some(&[13]));
        let halves = [
            half(10, NOW - 10_000),
            half(11, NOW - 10_000),
            half(12, NOW - 10_000),
            half(13, NOW - 1_000),
        ];
        let verdicts = walk(&mut round, &halves, 10);
        assert_eq!(verdicts, vec![Verdict::Resolved; 4]);
        assert_eq!(round.progress(), (14, 25));
        let mut round = CheckRound::new(CONFIG, NOW, 10, 20);
        round.add_op(20, Some(&[10]));
        round.add_op(21, Some(&[12]));
        let halves = [half(10, NOW - 10_000), half(11, NOW - 100)];
        walk(&mut round, &halves, 10);
        assert_eq!(round.progress(), (11, 21));
    }

    #[test]
    fn without_every_op_record_nothing_unresolved_is_acted_on() {
        let mut round = CheckRound::new(CONFIG, NOW, 0, 0);
        round.add_op(0, Some(&[0]));
        round.ops_incomplete();
        let halves = [half(0, NOW - 10_000), half(1, NOW - 10_000)];
        assert_eq!(
            walk(&mut round, &halves, 0),
            vec![Verdict::Resolved, Verdict::NotYet]
        );
        assert_eq!(round.progress(), (1, 1));
    }

    #[test]
    fn gone_halves_are_skipped_and_stop_ends_the_round() {
        let mut round = CheckRound::new(CONFIG, NOW, 0, 0);
        assert_eq!(round.next_half(10), Some(0));
        round.skip_to(7);
        assert_eq!(round.next_half(10), Some(7));
        round.stop();
        assert_eq!(round.next_half(10), None);
        assert_eq!(round.progress(), (7, 0));
    }

    #[test]
    fn end_transaction_immunity_is_never_below_the_timeout() {
        assert_eq!(end_transaction_immunity_ms("60", 6_000), 60_000);
        assert_eq!(end_transaction_immunity_ms("1", 6_000), 6_000);
        assert_eq!(end_transaction_immunity_ms("x", 6_000), 6_000);
    }
}
