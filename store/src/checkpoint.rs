//! The 4 KiB `checkpoint` file (Java's `StoreCheckpoint`): how far each kind of file is known to
//! be on disk, as store timestamps. Abnormal recovery starts from the last CommitLog segment
//! whose first record is older than [`Checkpoint::min_timestamp`].
//!
//! ```text
//! 0 physicMsgTimestamp i64   8 logicsMsgTimestamp i64   16 indexMsgTimestamp i64
//! 24 masterFlushedOffset i64 (5.x)   32 confirmPhyOffset i64 (5.x)   … zeros to 4096
//! ```

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};

use memmap2::MmapMut;
use parking_lot::Mutex;

use crate::error::StoreError;

const FILE_SIZE: u64 = 4096;

pub(crate) struct Checkpoint {
    map: Mutex<MmapMut>,
    physic_msg_timestamp: AtomicI64,
    logics_msg_timestamp: AtomicI64,
    index_msg_timestamp: AtomicI64,
    master_flushed_offset: AtomicI64,
    confirm_phy_offset: AtomicI64,
}

impl Checkpoint {
    /// Opens the file, creating it (all zero) if missing.
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        let io = |e| StoreError::io(path, e);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        if file.metadata().map_err(io)?.len() < FILE_SIZE {
            file.set_len(FILE_SIZE).map_err(io)?;
        }
        // SAFETY: the store's lock file keeps other writers out (see mapped_file.rs).
        let map = unsafe {
            memmap2::MmapOptions::new()
                .len(FILE_SIZE as usize)
                .map_mut(&file)
        }
        .map_err(io)?;
        let field = |at: usize| {
            AtomicI64::new(i64::from_be_bytes(
                map[at..at + 8].try_into().expect("8 bytes"),
            ))
        };
        Ok(Checkpoint {
            physic_msg_timestamp: field(0),
            logics_msg_timestamp: field(8),
            index_msg_timestamp: field(16),
            master_flushed_offset: field(24),
            confirm_phy_offset: field(32),
            map: Mutex::new(map),
        })
    }

    pub(crate) fn physic_msg_timestamp(&self) -> i64 {
        self.physic_msg_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn set_physic_msg_timestamp(&self, timestamp: i64) {
        self.physic_msg_timestamp
            .store(timestamp, Ordering::Release);
    }

    pub(crate) fn logics_msg_timestamp(&self) -> i64 {
        self.logics_msg_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn set_logics_msg_timestamp(&self, timestamp: i64) {
        self.logics_msg_timestamp
            .store(timestamp, Ordering::Release);
    }

    pub(crate) fn index_msg_timestamp(&self) -> i64 {
        self.index_msg_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn set_index_msg_timestamp(&self, timestamp: i64) {
        self.index_msg_timestamp.store(timestamp, Ordering::Release);
    }

    /// Recovery's record of the last valid message (Java keeps it for HA; informational here).
    pub(crate) fn set_confirm_phy_offset(&self, offset: i64) {
        self.confirm_phy_offset.store(offset, Ordering::Release);
    }

    /// Oldest of the CommitLog and ConsumeQueue timestamps, minus 3 s of slack.
    pub(crate) fn min_timestamp(&self) -> i64 {
        let min = self.physic_msg_timestamp().min(self.logics_msg_timestamp());
        (min - 3_000).max(0)
    }

    /// Writes the fields and forces them to disk.
    pub(crate) fn flush(&self) -> std::io::Result<()> {
        let mut map = self.map.lock();
        let fields = [
            &self.physic_msg_timestamp,
            &self.logics_msg_timestamp,
            &self.index_msg_timestamp,
            &self.master_flushed_offset,
            &self.confirm_phy_offset,
        ];
        for (i, field) in fields.iter().enumerate() {
            map[i * 8..i * 8 + 8].copy_from_slice(&field.load(Ordering::Acquire).to_be_bytes());
        }
        map.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_survive_a_reopen_at_java_positions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        let checkpoint = Checkpoint::open(&path).unwrap();
        assert_eq!(checkpoint.min_timestamp(), 0);
        checkpoint.set_physic_msg_timestamp(10_000);
        checkpoint.set_logics_msg_timestamp(9_000);
        checkpoint.set_index_msg_timestamp(8_000);
        checkpoint.set_confirm_phy_offset(77);
        checkpoint.flush().unwrap();
        drop(checkpoint);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4096);
        assert_eq!(&bytes[0..8], &10_000_i64.to_be_bytes());
        assert_eq!(&bytes[16..24], &8_000_i64.to_be_bytes());
        assert_eq!(&bytes[32..40], &77_i64.to_be_bytes());
        let reopened = Checkpoint::open(&path).unwrap();
        assert_eq!(reopened.min_timestamp(), 6_000);
        assert_eq!(reopened.index_msg_timestamp(), 8_000);
    }
}
