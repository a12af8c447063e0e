//! What a SYNC_MASTER send waits for: enough slaves holding its bytes (Java's
//! `GroupTransferService`, without its 10 ms polling).
//!
//! Each slave connection reports how far it holds the CommitLog; the confirmed offset is the
//! (`inSyncReplicas` − 1)-th highest of those reports, so a send whose bytes end at or below it
//! has `inSyncReplicas` copies, the master's included. Sends wait on a watch of that offset.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;

/// The slaves' acknowledged offsets and the offset enough of them hold.
pub(crate) struct ReplicaAcks {
    /// Slaves a send waits for besides the master: `inSyncReplicas` − 1.
    needed: usize,
    slaves: Mutex<HashMap<u64, i64>>,
    confirmed: watch::Sender<i64>,
    next_id: AtomicU64,
}

/// One slave connection's place in [`ReplicaAcks`]; dropping it removes the slave.
pub(crate) struct SlaveAck {
    acks: Arc<ReplicaAcks>,
    id: u64,
}

impl ReplicaAcks {
    pub(crate) fn new(in_sync_replicas: usize) -> Self {
        let needed = in_sync_replicas.saturating_sub(1);
        ReplicaAcks {
            needed,
            slaves: Mutex::new(HashMap::new()),
            // Without slaves to wait for, everything is confirmed.
            confirmed: watch::channel(if needed == 0 { i64::MAX } else { -1 }).0,
            next_id: AtomicU64::new(0),
        }
    }

    /// Whether a send waits at all: Java's `handleHA` answers at once when `inSyncReplicas` ≤ 1.
    pub(crate) fn waits(&self) -> bool {
        self.needed > 0
    }

    /// A new slave connection, which has acknowledged nothing yet.
    pub(crate) fn join(self: &Arc<Self>) -> SlaveAck {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.slaves.lock().insert(id, -1);
        SlaveAck {
            acks: self.clone(),
            id,
        }
    }

    /// Waits until `needed` slaves hold the CommitLog up to `end`, at most `timeout`; whether they
    /// did.
    pub(crate) async fn wait_for(&self, end: i64, timeout: Duration) -> bool {
        let mut confirmed = self.confirmed.subscribe();
        tokio::time::timeout(timeout, confirmed.wait_for(|c| *c >= end))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    fn update(&self, id: u64, ack: Option<i64>) {
        let mut slaves = self.slaves.lock();
        match ack {
            Some(offset) => {
                slaves.insert(id, offset);
            }
            None => {
                slaves.remove(&id);
            }
        }
        let mut offsets: Vec<i64> = slaves.values().copied().collect();
        drop(slaves);
        offsets.sort_unstable_by(|a, b| b.cmp(a));
        let confirmed = match self.needed {
            0 => i64::MAX,
            n => offsets.get(n - 1).copied().unwrap_or(-1),
        };
        self.confirmed.send_if_modified(|known| {
            let changed = *known != confirmed;
            *known = confirmed;
            changed
        });
    }
}

impl SlaveAck {
    /// The slave holds the CommitLog up to `offset`.
    pub(crate) fn ack(&self, offset: i64) {
        self.acks.update(self.id, Some(offset));
    }
}

impl Drop for SlaveAck {
    fn drop(&mut self) {
        self.acks.update(self.id, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_replica_never_waits() {
        let acks = ReplicaAcks::new(1);
        assert!(!acks.waits());
        assert!(acks.wait_for(1 << 40, Duration::from_millis(1)).await);
    }

    #[tokio::test]
    async fn two_replicas_wait_for_one_slave_until_the_timeout() {
        let acks = Arc::new(ReplicaAcks::new(2));
        assert!(acks.waits());
        // No slave: the send times out (FLUSH_SLAVE_TIMEOUT).
        assert!(!acks.wait_for(100, Duration::from_millis(50)).await);
        let slave = acks.join();
        slave.ack(50);
        assert!(!acks.wait_for(100, Duration::from_millis(10)).await);
        let waiting = acks.wait_for(100, Duration::from_secs(3));
        slave.ack(120);
        assert!(waiting.await);
        // The slave leaves: what it held no longer counts.
        drop(slave);
        assert!(!acks.wait_for(100, Duration::from_millis(10)).await);
        assert!(acks.slaves.lock().is_empty());
    }

    #[tokio::test]
    async fn three_replicas_need_the_second_highest_ack() {
        let acks = Arc::new(ReplicaAcks::new(3));
        let (a, b) = (acks.join(), acks.join());
        a.ack(500);
        assert!(!acks.wait_for(100, Duration::from_millis(5)).await);
        b.ack(200);
        assert!(acks.wait_for(200, Duration::from_millis(5)).await);
        assert!(!acks.wait_for(201, Duration::from_millis(5)).await);
    }
}
