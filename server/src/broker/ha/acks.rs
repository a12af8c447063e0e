//! What a SYNC_MASTER send waits for: enough slaves holding its bytes (Java's
//! `GroupTransferService`, without its 10 ms polling).
//!
//! Each slave connection reports how far it holds the CommitLog; the confirmed offset is the
//! (`inSyncReplicas` − 1)-th highest of those reports, so a send whose bytes end at or below it
//! has `inSyncReplicas` copies, the master's included. Sends wait on a watch of that offset.
//!
//! It is also the registry of connected slaves that GET_BROKER_HA_STATUS lists
//! (`HAConnectionRuntimeInfo`): address, last report, next offset to send, bytes per second.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use skiff_model::admin::HaConnectionStatus;
use tokio::sync::watch;

use super::ByteRate;

/// The slaves' acknowledged offsets and the offset enough of them hold.
pub(crate) struct ReplicaAcks {
    /// Slaves a send waits for besides the master: `inSyncReplicas` − 1.
    needed: usize,
    slaves: Mutex<HashMap<u64, Slave>>,
    confirmed: watch::Sender<i64>,
    next_id: AtomicU64,
}

/// One connected slave.
struct Slave {
    addr: String,
    /// The last report, -1 before the first.
    ack: i64,
    /// The next offset to send, -1 before the start is decided.
    next: i64,
    sent: ByteRate,
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

    /// A new slave connection from `addr`, which has acknowledged nothing yet.
    pub(crate) fn join(self: &Arc<Self>, addr: String) -> SlaveAck {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let slave = Slave {
            addr,
            ack: -1,
            next: -1,
            sent: ByteRate::default(),
        };
        self.slaves.lock().insert(id, slave);
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

    /// The connected slaves, oldest first, as Java's `DefaultHAService.getRuntimeInfo` shows
    /// them for a CommitLog ending at `master_end`; and how many are in sync (less than
    /// `max_gap`, `haMaxGapNotInSync`, behind).
    pub(crate) fn status(
        &self,
        master_end: i64,
        max_gap: i64,
        now_ms: i64,
    ) -> (Vec<HaConnectionStatus>, i32) {
        let slaves = self.slaves.lock();
        let mut ids: Vec<u64> = slaves.keys().copied().collect();
        ids.sort_unstable();
        let connections: Vec<HaConnectionStatus> = ids
            .iter()
            .map(|id| {
                let slave = &slaves[id];
                HaConnectionStatus {
                    addr: slave.addr.clone(),
                    slave_ack_offset: slave.ack,
                    diff: master_end - slave.ack,
                    in_sync: master_end - slave.ack < max_gap,
                    transferred_bytes_per_second: slave.sent.per_second(now_ms),
                    transfer_from_where: slave.next,
                }
            })
            .collect();
        let in_sync = connections.iter().filter(|c| c.in_sync).count() as i32;
        (connections, in_sync)
    }

    fn update(&self, id: u64, ack: Option<i64>) {
        let mut slaves = self.slaves.lock();
        match ack {
            Some(offset) => {
                if let Some(slave) = slaves.get_mut(&id) {
                    slave.ack = offset;
                }
            }
            None => {
                slaves.remove(&id);
            }
        }
        let mut offsets: Vec<i64> = slaves.values().map(|slave| slave.ack).collect();
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

    /// `bytes` of CommitLog went to the slave (none for a heartbeat); the next transfer starts
    /// at `next`.
    pub(crate) fn sent(&self, next: i64, bytes: usize, now_ms: i64) {
        if let Some(slave) = self.acks.slaves.lock().get_mut(&self.id) {
            slave.next = next;
            slave.sent.add(bytes, now_ms);
        }
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
        let slave = acks.join("127.0.0.1:1".into());
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
        let (a, b) = (
            acks.join("127.0.0.1:1".into()),
            acks.join("127.0.0.1:1".into()),
        );
        a.ack(500);
        assert!(!acks.wait_for(100, Duration::from_millis(5)).await);
        b.ack(200);
        assert!(acks.wait_for(200, Duration::from_millis(5)).await);
        assert!(!acks.wait_for(201, Duration::from_millis(5)).await);
    }

    #[test]
    fn status_lists_the_slaves_oldest_first() {
        let acks = Arc::new(ReplicaAcks::new(2));
        let a = acks.join("10.0.0.1:40000".into());
        let b = acks.join("10.0.0.2:40000".into());
        a.ack(900);
        a.sent(1000, 100, 5_500);
        b.ack(10);
        let (connections, in_sync) = acks.status(1000, 500, 6_000);
        assert_eq!(in_sync, 1);
        assert_eq!(
            connections,
            vec![
                HaConnectionStatus {
                    addr: "10.0.0.1:40000".into(),
                    slave_ack_offset: 900,
                    diff: 100,
                    in_sync: true,
                    transferred_bytes_per_second: 100,
                    transfer_from_where: 1000,
                },
                HaConnectionStatus {
                    addr: "10.0.0.2:40000".into(),
                    slave_ack_offset: 10,
                    diff: 990,
                    in_sync: false,
                    transferred_bytes_per_second: 0,
                    transfer_from_where: -1,
                },
            ]
        );
        drop(a);
        assert_eq!(acks.status(1000, 500, 6_000).0.len(), 1);
    }
}
