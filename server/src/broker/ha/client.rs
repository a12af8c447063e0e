//! The slave's side of replication, as I/O around [`SlaveCore`]: connect to the master's HA port
//! (`haMasterAddress`, else the `haServerAddr` the name servers answer), report the CommitLog end,
//! append what the master streams, and reconnect every 5 s when the link drops, as Java's
//! `DefaultHAClient` does.
//!
//! Before each connect, unlike Java, it asks the master's remoting port (`masterAddr`) whether
//! the master's CommitLog continues this slave's ([`divergence`](super::divergence)), and does not
//! stream while it does not; the question is asked again at every reconnect, so an operator's fix
//! is picked up. With `haTransferFromMinOffset` an empty store first takes the master's oldest
//! record, so that it copies the whole CommitLog rather than a Java master's last segment.
//!
//! What GET_BROKER_HA_STATUS shows of the client (`HAClientRuntimeInfo`) is kept in
//! [`ClientStatus`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use skiff_model::admin::{AdminCommand, AdminReply, HaClientStatus};
use skiff_model::command::{ErrorKind, Reply, Request};
use skiff_model::route::RegistrationResult;
use skiff_store::{MessageStore, ReplicaError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use super::divergence::{self, MasterRecord, Refusal};
use super::slave::{SlaveCore, SlaveOut};
use super::{ByteRate, CloseReason, HaTimings};
use crate::broker::now_millis;
use crate::remoting_client::RemotingClient;

/// Java's wait before connecting again (`DefaultHAClient.closeMasterAndWait`).
const RECONNECT_DELAY: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Java's timeout for a slave's remoting calls to its master (`SlaveSynchronize`).
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// The room each read has at least: several of a master's 32 KiB frames, appended with one
/// blocking call ([`Queue::take_appends`]).
const READ_BUFFER: usize = 1024 * 1024;
/// The size of each of the [`ReadBuffers`].
const BUFFER_SIZE: usize = 4 * READ_BUFFER;
/// Read buffers kept for reuse beyond the one being read into (with [`MAX_QUEUED`], about as
/// many as can still be appending).
const MAX_SPARE_BUFFERS: usize = 3;
/// A Skiff slave accepts frames up to this size (a Java master sends 32 KiB).
const MAX_FRAME_BODY: usize = 16 * 1024 * 1024;

/// Where the slave finds its master.
pub(crate) struct MasterSource {
    /// `haMasterAddress`: fixed, never replaced.
    pub(crate) fixed: Option<String>,
    /// The name servers' answers to the slave's registrations.
    pub(crate) announced: watch::Receiver<RegistrationResult>,
    /// Whether the master's remoting port speaks TLS (for the checks before streaming).
    pub(crate) tls: bool,
    /// `innerClientAuthenticationCredentials`, for a master with ACL.
    pub(crate) credentials: Option<Arc<crate::acl::Credentials>>,
}

impl MasterSource {
    /// The master's HA address and, when the name servers named it, its remoting address.
    fn current(&mut self) -> Option<(String, Option<String>)> {
        let announced = self.announced.borrow_and_update();
        let ha = self
            .fixed
            .clone()
            .or_else(|| announced.ha_server_addr.clone())?;
        Some((ha, announced.master_addr.clone()))
    }
}

/// The client as GET_BROKER_HA_STATUS shows it: the master's HA address in use, when bytes
/// last came and when a report last went, and bytes read per second.
#[derive(Default)]
pub(crate) struct ClientStatus(Mutex<ClientState>);

#[derive(Default)]
struct ClientState {
    master_addr: Option<String>,
    last_read_ms: i64,
    last_write_ms: i64,
    received: ByteRate,
}

impl ClientStatus {
    /// Java's `HAClientRuntimeInfo` for a slave whose CommitLog ends at `max_offset`.
    pub(crate) fn snapshot(&self, max_offset: i64, now_ms: i64) -> HaClientStatus {
        let state = self.0.lock();
        HaClientStatus {
            master_addr: state.master_addr.clone(),
            transferred_bytes_per_second: state.received.per_second(now_ms),
            max_offset,
            last_read_timestamp: state.last_read_ms,
            last_write_timestamp: state.last_write_ms,
            // Java's `masterFlushedOffset` is kept for controller mode only.
            master_flush_offset: 0,
        }
    }

    fn read(&self, bytes: usize, now_ms: i64) {
        let mut state = self.0.lock();
        state.last_read_ms = now_ms;
        state.received.add(bytes, now_ms);
    }
}

/// Why the slave does not stream this time.
enum NotYet {
    /// The master's CommitLog does not continue this slave's.
    Refused(Refusal),
    /// The master could not be asked.
    Unchecked(String),
}

/// Replicates from the master until `shutdown`.
pub(crate) async fn run(
    store: Arc<MessageStore>,
    mut master: MasterSource,
    timings: HaTimings,
    status: Arc<ClientStatus>,
    shutdown: CancellationToken,
) {
    {
        // Java's client starts both clocks when it is made.
        let mut state = status.0.lock();
        state.last_read_ms = now_millis();
        state.last_write_ms = state.last_read_ms;
    }
    let from_oldest = timings.transfer_from_min_offset;
    let mut core = SlaveCore::new(timings, store.commit_log_segment_size(), MAX_FRAME_BODY);
    // The refusal last logged as an error: the same one, every 5 s, is only repeated in debug.
    let mut refused: Option<Refusal> = None;
    loop {
        let Some((addr, remoting_addr)) = master.current() else {
            // No master registered yet: wait for the name servers to name one.
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = master.announced.changed() => {}
                _ = tokio::time::sleep(RECONNECT_DELAY) => {}
            }
            continue;
        };
        status.0.lock().master_addr = Some(addr.clone());
        match &remoting_addr {
            Some(remoting_addr) => {
                match check_master(&store, remoting_addr, &master, from_oldest).await {
                    Ok(()) => refused = None,
                    Err(NotYet::Refused(refusal)) => {
                        if refused.as_ref() != Some(&refusal) {
                            error!(master = %remoting_addr, ha_master = %addr, %refusal, "replication refused: the slave does not stream from this master; checked again every 5 s");
                        } else {
                            debug!(master = %remoting_addr, %refusal, "replication still refused");
                        }
                        refused = Some(refusal);
                        if pause(&shutdown).await {
                            return;
                        }
                        continue;
                    }
                    Err(NotYet::Unchecked(err)) => {
                        warn!(master = %remoting_addr, ha_master = %addr, %err, "cannot check that the master's CommitLog continues this slave's; not streaming, retrying in 5 s");
                        if pause(&shutdown).await {
                            return;
                        }
                        continue;
                    }
                }
            }
            None => {
                warn!(ha_master = %addr, "the master's remoting address (masterAddr) is not known yet (haMasterAddress is set and no name server answered one): streaming without checking that the master's CommitLog continues this slave's")
            }
        }
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
        let reason = replicate(stream, &store, &mut core, &status, &shutdown).await;
        let held = store.commit_log_max_offset();
        match &reason {
            CloseReason::Eof if shutdown.is_cancelled() => return,
            CloseReason::Store(_) => {
                error!(master = %addr, replicated_up_to = held, %reason, "replication link closed: this store refused the master's bytes (nothing of them appended); reconnecting in 5 s. If it repeats, the master's CommitLog is damaged or is not this slave's: move this store aside or fix the master");
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

/// Asks the master at `remoting_addr` whether its CommitLog continues this slave's: the same
/// segment size, and on a non-empty store the same bytes at the offset of our last record. An
/// empty store with `from_oldest` then starts with the master's oldest record.
async fn check_master(
    store: &Arc<MessageStore>,
    remoting_addr: &str,
    source: &MasterSource,
    from_oldest: bool,
) -> Result<(), NotYet> {
    let client = RemotingClient::connect_with(remoting_addr, CALL_TIMEOUT, source.tls)
        .await
        .map_err(|err| NotYet::Unchecked(err.to_string()))?
        .signed_by(source.credentials.clone());
    let config = client
        .invoke(&Request::Admin(AdminCommand::GetBrokerConfig), CALL_TIMEOUT)
        .await;
    match config {
        Ok(Reply::Admin(AdminReply::Config { properties, .. })) => {
            match divergence::master_segment_size(&properties) {
                Some(theirs) => {
                    divergence::check_segment_size(store.commit_log_segment_size(), theirs)
                        .map_err(NotYet::Refused)?
                }
                // Not a reason to stop: the slave's core still refuses a blank that does not
                // end where its segment ends.
                None => warn!(
                    master = %remoting_addr,
                    "the master's configuration does not show {}: segment sizes not compared",
                    divergence::SEGMENT_SIZE_KEY
                ),
            }
        }
        // An answer, if a refusal (ACL): the same as a master that does not say.
        Ok(Reply::Error(err)) => warn!(
            master = %remoting_addr,
            "the master refused GET_BROKER_CONFIG ({}): segment sizes not compared",
            err.message
        ),
        Ok(other) => return Err(NotYet::Unchecked(format!("GET_BROKER_CONFIG: {other:?}"))),
        Err(err) => return Err(NotYet::Unchecked(format!("GET_BROKER_CONFIG: {err}"))),
    }
    let (ours, end) = {
        let store = store.clone();
        tokio::task::spawn_blocking(move || (store.last_record(), store.commit_log_max_offset()))
            .await
            .map_err(|err| NotYet::Unchecked(err.to_string()))?
    };
    let Some((offset, record)) = ours else {
        // An empty store has nothing to compare: the master's first transfer places it, or
        // with `haTransferFromMinOffset` the master's oldest record does.
        if from_oldest && end == 0 {
            return start_from_oldest(store, &client, remoting_addr).await;
        }
        return Ok(());
    };
    let theirs = view_message(&client, offset).await?;
    let theirs = match &theirs {
        Some(bytes) => MasterRecord::Found(bytes),
        None => MasterRecord::Missing,
    };
    divergence::check_last_record((offset, &record), end, theirs).map_err(NotYet::Refused)
}

/// `haTransferFromMinOffset` on a slave: an empty store first takes the master's oldest record
/// (GET_BROKER_RUNTIME_INFO's `commitLogMinOffset`, a segment start), so that its first report
/// asks for what follows. Reporting 0 instead would get a Java master's last segment only.
async fn start_from_oldest(
    store: &Arc<MessageStore>,
    client: &RemotingClient,
    remoting_addr: &str,
) -> Result<(), NotYet> {
    let oldest = match client
        .invoke(&Request::GetBrokerRuntimeInfo, CALL_TIMEOUT)
        .await
    {
        Ok(Reply::KeyValues(table)) => table
            .get("commitLogMinOffset")
            .and_then(|value| value.parse::<i64>().ok()),
        Ok(other) => {
            return Err(NotYet::Unchecked(format!(
                "GET_BROKER_RUNTIME_INFO: {other:?}"
            )))
        }
        Err(err) => return Err(NotYet::Unchecked(format!("GET_BROKER_RUNTIME_INFO: {err}"))),
    };
    // -1 (no segment) or nothing said: the master's first transfer places the store.
    let Some(oldest) = oldest.filter(|offset| *offset >= 0) else {
        return Ok(());
    };
    let Some(record) = view_message(client, oldest).await? else {
        return Ok(()); // an empty master: it starts at 0 anyway
    };
    let store = store.clone();
    match tokio::task::spawn_blocking(move || store.append_replicated(oldest, &record)).await {
        Ok(Ok(end)) => {
            info!(master = %remoting_addr, from = oldest, end, "copying the master's whole CommitLog (haTransferFromMinOffset)");
            Ok(())
        }
        Ok(Err(err)) => Err(NotYet::Unchecked(format!(
            "the master's oldest record at {oldest} does not fit this store: {err}"
        ))),
        Err(err) => Err(NotYet::Unchecked(err.to_string())),
    }
}

/// VIEW_MESSAGE_BY_ID: the master's stored bytes at `offset`, `None` when it holds no record
/// there.
async fn view_message(
    client: &RemotingClient,
    offset: i64,
) -> Result<Option<bytes::Bytes>, NotYet> {
    let request = Request::ViewMessage {
        commit_log_offset: offset,
    };
    match client.invoke(&request, CALL_TIMEOUT).await {
        Ok(Reply::Message(bytes)) => Ok(Some(bytes)),
        // Java's (and Skiff's) "can not find message by the offset".
        Ok(Reply::Error(err)) if err.kind == ErrorKind::SystemError => Ok(None),
        Ok(other) => Err(NotYet::Unchecked(format!("VIEW_MESSAGE_BY_ID: {other:?}"))),
        Err(err) => Err(NotYet::Unchecked(format!("VIEW_MESSAGE_BY_ID: {err}"))),
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
///
/// The socket is read while an append runs on a blocking thread (one at a time, in order), so
/// the master is not held by a full receive window for as long as a write takes; what arrives
/// meanwhile waits, up to [`MAX_QUEUED`] bytes, and goes to the store with the next append.
async fn replicate(
    mut stream: TcpStream,
    store: &Arc<MessageStore>,
    core: &mut SlaveCore,
    status: &ClientStatus,
    shutdown: &CancellationToken,
) -> CloseReason {
    core.on_connected(store.commit_log_max_offset(), now_millis());
    let segment_size = store.commit_log_segment_size();
    let mut buffers = ReadBuffers::new();
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let mut queue = Queue::default();
    let mut appending: Option<JoinHandle<Result<i64, ReplicaError>>> = None;
    let reason = loop {
        queue.extend(core.take_ready());
        // What can be done now, in order: reports, and the next append once the last is done.
        let closed = loop {
            match queue.outs.front() {
                None => break None,
                Some(SlaveOut::Write(_)) => {
                    let Some(SlaveOut::Write(report)) = queue.outs.pop_front() else {
                        unreachable!("just seen")
                    };
                    if let Err(err) = stream.write_all(&report).await {
                        break Some(CloseReason::Io(err.to_string()));
                    }
                    status.0.lock().last_write_ms = now_millis();
                }
                Some(SlaveOut::Append { .. }) if appending.is_some() => break None,
                Some(SlaveOut::Append { .. }) => {
                    let (offset, parts) = queue.take_appends(segment_size);
                    let store = store.clone();
                    appending = Some(tokio::task::spawn_blocking(move || {
                        let parts: Vec<&[u8]> = parts.iter().map(|p| p.as_ref()).collect();
                        store.append_replicated_parts(offset, &parts)
                    }));
                }
                // Appends before a close are the master's valid bytes: they are finished below.
                Some(SlaveOut::Close(_)) => {
                    let Some(SlaveOut::Close(reason)) = queue.outs.pop_front() else {
                        unreachable!("just seen")
                    };
                    break Some(reason);
                }
            }
        };
        if let Some(reason) = closed {
            break reason;
        }
        let room = queue.bytes < MAX_QUEUED;
        buffers.make_room();
        let buf = &mut buffers.current;
        tokio::select! {
            _ = shutdown.cancelled() => break CloseReason::Eof,
            done = async { appending.as_mut().expect("guarded").await }, if appending.is_some() => {
                appending = None;
                match done {
                    Ok(Ok(end)) => core.on_appended(end, now_millis()),
                    Ok(Err(err)) => break CloseReason::Store(err.to_string()),
                    Err(err) => break CloseReason::Store(err.to_string()),
                }
            }
            _ = ticks.tick() => core.tick(now_millis()),
            read = stream.read_buf(buf), if room => match read {
                Ok(0) => core.on_eof(),
                Ok(n) => {
                    let now = now_millis();
                    status.read(n, now);
                    core.on_bytes(buf, now);
                }
                Err(err) => break CloseReason::Io(err.to_string()),
            },
        }
    };
    // The next connection starts from the store's end: the running append must be done first.
    if let Some(appending) = appending {
        if let Ok(Ok(end)) = appending.await {
            core.on_appended(end, now_millis());
        }
    }
    reason
}

/// Bytes read and not yet appended, beyond which the slave stops reading (the master then waits
/// on the socket's window).
const MAX_QUEUED: usize = 8 * 1024 * 1024;

/// Where the socket's bytes are read to. Frames are cut from a buffer without a copy and keep it
/// alive until their append is done; a buffer whose frames are all appended is then read into
/// again rather than freed, as fresh memory costs a page fault per 4 KiB when the socket's bytes
/// are copied in (a tenth of a catching-up slave's core went to those faults).
struct ReadBuffers {
    /// The buffer being read into; it holds the start of the next frame.
    current: BytesMut,
    /// Earlier buffers, emptied, whose frames may still be appending.
    spare: Vec<BytesMut>,
}

impl ReadBuffers {
    fn new() -> Self {
        ReadBuffers {
            current: BytesMut::with_capacity(BUFFER_SIZE),
            spare: Vec::new(),
        }
    }

    /// Leaves room for a read of at least [`READ_BUFFER`] bytes after what `current` holds: in
    /// `current` if its frames are all done (what it holds moves to the front), else in the
    /// first spare whose frames are, else in a new buffer; what `current` held is copied over.
    fn make_room(&mut self) {
        // `try_reclaim` succeeds only where no frame cut from the buffer is alive.
        if self.current.try_reclaim(READ_BUFFER) {
            return;
        }
        let held = self.current.len();
        let mut next = match self
            .spare
            .iter_mut()
            .position(|spare| spare.try_reclaim(BUFFER_SIZE))
        {
            Some(i) => self.spare.swap_remove(i),
            None => BytesMut::with_capacity(BUFFER_SIZE),
        };
        // More than a buffer's room only when a frame larger than it is arriving.
        next.reserve(held + READ_BUFFER);
        next.extend_from_slice(&self.current);
        let mut previous = std::mem::replace(&mut self.current, next);
        if self.spare.len() < MAX_SPARE_BUFFERS {
            previous.clear();
            self.spare.push(previous);
        }
    }
}

/// What the core asked for and the shell has not done yet.
#[derive(Default)]
struct Queue {
    outs: VecDeque<SlaveOut>,
    /// The bytes of the queued appends.
    bytes: usize,
}

impl Queue {
    fn extend(&mut self, outs: Vec<SlaveOut>) {
        for out in outs {
            if let SlaveOut::Append { bytes, .. } = &out {
                self.bytes += bytes.len();
            }
            self.outs.push_back(out);
        }
    }

    /// Takes the appends at the front that continue one another within one CommitLog segment,
    /// so that many small frames cost one blocking call and one report, not one per frame (a
    /// store append never crosses a segment). The frames stay where they were read: the store
    /// writes the parts as they are. The front must be an append.
    fn take_appends(&mut self, segment_size: i64) -> (i64, Vec<Bytes>) {
        let Some(SlaveOut::Append { offset, bytes }) = self.outs.pop_front() else {
            unreachable!("the front is an append")
        };
        let first = offset;
        let mut end = offset + bytes.len() as i64;
        self.bytes -= bytes.len();
        let mut parts = vec![bytes];
        while let Some(SlaveOut::Append { offset, bytes }) = self.outs.front() {
            let last = offset + bytes.len() as i64 - 1;
            if *offset != end || first.div_euclid(segment_size) != last.div_euclid(segment_size) {
                break;
            }
            let Some(SlaveOut::Append { bytes, .. }) = self.outs.pop_front() else {
                unreachable!("just seen")
            };
            end += bytes.len() as i64;
            self.bytes -= bytes.len();
            parts.push(bytes);
        }
        (first, parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn append(offset: i64, len: usize) -> SlaveOut {
        SlaveOut::Append {
            offset,
            bytes: Bytes::from(vec![offset as u8; len]),
        }
    }

    #[test]
    fn a_read_buffer_is_reused_once_its_frames_are_dropped() {
        let mut buffers = ReadBuffers::new();
        let first = buffers.current.as_ptr();
        // A frame still appending, and the start of the next one, fill the buffer.
        buffers.current.resize(BUFFER_SIZE - 100, 1);
        let frame = buffers.current.split_to(BUFFER_SIZE - 150).freeze();
        buffers.make_room();
        assert_eq!(
            &buffers.current[..],
            &[1; 50],
            "the next frame's start moves over"
        );
        assert_ne!(
            buffers.current.as_ptr(),
            first,
            "a new buffer while the frame is alive"
        );
        assert!(buffers.current.capacity() >= READ_BUFFER + 50);
        let second = buffers.current.as_ptr();

        // The frame appended: its buffer is read into again, with what the current one held.
        drop(frame);
        buffers.current.resize(BUFFER_SIZE - 100, 2);
        let frame = buffers.current.split_to(BUFFER_SIZE - 120).freeze();
        buffers.make_room();
        assert_eq!(buffers.current.as_ptr(), first);
        assert_eq!(&buffers.current[..], &[2; 20]);
        assert_eq!(buffers.spare.len(), 1);

        // Nothing alive: the current buffer itself is reused, what it holds at its front.
        drop(frame);
        buffers.current.resize(BUFFER_SIZE - 100, 3);
        let consumed = buffers.current.split_to(BUFFER_SIZE - 110);
        drop(consumed);
        buffers.make_room();
        assert_eq!(buffers.current.as_ptr(), first);
        assert_eq!(&buffers.current[..], &[3; 10]);
        assert!(!buffers.spare.is_empty() && buffers.spare.len() <= MAX_SPARE_BUFFERS);
        assert_ne!(second, first);
    }

    #[test]
    fn adjacent_appends_join_within_a_segment_only() {
        let mut queue = Queue::default();
        queue.extend(vec![
            append(0, 10),
            append(10, 10),
            append(20, 12), // ends at the segment end (32)
            append(32, 8),  // the next segment
            append(40, 4),
            append(50, 4), // a gap: never joined
            SlaveOut::Write([0; 8]),
            append(54, 2),
        ]);
        assert_eq!(queue.bytes, 50);
        let (offset, parts) = queue.take_appends(32);
        assert_eq!(offset, 0);
        assert_eq!(parts.len(), 3, "the frames are kept, not joined");
        assert_eq!(&parts[0][..], &[0; 10]);
        assert_eq!(&parts[1][..], &[10; 10]);
        assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), 32);
        let spans: Vec<_> = [queue.take_appends(32), queue.take_appends(32)]
            .into_iter()
            .map(|(offset, parts)| (offset, parts.iter().map(|p| p.len()).sum::<usize>()))
            .collect();
        assert_eq!(spans, [(32, 12), (50, 4)]);
        assert!(matches!(queue.outs.pop_front(), Some(SlaveOut::Write(_))));
        assert_eq!(queue.take_appends(32).0, 54);
        assert_eq!(queue.bytes, 0);
        assert!(queue.outs.is_empty());
    }
}
