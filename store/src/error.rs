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

/// Why [`crate::MessageStore::append_replicated`] refused bytes. Nothing of a refused chunk is
/// written, except after [`ReplicaError::Io`] from a ConsumeQueue (the CommitLog has the bytes;
/// the store then refuses writes and recovery rebuilds the queues at the next open).
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    #[error("the message store is not a slave: it takes no replicated bytes")]
    NotSlave,
    #[error(
        "replicated bytes start at commit log offset {got}, but the commit log ends at {expected}"
    )]
    WrongOffset { expected: i64, got: i64 },
    #[error("replication into an empty commit log must start at a segment start: {offset} is not a multiple of the segment size {segment_size}")]
    Misaligned { offset: i64, segment_size: i64 },
    #[error("bad record at commit log offset {offset}: {reason}")]
    BadRecord { offset: i64, reason: String },
    #[error("replicated bytes from commit log offset {offset} cross the end of its segment")]
    CrossesSegment { offset: i64 },
    #[error("the record at commit log offset {offset} does not continue this store: {reason}")]
    Diverged { offset: i64, reason: String },
    /// The store is shut down, its disk is full, or a ConsumeQueue write failed earlier.
    #[error("{0}")]
    ServiceNotAvailable(String),
    #[error("the store could not write replicated bytes: {0}")]
    Io(#[from] io::Error),
}
