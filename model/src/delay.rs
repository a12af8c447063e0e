//! Delay levels (`messageDelayLevel`) and the pure decisions of the schedule service
//! (`ScheduleMessageService`): which level a delayed message waits in, when it is due, and where a
//! level's progress may resume. The broker drives these with the store's I/O around them.
//!
//! A message sent with property `DELAY` = `n > 0` is stored to `SCHEDULE_TOPIC_XXXX` queue `n - 1`
//! (levels above the highest are clamped to it), its ConsumeQueue tag code replaced by the time it
//! is due. The schedule service walks each level's queue in order, re-puts what is due to the real
//! topic and queue, and keeps a per-level next offset (`delayOffset.json`).

use std::collections::BTreeMap;

/// How long an idle level waits before it looks for new messages again (Java's
/// `DELAY_FOR_A_WHILE`).
pub const IDLE_POLL_MS: i64 = 100;

/// Java's default `messageDelayLevel`.
pub const DEFAULT_DELAY_LEVELS: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

/// `messageDelayLevel` parsed: level `n` (1-based) waits `levels[n - 1]` ms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayLevels {
    levels: Vec<i64>,
}

impl Default for DelayLevels {
    fn default() -> Self {
        DelayLevels::parse(DEFAULT_DELAY_LEVELS).expect("the default levels parse")
    }
}

impl DelayLevels {
    /// Parses `"1s 5s 10s 30s 1m … 2h"` as `ScheduleMessageService.parseDelayLevel` does: each token
    /// is a number followed by one unit letter, `s`, `m`, `h` or `d`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let levels = text
            .split_whitespace()
            .map(|token| {
                let bad = || {
                    format!(
                        "bad delay level {token:?}: expected a number and a unit (s, m, h or d), such as 5s or 2h"
                    )
                };
                let split = token.len().saturating_sub(1);
                if !token.is_char_boundary(split) {
                    return Err(bad());
                }
                let (number, unit) = token.split_at(split);
                let ms = match unit {
                    "s" => 1_000,
                    "m" => 60_000,
                    "h" => 3_600_000,
                    "d" => 86_400_000,
                    _ => return Err(bad()),
                };
                number
                    .parse::<i64>()
                    .ok()
                    .and_then(|n| n.checked_mul(ms))
                    .ok_or_else(bad)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if levels.is_empty() {
            return Err("no delay levels: expected levels such as \"1s 5s 10s\"".to_string());
        }
        Ok(DelayLevels { levels })
    }

    /// The highest level (18 by default).
    pub fn max_level(&self) -> i32 {
        self.levels.len() as i32
    }

    /// The levels, 1 to [`DelayLevels::max_level`].
    pub fn levels(&self) -> impl Iterator<Item = i32> {
        1..=self.max_level()
    }

    /// What a send with `DELAY` = `level` is stored as: `None` for no delay (`level <= 0`), else the
    /// level clamped to the highest one (`HookUtils.transformDelayLevelMessage`).
    pub fn effective_level(&self, level: i32) -> Option<i32> {
        (level > 0).then(|| level.min(self.max_level()))
    }

    /// The milliseconds a level waits (1 s for an unknown level, as `computeDeliverTimestamp`).
    pub fn delay_ms(&self, level: i32) -> i64 {
        usize::try_from(level - 1)
            .ok()
            .and_then(|i| self.levels.get(i))
            .copied()
            .unwrap_or(1_000)
    }

    /// `computeDeliverTimestamp`: store time plus the level's delay. This is the tag code of the
    /// message's `SCHEDULE_TOPIC_XXXX` ConsumeQueue entry.
    pub fn deliver_time(&self, level: i32, store_timestamp: i64) -> i64 {
        store_timestamp.saturating_add(self.delay_ms(level))
    }

    /// When the head of a level's queue, due at `deliver_time` (its tag code), goes out. A due time
    /// further ahead than the level's whole delay (a clock that jumped back, or a store written with
    /// other levels) counts as due now (`correctDeliverTimestamp`), so no message waits for ever.
    pub fn due(&self, level: i32, deliver_time: i64, now: i64) -> Due {
        let latest = now.saturating_add(self.delay_ms(level));
        if deliver_time > latest || deliver_time <= now {
            Due::Now
        } else {
            Due::At(deliver_time)
        }
    }
}

/// The queue of `SCHEDULE_TOPIC_XXXX` that holds a level (`delayLevel2QueueId`).
pub fn level_queue_id(level: i32) -> i32 {
    level - 1
}

/// Whether the head of a level's queue may go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    Now,
    /// Not before this time (ms since the epoch).
    At(i64),
}

/// Per-level next offset in `SCHEDULE_TOPIC_XXXX` (the `offsetTable` of `delayOffset.json`).
///
/// An offset only moves forward past messages that were re-put, so after a crash the service
/// resumes at or before the first message not yet delivered: at least once, never lost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DelayProgress {
    offsets: BTreeMap<i32, i64>,
    changed: bool,
}

impl DelayProgress {
    /// Progress as loaded from `delayOffset.json`.
    pub fn from_table(offsets: BTreeMap<i32, i64>) -> Self {
        DelayProgress {
            offsets,
            changed: false,
        }
    }

    /// The next offset of a level's queue to look at (0 for a level never seen).
    pub fn offset(&self, level: i32) -> i64 {
        self.offsets.get(&level).copied().unwrap_or(0)
    }

    /// The messages before `offset` went out (or are gone).
    pub fn advance(&mut self, level: i32, offset: i64) {
        let current = self.offsets.entry(level).or_insert(0);
        if *current != offset {
            *current = offset;
            self.changed = true;
        }
    }

    /// Keeps a level's offset inside its queue's `[min, max]` (`correctDelayOffset`): a store whose
    /// old files were deleted, or a `delayOffset.json` from another store, must not stall a level.
    /// Returns the corrected offset if it changed.
    pub fn correct(&mut self, level: i32, min: i64, max: i64) -> Option<i64> {
        let current = *self.offsets.get(&level)?;
        let corrected = current.max(min).min(max.max(min));
        (corrected != current).then(|| {
            self.advance(level, corrected);
            corrected
        })
    }

    /// The table to persist, and whether it changed since the last call.
    pub fn take_changed(&mut self) -> Option<BTreeMap<i32, i64>> {
        std::mem::take(&mut self.changed).then(|| self.offsets.clone())
    }

    /// The last write failed: write again next time.
    pub fn mark_changed(&mut self) {
        self.changed = true;
    }

    pub fn table(&self) -> &BTreeMap<i32, i64> {
        &self.offsets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_default_levels() {
        let levels = DelayLevels::default();
        assert_eq!(levels.max_level(), 18);
        assert_eq!(levels.delay_ms(1), 1_000);
        assert_eq!(levels.delay_ms(3), 10_000);
        assert_eq!(levels.delay_ms(5), 60_000);
        assert_eq!(levels.delay_ms(18), 7_200_000);
        // Unknown levels wait 1 s, as computeDeliverTimestamp.
        assert_eq!(levels.delay_ms(0), 1_000);
        assert_eq!(levels.delay_ms(19), 1_000);
        assert_eq!(levels.deliver_time(3, 1_000), 11_000);
        assert_eq!(level_queue_id(1), 0);
        assert_eq!(levels.levels().last(), Some(18));
    }

    #[test]
    fn parsing_as_java() {
        let levels = DelayLevels::parse("500s 2m 1h 1d").unwrap();
        assert_eq!(levels.max_level(), 4);
        assert_eq!(levels.delay_ms(1), 500_000);
        assert_eq!(levels.delay_ms(4), 86_400_000);
        assert_eq!(DelayLevels::parse("  1s   3s ").unwrap().max_level(), 2);
        for bad in ["", " ", "1x", "s", "1.5s", "1 s", "é", "99999999999999999d"] {
            assert!(DelayLevels::parse(bad).is_err(), "{bad:?}");
        }
        assert!(DelayLevels::parse("1x")
            .unwrap_err()
            .contains("expected a number and a unit"));
    }

    #[test]
    fn levels_are_clamped_to_the_highest() {
        let levels = DelayLevels::parse("1s 2s 3s").unwrap();
        assert_eq!(levels.effective_level(0), None);
        assert_eq!(levels.effective_level(-1), None);
        assert_eq!(levels.effective_level(2), Some(2));
        assert_eq!(levels.effective_level(3), Some(3));
        assert_eq!(levels.effective_level(99), Some(3));
        assert_eq!(levels.effective_level(i32::MAX), Some(3));
    }

    #[test]
    fn never_early_and_never_stuck() {
        let levels = DelayLevels::default();
        let now = 100_000;
        assert_eq!(levels.due(2, now + 1, now), Due::At(now + 1));
        assert_eq!(levels.due(2, now + 5_000, now), Due::At(now + 5_000));
        assert_eq!(levels.due(2, now, now), Due::Now);
        assert_eq!(levels.due(2, now - 1, now), Due::Now);
        // Further ahead than the level's delay: corrected to now.
        assert_eq!(levels.due(2, now + 5_001, now), Due::Now);
        assert_eq!(levels.due(2, i64::MAX, now), Due::Now);
    }

    #[test]
    fn progress_moves_forward_and_reports_changes() {
        let mut progress = DelayProgress::from_table(BTreeMap::from([(1, 5), (3, 100)]));
        assert_eq!(progress.offset(1), 5);
        assert_eq!(progress.offset(2), 0);
        assert_eq!(progress.take_changed(), None);
        progress.advance(1, 5);
        assert_eq!(progress.take_changed(), None);
        progress.advance(2, 7);
        assert_eq!(
            progress.take_changed(),
            Some(BTreeMap::from([(1, 5), (2, 7), (3, 100)]))
        );
        assert_eq!(progress.take_changed(), None);
        // The queue of level 3 holds offsets 0..=40 only; level 1 starts above 5 after deletions.
        assert_eq!(progress.correct(3, 0, 40), Some(40));
        assert_eq!(progress.correct(1, 9, 20), Some(9));
        assert_eq!(progress.correct(2, 0, 20), None);
        assert_eq!(progress.correct(4, 0, 20), None);
        assert_eq!(progress.table(), &BTreeMap::from([(1, 9), (2, 7), (3, 40)]));
    }
}
