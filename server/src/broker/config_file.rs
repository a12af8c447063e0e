//! One serialized writer per config file (Java's `ConfigManager.persist` is `synchronized`).
//!
//! A [`ConfigFile`] owns a thread that alone writes its file. Handlers only bump a version
//! ([`ConfigFile::request`], a counter and a condition variable: no I/O, no allocation); the thread
//! wakes, takes one snapshot of the current state through the closure it was given, and writes it
//! with [`persist::store_with`] (unique temporary file, fsync, `.bak`, rename). Bumps that arrive
//! while it writes are coalesced into the next write, so a burst of 10,000 topic creations costs a
//! few whole-file writes, not 10,000. [`ConfigFile::flush`] waits until everything requested so
//! far is on disk (shutdown, tests, and callers that need durability before they answer).
//!
//! Any state file can use it: give it a path and a closure that serializes the current state.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use skiff_store::fs::Fs;
use tracing::warn;

use super::persist;

/// How long the writer waits before retrying a failed write.
const RETRY_AFTER: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Versions {
    /// Bumped by every change.
    requested: u64,
    /// The request count covered by the last successful write.
    written: u64,
    stopping: bool,
}

struct Shared {
    versions: Mutex<Versions>,
    /// Wakes the writer (a request) and the flushers (a write done).
    changed: Condvar,
}

/// The serialized writer of one file.
pub struct ConfigFile {
    path: PathBuf,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Snapshot = Box<dyn Fn() -> String + Send + 'static>;

impl ConfigFile {
    /// Starts the writer of `path`; `snapshot` serializes the state to write.
    pub fn spawn(
        path: PathBuf,
        fs: Fs,
        snapshot: impl Fn() -> String + Send + 'static,
    ) -> ConfigFile {
        let shared = Arc::new(Shared {
            versions: Mutex::new(Versions::default()),
            changed: Condvar::new(),
        });
        let name = path
            .file_name()
            .map_or_else(|| "config".into(), |n| n.to_string_lossy().into_owned());
        let thread = std::thread::Builder::new()
            .name(format!("skiff-persist-{name}"))
            .spawn({
                let (shared, path) = (shared.clone(), path.clone());
                let snapshot: Snapshot = Box::new(snapshot);
                move || run(&shared, &path, &fs, &snapshot)
            })
            .expect("spawn a config writer thread");
        ConfigFile {
            path,
            shared,
            thread: Some(thread),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Asks for the current state to be written soon; returns at once.
    pub fn request(&self) -> u64 {
        let mut versions = self.shared.versions.lock();
        versions.requested += 1;
        self.shared.changed.notify_all();
        versions.requested
    }

    /// Requests a write and waits until it (or a later one) is on disk, or `timeout` passed.
    /// Returns whether it was written. Blocks: not for async workers.
    pub fn flush(&self, timeout: Duration) -> bool {
        let target = self.request();
        let deadline = std::time::Instant::now() + timeout;
        let mut versions = self.shared.versions.lock();
        while versions.written < target {
            if self
                .shared
                .changed
                .wait_until(&mut versions, deadline)
                .timed_out()
            {
                return versions.written >= target;
            }
        }
        true
    }
}

impl Drop for ConfigFile {
    /// Writes what is still pending, then stops the thread.
    fn drop(&mut self) {
        {
            let mut versions = self.shared.versions.lock();
            versions.stopping = true;
            self.shared.changed.notify_all();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared, path: &Path, fs: &Fs, snapshot: &Snapshot) {
    loop {
        let target = {
            let mut versions = shared.versions.lock();
            while versions.requested == versions.written && !versions.stopping {
                shared.changed.wait(&mut versions);
            }
            if versions.requested == versions.written {
                return;
            }
            versions.requested
        };
        let content = snapshot();
        match persist::store_with(&**fs, path, &content) {
            Ok(()) => {
                let mut versions = shared.versions.lock();
                versions.written = versions.written.max(target);
                shared.changed.notify_all();
            }
            Err(err) => {
                warn!(file = %path.display(), %err, "cannot write config file; retrying (changes are not durable until it succeeds)");
                let mut versions = shared.versions.lock();
                if versions.stopping {
                    return;
                }
                shared.changed.wait_for(&mut versions, RETRY_AFTER);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_store::fs::{Fault, FaultyFs, FileOp};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn bursts_coalesce_and_flush_waits_for_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let value = Arc::new(AtomicUsize::new(0));
        let writes = Arc::new(AtomicUsize::new(0));
        let file = {
            let (value, writes) = (value.clone(), writes.clone());
            ConfigFile::spawn(path.clone(), skiff_store::fs::real(), move || {
                writes.fetch_add(1, Ordering::SeqCst);
                format!("{{\"v\":{}}}", value.load(Ordering::SeqCst))
            })
        };
        for i in 1..=1000 {
            value.store(i, Ordering::SeqCst);
            file.request();
        }
        assert!(file.flush(Duration::from_secs(5)));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"v\":1000}");
        assert!(writes.load(Ordering::SeqCst) < 1000, "writes coalesce");
    }

    #[test]
    fn a_torn_write_keeps_the_previous_file_and_is_retried() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("topics.json");
        let faulty = FaultyFs::new();
        let value = Arc::new(AtomicUsize::new(1));
        let file = {
            let value = value.clone();
            ConfigFile::spawn(path.clone(), faulty.clone(), move || {
                format!("{{\"v\":{}}}", value.load(Ordering::SeqCst))
            })
        };
        assert!(file.flush(Duration::from_secs(5)));
        faulty.inject(FileOp::WriteSynced, "topics.json", Fault::Torn, Some(1));
        value.store(2, Ordering::SeqCst);
        file.request();
        // The torn temporary file never replaces the main one.
        std::thread::sleep(Duration::from_millis(50));
        let read = persist::load::<serde_json::Value>(&path).unwrap();
        assert!(read["v"] == 1 || read["v"] == 2, "{read}");
        // After the retry the newest state is there.
        assert!(file.flush(Duration::from_secs(5)));
        assert_eq!(persist::load::<serde_json::Value>(&path).unwrap()["v"], 2);
        assert_eq!(faulty.fired().len(), 1);
        drop(file);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
