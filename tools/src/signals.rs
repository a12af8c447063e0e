//! The signals that ask the process to stop: Ctrl-C (SIGINT) and SIGTERM. They are caught from
//! [`StopSignals::install`] on, so one that arrives while the servers start is not lost: it stops
//! them, cleanly, as soon as they are up.

use std::io;

pub struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Replaces the default handlers (which end the process at once). Needs a Tokio runtime.
    pub fn install() -> io::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(StopSignals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(StopSignals {})
        }
    }

    /// Waits for the next stop signal and returns its name.
    pub async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "Ctrl-C",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => "Ctrl-C",
                // Without signal handling the process can still be killed; never return early.
                Err(_) => std::future::pending().await,
            }
        }
    }
}
