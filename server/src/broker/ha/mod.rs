//! Master/slave replication on RocketMQ's classic HA protocol (`DefaultHAService`): the pure
//! cores of both roles, in the shape of raft-rs's `RawNode`.
//!
//! [`master::MasterConn`] is one accepted slave connection on a master; [`slave::SlaveCore`] is a
//! slave's client, kept across reconnects. Each is a state machine fed with what happened (bytes
//! read, end of stream, the store's append done, time passing) and asked with `take_ready()` what
//! to do next (bytes to write, CommitLog bytes to append, acknowledgements, closing).
//!
//! The cores own the protocol's rules: where a master starts streaming, what a slave accepts,
//! where records end, heartbeats and housekeeping. They must not know sockets, tasks, the clock
//! or the store: times come in as `now_ms`, the master reads the CommitLog through
//! [`master::LogView`], and the slave only says what to append. Everything here is therefore
//! testable without I/O; the shells that drive the cores live next to them.

pub(crate) mod acks;
pub(crate) mod client;
pub(crate) mod divergence;
pub mod master;
pub(crate) mod service;
pub mod slave;

use std::fmt;

use skiff_protocol::ha::HaCodecError;

/// The timing and size settings both roles share, with Java's key names.
#[derive(Debug, Clone)]
pub struct HaTimings {
    /// `haSendHeartbeatInterval` (5000): the master heartbeats and the slave reports after this
    /// long without writing.
    pub heartbeat_interval_ms: i64,
    /// `haHousekeepingInterval` (20000): a connection that read nothing for this long is closed.
    pub housekeeping_interval_ms: i64,
    /// `haTransferBatchSize` (32 KiB): the largest body the master sends in one frame.
    pub transfer_batch_size: usize,
    /// Skiff-only `haTransferFromMinOffset` (false): on a master, a slave reporting 0 gets the
    /// master's whole CommitLog instead of only its last segment; on a slave, an empty store
    /// copies its master's whole CommitLog, whatever the master (Java's included).
    pub transfer_from_min_offset: bool,
}

impl HaTimings {
    /// The broker's `ha*` settings.
    pub(crate) fn of(config: &crate::config::BrokerConfig) -> Self {
        HaTimings {
            heartbeat_interval_ms: config.ha_send_heartbeat_interval as i64,
            housekeeping_interval_ms: config.ha_housekeeping_interval as i64,
            transfer_batch_size: config.ha_transfer_batch_size,
            transfer_from_min_offset: config.ha_transfer_from_min_offset,
        }
    }
}

impl Default for HaTimings {
    /// Java's defaults.
    fn default() -> Self {
        HaTimings {
            heartbeat_interval_ms: 5_000,
            housekeeping_interval_ms: 20_000,
            transfer_batch_size: 32 * 1024,
            transfer_from_min_offset: false,
        }
    }
}

/// Bytes moved per second as Java's `FlowMonitor` shows them (`transferredByteInSecond`): the
/// count of the last whole second, for GET_BROKER_HA_STATUS.
#[derive(Debug, Clone, Default)]
pub(crate) struct ByteRate {
    /// The second (epoch s) `this_second` counts.
    second: i64,
    this_second: i64,
    last_second: i64,
}

impl ByteRate {
    pub(crate) fn add(&mut self, bytes: usize, now_ms: i64) {
        let second = now_ms.div_euclid(1000);
        if second != self.second {
            self.last_second = if second == self.second + 1 {
                self.this_second
            } else {
                0
            };
            self.this_second = 0;
            self.second = second;
        }
        self.this_second += bytes as i64;
    }

    /// The bytes counted in the whole second before `now_ms`'s.
    pub(crate) fn per_second(&self, now_ms: i64) -> i64 {
        match now_ms.div_euclid(1000) - self.second {
            0 => self.last_second,
            1 => self.this_second,
            _ => 0,
        }
    }
}

/// Why a core closed its connection. The shell logs it (with the peer's address) and drops the
/// socket; a slave reconnects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// The peer closed the connection.
    Eof,
    /// Nothing was read for `idle_ms` (at least `haHousekeepingInterval`).
    Housekeeping { idle_ms: i64 },
    /// The master's stream is not valid HA framing.
    Codec(HaCodecError),
    /// The master sent a frame at `got` where the slave's CommitLog continues at `expected`.
    OffsetMismatch { expected: i64, got: i64 },
    /// An empty slave's first transfer starts at `first`, which is not a segment start.
    Misaligned { first: i64 },
    /// The bytes at `offset` are neither a CommitLog record nor a blank that fits its segment.
    BadRecord { offset: i64 },
    /// The slave's first report lies past the master's CommitLog end.
    SlaveAhead { slave: i64, master_max: i64 },
    /// The slave's first report lies before the master's oldest retained byte.
    BehindRetention { slave: i64, master_min: i64 },
    /// The master's end-of-segment blank shows segments of `master` bytes; ours are `ours`.
    SegmentSize { ours: i64, master: i64 },
    /// The socket failed (shells only).
    Io(String),
    /// The slave's store refused the master's bytes (shells only).
    Store(String),
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::Eof => write!(f, "the peer closed the HA connection"),
            CloseReason::Io(err) => write!(f, "the HA connection failed: {err}"),
            CloseReason::Store(err) => {
                write!(f, "the slave's store refused the master's bytes: {err}")
            }
            CloseReason::Housekeeping { idle_ms } => write!(
                f,
                "nothing read for {idle_ms} ms (haHousekeepingInterval): the peer is gone or \
                 stuck; the connection is dropped and the slave reconnects"
            ),
            CloseReason::Codec(err) => write!(
                f,
                "malformed HA stream from the master ({err}): is the slave's haMasterAddress \
                 an HA port (haListenPort), not the remoting port?"
            ),
            CloseReason::OffsetMismatch { expected, got } => write!(
                f,
                "the master sent CommitLog bytes at offset {got} but this slave's CommitLog \
                 continues at {expected}: the master's CommitLog does not continue the slave's \
                 (a master that lost its tail, or another master); if it diverged, move the \
                 slave's store aside so that it copies again"
            ),
            CloseReason::Misaligned { first } => write!(
                f,
                "the master's first transfer starts at offset {first}, not at a CommitLog \
                 segment start, so this empty slave cannot place it: set the same \
                 mappedFileSizeCommitLog on both brokers"
            ),
            CloseReason::BadRecord { offset } => write!(
                f,
                "the master sent bytes at offset {offset} that are not a CommitLog record or \
                 blank fitting its segment: the master's CommitLog is damaged there, or the \
                 brokers disagree on mappedFileSizeCommitLog"
            ),
            CloseReason::SlaveAhead { slave, master_max } => write!(
                f,
                "the slave reports CommitLog offset {slave} but the master's CommitLog ends at \
                 {master_max}: the slave holds data the master does not (a master that lost its \
                 tail, or another master); move the slave's store aside so that it copies again"
            ),
            CloseReason::BehindRetention { slave, master_min } => write!(
                f,
                "the slave reports CommitLog offset {slave} but the master's CommitLog starts at \
                 {master_min} (older segments were deleted): move the slave's store aside so \
                 that it starts empty"
            ),
            CloseReason::SegmentSize { ours, master } => write!(
                f,
                "the master's CommitLog segments are {master} bytes, this slave's are {ours}: \
                 set the same mappedFileSizeCommitLog on both brokers"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ByteRate;

    #[test]
    fn the_rate_is_the_last_whole_seconds_count() {
        let mut rate = ByteRate::default();
        rate.add(100, 5_000);
        rate.add(50, 5_999);
        assert_eq!(rate.per_second(5_999), 0, "second 5 is not over");
        assert_eq!(rate.per_second(6_000), 150);
        rate.add(7, 6_500);
        assert_eq!(rate.per_second(6_900), 150);
        assert_eq!(rate.per_second(7_000), 7);
        assert_eq!(rate.per_second(8_000), 0, "nothing in second 7");
        rate.add(1, 9_000);
        assert_eq!(rate.per_second(9_000), 0, "a gap of seconds counts nothing");
    }
}
