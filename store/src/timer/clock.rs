//! The timer's decisions, free of I/O: where an entry goes (delivered now, a wheel tick, or
//! rolled forward), when a tick may open and close, and when each entry of an open tick is due.
//! The broker's timer thread feeds it times and entries and does what it answers.

/// Ticks of the wheel, fixed as in Java (`TIMER_WHEEL_TTL_DAY × DAY_SECS`) whatever the precision.
pub const SLOTS_TOTAL: i64 = 7 * 24 * 3600;
/// Ticks kept free between the read and write ends of the wheel (`TIMER_BLANK_SLOTS`).
pub const BLANK_SLOTS: i64 = 60;

/// Where a newly read timer entry goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Its tick has passed: deliver it now.
    Now,
    /// Into the wheel at `slot_ms`; `roll` means the slot is the end of the wheel's reach, where
    /// the message is put back on the timer topic to be placed again.
    Wheel { slot_ms: i64, roll: bool },
}

#[derive(Debug, Clone)]
pub struct TimerClock {
    precision_ms: i64,
    roll_window_slots: i64,
    /// The next tick to deliver; every earlier one is done.
    read_time_ms: i64,
}

impl TimerClock {
    /// `roll_window_slots` as Java bounds `timerRollWindowSlot`.
    pub fn new(precision_ms: i64, roll_window_slots: i64, read_time_ms: i64) -> Self {
        let roll_window_slots = if !(2..=SLOTS_TOTAL - BLANK_SLOTS).contains(&roll_window_slots) {
            SLOTS_TOTAL - BLANK_SLOTS
        } else {
            roll_window_slots
        };
        TimerClock {
            precision_ms,
            roll_window_slots,
            read_time_ms: read_time_ms.div_euclid(precision_ms) * precision_ms,
        }
    }

    /// Where reading resumes after a restart: the checkpoint's tick, but no further back than
    /// the wheel reaches (Java's `recover`); `now` without a checkpoint (a new wheel).
    pub fn recovered_read_time(checkpoint: Option<i64>, now_ms: i64, precision_ms: i64) -> i64 {
        let now = now_ms.div_euclid(precision_ms) * precision_ms;
        match checkpoint {
            Some(read) => read.max(now - (SLOTS_TOTAL - BLANK_SLOTS) * precision_ms),
            None => now,
        }
    }

    pub fn precision_ms(&self) -> i64 {
        self.precision_ms
    }

    pub fn read_time_ms(&self) -> i64 {
        self.read_time_ms
    }

    fn floor(&self, time_ms: i64) -> i64 {
        time_ms.div_euclid(self.precision_ms) * self.precision_ms
    }

    /// `TIMER_OUT_MS` (a tick time) of an entry read at `now_ms` → where it goes
    /// (`putMessageToTimerWheel` and `doEnqueue`).
    pub fn place(&self, timer_out_ms: i64, now_ms: i64) -> Placement {
        let write = self.floor(now_ms);
        let slot = self.floor(timer_out_ms);
        if slot < self.read_time_ms {
            return Placement::Now;
        }
        let window = self.roll_window_slots * self.precision_ms;
        if slot - write >= window {
            // Give the next roll enough time, as Java does.
            let slot_ms = if slot - write - window < self.roll_window_slots / 3 * self.precision_ms
            {
                write + self.roll_window_slots / 2 * self.precision_ms
            } else {
                write + window
            };
            return Placement::Wheel {
                slot_ms,
                roll: true,
            };
        }
        Placement::Wheel {
            slot_ms: slot,
            roll: false,
        }
    }

    /// The read tick holds deliveries due in `(read, read + precision]`: it opens once `now`
    /// reaches its start, so the earliest of them can go out on time.
    pub fn tick_opens(&self, now_ms: i64) -> bool {
        now_ms >= self.read_time_ms
    }

    /// Every delivery of the read tick is due once `now` passes its end.
    pub fn tick_closes(&self, now_ms: i64) -> bool {
        now_ms >= self.read_time_ms + self.precision_ms
    }

    /// The read tick is finished: move to the next.
    pub fn advance(&mut self) {
        self.read_time_ms += self.precision_ms;
    }
}

/// When an entry of the tick `slot_ms` is delivered: at its exact time when known, kept inside
/// the tick's range `[slot, slot + precision]` (a tick's entries were rounded down into it, so
/// the end of the tick is never early); at the end of the tick when unknown.
pub fn due_in_tick(exact_ms: Option<i64>, slot_ms: i64, precision_ms: i64) -> i64 {
    exact_ms.map_or(slot_ms + precision_ms, |e| {
        e.clamp(slot_ms, slot_ms + precision_ms)
    })
}

/// The entries of the open tick, delivered in due order.
#[derive(Debug)]
pub struct OpenTick<T> {
    pub slot_ms: i64,
    /// Sorted by due time, latest first, so the next due is at the end.
    entries: Vec<(i64, T)>,
}

impl<T> OpenTick<T> {
    pub fn new(slot_ms: i64) -> Self {
        OpenTick {
            slot_ms,
            entries: Vec::new(),
        }
    }

    pub fn push(&mut self, due_ms: i64, entry: T) {
        let at = self.entries.partition_point(|(d, _)| *d > due_ms);
        self.entries.insert(at, (due_ms, entry));
    }

    /// Entries due at `now_ms`, earliest first.
    pub fn take_due(&mut self, now_ms: i64) -> Vec<T> {
        let keep = self.entries.partition_point(|(d, _)| *d > now_ms);
        self.entries.drain(keep..).rev().map(|(_, e)| e).collect()
    }

    pub fn next_due(&self) -> Option<i64> {
        self.entries.last().map(|(d, _)| *d)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_past_due_wheel_and_roll() {
        let clock = TimerClock::new(1000, 3600 * 24 * 2, 10_000);
        assert_eq!(clock.place(9_000, 10_500), Placement::Now);
        assert_eq!(
            clock.place(10_000, 10_500),
            Placement::Wheel {
                slot_ms: 10_000,
                roll: false
            }
        );
        assert_eq!(
            clock.place(15_400, 10_500),
            Placement::Wheel {
                slot_ms: 15_000,
                roll: false
            }
        );
        // Three days ahead with a two-day window: rolled to the window's end.
        let three_days = 3 * 86_400_000;
        assert_eq!(
            clock.place(10_000 + three_days, 10_500),
            Placement::Wheel {
                slot_ms: 10_000 + 2 * 86_400_000,
                roll: true
            }
        );
        // Just past the window: rolled half way, to leave time for the next roll.
        assert_eq!(
            clock.place(10_000 + 2 * 86_400_000 + 1000, 10_500),
            Placement::Wheel {
                slot_ms: 10_000 + 86_400_000,
                roll: true
            }
        );
    }

    #[test]
    fn a_tick_opens_at_its_start_and_closes_at_its_end() {
        let mut clock = TimerClock::new(1000, 100, 5_000);
        assert!(!clock.tick_opens(4_999));
        assert!(clock.tick_opens(5_000));
        assert!(!clock.tick_closes(5_999));
        assert!(clock.tick_closes(6_000));
        clock.advance();
        assert_eq!(clock.read_time_ms(), 6_000);
    }

    #[test]
    fn due_times_stay_in_their_tick() {
        assert_eq!(due_in_tick(Some(5_300), 5_000, 1000), 5_300);
        assert_eq!(due_in_tick(Some(6_000), 5_000, 1000), 6_000);
        assert_eq!(due_in_tick(Some(9_999), 5_000, 1000), 6_000);
        assert_eq!(due_in_tick(Some(1), 5_000, 1000), 5_000);
        assert_eq!(due_in_tick(None, 5_000, 1000), 6_000);
    }

    #[test]
    fn recovery_resumes_at_the_checkpoint_within_reach() {
        let now = 1_000_000_000_500;
        assert_eq!(
            TimerClock::recovered_read_time(None, now, 1000),
            1_000_000_000_000
        );
        assert_eq!(
            TimerClock::recovered_read_time(Some(999_999_990_000), now, 1000),
            999_999_990_000
        );
        assert_eq!(
            TimerClock::recovered_read_time(Some(0), now, 1000),
            1_000_000_000_000 - (SLOTS_TOTAL - BLANK_SLOTS) * 1000
        );
    }

    #[test]
    fn open_tick_hands_out_in_due_order() {
        let mut tick = OpenTick::new(5_000);
        tick.push(5_900, "c");
        tick.push(5_100, "a");
        tick.push(5_500, "b");
        tick.push(5_500, "b2");
        assert_eq!(tick.next_due(), Some(5_100));
        assert_eq!(tick.take_due(5_050), Vec::<&str>::new());
        assert_eq!(tick.take_due(5_500), vec!["a", "b", "b2"]);
        assert_eq!(tick.len(), 1);
        assert_eq!(tick.take_due(7_000), vec!["c"]);
        assert!(tick.is_empty());
    }
}
