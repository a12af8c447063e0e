//! Errors of opening the store and of putting messages.

use std::io;
use std::path::PathBuf;

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is {actual} bytes but the configuration says {expected}; set the file size the store was written with")]
    FileSizeMismatch {
        path: PathBuf,
        actual: u64,
        expected: u64,
    },
    #[error("{0} is locked by another process (a broker already runs on this store)")]
    Locked(PathBuf),
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl StoreError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Why a put was refused. Nothing of a refused batch is stored. `Display` is a sentence the
/// broker can hand to the client.
#[derive(Debug, thiserror::Error)]
pub enum PutError {
    #[error("the message is illegal: its stored size {size} exceeds the limit of {max} bytes")]
    MessageTooLarge { size: usize, max: usize },
    #[error("the message is illegal: its properties are {len} bytes, the limit is 32767")]
    PropertiesTooLarge { len: usize },
    #[error("the message is illegal: {0}")]
    InvalidTopic(String),
    /// The store is shut down, or the disk is (nearly) full.
    #[error("{0}")]
    ServiceNotAvailable(String),
    #[error("the store could not write: {0}")]
    Io(#[from] io::Error),
}
