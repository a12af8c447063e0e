//! Pre-allocation of the next CommitLog segment on a background thread (Java's
//! `AllocateMappedFileService`), so that a roll under the put lock only swaps in a ready mapping
//! instead of creating, sizing and mapping a file (and, with `warm_mapped_file_enable`, faulting
//! in every page).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::fs::Fs;
use crate::mapped_file::{file_name, MappedFile};

pub(crate) struct Allocator {
    dir: PathBuf,
    size: usize,
    warm: bool,
    state: Mutex<State>,
    cv: Condvar,
    /// Held while a segment file is being made, by the thread or by a writer that could not
    /// wait: a file is never made twice, and a ready file is never one in use.
    making: Mutex<()>,
    fs: Fs,
}

#[derive(Default)]
struct State {
    /// Start offset of the segment wanted next.
    wanted: Option<i64>,
    /// A made segment nobody took yet.
    ready: Option<MappedFile>,
    stopped: bool,
}

impl Allocator {
    pub(crate) fn new(dir: PathBuf, size: usize, warm: bool, fs: Fs) -> Self {
        Allocator {
            fs,
            dir,
            size,
            warm,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            making: Mutex::new(()),
        }
    }

    /// Asks for the segment starting at `from` to be made in the background.
    pub(crate) fn request(&self, from: i64) {
        let mut state = self.state.lock();
        if state.wanted != Some(from) && state.ready.as_ref().is_none_or(|f| f.from() != from) {
            state.wanted = Some(from);
            self.cv.notify_one();
        }
    }

    /// The segment starting at `from`: the pre-made one (waiting for it if it is being made),
    /// else a new one made now.
    pub(crate) fn take_or_create(&self, from: i64) -> io::Result<Arc<MappedFile>> {
        let _making = self.making.lock();
        if let Some(ready) = self.take(from) {
            return Ok(ready);
        }
        let file = MappedFile::create(
            self.dir.join(file_name(from)),
            from,
            self.size,
            &self.fs,
            true,
        )?;
        Ok(Arc::new(file))
    }

    /// The pre-made segment starting at `from`, if it is ready. One made for an earlier offset
    /// is deleted: writers only move forward, and a slave's first replicated segment need not be
    /// the 0 the allocator guessed for an empty CommitLog (left on disk, an empty segment before
    /// the data would end the CommitLog at 0 in the next recovery).
    fn take(&self, from: i64) -> Option<Arc<MappedFile>> {
        let mut state = self.state.lock();
        match state.ready.take() {
            Some(file) if file.from() == from => Some(Arc::new(file)),
            Some(stale) if stale.from() < from => {
                discard(stale);
                None
            }
            other => {
                state.ready = other;
                None
            }
        }
    }

    /// The allocation thread: makes what is wanted, one segment ahead.
    pub(crate) fn run(&self) {
        loop {
            let from = {
                let mut state = self.state.lock();
                loop {
                    if state.stopped {
                        return;
                    }
                    if let Some(from) = state.wanted.take() {
                        break from;
                    }
                    self.cv.wait_for(&mut state, Duration::from_secs(1));
                }
            };
            let _making = self.making.lock();
            let path = self.dir.join(file_name(from));
            if path.exists() {
                continue;
            }
            match MappedFile::create(path, from, self.size, &self.fs, true) {
                Ok(mut file) => {
                    if self.warm {
                        file.warm();
                    }
                    let mut state = self.state.lock();
                    if state.stopped {
                        // Stopped while making it: nobody will take it.
                        discard(file);
                        return;
                    }
                    if let Some(stale) = state.ready.replace(file) {
                        discard(stale);
                    }
                }
                Err(e) => {
                    tracing::warn!(from, error = %e, "could not pre-allocate a commit log segment")
                }
            }
        }
    }

    /// Stops the thread and deletes a segment made but never used (as Java does on shutdown).
    pub(crate) fn stop(&self) {
        let mut state = self.state.lock();
        state.stopped = true;
        if let Some(file) = state.ready.take() {
            discard(file);
        }
        self.cv.notify_all();
    }
}

fn discard(file: MappedFile) {
    let _ = std::fs::remove_file(file.path());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_the_wanted_segment_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let allocator = Arc::new(Allocator::new(
            dir.path().to_path_buf(),
            8192,
            true,
            crate::fs::real(),
        ));
        let thread = {
            let allocator = Arc::clone(&allocator);
            std::thread::spawn(move || allocator.run())
        };
        allocator.request(8192);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !dir.path().join(file_name(8192)).exists() {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        let file = allocator.take_or_create(8192).unwrap();
        assert_eq!((file.from(), file.size(), file.readable()), (8192, 8192, 0));
        assert!(allocator.take(8192).is_none());
        allocator.request(16384);
        std::thread::sleep(Duration::from_millis(100));
        allocator.stop();
        thread.join().unwrap();
        assert!(!dir.path().join(file_name(16384)).exists());
        assert!(dir.path().join(file_name(8192)).exists());
    }

    #[test]
    fn without_a_ready_segment_the_writer_makes_it() {
        let dir = tempfile::tempdir().unwrap();
        // No thread: nothing is ever made ahead.
        let allocator = Allocator::new(dir.path().to_path_buf(), 8192, false, crate::fs::real());
        allocator.request(0);
        let file = allocator.take_or_create(0).unwrap();
        assert_eq!((file.from(), file.size(), file.reserved()), (0, 8192, 8192));
        assert!(dir.path().join(file_name(0)).exists());
    }

    #[test]
    fn a_full_disk_in_the_background_leaves_no_segment_behind() {
        use crate::fs::{Fault, FaultyFs, FileOp};
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        fs.inject(FileOp::Allocate, "", Fault::Errno(libc::ENOSPC), Some(2));
        let allocator = Arc::new(Allocator::new(
            dir.path().to_path_buf(),
            8192,
            false,
            fs.clone(),
        ));
        let thread = {
            let allocator = Arc::clone(&allocator);
            std::thread::spawn(move || allocator.run())
        };
        allocator.request(0);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while fs.fired().is_empty() {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        // The writer's own attempt meets the full disk too, and says so.
        let Err(err) = allocator.take_or_create(0) else {
            panic!("made a segment on a full disk");
        };
        assert!(crate::fs::is_disk_full(&err));
        assert!(!dir.path().join(file_name(0)).exists());
        // Space again: the writer makes it.
        assert_eq!(allocator.take_or_create(0).unwrap().from(), 0);
        allocator.stop();
        thread.join().unwrap();
    }
}
