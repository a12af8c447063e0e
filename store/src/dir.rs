//! The root directory's marker files: `lock` (one broker per store) and `abort` (present while
//! running, so its presence at open means the last stop was not clean).

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use rustix::fs::{fcntl_lock, FlockOperation};

use crate::error::StoreError;

/// Holds the store's `lock` file locked until dropped. Java locks it with `FileChannel.tryLock`,
/// an fcntl record lock, so the same kind of lock keeps a Java broker and Skiff apart.
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    pub(crate) fn acquire(path: &Path) -> Result<Self, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io(path, e))?;
        fcntl_lock(&file, FlockOperation::NonBlockingLockExclusive)
            .map_err(|_| StoreError::Locked(path.to_path_buf()))?;
        Ok(DirLock { _file: file })
    }
}

/// The `abort` marker.
pub(crate) struct AbortFile {
    path: PathBuf,
}

impl AbortFile {
    pub(crate) fn new(path: PathBuf) -> Self {
        AbortFile { path }
    }

    /// True when the last run did not stop cleanly.
    pub(crate) fn exists(&self) -> bool {
        self.path.exists()
    }

    /// Creates the marker with our pid in it, as Java writes its pid.
    pub(crate) fn create(&self) -> Result<(), StoreError> {
        fs::write(&self.path, std::process::id().to_string())
            .map_err(|e| StoreError::io(&self.path, e))
    }

    pub(crate) fn remove(&self) {
        if let Err(e) = fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "could not remove the abort file");
        }
    }
}
