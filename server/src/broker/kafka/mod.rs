//! The Kafka listener (`kafkaListen`): Kafka clients produce to and fetch from the broker's
//! topics, a Kafka partition being a RocketMQ queue of the same id, and a record a message
//! (`skiff_model::keyed` has the mapping).
//!
//! A connection's frames are decoded by `skiff_protocol::kafka` and answered **in request
//! order**, as Kafka clients require: each request takes a slot in the connection's reply queue
//! when it arrives, and the writer sends the slots in that order as their answers are ready, so
//! a fetch held for new data delays the replies behind it, never reorders them. Produce appends
//! on the reader, in arrival order; a produce waiting for a sync flush and a held fetch finish on
//! tasks of their own, dropped when the connection closes. A request with `acks=0` takes no slot:
//! it gets no answer at all. The slots bound what a client can have in progress
//! (`serverMaxInFlightRequests`): past that the reader stops reading its socket.
//!
//! Served: ApiVersions, Metadata (with auto-creation), Produce (idempotent producers too, see
//! `idempotence`), Fetch (long polling), ListOffsets, InitProducerId, and classic consumer
//! groups (`groups`, a state machine without I/O; `group_api` on the wire; committed offsets in
//! `offsets`); `docs/kafka.md` lists versions and what is not served yet.

mod admin;
mod fetch;
mod group_api;
mod groups;
mod idempotence;
mod metadata;
mod offsets;
mod produce;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use skiff_protocol::kafka::schema::{InitProducerIdRequest, InitProducerIdResponse};
use skiff_protocol::kafka::{self, Decoded, ReplyTo, Request, Response};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use super::BrokerState;
use crate::net::{next_frame, Activity, Connection, Front, Next};

/// The node id Skiff's broker has in Kafka's metadata (leader, replicas and controller).
pub(super) const NODE_ID: i32 = 0;

/// The Kafka front of a broker.
pub(crate) struct KafkaFront {
    state: Arc<BrokerState>,
    /// Host and port Kafka clients are told to connect to.
    advertised: (String, u16),
    producer_ids: idempotence::ProducerIds,
    sequences: parking_lot::Mutex<idempotence::Sequences>,
    groups: Arc<group_api::Groups>,
    /// Bytes its connections may hold read ahead for their next fetch (`fetch::ReadAhead`).
    read_ahead_bytes: Arc<tokio::sync::Semaphore>,
}

impl KafkaFront {
    pub(super) fn new(state: Arc<BrokerState>, advertised: (String, u16)) -> Self {
        let config_dir = super::persist::config_dir(&state.config.store_path_root_dir);
        KafkaFront {
            producer_ids: idempotence::ProducerIds::load(config_dir.clone()),
            sequences: parking_lot::Mutex::default(),
            groups: Arc::new(group_api::Groups::new(offsets::GroupOffsets::load(
                config_dir,
            ))),
            state,
            advertised,
            read_ahead_bytes: Arc::new(tokio::sync::Semaphore::new(fetch::READ_AHEAD_BYTES)),
        }
    }

    /// Runs the consumer groups' timeouts (sessions, rebalances) until `shutdown`.
    pub(super) fn run_timers(&self, shutdown: CancellationToken) -> impl Future<Output = ()> {
        self.groups.clone().run_timers(shutdown)
    }
}

/// A response still being worked out.
type Pending = Pin<Box<dyn Future<Output = Response> + Send + 'static>>;

/// How a handler answered.
pub(super) enum Answer {
    Now(Response),
    Later(Pending),
    /// Produce with `acks=0`.
    Nothing,
}

/// One slot of a connection's reply queue.
enum Slot {
    Ready(Bytes),
    Waiting(oneshot::Receiver<Bytes>),
}

impl Front for KafkaFront {
    async fn serve_connection<R, W>(self: Arc<Self>, read: R, write: W, conn: Connection)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let Connection {
            peer,
            opened,
            limits,
            shutdown,
        } = conn;
        let mut frames = FramedRead::new(read, kafka::frame_codec(limits.max_frame_len));
        let (slots, queue) = mpsc::channel(limits.max_in_flight.max(1));
        let closed = CancellationToken::new();
        let activity = Arc::new(Activity::new(opened));
        let writer = tokio::spawn(write_in_order(
            BufWriter::with_capacity(WRITE_BUFFER, write),
            queue,
            closed.clone(),
            activity.clone(),
        ));
        let tasks = TaskTracker::new();
        let ahead = Arc::new(fetch::ReadAhead::new(self.read_ahead_bytes.clone()));
        debug!(%peer, "Kafka connection opened");
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
                Next::Frame(Ok(frame)) => frame.freeze(),
                Next::Frame(Err(err)) => {
                    info!(%peer, %err, "closing a Kafka connection after a bad frame");
                    break;
                }
                Next::End | Next::Closed | Next::ShuttingDown => break,
                Next::Idle => {
                    info!(%peer, idle = ?limits.idle_timeout, "closing an idle Kafka connection (serverChannelMaxIdleTimeSeconds)");
                    break;
                }
            };
            activity.touch();
            let (reply_to, answer) = match kafka::decode_request(frame) {
                Ok(Decoded::Request {
                    reply_to,
                    client_id,
                    request,
                }) => (
                    reply_to,
                    self.handle(peer, &ahead, client_id, reply_to, *request),
                ),
                Ok(Decoded::ApiVersionsTooNew { reply_to }) => (
                    reply_to,
                    Answer::Now(Response::ApiVersions(kafka::api_versions_too_new())),
                ),
                Err(err) => {
                    info!(%peer, %err, "closing a Kafka connection after a request Skiff does not serve");
                    break;
                }
            };
            let slot = match answer {
                Answer::Nothing => continue,
                Answer::Now(response) => match encode(&reply_to, &response) {
                    Some(bytes) => Slot::Ready(bytes),
                    None => break,
                },
                Answer::Later(pending) => {
                    let (tx, rx) = oneshot::channel();
                    let closed = closed.clone();
                    tasks.spawn(async move {
                        let response = tokio::select! {
                            response = pending => response,
                            _ = closed.cancelled() => return,
                        };
                        match encode(&reply_to, &response) {
                            Some(bytes) => {
                                let _ = tx.send(bytes);
                            }
                            // The writer finds the slot dropped and closes the connection.
                            None => drop(tx),
                        }
                    });
                    Slot::Waiting(rx)
                }
            };
            // Waits while the client has `max_in_flight` answers outstanding.
            let sent = tokio::select! {
                sent = slots.send(slot) => sent.is_ok(),
                _ = closed.cancelled() => false,
            };
            if !sent {
                break;
            }
        }
        tasks.close();
        drop(slots);
        if shutdown.is_cancelled() {
            // Answers already promised (a produce waiting for its flush) still go out.
            let _ = tokio::time::timeout(crate::net::DRAIN_TIMEOUT, tasks.wait()).await;
        } else {
            // The client left or broke the protocol: what it waits for (a held fetch) is dropped.
            closed.cancel();
        }
        let _ = writer.await;
        closed.cancel();
        debug!(%peer, "Kafka connection closed");
    }
}

impl KafkaFront {
    fn handle(
        self: &Arc<Self>,
        peer: SocketAddr,
        ahead: &Arc<fetch::ReadAhead>,
        client_id: Option<String>,
        reply_to: ReplyTo,
        request: Request,
    ) -> Answer {
        let state = &self.state;
        let version = reply_to.version;
        let groups = &self.groups;
        match request {
            Request::FindCoordinator(request) => {
                groups.find_coordinator(&self.advertised, version, request)
            }
            Request::JoinGroup(request) => groups.join(peer, client_id, version, request),
            Request::SyncGroup(request) => groups.sync(version, request),
            Request::Heartbeat(request) => groups.heartbeat(request),
            Request::LeaveGroup(request) => groups.leave(version, request),
            Request::OffsetCommit(request) => groups.commit(state, request),
            Request::OffsetFetch(request) => groups.offset_fetch(version, request),
            Request::DescribeGroups(request) => groups.describe(request),
            Request::ListGroups(request) => groups.list(request),
            Request::CreateTopics(request) => admin::create_topics(state, version, request),
            Request::DeleteTopics(request) => admin::delete_topics(state, groups, version, request),
            Request::DescribeConfigs(request) => admin::describe_configs(state, request),
            Request::ApiVersions(_) => Answer::Now(Response::ApiVersions(kafka::api_versions())),
            Request::Metadata(request) => {
                metadata::handle(state, &self.advertised, reply_to.version, request)
            }
            Request::Produce(request) => produce::handle(state, &self.sequences, peer, request),
            Request::InitProducerId(request) => self.init_producer_id(request),
            Request::Fetch(request) => fetch::handle(state, ahead, request),
            Request::ListOffsets(request) => fetch::list_offsets(state, request),
        }
    }
}

impl KafkaFront {
    /// InitProducerId: a new id at epoch 0, or, asked with the id and epoch a producer has, the
    /// same id at the next epoch (a new id when the epoch would overflow). Transactions are not
    /// served: a transactional id is refused with a code clients treat as fatal.
    fn init_producer_id(self: &Arc<Self>, request: InitProducerIdRequest) -> Answer {
        let mut response = InitProducerIdResponse::default();
        if let Some(transactional_id) = &request.transactional_id {
            // As Kafka: an empty id is INVALID_REQUEST; any other needs transactions.
            response.error_code = if transactional_id.0.is_empty() {
                kafka::error::INVALID_REQUEST
            } else {
                kafka::error::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            };
            response.producer_id = (-1).into();
            response.producer_epoch = -1;
            return Answer::Now(Response::InitProducerId(response));
        }
        let (id, epoch) = (request.producer_id.0, request.producer_epoch);
        if id >= 0 && (0..i16::MAX).contains(&epoch) {
            response.producer_id = id.into();
            response.producer_epoch = epoch + 1;
            return Answer::Now(Response::InitProducerId(response));
        }
        let front = self.clone();
        Answer::Later(Box::pin(async move {
            match front.producer_ids.allocate().await {
                Ok(id) => {
                    response.producer_id = id.into();
                    response.producer_epoch = 0;
                }
                Err(_) => {
                    response.error_code = kafka::error::KAFKA_STORAGE_ERROR;
                    response.producer_id = (-1).into();
                    response.producer_epoch = -1;
                }
            }
            Response::InitProducerId(response)
        }))
    }
}

fn encode(reply_to: &ReplyTo, response: &Response) -> Option<Bytes> {
    match kafka::encode_response(reply_to, response) {
        Ok(bytes) => Some(bytes),
        Err(err) => {
            // A response Skiff built that its schema cannot carry: a bug, not the client's.
            warn!(%err, "cannot encode a Kafka response; closing the connection");
            None
        }
    }
}

/// Replies smaller than this are gathered into one write; larger ones (Fetch answers) go to the
/// socket from their own buffer, without a copy.
const WRITE_BUFFER: usize = 64 * 1024;

/// Writes the reply queue's slots (whole frames) in order, flushing when no ready answer is left.
async fn write_in_order<W: AsyncWrite + Unpin>(
    mut sink: BufWriter<W>,
    mut queue: mpsc::Receiver<Slot>,
    closed: CancellationToken,
    activity: Arc<Activity>,
) {
    let mut dirty = false;
    loop {
        let slot = match queue.try_recv() {
            Ok(slot) => slot,
            Err(_) => {
                if dirty {
                    if sink.flush().await.is_err() {
                        break;
                    }
                    activity.touch();
                    dirty = false;
                }
                let next = tokio::select! {
                    _ = closed.cancelled() => break,
                    slot = queue.recv() => slot,
                };
                match next {
                    Some(slot) => slot,
                    None => break,
                }
            }
        };
        let bytes = match slot {
            Slot::Ready(bytes) => bytes,
            Slot::Waiting(answer) => {
                if dirty && sink.flush().await.is_err() {
                    break;
                }
                dirty = false;
                let answer = tokio::select! {
                    _ = closed.cancelled() => break,
                    answer = answer => answer,
                };
                match answer {
                    Ok(bytes) => bytes,
                    Err(_) => break,
                }
            }
        };
        if sink.write_all(&bytes).await.is_err() {
            break;
        }
        dirty = true;
    }
    if dirty {
        let _ = sink.flush().await;
    }
    closed.cancel();
}
