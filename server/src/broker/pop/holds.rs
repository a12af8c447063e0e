//! Long polling of POP and NOTIFICATION (`PopLongPollingService`): a request that found nothing
//! waits here until a message arrives on one of its topics (the topic or the group's POP retry
//! topic) or its poll time passes, then runs once more. Waiters that timed out are pruned
//! whenever their topic is touched.

use std::collections::HashMap;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// Most requests held at once (`maxPopPollingSize`); more are answered POLLING_FULL.
const MAX_HELD: usize = 100_000;

/// One held request, shared by every topic it waits on; taken by the first wakeup.
type Waiter = std::sync::Arc<Mutex<Option<oneshot::Sender<()>>>>;

#[derive(Default)]
struct State {
    /// topic → held requests; one request is registered under each of its topics and shares
    /// one sender through an `Arc`.
    held: HashMap<String, Vec<Waiter>>,
    count: usize,
    shut_down: bool,
}

#[derive(Default)]
pub struct PopHolds {
    state: Mutex<State>,
}

impl PopHolds {
    /// Holds a request on `topics`; `None` when too many are held already.
    pub fn hold(&self, topics: &[&str]) -> Option<oneshot::Receiver<()>> {
        let (tx, rx) = oneshot::channel();
        let mut state = self.state.lock();
        if state.shut_down {
            let _ = tx.send(());
            return Some(rx);
        }
        if state.count >= MAX_HELD {
            state.count = state.held.values().map(Vec::len).sum();
            if state.count >= MAX_HELD {
                return None;
            }
        }
        let shared: Waiter = std::sync::Arc::new(Mutex::new(Some(tx)));
        for topic in topics {
            let waiters = state.held.entry(topic.to_string()).or_default();
            waiters.retain(|w| w.lock().as_ref().is_some_and(|tx| !tx.is_closed()));
            waiters.push(shared.clone());
        }
        state.count += topics.len();
        Some(rx)
    }

    /// A message arrived on `topic`: release everything held on it.
    pub fn notify(&self, topic: &str) {
        let mut state = self.state.lock();
        if let Some(waiters) = state.held.remove(topic) {
            state.count = state.count.saturating_sub(waiters.len());
            for waiter in waiters {
                if let Some(tx) = waiter.lock().take() {
                    let _ = tx.send(());
                }
            }
        }
    }

    /// Releases everything so held requests are answered before connections close.
    pub fn shutdown(&self) {
        let mut state = self.state.lock();
        state.shut_down = true;
        state.count = 0;
        for waiter in state.held.drain().flat_map(|(_, w)| w) {
            if let Some(tx) = waiter.lock().take() {
                let _ = tx.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrival_on_either_topic_releases_the_request() {
        let holds = PopHolds::default();
        let mut a = holds.hold(&["T", "%RETRY%G_T"]).unwrap();
        let mut b = holds.hold(&["U"]).unwrap();
        holds.notify("%RETRY%G_T");
        assert_eq!(a.try_recv(), Ok(()));
        assert!(b.try_recv().is_err());
        holds.notify("T");
        holds.shutdown();
        assert_eq!(b.try_recv(), Ok(()));
        assert!(holds.hold(&["T"]).unwrap().try_recv().is_ok());
    }
}
