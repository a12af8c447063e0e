//! Skiff's message store, byte-compatible on disk with Apache RocketMQ's (`storePathRootDir`).
//!
//! It owns the CommitLog (every record, in memory-mapped segments named by their 20-digit start
//! offset, pre-allocated off the put path), the ConsumeQueues (per topic-queue, 20-byte entries
//! pointing into the CommitLog), dispatch from records to queues, flushing (an async flush
//! thread, or group commit for sync flush), the `checkpoint` and `abort` files, crash recovery,
//! the IndexFiles (keys and unique keys, built by a background thread) and retention (old
//! segments deleted by age and disk usage, puts refused when the disk is full), and the timer's
//! files (`timerwheel`, `timerlog/`, `config/timercheck`, see [`timer`]). A directory
//! written by the Java broker opens here and the other way round. The record layout itself
//! comes from `skiff_model::record`.
//!
//! It also owns the store's side of master/slave replication. A store opened with
//! [`StoreRole::Slave`] refuses puts and takes its master's CommitLog bytes through
//! [`MessageStore::append_replicated`], which checks them, copies them as they are and writes
//! their ConsumeQueue entries as recovery does (the index follows the CommitLog as on a master),
//! so a slave's files equal its master's. A master hands those bytes out with [`MessageStore::commit_log_data`] and
//! [`MessageStore::commit_log_end_watch`]; [`MessageStore::last_record`] lets either side
//! compare where they stand. The protocol that carries the bytes is the broker's.
//!
//! It must not know any protocol or client: the broker hands it [`MessageToStore`]s and a tag
//! filter, and gets offsets and record bytes back (zero-copy slices of the mapping near the
//! writer; copies for reads far behind it).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use skiff_store::{MessageStore, MessageToStore, StoreConfig};
//!
//! let store = MessageStore::open(StoreConfig::new("/tmp/skiff-store"))?;
//! let put = store
//!     .put_messages(vec![MessageToStore {
//!         topic: "TopicTest".into(),
//!         queue_id: 0,
//!         flag: 0,
//!         sys_flag: 0,
//!         born_timestamp: 0,
//!         born_host: "127.0.0.1:5000".parse()?,
//!         reconsume_times: 0,
//!         prepared_transaction_offset: 0,
//!         body: "hello".into(),
//!         properties: "TAGS\u{1}TagA\u{2}".into(),
//!     }])
//!     .await?;
//! let pulled = store.get_messages("TopicTest", 0, 0, 32, usize::MAX, &|_tags_code| true);
//! assert_eq!(pulled.messages.len(), put.messages.len());
//! store.shutdown();
//! # Ok(())
//! # }
//! ```

mod allocate;
mod checkpoint;
mod commit_log;
mod config;
mod consume_queue;
mod cq_allocate;
mod dir;
mod dispatch;
mod env;
mod error;
mod file_queue;
mod flush;
pub mod fs;
mod index;
mod local_time;
mod mapped_file;
mod message_store;
mod put;
mod queues;
mod read;
mod recovery;
mod replica;
mod retention;
mod stats;
pub mod timer;

pub use config::{FlushDiskType, RetentionSettings, StoreConfig, StoreRole};
pub use consume_queue::Boundary;
pub use env::{Clock, DiskProbe, StatvfsDisk, StoreEnv, SystemClock};
pub use error::{PutError, ReplicaError, StoreError};
pub use index::QueryMessagesResult;
pub use message_store::{ArrivalListener, FlushWait, MessageStore, Put};
pub use put::{AppendedMessage, MessageToStore, PutResult, PutStatus};
pub use read::{GetMessageStatus, GetMessagesResult, QueueEntry};
pub use stats::LatencySnapshot;

#[cfg(test)]
mod tests {
    #[test]
    fn the_store_is_shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::MessageStore>();
    }
}
