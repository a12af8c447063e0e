//! The timer's files, as Java's `TimerMessageStore` keeps them, so either broker can open the
//! other's: `timerwheel` (one slot per tick, [`wheel`]), `timerlog/` (units linking the slot's
//! messages in the CommitLog, [`log`]) and `config/timercheck` (progress, [`checkpoint`]); and
//! [`clock`], the pure decisions of what is due when.
//!
//! The store knows no message property: the broker reads the timer topic, decides with the
//! clock, and calls [`TimerStore::add`] / [`TimerStore::walk`] / [`TimerStore::flush`] from its
//! one timer thread (the wheel and the log have a single writer).
//!
//! Memory: the wheel (38.7 MB on disk) and the log are mapped, so a million pending messages
//! cost the pages of the slots and units in use, not a heap structure per message.

pub mod checkpoint;
pub mod clock;
pub mod log;
pub mod wheel;

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use crate::error::StoreError;
use checkpoint::{CheckpointFile, TimerCheckpoint};
use clock::SLOTS_TOTAL;
use log::{TimerLog, Unit};
use wheel::{Wheel, BLANK};

/// What the timer files are opened with (`MessageStoreConfig` keys).
#[derive(Debug, Clone)]
pub struct TimerStoreConfig {
    /// `storePathRootDir`.
    pub root_dir: PathBuf,
    /// `timerPrecisionMs`, already one of Java's 100, 200, 500, 1000.
    pub precision_ms: i64,
    /// `mappedFileSizeTimerLog`.
    pub log_file_size: u64,
    /// TimerLog bytes behind its end that stay mapped at each flush (older units are read once,
    /// when their tick is due, and map their page again then); the broker gives 1/64 of
    /// `commitLogResidentTail`.
    pub log_resident_tail: u64,
}

/// What recovery found.
#[derive(Debug, Default)]
pub struct Recovered {
    /// The checkpoint, if the file existed.
    pub checkpoint: Option<TimerCheckpoint>,
    /// CommitLog offsets of timer-topic messages already in the TimerLog past the checkpoint:
    /// when the timer topic is read again from the checkpoint's offset, these are not added twice.
    pub already_in_log: HashSet<i64>,
    /// Where the TimerLog ends after cutting a torn tail.
    pub log_end: i64,
}

pub struct TimerStore {
    wheel: Wheel<MmapMut>,
    log: TimerLog,
    checkpoint: CheckpointFile,
    counter: i64,
    log_resident_tail: i64,
}

/// Paths of the timer's files under the store root.
pub fn wheel_path(root: &Path) -> PathBuf {
    root.join("timerwheel")
}
pub fn log_dir(root: &Path) -> PathBuf {
    root.join("timerlog")
}
pub fn checkpoint_path(root: &Path) -> PathBuf {
    root.join("config").join("timercheck")
}

impl TimerStore {
    /// Opens (creating) the files and recovers: the TimerLog is validated from one file before
    /// the checkpoint's flush position, its torn tail cut, and the wheel's slots pointed at the
    /// valid units found (Java's `recoverAndRevise`).
    pub fn open(config: &TimerStoreConfig) -> Result<(TimerStore, Recovered), StoreError> {
        let root = &config.root_dir;
        let fs = crate::fs::real();
        std::fs::create_dir_all(root).map_err(|e| StoreError::io(root, e))?;
        let (checkpoint_file, checkpoint) = CheckpointFile::open(&checkpoint_path(root))?;
        let path = wheel_path(root);
        let io = |e| StoreError::io(&path, e);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let len = Wheel::<MmapMut>::file_len(SLOTS_TOTAL) as u64;
        let actual = file.metadata().map_err(io)?.len();
        if actual != 0 && actual != len {
            return Err(StoreError::FileSizeMismatch {
                path,
                actual,
                expected: len,
            });
        }
        // Allocated, not sparse: a slot written on a full disk must not fault (SIGBUS).
        file.set_len(len).map_err(io)?;
        fs.allocate(&path, &file, 0, len).map_err(io)?;
        // SAFETY: the store's lock file keeps other brokers out (see mapped_file.rs); only the
        // timer thread, through `&mut self`, touches the mapping.
        let map =
            unsafe { memmap2::MmapOptions::new().len(len as usize).map_mut(&file) }.map_err(io)?;
        let mut wheel = Wheel::new(map, SLOTS_TOTAL, config.precision_ms);
        let mut log = TimerLog::load(&log_dir(root), config.log_file_size, &fs)?;
        let flush_pos = checkpoint.map_or(0, |c| c.last_timer_log_flush_pos);
        let from = (flush_pos - log.file_size() as i64).max(0);
        let mut already_in_log = HashSet::new();
        let log_end = log.recover(from, |pos, unit: &Unit| {
            wheel.revise_last(unit.delayed_ms, pos);
            if pos >= flush_pos {
                already_in_log.insert(unit.offset_py);
            }
        })?;
        let counter = checkpoint.map_or(0, |c| c.counter);
        Ok((
            TimerStore {
                wheel,
                log,
                checkpoint: checkpoint_file,
                counter,
                log_resident_tail: config.log_resident_tail as i64,
            },
            Recovered {
                checkpoint,
                already_in_log,
                log_end,
            },
        ))
    }

    /// Appends a unit for the message at `offset_py` to the tick `slot_ms` (`doEnqueue`).
    pub fn add(
        &mut self,
        slot_ms: i64,
        enqueue_ms: i64,
        offset_py: i64,
        size_py: i32,
        magic: i32,
        topic_hash: i32,
    ) -> std::io::Result<()> {
        let slot = self.wheel.slot(slot_ms);
        let unit = Unit {
            prev_pos: slot.last_pos,
            magic,
            enqueue_ms,
            delayed_ms: slot_ms,
            offset_py,
            size_py,
            topic_hash,
        };
        let pos = self.log.append(&unit.encode())?;
        let first = if slot.first_pos == BLANK {
            pos
        } else {
            slot.first_pos
        };
        self.wheel
            .put(slot_ms, first, pos, slot.num.saturating_add(1), slot.magic);
        Ok(())
    }

    /// How many units the tick `slot_ms` holds (as counted when they were added).
    pub fn count(&self, slot_ms: i64) -> i32 {
        self.wheel.slot(slot_ms).num
    }

    /// The newest unit of the tick `slot_ms`, where a [`walk`](Self::walk) starts.
    pub fn newest(&self, slot_ms: i64) -> Option<i64> {
        let slot = self.wheel.slot(slot_ms);
        (slot.time_ms != -1 && slot.last_pos != BLANK).then_some(slot.last_pos)
    }

    /// Up to `max` units of a tick from `pos` back towards its oldest, and where to continue.
    /// The walk stops at anything that is not a unit of this tick behind the previous one, so a
    /// damaged log can end a tick's list early but never loop.
    pub fn walk(&self, slot_ms: i64, pos: i64, max: usize) -> (Vec<Unit>, Option<i64>) {
        let mut units = Vec::new();
        let mut next = Some(pos);
        while let Some(at) = next {
            if units.len() >= max {
                break;
            }
            let Some(unit) = self.log.read(at) else {
                next = None;
                break;
            };
            if unit.delayed_ms.div_euclid(self.wheel_precision())
                != slot_ms.div_euclid(self.wheel_precision())
            {
                next = None;
                break;
            }
            next = (unit.prev_pos != BLANK && unit.prev_pos >= 0 && unit.prev_pos < at)
                .then_some(unit.prev_pos);
            units.push(unit);
        }
        (units, next)
    }

    fn wheel_precision(&self) -> i64 {
        self.wheel.precision_ms()
    }

    /// End of the TimerLog.
    pub fn log_end(&self) -> i64 {
        self.log.max_offset()
    }

    /// Puts the log and the wheel on disk, then the checkpoint that says so: every tick before
    /// `read_time_ms` is delivered and every timer-topic entry before `queue_offset` is in the
    /// log or delivered (`TimerFlushService`); returns the checkpoint written. Blocking: call it
    /// from the timer thread.
    pub fn flush(
        &mut self,
        read_time_ms: i64,
        queue_offset: i64,
        now_ms: i64,
    ) -> Result<TimerCheckpoint, StoreError> {
        let flushed = self
            .log
            .flush()
            .map_err(|e| StoreError::io("timerlog", e))?;
        self.wheel
            .buf()
            .flush()
            .map_err(|e| StoreError::io("timerwheel", e))?;
        if let Err(e) = self
            .log
            .release_pages_below(flushed - self.log_resident_tail)
        {
            tracing::debug!(error = %e, "cannot release TimerLog pages");
        }
        self.counter += 1;
        let checkpoint = TimerCheckpoint {
            last_read_time_ms: read_time_ms,
            last_timer_log_flush_pos: flushed,
            last_timer_queue_offset: queue_offset,
            master_timer_queue_offset: queue_offset,
            state_version: 0,
            timestamp: now_ms,
            counter: self.counter,
        };
        self.checkpoint.write(&checkpoint)?;
        Ok(checkpoint)
    }
}

#[cfg(test)]
mod tests;
