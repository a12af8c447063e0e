//! The master's side of replication, as I/O around [`MasterConn`]: the HA listener
//! (`haListenPort`) and, per slave connection, a reader that takes the slave's offset reports and
//! a writer that streams CommitLog bytes as they are written.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use skiff_protocol::ha::encode_transfer_header;
use skiff_store::MessageStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::acks::ReplicaAcks;
use super::master::{LogView, MasterConn, MasterOut};
use super::{CloseReason, HaTimings};
use crate::broker::now_millis;

/// More slaves than any broker group has; beyond it new connections are closed.
const MAX_SLAVE_CONNECTIONS: usize = 64;

/// The store as the master's state machine sees it.
struct StoreLog<'a>(&'a MessageStore);

impl LogView for StoreLog<'_> {
    fn min_offset(&self) -> i64 {
        self.0.commit_log_min_offset()
    }
    fn max_offset(&self) -> i64 {
        self.0.commit_log_max_offset()
    }
    fn segment_size(&self) -> i64 {
        self.0.commit_log_segment_size()
    }
    fn data(&self, from: i64, max: usize) -> Option<Bytes> {
        self.0.commit_log_data(from, max)
    }
}

/// Accepts slaves on `listener` until `shutdown`.
pub(crate) async fn serve(
    listener: TcpListener,
    store: Arc<MessageStore>,
    acks: Arc<ReplicaAcks>,
    timings: HaTimings,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(MAX_SLAVE_CONNECTIONS));
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    warn!(%err, "HA listener cannot accept; retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            warn!(%peer, max = MAX_SLAVE_CONNECTIONS, "too many HA connections: closing the new one");
            continue;
        };
        let _ = stream.set_nodelay(true);
        info!(%peer, "slave connected to the HA port");
        let (store, acks, timings, shutdown) = (
            store.clone(),
            acks.clone(),
            timings.clone(),
            shutdown.clone(),
        );
        tokio::spawn(async move {
            let reason = stream_to_slave(stream, peer, store, acks, timings, shutdown).await;
            info!(%peer, %reason, "slave connection closed");
            drop(slot);
        });
    }
}

/// How much of the stream to a slave is gathered into one write.
const WRITE_BUFFER: usize = 256 * 1024;

/// Serves one slave until the connection ends; returns why it did.
async fn stream_to_slave(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    store: Arc<MessageStore>,
    acks: Arc<ReplicaAcks>,
    timings: HaTimings,
    shutdown: CancellationToken,
) -> CloseReason {
    let (mut reader, writer) = stream.into_split();
    // Frames are small (haTransferBatchSize, 32 KiB); buffered, a catching-up slave gets them in
    // large writes. The buffer is flushed before every wait, so nothing sent waits in it.
    let mut writer = tokio::io::BufWriter::with_capacity(WRITE_BUFFER, writer);
    let conn = Arc::new(Mutex::new(MasterConn::new(timings, now_millis())));
    let slave = acks.join(peer.to_string());
    let wake = Arc::new(Notify::new());
    let reading = {
        let (conn, wake) = (conn.clone(), wake.clone());
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                match reader.read(&mut buf).await {
                    Ok(0) | Err(_) => {
                        conn.lock().on_eof();
                        wake.notify_one();
                        return;
                    }
                    Ok(n) => {
                        conn.lock().on_bytes(&buf[..n], now_millis());
                        wake.notify_one();
                    }
                }
            }
        })
    };
    let mut written = store.commit_log_end_watch();
    let reason = loop {
        let outs = {
            let mut conn = conn.lock();
            conn.tick(now_millis(), &StoreLog(&store));
            conn.take_ready()
        };
        let mut sent = false;
        let mut closed = None;
        for out in outs {
            match out {
                MasterOut::Send { offset, body } => {
                    let header = encode_transfer_header(offset, body.len() as u32);
                    if let Err(err) = write_frame(&mut writer, &header, &body).await {
                        closed = Some(CloseReason::Io(err.to_string()));
                        break;
                    }
                    slave.sent(offset + body.len() as i64, body.len(), now_millis());
                    sent = true;
                }
                MasterOut::Heartbeat { offset } => {
                    let header = encode_transfer_header(offset, 0);
                    if let Err(err) = write_frame(&mut writer, &header, &[]).await {
                        closed = Some(CloseReason::Io(err.to_string()));
                        break;
                    }
                    slave.sent(offset, 0, now_millis());
                }
                MasterOut::Acked(offset) => slave.ack(offset),
                MasterOut::Close(reason) => {
                    closed = Some(reason);
                    break;
                }
            }
        }
        if let Some(reason) = closed {
            break reason;
        }
        if sent {
            continue; // more may be ready: stream without waiting
        }
        if let Err(err) = writer.flush().await {
            break CloseReason::Io(err.to_string());
        }
        let deadline = conn.lock().next_deadline(now_millis());
        let wait = Duration::from_millis((deadline - now_millis()).clamp(1, 1000) as u64);
        tokio::select! {
            _ = shutdown.cancelled() => break CloseReason::Eof,
            _ = written.changed() => {}
            _ = wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    };
    reading.abort();
    reason
}

async fn write_frame(
    writer: &mut tokio::io::BufWriter<tokio::net::tcp::OwnedWriteHalf>,
    header: &[u8],
    body: &[u8],
) -> std::io::Result<()> {
    writer.write_all(header).await?;
    if !body.is_empty() {
        writer.write_all(body).await?;
    }
    Ok(())
}
