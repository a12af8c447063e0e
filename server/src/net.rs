//! Serving connections.
//!
//! [`serve_front`] is the accept loop every listener shares (connection limit, TLS or plain,
//! shutdown); a [`Front`] is what one connection does with its bytes. The remoting protocol's
//! front, [`serve`], is described below; the Kafka front (`broker::kafka`) answers in request
//! order instead.
//!
//! Each accepted remoting connection gets a reader loop and a writer task. The reader turns frames into
//! requests with the codec and hands them to a [`Service`]. A service answers either at once
//! ([`Handled::Now`]) or with a future ([`Handled::Later`]) that runs on its own task, so a pull
//! held for long polling or a send waiting for a sync flush never stalls the other requests a
//! client multiplexes over the same connection. Work that must keep arrival order (appending to the
//! CommitLog) happens inside `Service::handle`, on the reader, before any future is returned.
//! Once a request is decoded its frame is dropped: a pending reply keeps only its `ReplyTo`
//! (code, opaque, header type), not a send's megabytes of body.
//!
//! Replies and server-initiated requests (such as `NOTIFY_CONSUMER_IDS_CHANGED`) go through the
//! connection's [`ClientChannel`], whose writer task batches queued frames into few syscalls. A
//! server-initiated request that wants an answer ([`ClientChannel::request`], e.g. a consumer's
//! running info asked for an operator) waits under its own opaque; the reader hands the client's
//! response frame to it, and ignores responses nobody waits for.
//!
//! [`Limits`] bound what one peer can hold: connections beyond `max_connections` are closed at
//! accept; a connection that completes no frame and is sent none for `idle_timeout` is closed (as
//! Java's `IdleStateHandler` closes it, but counting whole frames, so a peer trickling a byte a
//! second is reaped too); at most `max_in_flight` requests of a connection are in progress, more
//! are answered SYSTEM_BUSY before they run; and what is still in progress when the connection
//! closes (a held pull) is dropped with it.
//!
//! With [`serve`] a connection first goes through `ServerTls::accept` (told TLS from
//! plain by its first byte, handshake bounded by `handshake_timeout`), under the same connection
//! limit; the frames then flow the same way over either stream.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use skiff_model::admin::ClientAnswer;
use skiff_model::command::ErrorKind;
use skiff_model::command::{Reply, Request};
use skiff_protocol::remoting::{self, LanguageCode, RemotingCodec, RemotingCommand, ReplyTo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::tls::{Accepted, ServerTls};

/// Frames a connection may have queued for writing before senders wait.
const OUTBOUND_QUEUE: usize = 4096;

/// Java's answer when its request thread pool is full (`NettyRemotingAbstract`).
pub const OVERLOAD_REMARK: &str = "[OVERLOAD]system busy, start flow control for a while";

/// What one listener lets its peers hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest frame accepted; a longer one closes the connection.
    pub max_frame_len: usize,
    /// A connection with no complete frame either way for this long is closed.
    pub idle_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// Requests of one connection in progress at once.
    pub max_in_flight: usize,
    /// A TLS handshake (and, in enforcing mode, the wait for it) not done by then is closed.
    pub handshake_timeout: Duration,
}

impl Limits {
    /// Java's defaults (`serverChannelMaxIdleTimeSeconds` = 120) and Skiff's.
    pub fn new(max_frame_len: usize) -> Self {
        Limits {
            max_frame_len,
            idle_timeout: Duration::from_secs(120),
            max_connections: 10_000,
            max_in_flight: 4096,
            handshake_timeout: crate::tls::HANDSHAKE_TIMEOUT,
        }
    }
}

/// A reply that needs more time: awaited on its own task.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send + 'static>>;

/// How a service answered a request.
pub enum Handled {
    Now(Reply),
    Later(ReplyFuture),
}

/// Who sent a request.
#[derive(Clone)]
pub struct RequestContext {
    pub channel: ClientChannel,
    /// The implementation language the request's header names.
    pub language: LanguageCode,
    /// The client version the request's header names (`MQVersion` ordinal).
    pub version: i32,
}

/// Something that answers requests: the name server or the broker.
pub trait Service: Send + Sync + 'static {
    fn handle(self: Arc<Self>, ctx: &RequestContext, request: Request) -> Handled;

    /// A connection is open (each is later closed by [`Service::on_disconnect`]).
    fn on_connect(&self, _channel: &ClientChannel) {}

    /// The connection closed (or failed); forget what was tied to it.
    fn on_disconnect(&self, _channel: &ClientChannel) {}

    /// ACL: when set, every request is checked before it is decoded or handled.
    fn access_control(&self) -> Option<&crate::acl::AccessControl> {
        None
    }

    /// ACL 2.0: whether [`Service::authenticate`] checks requests.
    fn authenticates(&self) -> bool {
        false
    }

    /// ACL 2.0: checks one request before it is decoded or handled; `Err` is the answer.
    fn authenticate(&self, _access: &skiff_model::acl::AccessRequest) -> Result<(), Reply> {
        Ok(())
    }

    /// A handled request was answered (or, oneway, done): for `rocketmq_rpc_latency`.
    fn on_answered(&self, _answered: &Answered) {}
}

/// What [`Service::on_answered`] learns about a request.
pub struct Answered {
    pub request_code: i32,
    pub response_code: i32,
    pub oneway: bool,
    /// Answered from its own task ([`Handled::Later`]), e.g. a held pull.
    pub later: bool,
    /// From the request handed to the service to its reply encoded.
    pub elapsed: std::time::Duration,
}

struct ChannelInner {
    id: u64,
    peer: SocketAddr,
    outbound: mpsc::Sender<RemotingCommand>,
    next_opaque: AtomicI32,
    closed: CancellationToken,
    /// Requests sent to the client that wait for its response, by opaque.
    awaiting: Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>,
}

/// Why a request to a client got no response.
#[derive(Debug, thiserror::Error)]
pub enum ClientRequestError {
    #[error("the connection to {0} is closed")]
    Closed(SocketAddr),
    #[error("{0} did not answer within {1:?}")]
    Timeout(SocketAddr, Duration),
}

/// One client connection, as handlers see it: an identity and a way to write to it.
#[derive(Clone)]
pub struct ClientChannel(Arc<ChannelInner>);

impl ClientChannel {
    /// A process-unique id of the connection.
    pub fn id(&self) -> u64 {
        self.0.id
    }

    pub fn peer(&self) -> SocketAddr {
        self.0.peer
    }

    /// Sends a request the client does not answer (for example NOTIFY_CONSUMER_IDS_CHANGED).
    /// Dropped, not awaited, when the connection's queue is full: such notices are hints that the
    /// client also gets from its periodic work.
    pub fn send_oneway(&self, request: &Request) {
        let opaque = self.0.next_opaque.fetch_add(1, Ordering::Relaxed);
        let frame = remoting::encode_request(request, opaque, true);
        if self.0.outbound.try_send(frame).is_err() {
            debug!(peer = %self.0.peer, "dropping a oneway request: connection busy or closed");
        }
    }

    /// Sends a request and waits up to `timeout` for the client's answer (as Java's
    /// `Broker2Client.callClient`). The answer comes back through the connection's reader; the
    /// caller sees its code, remark and body, not the wire frame.
    pub async fn request(
        &self,
        request: &Request,
        timeout: Duration,
    ) -> Result<ClientAnswer, ClientRequestError> {
        let opaque = self.0.next_opaque.fetch_add(1, Ordering::Relaxed);
        let frame = remoting::encode_request(request, opaque, false);
        let (tx, rx) = oneshot::channel();
        self.0.awaiting.lock().insert(opaque, tx);
        let answered = async {
            if self.0.outbound.send(frame).await.is_err() {
                return Err(ClientRequestError::Closed(self.0.peer));
            }
            rx.await
                .map_err(|_| ClientRequestError::Closed(self.0.peer))
        };
        let result = tokio::time::timeout(timeout, answered)
            .await
            .unwrap_or(Err(ClientRequestError::Timeout(self.0.peer, timeout)));
        self.0.awaiting.lock().remove(&opaque);
        result.map(|response| ClientAnswer {
            code: response.code,
            remark: response.remark,
            body: response.body.to_bytes(),
        })
    }

    /// Hands a response to the request waiting for it; false if none waits (it timed out).
    fn deliver_response(&self, response: RemotingCommand) -> bool {
        let waiting = self.0.awaiting.lock().remove(&response.opaque);
        waiting.is_some_and(|tx| tx.send(response).is_ok())
    }

    /// Closes the connection (for example after the client stopped heartbeating).
    pub fn close(&self) {
        self.0.closed.cancel();
    }

    pub fn is_closed(&self) -> bool {
        self.0.closed.is_cancelled() || self.0.outbound.is_closed()
    }

    async fn send(&self, frame: RemotingCommand) {
        if self.0.outbound.send(frame).await.is_err() {
            debug!(peer = %self.0.peer, "reply dropped: connection closed");
        }
    }
}

impl PartialEq for ClientChannel {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}

impl Eq for ClientChannel {}

impl std::hash::Hash for ClientChannel {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.id.hash(state);
    }
}

impl std::fmt::Debug for ClientChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientChannel#{}({})", self.0.id, self.0.peer)
    }
}

#[cfg(test)]
impl ClientChannel {
    /// A channel with no socket behind it; frames sent to it arrive on the returned receiver.
    pub(crate) fn detached(peer: SocketAddr) -> (ClientChannel, mpsc::Receiver<RemotingCommand>) {
        let (tx, rx) = mpsc::channel(OUTBOUND_QUEUE);
        let channel = ClientChannel(Arc::new(ChannelInner {
            id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
            peer,
            outbound: tx,
            next_opaque: AtomicI32::new(1),
            closed: CancellationToken::new(),
            awaiting: Mutex::default(),
        }));
        (channel, rx)
    }
}

static NEXT_CHANNEL_ID: AtomicU64 = AtomicU64::new(1);

/// A wire protocol a listener speaks: what one accepted connection does with its bytes. The
/// remoting protocol is [`serve`]'s, answering out of order under each request's opaque; the
/// Kafka front (`broker::kafka`) answers in request order. Both share [`serve_front`]'s accept
/// loop: the connection limit, TLS or plain, and shutdown.
pub trait Front: Send + Sync + 'static {
    /// Serves one connection until it closes, idles out ([`Limits::idle_timeout`]) or
    /// `conn.shutdown` fires.
    fn serve_connection<R, W>(
        self: Arc<Self>,
        read: R,
        write: W,
        conn: Connection,
    ) -> impl Future<Output = ()> + Send
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static;
}

/// What a [`Front`] knows of a connection it serves.
pub struct Connection {
    pub peer: SocketAddr,
    /// When it was accepted: idle time counts from here.
    pub opened: Instant,
    pub limits: Limits,
    pub shutdown: CancellationToken,
}

/// The remoting protocol's front: frames multiplexed by opaque, answered by `S`.
struct Remoting<S>(Arc<S>);

impl<S: Service> Front for Remoting<S> {
    fn serve_connection<R, W>(
        self: Arc<Self>,
        read: R,
        write: W,
        conn: Connection,
    ) -> impl Future<Output = ()> + Send
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        serve_connection(read, write, conn, self.0.clone())
    }
}

/// Serves the remoting protocol with `service` until `shutdown` fires, then waits for open
/// connections to finish (see [`serve_front`]).
pub async fn serve<S: Service>(
    listener: TcpListener,
    service: Arc<S>,
    limits: Limits,
    tls: Arc<ServerTls>,
    shutdown: CancellationToken,
) {
    serve_front(listener, Arc::new(Remoting(service)), limits, tls, shutdown).await
}

/// Accepts connections until `shutdown` fires, then waits for open connections to finish;
/// `limits` bound each connection and `tls` says which of TLS and plain TCP a new connection may
/// speak (`tls.server.mode`; [`ServerTls::disabled`] for plain only).
pub async fn serve_front<F: Front>(
    listener: TcpListener,
    front: Arc<F>,
    limits: Limits,
    tls: Arc<ServerTls>,
    shutdown: CancellationToken,
) {
    let tracker = TaskTracker::new();
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let mut refused: u64 = 0;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let Ok(permit) = connections.clone().try_acquire_owned() else {
                        refused += 1;
                        if refused.is_power_of_two() {
                            warn!(%peer, refused, max = limits.max_connections, "too many connections: closing new ones (serverMaxConnections)");
                        }
                        drop(stream);
                        continue;
                    };
                    let front = front.clone();
                    let shutdown = shutdown.clone();
                    let tls = tls.clone();
                    tracker.spawn(async move {
                        // Idle time counts from accept, the wait for a first byte included.
                        let conn = Connection {
                            peer,
                            opened: Instant::now(),
                            limits,
                            shutdown: shutdown.clone(),
                        };
                        let _ = stream.set_nodelay(true);
                        let accepted = tokio::select! {
                            accepted = tls.accept(stream, peer, limits.idle_timeout, limits.handshake_timeout) => accepted,
                            _ = shutdown.cancelled() => None,
                        };
                        match accepted {
                            Some(Accepted::Plain(stream)) => {
                                let (read, write) = stream.into_split();
                                front.serve_connection(read, write, conn).await
                            }
                            Some(Accepted::Tls(stream)) => {
                                let (read, write) = tokio::io::split(*stream);
                                front.serve_connection(read, write, conn).await
                            }
                            None => {}
                        }
                        drop(permit);
                    });
                }
                Err(err) => {
                    // Typically EMFILE: back off briefly instead of spinning.
                    warn!(%err, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }
    tracker.close();
    tracker.wait().await;
}

/// How long a connection being shut down waits for its in-flight requests (sends waiting for a
/// flush, held pulls being released) before it closes anyway.
pub(crate) const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// When a connection last completed a frame either way, in ms since it opened.
pub(crate) struct Activity {
    opened: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    pub(crate) fn new(opened: Instant) -> Self {
        Activity {
            opened,
            last_ms: AtomicU64::new(0),
        }
    }

    pub(crate) fn touch(&self) {
        let ms = self.opened.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// When the connection counts as idle unless something happens before.
    pub(crate) fn idle_at(&self, idle: Duration) -> Instant {
        self.opened + Duration::from_millis(self.last_ms.load(Ordering::Relaxed)) + idle
    }
}

/// What a connection's reader got while waiting for its next frame.
pub(crate) enum Next<T> {
    /// A frame, or the codec's error.
    Frame(T),
    /// The peer closed its side.
    End,
    /// The connection was closed from within (its writer failed, or a handler closed it).
    Closed,
    /// The server is shutting down.
    ShuttingDown,
    /// No frame either way for `idle` (`serverChannelMaxIdleTimeSeconds`).
    Idle,
}

/// Waits for `frames`' next item, the connection's or the server's end, or `idle` without
/// activity (frames completed either way, as [`Activity`] counts them): every front's read loop.
pub(crate) async fn next_frame<F: futures::Stream + Unpin>(
    frames: &mut F,
    activity: &Activity,
    idle: Duration,
    closed: &CancellationToken,
    shutdown: &CancellationToken,
) -> Next<F::Item> {
    loop {
        let idle_at = activity.idle_at(idle);
        tokio::select! {
            _ = closed.cancelled() => return Next::Closed,
            _ = shutdown.cancelled() => return Next::ShuttingDown,
            // Sending also counts as activity: look again before closing.
            _ = tokio::time::sleep_until(idle_at.into()) => {
                if activity.idle_at(idle) <= Instant::now() {
                    return Next::Idle;
                }
            }
            frame = frames.next() => return frame.map_or(Next::End, Next::Frame),
        }
    }
}

/// Serves one connection's frames; `read_half` and `write_half` are the two directions of a plain
/// or a TLS stream.
async fn serve_connection<S, R, W>(read_half: R, write_half: W, conn: Connection, service: Arc<S>)
where
    S: Service,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Connection {
        peer,
        opened,
        limits,
        shutdown,
    } = conn;
    let max_frame_len = limits.max_frame_len;
    let mut frames = FramedRead::new(read_half, RemotingCodec::new(max_frame_len));
    let (tx, rx) = mpsc::channel(OUTBOUND_QUEUE);
    let closed = CancellationToken::new();
    let channel = ClientChannel(Arc::new(ChannelInner {
        id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
        peer,
        outbound: tx,
        next_opaque: AtomicI32::new(1),
        closed: closed.clone(),
        awaiting: Mutex::default(),
    }));
    debug!(?channel, "connection opened");
    service.on_connect(&channel);
    let activity = Arc::new(Activity::new(opened));
    let writer = tokio::spawn(write_frames(
        FramedWrite::new(write_half, RemotingCodec::new(max_frame_len)),
        rx,
        closed.clone(),
        activity.clone(),
    ));
    let in_flight = InFlight {
        tasks: TaskTracker::new(),
        permits: Arc::new(Semaphore::new(limits.max_in_flight)),
        closed: closed.clone(),
    };
    let mut draining = false;
    loop {
        let frame = match next_frame(
            &mut frames,
            &activity,
            limits.idle_timeout,
            &closed,
            &shutdown,
        )
        .await
        {
            Next::Frame(frame) => frame,
            Next::End | Next::Closed => break,
            Next::ShuttingDown => {
                draining = true;
                break;
            }
            Next::Idle => {
                info!(%peer, idle = ?limits.idle_timeout, "closing an idle connection (serverChannelMaxIdleTimeSeconds)");
                break;
            }
        };
        match frame {
            Ok(command) => {
                activity.touch();
                let ctx = RequestContext {
                    channel: channel.clone(),
                    language: command.language,
                    version: command.version,
                };
                dispatch(&service, &ctx, &in_flight, command).await
            }
            Err(err) => {
                info!(%peer, %err, "closing connection after a bad frame");
                break;
            }
        }
    }
    in_flight.tasks.close();
    if draining {
        // Let requests already accepted finish, so a send that was stored also gets its answer.
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, in_flight.tasks.wait()).await;
    }
    // Whatever is still in progress (held pulls) is dropped now, not at its timeout.
    closed.cancel();
    // Requests waiting for this client's responses learn now that none will come.
    channel.0.awaiting.lock().clear();
    service.on_disconnect(&channel);
    drop(channel);
    let _ = writer.await;
    debug!(%peer, "connection closed");
}

/// The requests of one connection in progress.
struct InFlight {
    tasks: TaskTracker,
    permits: Arc<Semaphore>,
    closed: CancellationToken,
}

async fn dispatch<S: Service>(
    service: &Arc<S>,
    ctx: &RequestContext,
    in_flight: &InFlight,
    command: RemotingCommand,
) {
    if command.is_response() {
        let (code, opaque) = (command.code, command.opaque);
        if !ctx.channel.deliver_response(command) {
            debug!(peer = %ctx.channel.peer(), code, opaque, "ignoring a response nobody waits for");
        }
        return;
    }
    let reply_to = ReplyTo::of(&command);
    // Refused before it runs, so a refused send was not stored.
    let Ok(permit) = in_flight.permits.clone().try_acquire_owned() else {
        if !reply_to.oneway {
            let busy = Reply::error(ErrorKind::SystemBusy, OVERLOAD_REMARK);
            ctx.channel
                .send(remoting::encode_reply_to(&reply_to, busy))
                .await;
        }
        return;
    };
    let acl = service.access_control();
    if acl.is_some() || service.authenticates() {
        let access = remoting::access_request(&command);
        let checked = match acl {
            Some(acl) => acl.authorize(ctx.channel.peer().ip(), &access),
            None => Ok(()),
        };
        if let Err(refused) = checked.and_then(|()| service.authenticate(&access)) {
            drop(permit);
            debug!(peer = %ctx.channel.peer(), code = command.code, "request refused by the ACL");
            if !reply_to.oneway {
                ctx.channel
                    .send(remoting::encode_reply_to(&reply_to, refused))
                    .await;
            }
            return;
        }
    }
    let begin = Instant::now();
    let handled = match remoting::decode_request(&command) {
        Ok(request) => service.clone().handle(ctx, request),
        Err(error) => Handled::Now(Reply::Error(error)),
    };
    // Only what the reply needs outlives the handling: not the frame, which a send's body may
    // make megabytes long, while the send waits for its flush.
    drop(command);
    match handled {
        Handled::Now(reply) => {
            drop(permit);
            let reply = remoting::encode_reply_to(&reply_to, reply);
            let answered = answered(&reply_to, &reply, false, begin);
            if !reply_to.oneway {
                ctx.channel.send(reply).await;
            }
            service.on_answered(&answered);
        }
        Handled::Later(future) => {
            let channel = ctx.channel.clone();
            let closed = in_flight.closed.clone();
            let service = service.clone();
            in_flight.tasks.spawn(async move {
                let _permit: OwnedSemaphorePermit = permit;
                let reply = tokio::select! {
                    reply = future => reply,
                    // Nobody to answer: drop the work (and what it holds) now.
                    _ = closed.cancelled() => return,
                };
                let reply = remoting::encode_reply_to(&reply_to, reply);
                let answered = answered(&reply_to, &reply, true, begin);
                if !reply_to.oneway {
                    channel.send(reply).await;
                }
                service.on_answered(&answered);
            });
        }
    }
}

fn answered(request: &ReplyTo, reply: &RemotingCommand, later: bool, begin: Instant) -> Answered {
    Answered {
        request_code: request.code,
        response_code: reply.code,
        oneway: request.oneway,
        later,
        elapsed: begin.elapsed(),
    }
}

/// Writes queued frames, flushing only when the queue is drained so bursts share syscalls.
async fn write_frames<W: AsyncWrite + Unpin>(
    mut sink: FramedWrite<W, RemotingCodec>,
    mut queue: mpsc::Receiver<RemotingCommand>,
    closed: CancellationToken,
    activity: Arc<Activity>,
) {
    loop {
        let frame = tokio::select! {
            _ = closed.cancelled() => break,
            frame = queue.recv() => frame,
        };
        let Some(frame) = frame else { break };
        if sink.feed(frame).await.is_err() {
            break;
        }
        while let Ok(frame) = queue.try_recv() {
            if sink.feed(frame).await.is_err() {
                closed.cancel();
                return;
            }
        }
        if sink.flush().await.is_err() {
            break;
        }
        activity.touch();
    }
    closed.cancel();
    // Best effort: deliver what was already queued before the close.
    while let Ok(frame) = queue.try_recv() {
        if sink.feed(frame).await.is_err() {
            return;
        }
    }
    let _ = sink.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_model::admin::AdminCommand;

    fn running_info_request() -> Request {
        Request::Admin(AdminCommand::ConsumerRunningInfo {
            group: "g".into(),
            client_id: "c".into(),
            jstack: false,
        })
    }

    #[tokio::test]
    async fn a_request_to_a_client_gets_the_response_with_its_opaque() {
        let (channel, mut sent) = ClientChannel::detached("127.0.0.1:1".parse().unwrap());
        let asking = {
            let channel = channel.clone();
            tokio::spawn(async move {
                channel
                    .request(&running_info_request(), Duration::from_secs(5))
                    .await
            })
        };
        let request = sent.recv().await.unwrap();
        assert!(!request.is_response() && !request.is_oneway());
        assert_eq!(request.ext("clientId"), Some("c"));
        // A response nobody asked for is ignored.
        assert!(!channel.deliver_response(RemotingCommand::response(0, request.opaque + 100)));
        let mut response = RemotingCommand::response(0, request.opaque);
        response.remark = Some("running".into());
        assert!(channel.deliver_response(response));
        let answer = asking.await.unwrap().unwrap();
        assert_eq!(answer.remark.as_deref(), Some("running"));
        assert!(channel.0.awaiting.lock().is_empty());
    }

    #[tokio::test]
    async fn a_silent_client_times_out_and_a_closed_one_fails_at_once() {
        let (channel, _sent) = ClientChannel::detached("127.0.0.1:1".parse().unwrap());
        let err = channel
            .request(&running_info_request(), Duration::from_millis(20))
            .await
            .unwrap_err();
        assert!(matches!(err, ClientRequestError::Timeout(..)), "{err}");
        assert!(
            channel.0.awaiting.lock().is_empty(),
            "the waiter is removed"
        );

        let (channel, sent) = ClientChannel::detached("127.0.0.1:2".parse().unwrap());
        drop(sent);
        let err = channel
            .request(&running_info_request(), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(err, ClientRequestError::Closed(..)), "{err}");
    }
}
