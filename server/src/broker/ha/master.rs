//! The master's side of one slave connection (Java's `DefaultHAConnection`), as a pure state
//! machine.
//!
//! It owns: reading the slave's reports (acknowledgements), deciding where streaming starts,
//! cutting the CommitLog into transfer frames, heartbeats and housekeeping. It must not know the
//! socket, the clock or the store: the shell feeds it bytes and `now_ms`, gives it a [`LogView`]
//! at each [`MasterConn::tick`], writes what [`MasterConn::take_ready`] returns, and publishes the
//! acks. A shell that can write calls `tick` again after each `Send` (one frame per tick, so the
//! shell paces by its socket), when the CommitLog grows, and at [`MasterConn::next_deadline`].

use bytes::Bytes;
use skiff_protocol::ha::ReportDecoder;

use super::{CloseReason, HaTimings};

/// What the master needs of its CommitLog.
pub trait LogView {
    /// The oldest byte still held.
    fn min_offset(&self) -> i64;
    /// The end of what is published (readable by a transfer).
    fn max_offset(&self) -> i64;
    /// `mappedFileSizeCommitLog`; positive.
    fn segment_size(&self) -> i64;
    /// Up to `max` published bytes from `from`, within `from`'s segment; `None` (or empty) when
    /// there are none, or `from` is not held.
    fn data(&self, from: i64, max: usize) -> Option<Bytes>;
}

/// What the shell must do for this connection, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterOut {
    /// Write a transfer: the header for (`offset`, `body.len()`), then `body`.
    Send { offset: i64, body: Bytes },
    /// Write a heartbeat: a header with `offset` (the next transfer offset) and size 0.
    Heartbeat { offset: i64 },
    /// The slave holds the CommitLog up to this offset.
    Acked(i64),
    /// Close the connection. Nothing follows.
    Close(CloseReason),
}

/// One accepted slave connection.
#[derive(Debug)]
pub struct MasterConn {
    timings: HaTimings,
    reports: ReportDecoder,
    /// The first report (`slaveRequestOffset`); `None` until one arrived.
    request: Option<i64>,
    /// The last report (`slaveAckOffset`); -1 before the first.
    ack: i64,
    /// `nextTransferFromWhere`; `None` until the start is decided.
    next: Option<i64>,
    last_read_ms: i64,
    last_write_ms: i64,
    closed: bool,
    ready: Vec<MasterOut>,
}

impl MasterConn {
    /// A connection accepted at `now_ms`: both the read and the write idle times count from here,
    /// as Java's timestamps start at construction.
    pub fn new(timings: HaTimings, now_ms: i64) -> Self {
        MasterConn {
            timings,
            reports: ReportDecoder::default(),
            request: None,
            ack: -1,
            next: None,
            last_read_ms: now_ms,
            last_write_ms: now_ms,
            closed: false,
            ready: Vec::new(),
        }
    }

    /// Bytes read from the slave. The last complete report is its ack; the first report also
    /// chooses the start, which `tick` decides because it has the [`LogView`].
    pub fn on_bytes(&mut self, bytes: &[u8], now_ms: i64) {
        if self.closed || bytes.is_empty() {
            return;
        }
        self.last_read_ms = now_ms;
        let Some(report) = self.reports.feed(bytes) else {
            return;
        };
        self.ack = report;
        if self.request.is_none() {
            self.request = Some(report);
        }
        // Until the start is decided, the report may still be refused (a slave ahead of us must
        // not satisfy a SYNC_MASTER's wait): `decide` publishes it if the slave is accepted.
        if self.next.is_some() {
            self.ready.push(MasterOut::Acked(report));
        }
    }

    /// `haTransferBatchSize` for the frames cut from now on. Java reads it at each transfer, so
    /// UPDATE_BROKER_CONFIG changes it on a running master; the shell passes the value in force
    /// before each [`MasterConn::tick`].
    pub fn set_transfer_batch_size(&mut self, bytes: usize) {
        self.timings.transfer_batch_size = bytes;
    }

    /// The slave closed the connection.
    pub fn on_eof(&mut self) {
        self.close(CloseReason::Eof);
    }

    /// Housekeeping, the start decision after the first report, then at most one transfer, or a
    /// heartbeat when nothing was written for `heartbeat_interval_ms`.
    pub fn tick(&mut self, now_ms: i64, log: &dyn LogView) {
        if self.closed {
            return;
        }
        let idle_ms = now_ms - self.last_read_ms;
        if idle_ms >= self.timings.housekeeping_interval_ms {
            self.close(CloseReason::Housekeeping { idle_ms });
            return;
        }
        let next = match (self.next, self.request) {
            (Some(next), _) => next,
            // Java sends nothing, not even heartbeats, before the first report.
            (None, None) => return,
            (None, Some(request)) => match self.decide(request, log) {
                Some(next) => next,
                None => return,
            },
        };
        let segment_size = log.segment_size().max(1);
        // `data` already stays within one segment; the cap here keeps a frame from crossing a
        // segment end even if a view does not.
        let to_segment_end = (segment_size - next.rem_euclid(segment_size)) as usize;
        let max = self.timings.transfer_batch_size.min(to_segment_end).max(1);
        match log.data(next, max).filter(|b| !b.is_empty()) {
            Some(mut body) => {
                body.truncate(max);
                self.next = Some(next + body.len() as i64);
                self.last_write_ms = now_ms;
                self.ready.push(MasterOut::Send { offset: next, body });
            }
            None if now_ms - self.last_write_ms >= self.timings.heartbeat_interval_ms => {
                self.last_write_ms = now_ms;
                self.ready.push(MasterOut::Heartbeat { offset: next });
            }
            None => {}
        }
    }

    /// Where streaming starts for the first report `request`, or `None` after refusing it.
    fn decide(&mut self, request: i64, log: &dyn LogView) -> Option<i64> {
        let (min, max) = (log.min_offset(), log.max_offset());
        let next = if request == 0 {
            // A report of 0 is an empty slave (Java): it gets the last segment only, unless
            // configured to copy the whole log.
            if self.timings.transfer_from_min_offset {
                min
            } else {
                let segment_size = log.segment_size().max(1);
                (max - max % segment_size).max(0)
            }
        } else if request > max {
            // Java would heartbeat such a slave forever; its data is not ours.
            self.close(CloseReason::SlaveAhead {
                slave: request,
                master_max: max,
            });
            return None;
        } else if request < min {
            self.close(CloseReason::BehindRetention {
                slave: request,
                master_min: min,
            });
            return None;
        } else {
            request
        };
        self.next = Some(next);
        self.ready.push(MasterOut::Acked(self.ack));
        Some(next)
    }

    fn close(&mut self, reason: CloseReason) {
        if !self.closed {
            self.closed = true;
            self.ready.push(MasterOut::Close(reason));
        }
    }

    /// What to do, in order; empties the queue.
    pub fn take_ready(&mut self) -> Vec<MasterOut> {
        std::mem::take(&mut self.ready)
    }

    /// The slave's last report, -1 before the first.
    pub fn ack(&self) -> i64 {
        self.ack
    }

    /// The offset of the next transfer, once the start is decided.
    pub fn next_transfer(&self) -> Option<i64> {
        self.next
    }

    /// The latest time `tick` must be called if nothing else happens: the housekeeping deadline,
    /// the heartbeat deadline once streaming, `now_ms` while a first report waits for its
    /// decision; `i64::MAX` once closed. New CommitLog data is not a deadline: the shell ticks
    /// when the log grows.
    pub fn next_deadline(&self, now_ms: i64) -> i64 {
        if self.closed {
            return i64::MAX;
        }
        let housekeeping = self.last_read_ms + self.timings.housekeeping_interval_ms;
        match (self.next, self.request) {
            (Some(_), _) => {
                housekeeping.min(self.last_write_ms + self.timings.heartbeat_interval_ms)
            }
            (None, Some(_)) => now_ms,
            (None, None) => housekeeping,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_protocol::ha::encode_report;

    const SEG: i64 = 1024;

    /// A CommitLog of `[min, max)` whose byte at offset `o` is `o as u8`.
    struct FakeLog {
        min: i64,
        max: i64,
    }

    impl LogView for FakeLog {
        fn min_offset(&self) -> i64 {
            self.min
        }
        fn max_offset(&self) -> i64 {
            self.max
        }
        fn segment_size(&self) -> i64 {
            SEG
        }
        fn data(&self, from: i64, max: usize) -> Option<Bytes> {
            if from < self.min || from >= self.max {
                return None;
            }
            let end = self.max.min(from - from % SEG + SEG).min(from + max as i64);
            Some((from..end).map(|o| o as u8).collect())
        }
    }

    fn timings() -> HaTimings {
        HaTimings {
            transfer_batch_size: 100,
            ..HaTimings::default()
        }
    }

    fn conn(now: i64) -> MasterConn {
        MasterConn::new(timings(), now)
    }

    /// Ticks until nothing is sent; returns the sends' (offset, len).
    fn drain(c: &mut MasterConn, now: i64, log: &FakeLog) -> Vec<(i64, usize)> {
        let mut sent = Vec::new();
        loop {
            c.tick(now, log);
            let out = c.take_ready();
            let sends: Vec<_> = out
                .iter()
                .filter_map(|o| match o {
                    MasterOut::Send { offset, body } => Some((*offset, body.len())),
                    _ => None,
                })
                .collect();
            if sends.is_empty() {
                return sent;
            }
            assert_eq!(sends.len(), 1, "one send per tick: {out:?}");
            sent.extend(sends);
        }
    }

    #[test]
    fn report_zero_starts_at_the_last_segment() {
        let log = FakeLog {
            min: 0,
            max: 2 * SEG + 10,
        };
        let mut c = conn(0);
        c.on_bytes(&encode_report(0), 1);
        assert_eq!(c.take_ready(), vec![], "decided at the next tick");
        assert_eq!(c.next_deadline(1), 1);
        c.tick(1, &log);
        let out = c.take_ready();
        assert_eq!(out[0], MasterOut::Acked(0));
        assert_eq!(
            out[1],
            MasterOut::Send {
                offset: 2 * SEG,
                body: (2 * SEG..2 * SEG + 10).map(|o| o as u8).collect()
            }
        );
        assert_eq!(c.next_transfer(), Some(2 * SEG + 10));
    }

    #[test]
    fn report_zero_on_an_empty_master_starts_at_zero() {
        let log = FakeLog { min: 0, max: 0 };
        let mut c = conn(0);
        c.on_bytes(&encode_report(0), 0);
        c.tick(0, &log);
        assert_eq!(c.take_ready(), vec![MasterOut::Acked(0)]);
        assert_eq!(c.next_transfer(), Some(0));
    }

    #[test]
    fn report_zero_from_min_offset_with_the_option() {
        let log = FakeLog {
            min: SEG,
            max: 3 * SEG,
        };
        let mut c = MasterConn::new(
            HaTimings {
                transfer_from_min_offset: true,
                ..timings()
            },
            0,
        );
        c.on_bytes(&encode_report(0), 0);
        c.tick(0, &log);
        assert_eq!(c.take_ready()[1], {
            let body: Bytes = (SEG..SEG + 100).map(|o| o as u8).collect();
            MasterOut::Send { offset: SEG, body }
        });
    }

    #[test]
    fn report_x_starts_at_x() {
        let log = FakeLog {
            min: SEG,
            max: 3 * SEG,
        };
        let mut c = conn(0);
        c.on_bytes(&encode_report(SEG + 17), 0);
        assert_eq!(drain(&mut c, 0, &log)[0], (SEG + 17, 100));
        assert_eq!(c.ack(), SEG + 17);

        // The ends of the retained log are accepted.
        let mut c = conn(0);
        c.on_bytes(&encode_report(SEG), 0);
        assert_eq!(drain(&mut c, 0, &log)[0], (SEG, 100));
        let mut c = conn(0);
        c.on_bytes(&encode_report(3 * SEG), 0);
        c.tick(0, &log);
        assert_eq!(c.take_ready(), vec![MasterOut::Acked(3 * SEG)]);
        assert_eq!(c.next_transfer(), Some(3 * SEG));
    }

    #[test]
    fn refuses_a_slave_ahead_or_behind_retention() {
        let log = FakeLog {
            min: SEG,
            max: 2 * SEG,
        };
        let mut c = conn(0);
        c.on_bytes(&encode_report(2 * SEG + 1), 0);
        c.tick(0, &log);
        assert_eq!(
            c.take_ready(),
            vec![MasterOut::Close(CloseReason::SlaveAhead {
                slave: 2 * SEG + 1,
                master_max: 2 * SEG
            })],
            "no ack of offsets the master never had"
        );
        c.on_bytes(&encode_report(5), 10);
        c.tick(10_000, &log);
        assert_eq!(c.take_ready(), vec![], "nothing after Close");
        assert_eq!(c.next_deadline(10_000), i64::MAX);

        let mut c = conn(0);
        c.on_bytes(&encode_report(SEG - 1), 0);
        c.tick(0, &log);
        assert_eq!(
            c.take_ready(),
            vec![MasterOut::Close(CloseReason::BehindRetention {
                slave: SEG - 1,
                master_min: SEG
            })]
        );
    }

    #[test]
    fn sends_nothing_before_the_first_report() {
        let log = FakeLog {
            min: 0,
            max: 3 * SEG,
        };
        let mut c = conn(0);
        for now in [0, 5_000, 10_000, 19_999] {
            c.tick(now, &log);
            assert_eq!(c.take_ready(), vec![], "no data, no heartbeat at {now}");
        }
        assert_eq!(c.next_deadline(0), 20_000, "only housekeeping");
        // Half a report is not a report, but it is a read.
        c.on_bytes(&encode_report(SEG)[..4], 19_999);
        c.tick(20_000, &log);
        assert_eq!(c.take_ready(), vec![]);
        assert_eq!(c.next_transfer(), None);
        c.on_bytes(&encode_report(SEG)[4..], 20_001);
        assert_eq!(drain(&mut c, 20_001, &log)[0], (SEG, 100));
    }

    #[test]
    fn heartbeat_after_the_interval_idle_only() {
        let log = FakeLog { min: 0, max: 50 };
        let mut c = conn(0);
        c.on_bytes(&encode_report(50), 0);
        c.tick(0, &log);
        assert_eq!(c.take_ready(), vec![MasterOut::Acked(50)]);
        c.tick(4_999, &log);
        assert_eq!(c.take_ready(), vec![], "not yet");
        assert_eq!(c.next_deadline(4_999), 5_000);
        c.tick(5_000, &log);
        assert_eq!(c.take_ready(), vec![MasterOut::Heartbeat { offset: 50 }]);
        c.tick(5_001, &log);
        assert_eq!(c.take_ready(), vec![], "the heartbeat was a write");
        assert_eq!(c.next_deadline(5_001), 10_000);

        // A transfer is a write too: the heartbeat waits 5 s after it.
        let log = FakeLog { min: 0, max: 60 };
        c.on_bytes(&encode_report(50), 7_000);
        assert_eq!(drain(&mut c, 7_000, &log), vec![(50, 10)]);
        c.tick(11_999, &log);
        assert_eq!(c.take_ready(), vec![]);
        c.tick(12_000, &log);
        assert_eq!(c.take_ready(), vec![MasterOut::Heartbeat { offset: 60 }]);
    }

    #[test]
    fn housekeeping_closes_after_the_interval_without_reads() {
        let log = FakeLog { min: 0, max: 50 };
        let mut c = conn(0);
        c.on_bytes(&encode_report(50), 1_000);
        c.tick(1_000, &log);
        c.take_ready();
        c.on_bytes(&encode_report(50), 15_000);
        assert_eq!(c.take_ready(), vec![MasterOut::Acked(50)]);
        c.tick(34_999, &log);
        assert!(!c
            .take_ready()
            .iter()
            .any(|o| matches!(o, MasterOut::Close(_))));
        assert_eq!(c.next_deadline(34_999), 35_000);
        c.tick(35_000, &log);
        assert_eq!(
            c.take_ready(),
            vec![MasterOut::Close(CloseReason::Housekeeping {
                idle_ms: 20_000
            })]
        );
        c.tick(40_000, &log);
        assert_eq!(c.take_ready(), vec![]);
    }

    #[test]
    fn batches_are_capped_and_never_cross_a_segment_end() {
        let log = FakeLog {
            min: 0,
            max: 2 * SEG + 30,
        };
        let mut c = conn(0);
        c.on_bytes(&encode_report(SEG - 250), 0);
        assert_eq!(
            drain(&mut c, 0, &log),
            vec![
                (SEG - 250, 100),
                (SEG - 150, 100),
                (SEG - 50, 50),
                (SEG, 100),
                (SEG + 100, 100),
            ]
            .into_iter()
            .chain((2..10).map(|i| (SEG + i * 100, 100)))
            .chain([(2 * SEG - 24, 24), (2 * SEG, 30)])
            .collect::<Vec<_>>()
        );
        assert_eq!(c.next_transfer(), Some(2 * SEG + 30));
    }

    #[test]
    fn a_new_batch_size_applies_to_the_next_frame() {
        let log = FakeLog { min: 0, max: 700 };
        let mut c = conn(0);
        c.on_bytes(&encode_report(0), 0);
        c.tick(0, &log);
        c.take_ready();
        c.set_transfer_batch_size(250);
        assert_eq!(
            drain(&mut c, 0, &log),
            vec![(100, 250), (350, 250), (600, 100)]
        );
    }

    /// A view that ignores the segment end it should respect.
    struct Overreaching;

    impl LogView for Overreaching {
        fn min_offset(&self) -> i64 {
            0
        }
        fn max_offset(&self) -> i64 {
            10 * SEG
        }
        fn segment_size(&self) -> i64 {
            SEG
        }
        fn data(&self, _from: i64, _max: usize) -> Option<Bytes> {
            Some(Bytes::from(vec![0u8; 4096]))
        }
    }

    #[test]
    fn a_frame_stays_within_its_segment_even_if_the_view_does_not() {
        let mut c = conn(0);
        c.on_bytes(&encode_report(SEG - 10), 0);
        c.tick(0, &Overreaching);
        c.tick(0, &Overreaching);
        let sends: Vec<(i64, usize)> = c
            .take_ready()
            .into_iter()
            .filter_map(|o| match o {
                MasterOut::Send { offset, body } => Some((offset, body.len())),
                _ => None,
            })
            .collect();
        assert_eq!(sends, vec![(SEG - 10, 10), (SEG, 100)]);
    }

    #[test]
    fn acks_follow_the_last_report() {
        let log = FakeLog { min: 0, max: 500 };
        let mut c = conn(0);
        assert_eq!(c.ack(), -1);
        c.on_bytes(&encode_report(100), 0);
        assert_eq!(c.ack(), 100);
        drain(&mut c, 0, &log);
        // Several reports in one read: the last counts.
        let reports = [encode_report(200), encode_report(300), encode_report(400)].concat();
        c.on_bytes(&reports[..20], 1);
        assert_eq!(c.take_ready(), vec![MasterOut::Acked(300)]);
        c.on_bytes(&reports[20..], 2);
        assert_eq!(c.take_ready(), vec![MasterOut::Acked(400)]);
        assert_eq!(c.ack(), 400);
        c.on_eof();
        c.on_bytes(&encode_report(500), 3);
        assert_eq!(c.take_ready(), vec![MasterOut::Close(CloseReason::Eof)]);
        assert_eq!(c.ack(), 400);
    }

    #[test]
    fn reports_before_the_decision_ack_once_accepted() {
        let log = FakeLog { min: 0, max: 500 };
        let mut c = conn(0);
        c.on_bytes(&encode_report(100), 0);
        c.on_bytes(&encode_report(120), 1);
        assert_eq!(c.take_ready(), vec![]);
        c.tick(2, &log);
        let out = c.take_ready();
        assert_eq!(out[0], MasterOut::Acked(120));
        assert!(
            matches!(&out[1], MasterOut::Send { offset: 100, .. }),
            "the first report is the start"
        );
    }
}
