//! Queue locks of orderly consumers (`RebalanceLockManager`): LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
//!
//! An orderly consumer consumes a queue only while it holds the queue's lock on the broker, so
//! that during a rebalance the old owner and the new one never consume the same queue at once.
//! Per consumer group, a queue's lock belongs to one client id; it lives for
//! `rebalanceLockMaxLiveTime` (Java's `-Drocketmq.broker.rebalance.lockMaxLiveTime`, 60 s) after
//! its last renewal, and the owning client renews it by locking again (every 20 s). Like Java, the
//! broker does not check that the queue or its topic exists, and a lock is not released when its
//! owner's connection closes: a client that dies without unlocking blocks its queues until the
//! lock expires, which is what keeps order when a connection only flickers. One addition: a
//! client that unregisters from a group (it is shutting down for good) gives its locks in that
//! group back at once.
//!
//! Pure logic over a clock passed in by the caller, so it is unit-tested without sockets or time.

use std::collections::HashMap;

use parking_lot::Mutex;
use skiff_model::command::{ErrorKind, Reply};
use skiff_model::consumer::{LockBatchRequest, MessageQueue};

use super::{now_millis, BrokerState};

/// LOCK_BATCH_MQ: the queues now locked for the client (SUCCESS with `lockOKMQSet`).
pub(super) fn lock_batch(state: &BrokerState, request: &LockBatchRequest) -> Reply {
    if request.mq_set.is_empty() {
        return Reply::LockedQueues(Vec::new());
    }
    match who(request) {
        Ok((group, client_id)) => Reply::LockedQueues(state.locks.try_lock_batch(
            group,
            &request.mq_set,
            client_id,
            now_millis(),
        )),
        Err(reply) => reply,
    }
}

/// UNLOCK_BATCH_MQ: SUCCESS, whether or not the client held the locks.
pub(super) fn unlock_batch(state: &BrokerState, request: &LockBatchRequest) -> Reply {
    if request.mq_set.is_empty() {
        return Reply::Success;
    }
    match who(request) {
        Ok((group, client_id)) => {
            state.locks.unlock_batch(group, &request.mq_set, client_id);
            Reply::Success
        }
        Err(reply) => reply,
    }
}

/// The group and client a lock body names; Java fails with a NullPointerException (SYSTEM_ERROR)
/// when either is missing.
fn who(request: &LockBatchRequest) -> Result<(&str, &str), Reply> {
    let missing = |name: &str| {
        Reply::error(
            ErrorKind::SystemError,
            format!("the lock request body has no {name}"),
        )
    };
    let group = request
        .consumer_group
        .as_deref()
        .ok_or_else(|| missing("consumerGroup"))?;
    let client_id = request
        .client_id
        .as_deref()
        .ok_or_else(|| missing("clientId"))?;
    Ok((group, client_id))
}

struct LockEntry {
    client_id: String,
    last_update_millis: i64,
}

impl LockEntry {
    fn expired(&self, now: i64, max_live: i64) -> bool {
        now - self.last_update_millis > max_live
    }

    fn held_by(&self, client_id: &str, now: i64, max_live: i64) -> bool {
        self.client_id == client_id && !self.expired(now, max_live)
    }
}

pub(crate) struct RebalanceLockManager {
    max_live_millis: i64,
    groups: Mutex<HashMap<String, HashMap<MessageQueue, LockEntry>>>,
}

impl RebalanceLockManager {
    pub(crate) fn new(max_live_millis: u64) -> Self {
        RebalanceLockManager {
            max_live_millis: i64::try_from(max_live_millis).unwrap_or(i64::MAX),
            groups: Mutex::new(HashMap::new()),
        }
    }

    /// Locks (or renews) every queue of `queues` that is free, expired or already `client_id`'s,
    /// and returns those, in the order asked (`tryLockBatch`).
    pub(crate) fn try_lock_batch(
        &self,
        group: &str,
        queues: &[MessageQueue],
        client_id: &str,
        now: i64,
    ) -> Vec<MessageQueue> {
        let max_live = self.max_live_millis;
        let mut groups = self.groups.lock();
        if queues.is_empty() {
            return Vec::new();
        }
        let table = groups.entry(group.to_string()).or_default();
        let mut locked = Vec::with_capacity(queues.len());
        for queue in queues {
            if locked.contains(queue) {
                continue;
            }
            let entry = table.entry(queue.clone()).or_insert_with(|| LockEntry {
                client_id: client_id.to_string(),
                last_update_millis: now,
            });
            if entry.held_by(client_id, now, max_live) || entry.expired(now, max_live) {
                if entry.client_id != client_id {
                    tracing::warn!(group, ?queue, old = %entry.client_id, new = client_id,
                                   "queue lock expired; given to a new client");
                    entry.client_id = client_id.to_string();
                }
                entry.last_update_millis = now;
                locked.push(queue.clone());
            } else {
                tracing::debug!(group, ?queue, owner = %entry.client_id, client = client_id,
                                "queue locked by another client");
            }
        }
        locked
    }

    /// Releases the queues of `queues` that `client_id` holds (`unlockBatch`); others' locks stay.
    pub(crate) fn unlock_batch(&self, group: &str, queues: &[MessageQueue], client_id: &str) {
        let mut groups = self.groups.lock();
        if let Some(table) = groups.get_mut(group) {
            for queue in queues {
                if table.get(queue).is_some_and(|e| e.client_id == client_id) {
                    table.remove(queue);
                }
            }
            if table.is_empty() {
                groups.remove(group);
            }
        }
    }

    /// Releases every lock `client_id` holds in `group` (the client unregistered from it).
    pub(crate) fn unlock_all_of(&self, group: &str, client_id: &str) -> usize {
        let mut groups = self.groups.lock();
        let Some(table) = groups.get_mut(group) else {
            return 0;
        };
        let before = table.len();
        table.retain(|_, entry| entry.client_id != client_id);
        let released = before - table.len();
        if table.is_empty() {
            groups.remove(group);
        }
        released
    }

    /// Whether no lock of `group` is live (`isLockAllExpired`): Java sends an orderly group's
    /// failed messages straight to its DLQ while the group holds live locks.
    pub(crate) fn is_lock_all_expired(&self, group: &str, now: i64) -> bool {
        self.groups
            .lock()
            .get(group)
            .is_none_or(|t| t.values().all(|e| e.expired(now, self.max_live_millis)))
    }

    /// Drops expired entries, so that groups and queues that went away do not accumulate.
    pub(crate) fn purge_expired(&self, now: i64) {
        let max_live = self.max_live_millis;
        let mut groups = self.groups.lock();
        groups.retain(|_, table| {
            table.retain(|_, entry| !entry.expired(now, max_live));
            !table.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIVE: u64 = 60_000;

    fn q(id: i32) -> MessageQueue {
        MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: id,
        }
    }

    #[test]
    fn a_queue_is_locked_by_one_client_until_it_expires() {
        let locks = RebalanceLockManager::new(LIVE);
        assert_eq!(
            locks.try_lock_batch("g", &[q(0), q(1)], "A", 0),
            [q(0), q(1)]
        );
        assert_eq!(locks.try_lock_batch("g", &[q(0), q(2)], "B", 1000), [q(2)]);
        // Another group is independent.
        assert_eq!(locks.try_lock_batch("h", &[q(0)], "B", 1000), [q(0)]);
        // At exactly the max live time the lock still holds (Java: `now - last > max`).
        assert!(locks.try_lock_batch("g", &[q(1)], "B", 60_000).is_empty());
        assert_eq!(locks.try_lock_batch("g", &[q(1)], "B", 60_001), [q(1)]);
    }

    #[test]
    fn relocking_renews() {
        let locks = RebalanceLockManager::new(LIVE);
        locks.try_lock_batch("g", &[q(0)], "A", 0);
        assert_eq!(locks.try_lock_batch("g", &[q(0)], "A", 50_000), [q(0)]);
        assert!(locks.try_lock_batch("g", &[q(0)], "B", 100_000).is_empty());
        assert_eq!(locks.try_lock_batch("g", &[q(0)], "B", 110_001), [q(0)]);
        assert!(!locks.is_lock_all_expired("g", 110_001));
        assert!(locks.is_lock_all_expired("g", 170_002));
        assert!(locks.is_lock_all_expired("nobody", 0));
    }

    #[test]
    fn unlock_releases_only_the_callers_locks() {
        let locks = RebalanceLockManager::new(LIVE);
        locks.try_lock_batch("g", &[q(0), q(1)], "A", 0);
        locks.unlock_batch("g", &[q(0), q(1)], "B");
        assert!(locks.try_lock_batch("g", &[q(0)], "B", 1).is_empty());
        locks.unlock_batch("g", &[q(0)], "A");
        assert_eq!(locks.try_lock_batch("g", &[q(0), q(1)], "B", 2), [q(0)]);
        locks.unlock_batch("nogroup", &[q(0)], "A");
        assert_eq!(locks.unlock_all_of("g", "A"), 1);
        assert_eq!(locks.try_lock_batch("g", &[q(1)], "B", 3), [q(1)]);
        assert_eq!(locks.unlock_all_of("g", "A"), 0);
    }

    #[test]
    fn duplicates_and_empty_sets() {
        let locks = RebalanceLockManager::new(LIVE);
        assert!(locks.try_lock_batch("g", &[], "A", 0).is_empty());
        assert_eq!(locks.try_lock_batch("g", &[q(3), q(3)], "A", 0), [q(3)]);
    }

    #[test]
    fn expired_entries_are_purged() {
        let locks = RebalanceLockManager::new(LIVE);
        locks.try_lock_batch("g", &[q(0)], "A", 0);
        locks.try_lock_batch("g", &[q(1)], "A", 30_000);
        locks.purge_expired(70_000);
        assert_eq!(locks.groups.lock()["g"].len(), 1);
        locks.purge_expired(100_000);
        assert!(locks.groups.lock().is_empty());
    }
}
