//! The table of ConsumeQueues by topic and queue id (Java's `consumeQueueTable`).
//!
//! Readers look queues up in a lock-free snapshot; the table only changes under the put lock
//! (a queue's first message, topic deletion), which publishes a new snapshot.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::commit_log::PutGuard;
use crate::consume_queue::{is_storable_topic, ConsumeQueue};
use crate::error::StoreError;
use crate::fs::Fs;

type TopicQueues = HashMap<i32, Arc<ConsumeQueue>>;
type Table = HashMap<String, Arc<TopicQueues>>;

pub(crate) struct QueueTable {
    root: PathBuf,
    file_size: u64,
    table: ArcSwap<Table>,
    fs: Fs,
}

/// Loads every `consumequeue/<topic>/<queueId>` directory.
pub(crate) fn load_all(
    root: &Path,
    file_size: u64,
    fs: &Fs,
) -> Result<Vec<ConsumeQueue>, StoreError> {
    fs::create_dir_all(root).map_err(|e| StoreError::io(root, e))?;
    let mut queues = Vec::new();
    for topic_dir in fs::read_dir(root).map_err(|e| StoreError::io(root, e))? {
        let topic_dir = topic_dir.map_err(|e| StoreError::io(root, e))?;
        if !topic_dir.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(topic) = topic_dir.file_name().into_string() else {
            continue;
        };
        if !is_storable_topic(&topic) {
            continue;
        }
        let path = topic_dir.path();
        for queue_dir in fs::read_dir(&path).map_err(|e| StoreError::io(&path, e))? {
            let queue_dir = queue_dir.map_err(|e| StoreError::io(&path, e))?;
            let queue_id = queue_dir
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok());
            if let (Some(queue_id), true) =
                (queue_id, queue_dir.file_type().is_ok_and(|t| t.is_dir()))
            {
                queues.push(ConsumeQueue::load(root, &topic, queue_id, file_size, fs)?);
            }
        }
    }
    Ok(queues)
}

impl QueueTable {
    pub(crate) fn new(root: PathBuf, file_size: u64, queues: Vec<ConsumeQueue>, fs: Fs) -> Self {
        let mut table: HashMap<String, TopicQueues> = HashMap::new();
        for queue in queues {
            table
                .entry(queue.topic().to_string())
                .or_default()
                .insert(queue.queue_id(), Arc::new(queue));
        }
        let table = table.into_iter().map(|(t, q)| (t, Arc::new(q))).collect();
        QueueTable {
            root,
            file_size,
            table: ArcSwap::from_pointee(table),
            fs,
        }
    }

    pub(crate) fn get(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.table.load().get(topic)?.get(&queue_id).cloned()
    }

    /// The queue, created (empty, no files yet) if this is its first message.
    pub(crate) fn get_or_create(
        &self,
        _guard: &PutGuard<'_>,
        topic: &str,
        queue_id: i32,
    ) -> io::Result<Arc<ConsumeQueue>> {
        if let Some(queue) = self.get(topic, queue_id) {
            return Ok(queue);
        }
        let queue = Arc::new(ConsumeQueue::new_empty(
            &self.root,
            topic,
            queue_id,
            self.file_size,
            &self.fs,
        )?);
        let mut table = Table::clone(&self.table.load());
        let mut queues = table
            .get(topic)
            .map(|q| TopicQueues::clone(q))
            .unwrap_or_default();
        queues.insert(queue_id, Arc::clone(&queue));
        table.insert(topic.to_string(), Arc::new(queues));
        self.table.store(Arc::new(table));
        Ok(queue)
    }

    /// Queue ids of `topic`, ascending.
    pub(crate) fn queue_ids(&self, topic: &str) -> Vec<i32> {
        let mut ids: Vec<i32> = self
            .table
            .load()
            .get(topic)
            .map(|q| q.keys().copied().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    /// Takes `topic`'s queues out of the table.
    pub(crate) fn remove_topic(
        &self,
        _guard: &PutGuard<'_>,
        topic: &str,
    ) -> Vec<Arc<ConsumeQueue>> {
        let mut table = Table::clone(&self.table.load());
        let removed = table.remove(topic);
        self.table.store(Arc::new(table));
        removed
            .map(|q| q.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Takes the queues `expired` picks out of the table, in one swap; a topic left without
    /// queues leaves the table. Runs under the put lock, so no entry lands in a queue between the
    /// test and its removal.
    pub(crate) fn remove_queues(
        &self,
        _guard: &PutGuard<'_>,
        expired: impl Fn(&ConsumeQueue) -> bool,
    ) -> Vec<Arc<ConsumeQueue>> {
        let mut table = Table::clone(&self.table.load());
        let mut removed = Vec::new();
        table.retain(|_, queues| {
            if !queues.values().any(|q| expired(q)) {
                return true;
            }
            let kept: TopicQueues = queues
                .iter()
                .filter_map(|(id, q)| {
                    if expired(q) {
                        removed.push(Arc::clone(q));
                        None
                    } else {
                        Some((*id, Arc::clone(q)))
                    }
                })
                .collect();
            let any_left = !kept.is_empty();
            *queues = Arc::new(kept);
            any_left
        });
        if !removed.is_empty() {
            self.table.store(Arc::new(table));
        }
        removed
    }

    /// Every queue.
    pub(crate) fn all(&self) -> Vec<Arc<ConsumeQueue>> {
        self.table
            .load()
            .values()
            .flat_map(|q| q.values().cloned())
            .collect()
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }
}
