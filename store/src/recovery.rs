//! Bringing the files back to a consistent state on open (Java's `recoverNormally`,
//! `recoverAbnormally`, `ConsumeQueue.recover`, `truncateDirtyLogicFiles`, `correctMinOffset`).
//!
//! 1. Each ConsumeQueue is cut at its first invalid entry.
//! 2. CommitLog records are verified (size, magic, body CRC) from a safe segment on: after a clean
//!    stop, the last segment whose first record the queues already cover; after a crash, the last
//!    segment whose first record is older than the checkpoint. The first invalid record is the
//!    end: the torn tail is zeroed and later segments are deleted.
//! 3. Every verified record is dispatched to its queue by the same code the live path uses;
//!    entries already present are skipped. A queue that turns out to miss entries before a record
//!    (its files were lost) is rebuilt by a second pass from the first segment.
//! 4. Queue entries pointing past the CommitLog's end are cut, and min offsets move to the first
//!    entry whose record still exists.
//!
//! All of this works on files nobody else can see yet, so truncation may rewrite them.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::checkpoint::Checkpoint;
use crate::commit_log::{check_at, Checked};
use crate::consume_queue::{ConsumeQueue, Gaps, Put};
use crate::dispatch::{DelayLevels, Dispatch};
use crate::file_queue::{FileQueue, Files};

pub(crate) struct Recovery<'a> {
    pub queue_root: &'a Path,
    pub queue_file_size: u64,
    pub fs: &'a crate::fs::Fs,
    pub check_crc: bool,
    pub delays: &'a DelayLevels,
    pub checkpoint: &'a Checkpoint,
    /// The last stop was clean (no `abort` file).
    pub clean: bool,
}

type Queues = HashMap<(String, i32), ConsumeQueue>;

/// What recovery leaves to serve.
pub(crate) struct Recovered {
    pub queues: Vec<ConsumeQueue>,
    /// Offset of the CommitLog's last valid record.
    pub last_record: Option<i64>,
}

impl Recovery<'_> {
    /// Recovers `commit_log` and `queues`.
    pub(crate) fn run(
        &self,
        commit_log: &mut FileQueue,
        queues: Vec<ConsumeQueue>,
    ) -> io::Result<Recovered> {
        let mut queues: Queues = queues
            .into_iter()
            .map(|q| ((q.topic().to_string(), q.queue_id()), q))
            .collect();
        for queue in queues.values_mut() {
            queue.recover()?;
        }
        let files = commit_log.snapshot();
        if files.is_empty() {
            // No CommitLog: nothing the queues point at exists (Java destroys them too).
            for queue in queues.values() {
                queue.destroy()?;
            }
            commit_log.truncate(0)?;
            return Ok(Recovered {
                queues: Vec::new(),
                last_record: None,
            });
        }
        let start = self.start_segment(&files, &queues);
        let scan_from = files[start].from();
        let began = std::time::Instant::now();
        let mut gapped = HashSet::new();
        let (end, last_valid) = scan(&files, start, self.check_crc, |dispatch| {
            if let Some(Put::Gap) = self.dispatch(&mut queues, &dispatch, Gaps::Refuse)? {
                gapped.insert((dispatch.topic.to_string(), dispatch.queue_id));
            }
            Ok(())
        })?;
        if !gapped.is_empty() {
            tracing::warn!(
                queues = gapped.len(),
                "consume queues miss entries; rebuilding them from the first segment"
            );
            self.rebuild(&files, start, end, &mut queues, &gapped)?;
        }
        drop(files);
        let elapsed = began.elapsed();
        let scanned = (end - scan_from).max(0) as f64;
        tracing::info!(
            end,
            clean = self.clean,
            scanned_bytes = scanned as i64,
            elapsed_ms = elapsed.as_millis() as u64,
            mb_per_s = (scanned / 1e6 / elapsed.as_secs_f64().max(1e-9)).round(),
            "commit log recovered"
        );
        for queue in queues.values_mut() {
            queue.truncate_dirty(end)?;
        }
        commit_log.truncate(end)?;
        self.checkpoint
            .set_confirm_phy_offset(last_valid.unwrap_or(scan_from));
        let min = commit_log.min_offset();
        for queue in queues.values() {
            queue.correct_min_offset(min);
        }
        Ok(Recovered {
            queues: queues.into_values().collect(),
            last_record: last_valid,
        })
    }

    /// Index of the segment to verify from.
    fn start_segment(&self, files: &Files, queues: &Queues) -> usize {
        let dispatched_to = queues
            .values()
            .map(ConsumeQueue::max_physic_offset)
            .max()
            .unwrap_or(-1);
        let min_timestamp = self.checkpoint.min_timestamp();
        (1..files.len())
            .rev()
            .find(|&i| match check_at(&files[i], 0, self.check_crc) {
                Checked::Record(record) if record.store_timestamp == 0 => false,
                Checked::Record(record) if self.clean => record.physical_offset <= dispatched_to,
                Checked::Record(record) => record.store_timestamp <= min_timestamp,
                _ => false,
            })
            .unwrap_or(0)
    }

    /// Writes the record's entry into its queue, made if it is new (see [`Dispatch::put_entry`]).
    fn dispatch(
        &self,
        queues: &mut Queues,
        dispatch: &Dispatch<'_>,
        gaps: Gaps,
    ) -> io::Result<Option<Put>> {
        dispatch.put_entry(self.delays, gaps, |topic, queue_id| {
            Ok(match queues.entry((topic.to_string(), queue_id)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(ConsumeQueue::new_empty(
                    self.queue_root,
                    topic,
                    queue_id,
                    self.queue_file_size,
                    self.fs,
                )?),
            })
        })
    }

    /// Second pass for queues that miss entries: every segment from the first, padding holes
    /// whose records are gone. Segments before `start` were not verified, so a bad record there
    /// skips to the next segment instead of ending the pass.
    fn rebuild(
        &self,
        files: &Files,
        start: usize,
        end: i64,
        queues: &mut Queues,
        gapped: &HashSet<(String, i32)>,
    ) -> io::Result<()> {
        for (i, file) in files.iter().enumerate() {
            if file.from() >= end {
                break;
            }
            let mut pos = 0;
            while file.from() + (pos as i64) < end {
                match check_at(file, pos, self.check_crc && i < start) {
                    Checked::Record(record) => {
                        let mut dispatch = Dispatch::from_record(&record);
                        dispatch.commit_log_offset = file.from() + pos as i64;
                        if gapped.contains(&(dispatch.topic.to_string(), dispatch.queue_id)) {
                            self.dispatch(queues, &dispatch, Gaps::Pad)?;
                        }
                        pos += record.total_size as usize;
                    }
                    Checked::Blank | Checked::Invalid => break,
                }
            }
        }
        Ok(())
    }
}

/// Walks records from segment `start` until the first invalid one, calling `each` for every
/// record. Returns the end of the valid data and the offset of the last valid record.
fn scan(
    files: &[Arc<crate::mapped_file::MappedFile>],
    start: usize,
    check_crc: bool,
    mut each: impl FnMut(Dispatch<'_>) -> io::Result<()>,
) -> io::Result<(i64, Option<i64>)> {
    let mut index = start;
    let mut pos = 0usize;
    let mut last_valid = None;
    loop {
        let file = &files[index];
        match check_at(file, pos, check_crc) {
            Checked::Record(record) => {
                let offset = file.from() + pos as i64;
                let mut dispatch = Dispatch::from_record(&record);
                dispatch.commit_log_offset = offset;
                each(dispatch)?;
                last_valid = Some(offset);
                pos += record.total_size as usize;
            }
            Checked::Blank if index + 1 < files.len() => {
                index += 1;
                pos = 0;
            }
            Checked::Blank | Checked::Invalid => return Ok((file.from() + pos as i64, last_valid)),
        }
    }
}
