//! The `timerwheel` file (Java's `TimerWheel`): one 32-byte slot per tick over twice the wheel's
//! span, each the head of a backwards-linked list of TimerLog units due in that tick.
//!
//! ```text
//! slot = [time / precision: i64][first unit pos: i64][last unit pos: i64][num: i32][magic: i32]
//! index(time) = time / precision % (2 × slots_total)          big-endian, as Java's ByteBuffer
//! ```
//!
//! The file is `2 × slots_total × 32` bytes (38,707,200 for Java's fixed 7-day wheel) whatever the
//! precision. It is mapped, so only the pages of slots actually used are resident.

/// Bytes of one slot (`Slot.SIZE`).
pub const SLOT_SIZE: usize = 32;
/// Position of "no unit" (`TimerWheel.BLANK`).
pub const BLANK: i64 = -1;

/// A slot as read: `time_ms` is `-1` when the slot holds nothing for the asked time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub time_ms: i64,
    pub first_pos: i64,
    pub last_pos: i64,
    pub num: i32,
    pub magic: i32,
}

impl Slot {
    pub const EMPTY: Slot = Slot {
        time_ms: -1,
        first_pos: BLANK,
        last_pos: BLANK,
        num: 0,
        magic: 0,
    };
}

/// The wheel over any byte buffer of the right length (a mapping in the store, a `Vec` in tests).
pub struct Wheel<B> {
    buf: B,
    slots_total: i64,
    precision_ms: i64,
}

impl<B: std::ops::DerefMut<Target = [u8]>> Wheel<B> {
    /// Bytes of the file for `slots_total` slots.
    pub fn file_len(slots_total: i64) -> usize {
        slots_total as usize * 2 * SLOT_SIZE
    }

    pub fn new(buf: B, slots_total: i64, precision_ms: i64) -> Self {
        assert_eq!(buf.len(), Self::file_len(slots_total));
        Wheel {
            buf,
            slots_total,
            precision_ms,
        }
    }

    fn index(&self, time_ms: i64) -> usize {
        (time_ms.div_euclid(self.precision_ms)).rem_euclid(self.slots_total * 2) as usize
            * SLOT_SIZE
    }

    fn raw(&self, time_ms: i64) -> Slot {
        let at = self.index(time_ms);
        let b = &self.buf[at..at + SLOT_SIZE];
        let long = |i: usize| i64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let int = |i: usize| i32::from_be_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Slot {
            time_ms: long(0).saturating_mul(self.precision_ms),
            first_pos: long(8),
            last_pos: long(16),
            num: int(24),
            magic: int(28),
        }
    }

    /// The slot of `time_ms`'s tick, or [`Slot::EMPTY`] if the slot holds another tick's list
    /// (left from two spans ago) or nothing.
    pub fn slot(&self, time_ms: i64) -> Slot {
        let raw = self.raw(time_ms);
        if raw.time_ms != time_ms.div_euclid(self.precision_ms) * self.precision_ms {
            return Slot::EMPTY;
        }
        raw
    }

    /// Writes the whole slot of `time_ms`'s tick (`putSlot`).
    pub fn put(&mut self, time_ms: i64, first_pos: i64, last_pos: i64, num: i32, magic: i32) {
        let at = self.index(time_ms);
        let b = &mut self.buf[at..at + SLOT_SIZE];
        b[0..8].copy_from_slice(&time_ms.div_euclid(self.precision_ms).to_be_bytes());
        b[8..16].copy_from_slice(&first_pos.to_be_bytes());
        b[16..24].copy_from_slice(&last_pos.to_be_bytes());
        b[24..28].copy_from_slice(&num.to_be_bytes());
        b[28..32].copy_from_slice(&magic.to_be_bytes());
    }

    /// Recovery's repair (`reviseSlot(.., IGNORE, last, force = true)`): the unit at `last_pos`,
    /// found valid in the TimerLog, becomes the slot's newest.
    pub fn revise_last(&mut self, time_ms: i64, last_pos: i64) {
        let slot = self.slot(time_ms);
        if slot.time_ms == -1 {
            self.put(time_ms, last_pos, last_pos, 1, 0);
        } else if slot.last_pos < last_pos {
            self.put(
                time_ms,
                slot.first_pos,
                last_pos,
                slot.num.saturating_add(1),
                slot.magic,
            );
        }
    }

    pub fn buf(&self) -> &B {
        &self.buf
    }

    pub fn precision_ms(&self) -> i64 {
        self.precision_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel(precision: i64) -> Wheel<Vec<u8>> {
        Wheel::new(vec![0; Wheel::<Vec<u8>>::file_len(100)], 100, precision)
    }

    #[test]
    fn a_slot_holds_its_tick_only() {
        let mut w = wheel(1000);
        assert_eq!(w.slot(5_000), Slot::EMPTY);
        w.put(5_300, 52, 104, 2, 0);
        let slot = w.slot(5_999);
        assert_eq!(
            (slot.time_ms, slot.first_pos, slot.last_pos, slot.num),
            (5_000, 52, 104, 2)
        );
        // 200 ticks later the same index belongs to another tick.
        assert_eq!(w.slot(205_000), Slot::EMPTY);
        assert_eq!(w.slot(6_000), Slot::EMPTY);
    }

    #[test]
    fn bytes_are_javas_layout() {
        let mut w = wheel(100);
        w.put(1_234, 7, 9, 3, 1);
        let at = 12 * SLOT_SIZE;
        let b = &w.buf()[at..at + SLOT_SIZE];
        assert_eq!(&b[0..8], &12i64.to_be_bytes());
        assert_eq!(&b[8..16], &7i64.to_be_bytes());
        assert_eq!(&b[16..24], &9i64.to_be_bytes());
        assert_eq!(&b[24..28], &3i32.to_be_bytes());
        assert_eq!(&b[28..32], &1i32.to_be_bytes());
    }

    #[test]
    fn revise_moves_the_last_unit_forward_only() {
        let mut w = wheel(1000);
        w.revise_last(3_000, 0);
        w.revise_last(3_000, 52);
        w.revise_last(3_000, 0);
        let slot = w.slot(3_000);
        assert_eq!((slot.first_pos, slot.last_pos), (0, 52));
    }
}
