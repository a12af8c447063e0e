//! `config/timercheck` (Java's `TimerCheckpoint`): how far the timer got, so a restart neither
//! loses nor repeats more than the last flush interval.
//!
//! ```text
//! 0 lastReadTimeMs i64          every wheel tick before it was delivered
//! 8 lastTimerLogFlushPos i64    the TimerLog is on disk up to here
//! 16 lastTimerQueueOffset i64   every rmq_sys_wheel_timer entry before it is in the TimerLog
//! 24 masterTimerQueueOffset i64 (= lastTimerQueueOffset on a master)
//! 32 dataVersion: stateVersion i64, timestamp i64, counter i64     … zeros to 4096, big-endian
//! ```

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::StoreError;

const FILE_SIZE: usize = 4096;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimerCheckpoint {
    pub last_read_time_ms: i64,
    pub last_timer_log_flush_pos: i64,
    pub last_timer_queue_offset: i64,
    pub master_timer_queue_offset: i64,
    pub state_version: i64,
    pub timestamp: i64,
    pub counter: i64,
}

impl TimerCheckpoint {
    pub fn encode(&self) -> [u8; 56] {
        let mut b = [0u8; 56];
        let fields = [
            self.last_read_time_ms,
            self.last_timer_log_flush_pos,
            self.last_timer_queue_offset,
            self.master_timer_queue_offset,
            self.state_version,
            self.timestamp,
            self.counter,
        ];
        for (i, v) in fields.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> Self {
        let f = |i: usize| {
            b.get(i * 8..i * 8 + 8)
                .map_or(0, |s| i64::from_be_bytes(s.try_into().expect("8 bytes")))
        };
        TimerCheckpoint {
            last_read_time_ms: f(0),
            last_timer_log_flush_pos: f(1),
            last_timer_queue_offset: f(2),
            master_timer_queue_offset: f(3),
            state_version: f(4),
            timestamp: f(5),
            counter: f(6),
        }
    }
}

/// The file; written by the timer's own thread only.
pub(crate) struct CheckpointFile {
    path: PathBuf,
    file: std::fs::File,
}

impl CheckpointFile {
    /// Opens (creating) the file; `None` as the checkpoint if it did not exist.
    pub(crate) fn open(path: &Path) -> Result<(Self, Option<TimerCheckpoint>), StoreError> {
        let io = |e| StoreError::io(path, e);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        let existed = path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() < FILE_SIZE {
            file.set_len(FILE_SIZE as u64).map_err(io)?;
        }
        let found = (existed && bytes.len() >= 32).then(|| TimerCheckpoint::decode(&bytes));
        Ok((
            CheckpointFile {
                path: path.to_path_buf(),
                file,
            },
            found,
        ))
    }

    /// Writes and syncs the checkpoint (56 bytes, within one sector).
    pub(crate) fn write(&mut self, checkpoint: &TimerCheckpoint) -> Result<(), StoreError> {
        let io = |e| StoreError::io(&self.path, e);
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        self.file.write_all(&checkpoint.encode()).map_err(io)?;
        self.file.sync_data().map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/timercheck");
        let (mut file, found) = CheckpointFile::open(&path).unwrap();
        assert_eq!(found, None);
        let cp = TimerCheckpoint {
            last_read_time_ms: 1_700_000_000_000,
            last_timer_log_flush_pos: 520,
            last_timer_queue_offset: 10,
            master_timer_queue_offset: 10,
            state_version: 0,
            timestamp: 5,
            counter: 2,
        };
        file.write(&cp).unwrap();
        drop(file);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        let (_, found) = CheckpointFile::open(&path).unwrap();
        assert_eq!(found, Some(cp));
    }
}
