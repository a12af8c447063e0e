//! The master's side of replication, as I/O around [`MasterConn`]: the HA listener
//! (`haListenPort`) and, per slave connection, a reader that takes the slave's offset reports and
//! a writer that streams CommitLog bytes as they are written.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};
use parking_lot::Mutex;
use skiff_protocol::ha::{encode_transfer_header, TRANSFER_HEADER_LEN};
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

/// Accepts slaves on `listener` until `shutdown`. `batch_size` is `haTransferBatchSize` in force
/// (UPDATE_BROKER_CONFIG changes it), read before each frame as Java does.
pub(crate) async fn serve(
    listener: TcpListener,
    store: Arc<MessageStore>,
    acks: Arc<ReplicaAcks>,
    timings: HaTimings,
    batch_size: Arc<AtomicUsize>,
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
        let (store, acks, timings, batch_size, shutdown) = (
            store.clone(),
            acks.clone(),
            timings.clone(),
            batch_size.clone(),
            shutdown.clone(),
        );
        tokio::spawn(async move {
            let reason =
                stream_to_slave(stream, peer, store, acks, timings, batch_size, shutdown).await;
            info!(%peer, %reason, "slave connection closed");
            drop(slot);
        });
    }
}

/// How much of the stream to a slave is gathered into one write.
const WRITE_BUFFER: usize = 256 * 1024;

/// Frames gathered for one vectored write: each header and the CommitLog slice as it is in the
/// mapping, so the master copies the bytes it streams once, into the socket, not first into a
/// write buffer (that copy was half of a catching-up master's CPU).
#[derive(Default)]
struct Frames {
    chunks: VecDeque<Chunk>,
    remaining: usize,
}

/// A frame's header, kept inline (no allocation per frame), or its body.
enum Chunk {
    Header {
        bytes: [u8; TRANSFER_HEADER_LEN],
        /// How much of it was written.
        sent: usize,
    },
    Body(Bytes),
}

impl Chunk {
    fn unsent(&self) -> &[u8] {
        match self {
            Chunk::Header { bytes, sent } => &bytes[*sent..],
            Chunk::Body(body) => body,
        }
    }
}

impl Frames {
    fn push(&mut self, header: [u8; TRANSFER_HEADER_LEN], body: Bytes) {
        self.remaining += header.len() + body.len();
        self.chunks.push_back(Chunk::Header {
            bytes: header,
            sent: 0,
        });
        if !body.is_empty() {
            self.chunks.push_back(Chunk::Body(body));
        }
    }
}

impl Buf for Frames {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.chunks.front().map_or(&[], Chunk::unsent)
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut filled = 0;
        for (slot, chunk) in dst.iter_mut().zip(&self.chunks) {
            *slot = IoSlice::new(chunk.unsent());
            filled += 1;
        }
        filled
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "advance past the frames gathered");
        self.remaining -= cnt;
        while cnt > 0 {
            let front = self.chunks.front_mut().expect("bytes remain");
            let left = front.unsent().len();
            if cnt < left {
                match front {
                    Chunk::Header { sent, .. } => *sent += cnt,
                    Chunk::Body(body) => body.advance(cnt),
                }
                return;
            }
            cnt -= left;
            self.chunks.pop_front();
        }
    }
}

/// Serves one slave until the connection ends; returns why it did.
async fn stream_to_slave(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    store: Arc<MessageStore>,
    acks: Arc<ReplicaAcks>,
    timings: HaTimings,
    batch_size: Arc<AtomicUsize>,
    shutdown: CancellationToken,
) -> CloseReason {
    let (mut reader, mut writer) = stream.into_split();
    // Frames are small (haTransferBatchSize, 32 KiB); gathered, a catching-up slave gets them in
    // large writes. They are written out before every wait, so nothing sent waits here.
    let mut frames = Frames::default();
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
            conn.set_transfer_batch_size(batch_size.load(Ordering::Relaxed));
            conn.tick(now_millis(), &StoreLog(&store));
            conn.take_ready()
        };
        let mut sent = false;
        let mut closed = None;
        for out in outs {
            match out {
                MasterOut::Send { offset, body } => {
                    let len = body.len();
                    frames.push(encode_transfer_header(offset, len as u32), body);
                    slave.sent(offset + len as i64, len, now_millis());
                    sent = true;
                }
                MasterOut::Heartbeat { offset } => {
                    frames.push(encode_transfer_header(offset, 0), Bytes::new());
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
        if sent && frames.remaining() < WRITE_BUFFER {
            continue; // more may be ready: gather it before writing
        }
        if let Err(err) = writer.write_all_buf(&mut frames).await {
            break CloseReason::Io(err.to_string());
        }
        if sent {
            continue; // more may be ready: stream without waiting
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_written_as_gathered_across_partial_writes() {
        let mut frames = Frames::default();
        frames.push(encode_transfer_header(100, 3), Bytes::from_static(b"abc"));
        frames.push(encode_transfer_header(103, 0), Bytes::new());
        assert_eq!(frames.remaining(), 2 * TRANSFER_HEADER_LEN + 3);
        let mut slices = [IoSlice::new(&[]); 8];
        assert_eq!(
            frames.chunks_vectored(&mut slices),
            3,
            "an empty body adds no slice"
        );

        // A write that ends inside the first body, then one that ends inside the last header.
        let mut written = Vec::new();
        for take in [TRANSFER_HEADER_LEN + 1, TRANSFER_HEADER_LEN + 1, 1] {
            let mut n = 0;
            while n < take {
                let chunk = frames.chunk();
                let part = chunk.len().min(take - n);
                written.extend_from_slice(&chunk[..part]);
                frames.advance(part);
                n += part;
            }
        }
        assert_eq!(frames.remaining(), 0);
        let mut expected = encode_transfer_header(100, 3).to_vec();
        expected.extend_from_slice(b"abc");
        expected.extend_from_slice(&encode_transfer_header(103, 0));
        assert_eq!(written, expected);
        assert_eq!(frames.chunk(), b"");

        // One advance across a header and into its body, as a vectored write reports it.
        frames.push(encode_transfer_header(106, 3), Bytes::from_static(b"xyz"));
        frames.advance(TRANSFER_HEADER_LEN + 2);
        assert_eq!(frames.chunk(), b"z");
        assert_eq!(frames.remaining(), 1);
    }
}
