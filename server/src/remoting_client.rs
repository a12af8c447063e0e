//! A small remoting client: one connection, many requests in flight, answers matched by opaque.
//!
//! The broker uses it to register with name servers; the admin and bench tools use it to talk to
//! brokers. Requests the peer sends us (such as NOTIFY_CONSUMER_IDS_CHANGED) are ignored: none of
//! these users rebalance.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use skiff_model::command::{Reply, Request};
use skiff_protocol::remoting::{self, RemotingCodec, RemotingCommand, DEFAULT_MAX_FRAME_LEN};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("no answer from {addr} within {timeout:?}")]
    Timeout { addr: String, timeout: Duration },
    #[error("connection to {0} closed")]
    Closed(String),
    #[error("unexpected answer from {addr}: {message}")]
    BadReply { addr: String, message: String },
}

type Pending = Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>;

struct Inner {
    addr: String,
    outbound: mpsc::Sender<RemotingCommand>,
    pending: Pending,
    next_opaque: AtomicI32,
    closed: CancellationToken,
}

/// A connection to one name server or broker. Cheap to clone; closes when the last clone drops.
#[derive(Clone)]
pub struct RemotingClient {
    inner: Arc<Inner>,
    _guard: Arc<CloseOnDrop>,
    /// Signs every request as `AclClientRPCHook` does, for servers with ACL on.
    credentials: Option<Arc<crate::acl::Credentials>>,
}

struct CloseOnDrop(CancellationToken);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl RemotingClient {
    /// Connects to `addr` (`host:port`) within `timeout`.
    pub async fn connect(addr: &str, timeout: Duration) -> Result<Self, ClientError> {
        Self::connect_with(addr, timeout, false).await
    }

    /// [`RemotingClient::connect`], over TLS when `tls` (trusting any server certificate, as
    /// Java's clients do in their default test mode).
    pub async fn connect_with(
        addr: &str,
        timeout: Duration,
        tls: bool,
    ) -> Result<Self, ClientError> {
        let connect_error = |source| ClientError::Connect {
            addr: addr.to_string(),
            source,
        };
        let connecting = async {
            let stream = TcpStream::connect(addr).await?;
            let _ = stream.set_nodelay(true);
            if tls {
                let stream = crate::tls::connect(stream, addr).await?;
                let (read_half, write_half) = tokio::io::split(stream);
                Ok(Self::start(addr, read_half, write_half))
            } else {
                let (read_half, write_half) = stream.into_split();
                Ok(Self::start(addr, read_half, write_half))
            }
        };
        match tokio::time::timeout(timeout, connecting).await {
            Ok(result) => result.map_err(connect_error),
            Err(_) => Err(ClientError::Timeout {
                addr: addr.to_string(),
                timeout,
            }),
        }
    }

    fn start<R, W>(addr: &str, read_half: R, write_half: W) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = mpsc::channel::<RemotingCommand>(1024);
        let closed = CancellationToken::new();
        let inner = Arc::new(Inner {
            addr: addr.to_string(),
            outbound: tx,
            pending: Mutex::new(HashMap::new()),
            next_opaque: AtomicI32::new(1),
            closed: closed.clone(),
        });

        let mut sink = FramedWrite::new(write_half, RemotingCodec::default());
        let writer_closed = closed.clone();
        tokio::spawn(async move {
            loop {
                let frame = tokio::select! {
                    _ = writer_closed.cancelled() => break,
                    frame = rx.recv() => frame,
                };
                let Some(frame) = frame else { break };
                if sink.feed(frame).await.is_err() {
                    break;
                }
                while let Ok(frame) = rx.try_recv() {
                    if sink.feed(frame).await.is_err() {
                        break;
                    }
                }
                if sink.flush().await.is_err() {
                    break;
                }
            }
            writer_closed.cancel();
        });

        let mut frames = FramedRead::new(read_half, RemotingCodec::new(DEFAULT_MAX_FRAME_LEN));
        let reader_inner = Arc::downgrade(&inner);
        let reader_closed = closed.clone();
        tokio::spawn(async move {
            loop {
                let frame = tokio::select! {
                    _ = reader_closed.cancelled() => break,
                    frame = frames.next() => frame,
                };
                let Some(Ok(frame)) = frame else { break };
                if !frame.is_response() {
                    continue;
                }
                let Some(inner) = reader_inner.upgrade() else {
                    break;
                };
                let waiter = inner.pending.lock().remove(&frame.opaque);
                if let Some(waiter) = waiter {
                    let _ = waiter.send(frame);
                }
            }
            reader_closed.cancel();
            if let Some(inner) = reader_inner.upgrade() {
                // Fail every waiter now rather than at its timeout.
                inner.pending.lock().clear();
            }
        });

        RemotingClient {
            inner,
            _guard: Arc::new(CloseOnDrop(closed)),
            credentials: None,
        }
    }

    /// This client, signing its requests with `credentials` from now on.
    pub fn signed_by(mut self, credentials: Option<Arc<crate::acl::Credentials>>) -> Self {
        self.credentials = credentials;
        self
    }

    fn frame(&self, request: &Request, opaque: i32, oneway: bool) -> RemotingCommand {
        let mut frame = remoting::encode_request(request, opaque, oneway);
        if let Some(credentials) = &self.credentials {
            crate::acl::sign_command(&mut frame, credentials);
        }
        frame
    }

    /// The address this client connected to.
    pub fn addr(&self) -> &str {
        &self.inner.addr
    }

    /// Whether the connection is gone (the caller should reconnect).
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }

    /// Sends `request` and waits up to `timeout` for its reply.
    pub async fn invoke(&self, request: &Request, timeout: Duration) -> Result<Reply, ClientError> {
        let frame = remoting::encode_request(request, 0, false);
        let response = self.invoke_frame(frame, timeout).await?;
        remoting::decode_reply(request, &response).map_err(|err| ClientError::BadReply {
            addr: self.inner.addr.clone(),
            message: err.to_string(),
        })
    }

    /// Sends a request frame built by the caller (for request codes the command model does not
    /// have, such as the admin tool's broker-config and offset-reset codes) and waits up to
    /// `timeout` for the response frame. The frame gets its opaque here, and is signed.
    pub async fn invoke_frame(
        &self,
        mut frame: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        let opaque = self.inner.next_opaque.fetch_add(1, Ordering::Relaxed);
        frame.opaque = opaque;
        if let Some(credentials) = &self.credentials {
            crate::acl::sign_command(&mut frame, credentials);
        }
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().insert(opaque, tx);
        let result = tokio::time::timeout(timeout, async {
            self.inner
                .outbound
                .send(frame)
                .await
                .map_err(|_| self.closed_error())?;
            rx.await.map_err(|_| self.closed_error())
        })
        .await;
        match result {
            Ok(response) => response,
            Err(_) => {
                self.inner.pending.lock().remove(&opaque);
                Err(ClientError::Timeout {
                    addr: self.inner.addr.clone(),
                    timeout,
                })
            }
        }
    }

    /// Sends `request` without waiting for (or getting) a reply.
    pub async fn invoke_oneway(&self, request: &Request) -> Result<(), ClientError> {
        let opaque = self.inner.next_opaque.fetch_add(1, Ordering::Relaxed);
        let frame = self.frame(request, opaque, true);
        self.inner
            .outbound
            .send(frame)
            .await
            .map_err(|_| self.closed_error())
    }

    fn closed_error(&self) -> ClientError {
        ClientError::Closed(self.inner.addr.clone())
    }
}
