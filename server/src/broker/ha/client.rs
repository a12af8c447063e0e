//! The slave's side of replication, as I/O around [`SlaveCore`]: connect to the master's HA port
//! (`haMasterAddress`, else the `haServerAddr` the name servers answer), report the CommitLog end,
//! append what the master streams, and reconnect every 5 s when the link drops, as Java's
//! `DefaultHAClient` does.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use skiff_model::route::RegistrationResult;
use skiff_store::MessageStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::slave::{SlaveCore, SlaveOut};
use super::{CloseReason, HaTimings};
use crate::broker::now_millis;

/// Java's wait before connecting again (`DefaultHAClient.closeMasterAndWait`).
const RECONNECT_DELAY: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// A Skiff slave accepts frames up to this size (a Java master sends 32 KiB).
const MAX_FRAME_BODY: usize = 16 * 1024 * 1024;

/// Where the slave finds its master.
pub(crate) struct MasterSource {
    /// `haMasterAddress`: fixed, never replaced.
    pub(crate) fixed: Option<String>,
    /// The name servers' answers to the slave's registrations.
    pub(crate) announced: watch::Receiver<RegistrationResult>,
}

impl MasterSource {
    fn current(&mut self) -> Option<String> {
        self.fixed
            .clone()
            .or_else(|| self.announced.borrow_and_update().ha_server_addr.clone())
    }
}

/// Replicates from the master until `shutdown`.
pub(crate) async fn run(
    store: Arc<MessageStore>,
    mut master: MasterSource,
    timings: HaTimings,
    shutdown: CancellationToken,
) {
    let mut core = SlaveCore::new(timings, store.commit_log_segment_size(), MAX_FRAME_BODY);
    loop {
        let Some(addr) = master.current() else {
            // No master registered yet: wait for the name servers to name one.
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = master.announced.changed() => {}
                _ = tokio::time::sleep(RECONNECT_DELAY) => {}
            }
            continue;
        };
        let connected = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&addr)).await;
        let stream = match connected {
            Ok(Ok(stream)) => stream,
            Ok(Err(err)) => {
                warn!(master = %addr, %err, "cannot connect to the master's HA port; retrying in 5 s");
                if pause(&shutdown).await {
                    return;
                }
                continue;
            }
            Err(_) => {
                warn!(master = %addr, "connecting to the master's HA port timed out; retrying in 5 s");
                if pause(&shutdown).await {
                    return;
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let start = store.commit_log_max_offset();
        info!(master = %addr, from = start, "replicating from the master");
        let reason = replicate(stream, &store, &mut core, &shutdown).await;
        let held = store.commit_log_max_offset();
        match &reason {
            CloseReason::Eof if shutdown.is_cancelled() => return,
            CloseReason::Store(_) => {
                error!(master = %addr, replicated_up_to = held, %reason, "replication stopped: the master's bytes do not fit this store; move this store aside or fix the master, then restart the slave");
            }
            _ => {
                warn!(master = %addr, replicated_up_to = held, %reason, "replication link closed; reconnecting in 5 s");
            }
        }
        if pause(&shutdown).await {
            return;
        }
    }
}

/// Waits [`RECONNECT_DELAY`]; whether the broker is shutting down.
async fn pause(shutdown: &CancellationToken) -> bool {
    tokio::select! {
        _ = shutdown.cancelled() => true,
        _ = tokio::time::sleep(RECONNECT_DELAY) => false,
    }
}

/// One connection's life: returns why it ended.
async fn replicate(
    mut stream: TcpStream,
    store: &Arc<MessageStore>,
    core: &mut SlaveCore,
    shutdown: &CancellationToken,
) -> CloseReason {
    core.on_connected(store.commit_log_max_offset(), now_millis());
    let mut buf = BytesMut::with_capacity(256 * 1024);
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    loop {
        let outs = core.take_ready();
        let idle = outs.is_empty();
        for out in outs {
            match out {
                SlaveOut::Write(report) => {
                    if let Err(err) = stream.write_all(&report).await {
                        return CloseReason::Io(err.to_string());
                    }
                }
                SlaveOut::Append { offset, bytes } => {
                    let store = store.clone();
                    let appended = tokio::task::spawn_blocking(move || {
                        store.append_replicated(offset, &bytes)
                    })
                    .await;
                    match appended {
                        Ok(Ok(end)) => core.on_appended(end, now_millis()),
                        Ok(Err(err)) => return CloseReason::Store(err.to_string()),
                        Err(err) => return CloseReason::Store(err.to_string()),
                    }
                }
                SlaveOut::Close(reason) => return reason,
            }
        }
        // What `on_appended` asked for (a report) goes out before the next read.
        if !idle {
            continue;
        }
        buf.reserve(64 * 1024);
        tokio::select! {
            _ = shutdown.cancelled() => return CloseReason::Eof,
            _ = ticks.tick() => core.tick(now_millis()),
            read = stream.read_buf(&mut buf) => match read {
                Ok(0) => core.on_eof(),
                Ok(_) => core.on_bytes(&mut buf, now_millis()),
                Err(err) => return CloseReason::Io(err.to_string()),
            },
        }
    }
}
