//! The `timerlog/` files (Java's `TimerLog`): 52-byte units appended in enqueue order, each
//! pointing at a message in the CommitLog and back at the previous unit of the same wheel slot.
//!
//! ```text
//! unit = [size=52: i32][prev pos: i64][magic: i32][enqueue (write) time: i64]
//!        [delayed time - enqueue time: i32][CommitLog offset: i64][record size: i32]
//!        [real topic hash: i32][reserved: i64]                          big-endian
//! end of file: [remaining size: i32][0: i64][BLANK_MAGIC: i32], the rest dead
//! ```
//!
//! Files are named by their 20-digit start offset like CommitLog segments
//! (`mappedFileSizeTimerLog`, 100 MiB by default, sparse on disk).

use std::path::Path;
use std::sync::Arc;

use crate::error::StoreError;
use crate::file_queue::FileQueue;
use crate::fs::Fs;
use crate::mapped_file::MappedFile;

/// Bytes of one unit (`TimerLog.UNIT_SIZE`).
pub const UNIT_SIZE: usize = 52;
/// End-of-file marker (`TimerLog.BLANK_MAGIC_CODE`; Java's `0xBBCCDDEE ^ 1880681586 + 8`).
pub const BLANK_MAGIC: i32 = (0xBBCC_DDEE_u32 as i32) ^ (1_880_681_586 + 8);
/// Smallest end-of-file marker (`MIN_BLANK_LEN`).
const MIN_BLANK_LEN: usize = 4 + 8 + 4;

/// Unit magic bits (`TimerMessageStore.MAGIC_*`).
pub mod magic {
    pub const DEFAULT: i32 = 1;
    /// The message is due later than the wheel reaches: it is put back on the timer topic.
    pub const ROLL: i32 = 1 << 1;
    /// A delete marker (5.x `TIMER_DEL_UNIQKEY`).
    pub const DELETE: i32 = 1 << 2;

    /// `isMagicOK`: only the low four bits may be set.
    pub fn is_valid(magic: i32) -> bool {
        (magic | 0xF) == 0xF
    }
}

/// One unit, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub prev_pos: i64,
    pub magic: i32,
    /// When the unit was written: the wheel's write time, a multiple of the precision.
    pub enqueue_ms: i64,
    /// The slot time the unit is due in.
    pub delayed_ms: i64,
    pub offset_py: i64,
    pub size_py: i32,
    pub topic_hash: i32,
}

impl Unit {
    pub fn encode(&self) -> [u8; UNIT_SIZE] {
        let mut b = [0u8; UNIT_SIZE];
        b[0..4].copy_from_slice(&(UNIT_SIZE as i32).to_be_bytes());
        b[4..12].copy_from_slice(&self.prev_pos.to_be_bytes());
        b[12..16].copy_from_slice(&self.magic.to_be_bytes());
        b[16..24].copy_from_slice(&self.enqueue_ms.to_be_bytes());
        let delay = (self.delayed_ms - self.enqueue_ms).clamp(i32::MIN.into(), i32::MAX.into());
        b[24..28].copy_from_slice(&(delay as i32).to_be_bytes());
        b[28..36].copy_from_slice(&self.offset_py.to_be_bytes());
        b[36..40].copy_from_slice(&self.size_py.to_be_bytes());
        b[40..44].copy_from_slice(&self.topic_hash.to_be_bytes());
        b
    }

    /// The unit at the start of `b`, or what is there instead.
    pub fn decode(b: &[u8]) -> Decoded {
        if b.len() < MIN_BLANK_LEN {
            return Decoded::Invalid;
        }
        let int = |i: usize| i32::from_be_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let long = |i: usize| i64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if int(12) == BLANK_MAGIC {
            return Decoded::EndOfFile;
        }
        if b.len() < UNIT_SIZE || int(0) != UNIT_SIZE as i32 || !magic::is_valid(int(12)) {
            return Decoded::Invalid;
        }
        let enqueue_ms = long(16);
        Decoded::Unit(Unit {
            prev_pos: long(4),
            magic: int(12),
            enqueue_ms,
            delayed_ms: enqueue_ms + i64::from(int(24)),
            offset_py: long(28),
            size_py: int(36),
            topic_hash: int(40),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    Unit(Unit),
    EndOfFile,
    /// A torn or zero unit: the end of the log.
    Invalid,
}

pub(crate) struct TimerLog {
    files: FileQueue,
}

impl TimerLog {
    pub(crate) fn load(dir: &Path, file_size: u64, fs: &Fs) -> Result<Self, StoreError> {
        Ok(TimerLog {
            files: FileQueue::load(dir, file_size, fs)?,
        })
    }

    pub(crate) fn file_size(&self) -> usize {
        self.files.file_size()
    }

    /// Appends a unit and returns its position (`TimerLog.append`).
    pub(crate) fn append(&self, unit: &[u8; UNIT_SIZE]) -> std::io::Result<i64> {
        let mut file = match self.files.last() {
            Some(file) if file.free() > 0 => file,
            Some(full) => self.files.create_file(full.end())?,
            None => self.files.create_file(0)?,
        };
        if UNIT_SIZE + MIN_BLANK_LEN > file.free() {
            let mut blank = [0u8; MIN_BLANK_LEN];
            blank[0..4].copy_from_slice(&(file.free() as i32).to_be_bytes());
            blank[12..16].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
            file.append_and_seal(&blank);
            file = self.files.create_file(file.end())?;
        }
        let pos = file
            .append(unit)?
            .ok_or_else(|| std::io::Error::other("timer log file full"))?;
        Ok(file.from() + pos as i64)
    }

    /// The unit at `pos`, if `pos` holds a valid, published one.
    pub(crate) fn read(&self, pos: i64) -> Option<Unit> {
        let file = self.files.find(pos)?;
        let bytes = file.read((pos - file.from()) as usize, UNIT_SIZE)?;
        match Unit::decode(bytes) {
            Decoded::Unit(unit) => Some(unit),
            _ => None,
        }
    }

    /// End of the appended units.
    pub(crate) fn max_offset(&self) -> i64 {
        self.files.max_offset()
    }

    pub(crate) fn flush(&self) -> std::io::Result<i64> {
        self.files.flush(0)
    }

    /// Unmaps the pages of the units before `cutoff` from this process.
    pub(crate) fn release_pages_below(&self, cutoff: i64) -> std::io::Result<()> {
        self.files.release_pages_below(cutoff)
    }

    /// Recovery: validates units from the file holding `from` to the end, calls `each` for
    /// every valid one with its position, and cuts the log at the first torn or zero unit.
    /// Returns the end of the valid units.
    pub(crate) fn recover(
        &mut self,
        from: i64,
        mut each: impl FnMut(i64, &Unit),
    ) -> Result<i64, StoreError> {
        let files: Vec<Arc<MappedFile>> = self.files.snapshot().to_vec();
        if files.is_empty() {
            return Ok(0);
        }
        let start = files.iter().rposition(|f| f.from() <= from).unwrap_or(0);
        let mut end = files[start].from();
        'files: for file in &files[start..] {
            let bytes = file.read_from(0).unwrap_or(&[]);
            let mut pos = 0;
            end = file.from();
            while pos + MIN_BLANK_LEN <= bytes.len() {
                match Unit::decode(&bytes[pos..]) {
                    Decoded::Unit(unit) => {
                        each(file.from() + pos as i64, &unit);
                        pos += UNIT_SIZE;
                        end = file.from() + pos as i64;
                    }
                    Decoded::EndOfFile => {
                        end = file.end();
                        continue 'files;
                    }
                    Decoded::Invalid => break 'files,
                }
            }
            break;
        }
        drop(files);
        let dir = self.files.dir().to_path_buf();
        self.files
            .truncate(end)
            .map_err(|e| StoreError::io(dir, e))?;
        Ok(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(prev_pos: i64, offset_py: i64) -> Unit {
        Unit {
            prev_pos,
            magic: magic::DEFAULT,
            enqueue_ms: 10_000,
            delayed_ms: 13_000,
            offset_py,
            size_py: 200,
            topic_hash: 77,
        }
    }

    #[test]
    fn unit_round_trip_in_javas_layout() {
        let u = unit(-1, 4096);
        let b = u.encode();
        assert_eq!(&b[0..4], &52i32.to_be_bytes());
        assert_eq!(&b[24..28], &3000i32.to_be_bytes());
        assert_eq!(Unit::decode(&b), Decoded::Unit(u));
        assert_eq!(Unit::decode(&[0u8; UNIT_SIZE]), Decoded::Invalid);
        let mut bad = b;
        bad[15] = 0x10;
        assert_eq!(Unit::decode(&bad), Decoded::Invalid);
    }

    #[test]
    fn blank_magic_is_javas() {
        assert_eq!(BLANK_MAGIC, 0xBBCCDDEE_u32 as i32 ^ 1880681594);
    }

    #[test]
    fn append_rolls_files_and_recovery_cuts_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timerlog");
        // Room for two units and a blank per file.
        let file_size = (2 * UNIT_SIZE + MIN_BLANK_LEN + 10) as u64;
        let log = TimerLog::load(&path, file_size, &crate::fs::real()).unwrap();
        let mut positions = Vec::new();
        for i in 0..5 {
            positions.push(log.append(&unit(-1, i).encode()).unwrap());
        }
        assert_eq!(positions[2], file_size as i64);
        assert_eq!(log.read(positions[4]).unwrap().offset_py, 4);
        let last_file = positions[4] as u64 / file_size * file_size;
        drop(log);
        // Tear the last unit: half of it is written.
        let torn = path.join(format!("{last_file:020}"));
        let mut bytes = std::fs::read(&torn).unwrap();
        let at = (positions[4] as u64 - last_file) as usize;
        bytes[at + 20..at + UNIT_SIZE].fill(0);
        bytes[at..at + 4].fill(0);
        std::fs::write(&torn, &bytes).unwrap();

        let mut log = TimerLog::load(&path, file_size, &crate::fs::real()).unwrap();
        let mut seen = Vec::new();
        let end = log
            .recover(0, |pos, u| seen.push((pos, u.offset_py)))
            .unwrap();
        assert_eq!(end, positions[4]);
        assert_eq!(
            seen.iter().map(|s| s.1).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        // The next append reuses the torn position.
        assert_eq!(log.append(&unit(-1, 9).encode()).unwrap(), positions[4]);
    }
}
