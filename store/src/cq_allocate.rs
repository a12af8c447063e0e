//! The ConsumeQueue side of pre-allocation: a thread that keeps each written queue's blocks
//! allocated past its writer (not its next file: see `ConsumeQueue::add_file`), as
//! [`crate::allocate`] does for CommitLog segments. The put path only asks (an atomic flag and a
//! push); when the thread is late the writer does the work itself, so nothing is ever lost, only
//! time under the put lock.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::consume_queue::ConsumeQueue;

#[derive(Default)]
pub(crate) struct CqAllocator {
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Default)]
struct State {
    wanted: Vec<Arc<ConsumeQueue>>,
    stopped: bool,
}

impl CqAllocator {
    /// Asks for `queue` to be worked on (after [`ConsumeQueue::wants_ahead`] said so).
    pub(crate) fn request(&self, queue: &Arc<ConsumeQueue>) {
        let mut state = self.state.lock();
        if !state.stopped {
            state.wanted.push(Arc::clone(queue));
            self.cv.notify_one();
        }
    }

    /// The allocation thread.
    pub(crate) fn run(&self) {
        loop {
            let wanted = {
                let mut state = self.state.lock();
                loop {
                    if state.stopped {
                        return;
                    }
                    if !state.wanted.is_empty() {
                        break std::mem::take(&mut state.wanted);
                    }
                    self.cv.wait_for(&mut state, Duration::from_secs(1));
                }
            };
            for queue in wanted {
                if let Err(e) = queue.make_ahead() {
                    tracing::warn!(topic = queue.topic(), queue_id = queue.queue_id(), error = %e,
                        "could not pre-allocate a consume queue file; the next put does it");
                }
            }
        }
    }

    pub(crate) fn stop(&self) {
        let mut state = self.state.lock();
        state.stopped = true;
        state.wanted.clear();
        self.cv.notify_all();
    }
}
