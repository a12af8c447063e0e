//! Long polling (`PullRequestHoldService`): a pull that finds nothing waits here until a message
//! arrives on its queue or its suspend timeout passes, then runs again.
//!
//! Arrivals come from the store's message-arrival listener, so a held pull is answered as soon as
//! the message is dispatched, not on a polling timer. Each held pull is a oneshot sender, kept per
//! queue in offset order: an arrival releases exactly the pulls below the new end without looking
//! at the others, and a hold costs O(log n). A pull that timed out or whose connection closed drops
//! its receiver; such entries are swept in amortized O(1) per hold (a sweep once the holds since
//! the last sweep reach what that sweep left), so the table holds at most about twice the live
//! waiters.

use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// Why a held pull was released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    /// A message at or beyond the pull's offset arrived.
    Arrived,
    /// The broker is shutting down.
    Shutdown,
}

#[derive(Default)]
struct Waiters {
    /// (pull offset, hold id) -> waker.
    by_offset: BTreeMap<(i64, u64), oneshot::Sender<Wakeup>>,
    holds_since_sweep: usize,
    /// Entries left by the last sweep: the next one comes after as many holds again.
    after_sweep: usize,
}

#[derive(Default)]
struct State {
    /// topic → queue id → held pulls. Keyed by topic first so arrivals look up by `&str`
    /// without allocating on the append path.
    held: HashMap<String, HashMap<i32, Waiters>>,
    next_id: u64,
    shut_down: bool,
}

#[derive(Default)]
pub struct PullHoldService {
    state: Mutex<State>,
}

/// Fewest holds between two sweeps of a queue's dead waiters.
const MIN_SWEEP_INTERVAL: usize = 64;

impl PullHoldService {
    /// Parks a pull for `offset` on a queue. The receiver fires when a message arrives beyond
    /// `offset`; the caller races it against the suspend timeout. Dropping the receiver
    /// abandons the hold.
    pub fn hold(&self, topic: &str, queue_id: i32, offset: i64) -> oneshot::Receiver<Wakeup> {
        let (tx, rx) = oneshot::channel();
        let mut state = self.state.lock();
        if state.shut_down {
            let _ = tx.send(Wakeup::Shutdown);
            return rx;
        }
        state.next_id += 1;
        let id = state.next_id;
        let waiters = match state.held.get_mut(topic) {
            Some(queues) => queues.entry(queue_id).or_default(),
            None => state
                .held
                .entry(topic.to_string())
                .or_default()
                .entry(queue_id)
                .or_default(),
        };
        waiters.holds_since_sweep += 1;
        if waiters.holds_since_sweep >= waiters.after_sweep.max(MIN_SWEEP_INTERVAL) {
            waiters.by_offset.retain(|_, wake| !wake.is_closed());
            waiters.holds_since_sweep = 0;
            waiters.after_sweep = waiters.by_offset.len();
        }
        waiters.by_offset.insert((offset, id), tx);
        rx
    }

    /// A message was dispatched: release every pull on the queue waiting below `max_offset`.
    pub fn notify_arrival(&self, topic: &str, queue_id: i32, max_offset: i64) {
        let mut state = self.state.lock();
        let Some(queues) = state.held.get_mut(topic) else {
            return;
        };
        let Some(waiters) = queues.get_mut(&queue_id) else {
            return;
        };
        while let Some(entry) = waiters.by_offset.first_entry() {
            if entry.key().0 >= max_offset {
                break;
            }
            let _ = entry.remove().send(Wakeup::Arrived);
        }
        if waiters.by_offset.is_empty() {
            queues.remove(&queue_id);
            if queues.is_empty() {
                state.held.remove(topic);
            }
        }
    }

    /// Releases every held pull so it can be answered before connections close.
    pub fn shutdown(&self) {
        let mut state = self.state.lock();
        state.shut_down = true;
        for waiter in state
            .held
            .drain()
            .flat_map(|(_, q)| q.into_values().flat_map(|w| w.by_offset.into_values()))
        {
            let _ = waiter.send(Wakeup::Shutdown);
        }
    }

    /// Number of pulls currently held (for runtime info); abandoned holds not swept yet are
    /// not counted.
    pub fn held_count(&self) -> usize {
        self.state
            .lock()
            .held
            .values()
            .flat_map(|q| q.values())
            .map(|w| w.by_offset.values().filter(|t| !t.is_closed()).count())
            .sum()
    }

    /// Entries in the table, live or abandoned (tests: the table stays bounded).
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.state
            .lock()
            .held
            .values()
            .flat_map(|q| q.values())
            .map(|w| w.by_offset.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_release_only_pulls_below_the_new_max() {
        let service = PullHoldService::default();
        let mut early = service.hold("T", 0, 3);
        let mut late = service.hold("T", 0, 10);
        let mut other = service.hold("T", 1, 0);
        service.notify_arrival("T", 0, 4);
        assert_eq!(early.try_recv(), Ok(Wakeup::Arrived));
        assert!(late.try_recv().is_err());
        assert!(other.try_recv().is_err());
        assert_eq!(service.held_count(), 2);
        service.shutdown();
        assert_eq!(late.try_recv(), Ok(Wakeup::Shutdown));
        assert_eq!(other.try_recv(), Ok(Wakeup::Shutdown));
        assert_eq!(service.hold("T", 0, 0).try_recv(), Ok(Wakeup::Shutdown));
    }

    #[test]
    fn timed_out_pulls_are_pruned() {
        let service = PullHoldService::default();
        drop(service.hold("T", 0, 5));
        drop(service.hold("T", 0, 5));
        let _live = service.hold("T", 0, 5);
        assert_eq!(service.held_count(), 1);
    }

    #[test]
    fn abandoned_holds_stay_bounded_and_holding_is_not_linear() {
        let service = PullHoldService::default();
        let live: Vec<_> = (0..1000).map(|i| service.hold("T", 0, i)).collect();
        for i in 0..60_000 {
            drop(service.hold("T", 0, 5000 + i));
        }
        // At most the live ones plus one sweep interval's worth of dead ones.
        assert!(
            service.entries() <= 2 * live.len() + MIN_SWEEP_INTERVAL,
            "{}",
            service.entries()
        );
        assert_eq!(service.held_count(), live.len());
        service.notify_arrival("T", 0, 500);
        assert_eq!(service.held_count(), 500);
        drop(live);
        service.notify_arrival("T", 0, i64::MAX);
        assert_eq!(service.entries(), 0);
    }
}
