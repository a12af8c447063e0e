//! Long polling (`PullRequestHoldService`): a pull that finds nothing waits here until a message
//! arrives on its queue or its suspend timeout passes, then runs again.
//!
//! Arrivals come from the store's message-arrival listener, so a held pull is answered as soon as
//! the message is dispatched, not on a polling timer. Each held pull is a oneshot sender; a pull
//! that timed out drops its receiver, and dropped entries are pruned whenever their queue is
//! touched, so the table only holds live waiters.

use std::collections::HashMap;

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

struct HeldPull {
    offset: i64,
    wake: oneshot::Sender<Wakeup>,
}

#[derive(Default)]
struct State {
    /// topic → queue id → held pulls. Keyed by topic first so arrivals look up by `&str`
    /// without allocating on the append path.
    held: HashMap<String, HashMap<i32, Vec<HeldPull>>>,
    shut_down: bool,
}

#[derive(Default)]
pub struct PullHoldService {
    state: Mutex<State>,
}

impl PullHoldService {
    /// Parks a pull for `offset` on a queue. The receiver fires when a message arrives beyond
    /// `offset`; the caller races it against the suspend timeout.
    pub fn hold(&self, topic: &str, queue_id: i32, offset: i64) -> oneshot::Receiver<Wakeup> {
        let (tx, rx) = oneshot::channel();
        let mut state = self.state.lock();
        if state.shut_down {
            let _ = tx.send(Wakeup::Shutdown);
            return rx;
        }
        let waiters = state
            .held
            .entry(topic.to_string())
            .or_default()
            .entry(queue_id)
            .or_default();
        waiters.retain(|w| !w.wake.is_closed());
        waiters.push(HeldPull { offset, wake: tx });
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
        let mut i = 0;
        while i < waiters.len() {
            if waiters[i].wake.is_closed() {
                waiters.swap_remove(i);
            } else if waiters[i].offset < max_offset {
                let _ = waiters.swap_remove(i).wake.send(Wakeup::Arrived);
            } else {
                i += 1;
            }
        }
        if waiters.is_empty() {
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
            .flat_map(|(_, q)| q.into_values().flatten())
        {
            let _ = waiter.wake.send(Wakeup::Shutdown);
        }
    }

    /// Number of pulls currently held (for runtime info).
    pub fn held_count(&self) -> usize {
        self.state
            .lock()
            .held
            .values()
            .flat_map(|q| q.values())
            .map(Vec::len)
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
}
