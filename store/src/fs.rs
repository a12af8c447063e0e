//! The file operations whose failure the store must survive, behind a trait so tests can inject
//! faults (in the spirit of raft-engine's `FileSystem`): reserving a file's blocks, syncing a
//! mapping or a file, and writing a small file whole (config files).
//!
//! Only the operations that can fail on a healthy machine for reasons outside the broker (a full
//! disk, a failing device) go through here; reads and mapping stay direct. [`FaultyFs`] wraps the
//! real implementation and fails chosen operations on chosen paths, in process and in
//! milliseconds.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use memmap2::MmapRaw;
use parking_lot::Mutex;

/// Shared handle on the file system the store (and the broker's config files) use.
pub type Fs = Arc<dyn FileSystem>;

/// The file operations that may fail for reasons outside the broker.
pub trait FileSystem: Send + Sync {
    /// Allocates the blocks of `[offset, offset + len)` of `file` (`fallocate`, mode 0), so that
    /// writing there through a mapping can never fault for lack of space (SIGBUS).
    fn allocate(&self, path: &Path, file: &File, offset: u64, len: u64) -> io::Result<()>;
    /// Writes `[offset, offset + len)` of the mapping back to its file (`msync`).
    fn sync_map(&self, path: &Path, map: &MmapRaw, offset: usize, len: usize) -> io::Result<()>;
    /// Creates `path` (truncating it) with `content` and syncs it to disk (`fsync`).
    fn write_synced(&self, path: &Path, content: &[u8]) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl FileSystem for RealFs {
    fn allocate(&self, _path: &Path, file: &File, offset: u64, len: u64) -> io::Result<()> {
        use rustix::fs::{fallocate, FallocateFlags};
        match fallocate(file, FallocateFlags::empty(), offset, len) {
            Ok(()) => Ok(()),
            // File systems without fallocate (rare on Linux) keep the old sparse behaviour.
            Err(rustix::io::Errno::OPNOTSUPP) => {
                warn_unsupported();
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    fn sync_map(&self, _path: &Path, map: &MmapRaw, offset: usize, len: usize) -> io::Result<()> {
        map.flush_range(offset, len)
    }

    fn write_synced(&self, path: &Path, content: &[u8]) -> io::Result<()> {
        let mut file = File::create(path)?;
        file.write_all(content)?;
        file.sync_all()
    }
}

fn warn_unsupported() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!("the file system does not support fallocate: store files stay sparse and a full disk can crash the broker (SIGBUS); put the store on ext4, xfs or tmpfs");
    });
}

/// The shared real file system.
pub fn real() -> Fs {
    Arc::new(RealFs)
}

/// Opens `path` for writing and allocates `[offset, offset + len)` through `fs`.
pub(crate) fn allocate_path(
    fs: &dyn FileSystem,
    path: &Path,
    offset: u64,
    len: u64,
) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    fs.allocate(path, &file, offset, len)
}

/// Which operation a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    Allocate,
    SyncMap,
    WriteSynced,
}

/// What happens instead of the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fails with this errno (`libc::ENOSPC`, `libc::EIO`...), doing nothing.
    Errno(i32),
    /// Writes only the first half of the content, unsynced, then fails with EIO: a torn write
    /// as a crash or a failing device leaves it. `WriteSynced` only.
    Torn,
}

struct Rule {
    op: FileOp,
    path_contains: String,
    fault: Fault,
    /// How many more times it fires; `None` for always.
    remaining: Option<usize>,
}

/// A file system that fails chosen operations, for tests.
pub struct FaultyFs {
    inner: Fs,
    rules: Mutex<Vec<Rule>>,
    fired: Mutex<Vec<(FileOp, String)>>,
}

impl FaultyFs {
    /// Wraps the real file system; no faults until [`FaultyFs::inject`].
    pub fn new() -> Arc<Self> {
        Arc::new(FaultyFs {
            inner: real(),
            rules: Mutex::new(Vec::new()),
            fired: Mutex::new(Vec::new()),
        })
    }

    /// Makes `op` on paths containing `path_contains` fail with `fault`, `times` times (`None`:
    /// until [`FaultyFs::clear`]).
    pub fn inject(&self, op: FileOp, path_contains: &str, fault: Fault, times: Option<usize>) {
        self.rules.lock().push(Rule {
            op,
            path_contains: path_contains.to_string(),
            fault,
            remaining: times,
        });
    }

    /// Removes every rule: the file system works again.
    pub fn clear(&self) {
        self.rules.lock().clear();
    }

    /// The faults that fired so far, as (operation, path).
    pub fn fired(&self) -> Vec<(FileOp, String)> {
        self.fired.lock().clone()
    }

    fn fault(&self, op: FileOp, path: &Path) -> Option<Fault> {
        let text = path.to_string_lossy();
        let mut rules = self.rules.lock();
        let rule = rules
            .iter_mut()
            .find(|r| r.op == op && text.contains(&r.path_contains) && r.remaining != Some(0))?;
        if let Some(n) = rule.remaining.as_mut() {
            *n -= 1;
        }
        let fault = rule.fault;
        drop(rules);
        self.fired.lock().push((op, text.into_owned()));
        Some(fault)
    }
}

fn errno(fault: Fault) -> io::Error {
    match fault {
        Fault::Errno(code) => io::Error::from_raw_os_error(code),
        Fault::Torn => io::Error::from_raw_os_error(libc::EIO),
    }
}

impl FileSystem for FaultyFs {
    fn allocate(&self, path: &Path, file: &File, offset: u64, len: u64) -> io::Result<()> {
        match self.fault(FileOp::Allocate, path) {
            Some(fault) => Err(errno(fault)),
            None => self.inner.allocate(path, file, offset, len),
        }
    }

    fn sync_map(&self, path: &Path, map: &MmapRaw, offset: usize, len: usize) -> io::Result<()> {
        match self.fault(FileOp::SyncMap, path) {
            Some(fault) => Err(errno(fault)),
            None => self.inner.sync_map(path, map, offset, len),
        }
    }

    fn write_synced(&self, path: &Path, content: &[u8]) -> io::Result<()> {
        match self.fault(FileOp::WriteSynced, path) {
            Some(Fault::Torn) => {
                File::create(path)?.write_all(&content[..content.len() / 2])?;
                Err(errno(Fault::Torn))
            }
            Some(fault) => Err(errno(fault)),
            None => self.inner.write_synced(path, content),
        }
    }
}

/// Whether an error means the disk (or quota) is full.
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
        || e.kind() == io::ErrorKind::StorageFull
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_fire_on_matching_paths_and_count_down() {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        fs.inject(FileOp::WriteSynced, "a.json", Fault::Torn, Some(1));
        let a = dir.path().join("a.json");
        let err = fs.write_synced(&a, b"0123456789").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO));
        assert_eq!(std::fs::read(&a).unwrap(), b"01234");
        fs.write_synced(&a, b"0123456789").unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"0123456789");
        fs.inject(FileOp::Allocate, "", Fault::Errno(libc::ENOSPC), None);
        let err = allocate_path(&*fs, &a, 0, 4096).unwrap_err();
        assert!(is_disk_full(&err));
        assert_eq!(fs.fired().len(), 2);
        fs.clear();
        allocate_path(&*fs, &a, 0, 4096).unwrap();
    }
}
