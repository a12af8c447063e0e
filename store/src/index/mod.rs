//! The IndexFiles under `index/` (Java's `IndexService`): message keys and unique keys, as
//! `topic#KEY` and `topic#UNIQ_KEY`, mapped to CommitLog offsets, for QUERY_MESSAGE.
//!
//! A background thread follows the CommitLog and indexes every record, off the put path. Its
//! progress is its own: on open it resumes after the last record the newest file covers, so
//! files lost in a crash (Java deletes those newer than the checkpoint's `indexMsgTimestamp`) are
//! rebuilt from the CommitLog.

mod file;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;
use parking_lot::Mutex;
use skiff_model::message::{keys, sys_flag};

use crate::commit_log::{check_at, Checked};
use crate::dispatch::{property, Dispatch};
use crate::error::StoreError;
use crate::local_time;
use crate::message_store::Shared;
use file::IndexFile;

/// What a key query found (Java's `QueryMessageResult`).
#[derive(Debug, Clone, Default)]
pub struct QueryMessagesResult {
    /// Whole records, oldest first.
    pub messages: Vec<Bytes>,
    /// End timestamp of the newest index file: how far the index is built.
    pub index_last_update_timestamp: i64,
    /// CommitLog offset of the newest indexed record.
    pub index_last_update_phyoffset: i64,
}

pub(crate) struct IndexService {
    dir: PathBuf,
    slots: u32,
    entries: u32,
    files: ArcSwap<Vec<Arc<IndexFile>>>,
    /// Serializes changes of the list (a new file, deletions).
    change: Mutex<()>,
}

impl IndexService {
    /// Maps the index files in name order. After a crash, files that may hold entries newer than
    /// the checkpoint's `indexMsgTimestamp` are deleted; they are rebuilt.
    pub(crate) fn load(
        dir: &Path,
        slots: u32,
        entries: u32,
        clean: bool,
        index_msg_timestamp: i64,
    ) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let mut paths = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))? {
            let entry = entry.map_err(|e| StoreError::io(dir, e))?;
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                paths.push(entry.path());
            }
        }
        paths.sort();
        let mut files = Vec::new();
        for path in paths {
            let file = IndexFile::open(path.clone(), slots, entries)
                .map_err(|e| StoreError::io(&path, e))?;
            if !clean && file.end_timestamp() > index_msg_timestamp {
                drop(file);
                fs::remove_file(&path).map_err(|e| StoreError::io(&path, e))?;
                continue;
            }
            files.push(Arc::new(file));
        }
        Ok(IndexService {
            dir: dir.to_path_buf(),
            slots,
            entries,
            files: ArcSwap::from_pointee(files),
            change: Mutex::new(()),
        })
    }

    /// The CommitLog offset of the newest indexed record, if any.
    fn last_indexed(&self) -> Option<i64> {
        let files = self.files.load();
        let last = files.last()?;
        (last.index_count() > 1).then(|| last.end_phy_offset())
    }

    /// Indexes one record's keys (`buildIndex`). Rolled-back transactions are not indexed.
    fn build(&self, shared: &Shared, record: &Dispatch<'_>, key: &mut String) -> io::Result<()> {
        if sys_flag::transaction_type(record.sys_flag) == sys_flag::TRANSACTION_ROLLBACK_TYPE {
            return Ok(());
        }
        let properties = &record.properties;
        let unique = property(properties, keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        let user_keys = property(properties, keys::KEYS).unwrap_or_default();
        for one in unique
            .into_iter()
            .chain(user_keys.split(' ').filter(|k| !k.is_empty()))
        {
            key.clear();
            key.push_str(record.topic);
            key.push('#');
            key.push_str(one);
            self.put_key(
                shared,
                key,
                record.commit_log_offset,
                record.store_timestamp,
            )?;
        }
        Ok(())
    }

    fn put_key(&self, shared: &Shared, key: &str, offset: i64, timestamp: i64) -> io::Result<()> {
        loop {
            let file = self.writable(shared)?;
            if file.put_key(key, offset, timestamp) {
                return Ok(());
            }
        }
    }

    /// The file to write: the newest, or a new one when it is full (the full one is flushed and
    /// its end time recorded in the checkpoint, as Java's `IndexService.flush`).
    fn writable(&self, shared: &Shared) -> io::Result<Arc<IndexFile>> {
        let files = self.files.load_full();
        let previous = match files.last() {
            Some(last) if !last.is_write_full() => return Ok(Arc::clone(last)),
            previous => previous.cloned(),
        };
        let (end_phy, end_time) = previous
            .as_ref()
            .map_or((0, 0), |f| (f.end_phy_offset(), f.end_timestamp()));
        let mut now = shared.env.clock.now_ms();
        let path = loop {
            let path = self.dir.join(local_time::human(now));
            if !path.exists() {
                break path;
            }
            now += 1;
        };
        let file = Arc::new(IndexFile::create(
            path,
            self.slots,
            self.entries,
            end_phy,
            end_time,
        )?);
        {
            let _change = self.change.lock();
            let mut list = Vec::clone(&self.files.load());
            list.push(Arc::clone(&file));
            self.files.store(Arc::new(list));
        }
        if let Some(full) = previous {
            full.flush()?;
            shared
                .checkpoint
                .set_index_msg_timestamp(full.end_timestamp());
            shared.checkpoint.flush()?;
        }
        Ok(file)
    }

    /// Offsets of records indexed under `topic#key` stored in `[begin, end]` (`queryOffset`).
    pub(crate) fn query(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin: i64,
        end: i64,
    ) -> (Vec<i64>, i64, i64) {
        let full_key = format!("{topic}#{key}");
        let files = self.files.load();
        let mut offsets = Vec::new();
        let (mut last_timestamp, mut last_offset) = (0, 0);
        for (i, file) in files.iter().enumerate().rev() {
            if i + 1 == files.len() {
                last_timestamp = file.end_timestamp();
                last_offset = file.end_phy_offset();
            }
            if file.is_time_matched(begin, end) {
                file.select(&mut offsets, &full_key, max, begin, end);
            }
            if file.begin_timestamp() < begin || offsets.len() >= max {
                break;
            }
        }
        (offsets, last_timestamp, last_offset)
    }

    /// Deletes files (never the newest) whose entries all point below `min_phy_offset`.
    pub(crate) fn delete_expired(&self, min_phy_offset: i64) {
        let _change = self.change.lock();
        let files = self.files.load_full();
        let expired = files[..files.len().saturating_sub(1)]
            .iter()
            .take_while(|f| f.end_phy_offset() < min_phy_offset)
            .count();
        if expired == 0 {
            return;
        }
        for file in &files[..expired] {
            if let Err(e) = fs::remove_file(file.path()) {
                tracing::warn!(path = %file.path().display(), error = %e, "could not delete an index file");
            }
        }
        self.files.store(Arc::new(files[expired..].to_vec()));
    }

    /// Unmaps the pages of every file but the newest, and the newest one's entries more than
    /// `keep` bytes behind its last (see [`IndexFile::release_pages`]).
    fn release_cold_pages(&self, keep: usize) {
        let files = self.files.load();
        let Some((last, older)) = files.split_last() else {
            return;
        };
        for (file, keep) in older
            .iter()
            .map(|f| (f, None))
            .chain(std::iter::once((last, Some(keep))))
        {
            if let Err(e) = file.release_pages(keep) {
                tracing::debug!(error = %e, "cannot release IndexFile pages");
                return;
            }
        }
    }

    fn flush_last(&self) {
        if let Some(last) = self.files.load().last() {
            if let Err(e) = last.flush() {
                tracing::error!(error = %e, "index flush failed");
            }
        }
    }
}

/// The indexing thread: follows the CommitLog from where the index ends.
pub(crate) fn run_indexer(shared: Arc<Shared>) {
    let Some(index) = shared.index.as_ref() else {
        return;
    };
    let commit_log = &shared.commit_log;
    let mut next = match index.last_indexed() {
        // Resume after the newest indexed record.
        Some(offset) => commit_log
            .read_record(offset)
            .map_or(offset, |r| offset + r.len() as i64),
        None => commit_log.min_offset().max(0),
    };
    let mut key = String::new();
    let keep = (shared.config.commit_log_resident_tail / 64) as usize;
    let mut released = Instant::now();
    while shared.index_waker.wait(Duration::from_millis(10)) {
        if released.elapsed() >= Duration::from_secs(1) {
            released = Instant::now();
            index.release_cold_pages(keep);
        }
        while next < commit_log.max_offset() && !shared.index_waker.is_stopped() {
            next = next.max(commit_log.min_offset());
            let Some(file) = commit_log.files.find(next) else {
                break;
            };
            match check_at(&file, (next - file.from()) as usize, false) {
                Checked::Record(record) => {
                    let mut dispatch = Dispatch::from_record(&record);
                    dispatch.commit_log_offset = next;
                    if let Err(e) = index.build(&shared, &dispatch, &mut key) {
                        tracing::error!(error = %e, "building the index failed; retrying");
                        break;
                    }
                    next += i64::from(record.total_size);
                }
                Checked::Blank => next = file.end(),
                Checked::Invalid => {
                    tracing::error!(
                        offset = next,
                        "unreadable record while indexing; skipping its segment"
                    );
                    next = file.end();
                }
            }
        }
    }
    index.flush_last();
}
