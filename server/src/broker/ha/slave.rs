//! A slave's replication client (Java's `DefaultHAClient`), as a pure state machine kept across
//! reconnects.
//!
//! It owns: the reports (at connect, after each append that grew the log, and every
//! `heartbeat_interval_ms`), the checks on the master's frames (each continues exactly where the
//! slave is; an empty slave starts at a segment start), finding record boundaries in the raw
//! CommitLog bytes, and housekeeping. It hands the store only whole records and blanks, so the
//! slave's CommitLog never holds a torn record, a report is always a record end, and a frame cut
//! short by a dying master appends nothing.
//!
//! It must not know the socket, the clock or the store: the shell says when a connection starts
//! and where the store ends, feeds it the bytes read and `now_ms`, performs what
//! [`SlaveCore::take_ready`] returns, and says when an append is done
//! ([`SlaveCore::on_appended`]). Record checks here are framing only (size, magic, segment fit);
//! the store validates content (CRC, fields) when it appends.

use bytes::{Buf, Bytes, BytesMut};
use skiff_model::record::{BLANK_MAGIC, MAGIC_V1, MAGIC_V2};
use skiff_protocol::ha::{encode_report, Frame, FrameDecoder, REPORT_LEN};

use super::{CloseReason, HaTimings};

/// The smallest record or blank: its size and magic fields.
const MIN_ENTRY_LEN: i64 = 8;
/// The most room kept ahead for a split entry: a large record (4 MiB body by default) fits.
const MAX_TAIL_RESERVE: usize = 8 * 1024 * 1024;

/// What the shell must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlaveOut {
    /// Write these bytes (a report) to the master.
    Write([u8; REPORT_LEN]),
    /// Append `bytes`, whole records and blanks, to the CommitLog at `offset` (its end, or on an
    /// empty store a segment start), then call [`SlaveCore::on_appended`].
    Append { offset: i64, bytes: Bytes },
    /// Close the connection (and reconnect later). Nothing follows until the next connect.
    Close(CloseReason),
}

/// One slave's replication state.
#[derive(Debug)]
pub struct SlaveCore {
    timings: HaTimings,
    segment_size: i64,
    decoder: FrameDecoder,
    /// Between `on_connected` and a close.
    connected: bool,
    /// The store was empty at connect and no transfer has come yet: the first may start at any
    /// segment start (a Java master sends an empty slave its last segment).
    placing: bool,
    /// The end of what was handed out for appending; `tail` starts here.
    emitted: i64,
    /// The start of a record split across frames, waiting for the rest.
    tail: BytesMut,
    /// The store's end as last told by the shell.
    store_end: i64,
    /// The last offset reported to the master.
    reported: i64,
    last_read_ms: i64,
    last_write_ms: i64,
    ready: Vec<SlaveOut>,
}

impl SlaveCore {
    /// `segment_size` is this store's `mappedFileSizeCommitLog`; `max_body` bounds one frame's
    /// body (what a master can make the slave buffer at once).
    pub fn new(timings: HaTimings, segment_size: i64, max_body: usize) -> Self {
        SlaveCore {
            timings,
            segment_size: segment_size.max(1),
            decoder: FrameDecoder::new(max_body),
            connected: false,
            placing: false,
            emitted: 0,
            tail: BytesMut::new(),
            store_end: 0,
            reported: 0,
            last_read_ms: 0,
            last_write_ms: 0,
            ready: Vec::new(),
        }
    }

    /// A new connection to the master. `store_end` is the CommitLog's end once every `Append`
    /// taken so far is done (or failed). Whatever the last connection left is dropped. The first
    /// report goes out at once, where Java waits up to `haSendHeartbeatInterval`.
    pub fn on_connected(&mut self, store_end: i64, now_ms: i64) {
        self.connected = true;
        self.placing = store_end == 0;
        self.emitted = store_end;
        self.tail.clear();
        self.store_end = store_end;
        self.last_read_ms = now_ms;
        self.ready.clear();
        self.report(now_ms);
    }

    /// Bytes read from the master, appended to `buf` by the shell (a new buffer for each
    /// connection). Whole frames are taken out of it; whole records in them come out as `Append`.
    pub fn on_bytes(&mut self, buf: &mut BytesMut, now_ms: i64) {
        if !self.connected || buf.is_empty() {
            return;
        }
        self.last_read_ms = now_ms;
        loop {
            let result = match self.decoder.decode(buf) {
                Ok(None) => return,
                Ok(Some(frame)) => self.on_frame(frame),
                Err(err) => Err(CloseReason::Codec(err)),
            };
            if let Err(reason) = result {
                self.close(reason);
                return;
            }
        }
    }

    fn on_frame(&mut self, frame: Frame) -> Result<(), CloseReason> {
        let expected = self.expected();
        if frame.is_heartbeat() {
            // A Java master heartbeats with its next transfer offset: on an empty slave that is
            // wherever it will start, otherwise exactly what the slave expects.
            return if self.placing || frame.offset == expected {
                Ok(())
            } else {
                Err(CloseReason::OffsetMismatch {
                    expected,
                    got: frame.offset,
                })
            };
        }
        if self.placing {
            // The slave places bytes by `offset % segment_size`: the first must open a segment.
            if frame.offset % self.segment_size != 0 {
                return Err(CloseReason::Misaligned {
                    first: frame.offset,
                });
            }
            self.placing = false;
            self.emitted = frame.offset;
        } else if frame.offset != expected {
            return Err(CloseReason::OffsetMismatch {
                expected,
                got: frame.offset,
            });
        }
        // Frames are cut without a copy; only a record split across frames is copied, into the
        // tail, and only its own bytes.
        let mut bytes = frame.body;
        if !self.tail.is_empty() {
            let taken = self.complete_tail(&bytes)?;
            bytes.advance(taken);
            if !self.tail.is_empty() {
                return Ok(()); // the frame ended inside the split record
            }
        }
        let whole = self.whole_entries(&bytes)?;
        if whole > 0 {
            self.ready.push(SlaveOut::Append {
                offset: self.emitted,
                bytes: bytes.slice(..whole),
            });
            self.emitted += whole as i64;
        }
        self.start_tail(&bytes[whole..]);
        Ok(())
    }

    /// Keeps `head`, the start of an entry split across frames, in the (empty) tail, with room
    /// for the whole entry once its size is known, so that completing it copies each byte once.
    fn start_tail(&mut self, head: &[u8]) {
        if let Some(size) = head.get(..4) {
            let size = i32::from_be_bytes(size.try_into().expect("4 bytes"));
            // Checked against the segment by `whole_entries`; a lying size reserves no more
            // than a large record needs, the rest grows only as bytes come.
            self.tail
                .reserve((size.max(0) as usize).min(MAX_TAIL_RESERVE));
        }
        self.tail.extend_from_slice(head);
    }

    /// Moves into the tail the bytes of `body` (the next frame's) that the split entry in it
    /// still lacks; once whole, the entry goes out as an `Append`. Returns how many were taken.
    fn complete_tail(&mut self, body: &[u8]) -> Result<usize, CloseReason> {
        let mut taken = 0;
        loop {
            let known = if self.tail.len() < MIN_ENTRY_LEN as usize {
                MIN_ENTRY_LEN as usize // size and magic first: they say how long it is
            } else {
                let size = i32::from_be_bytes(self.tail[..4].try_into().expect("4 bytes"));
                let size = size as usize; // checked by whole_entries when the head came
                if self.tail.capacity() < size {
                    self.tail
                        .reserve((size - self.tail.len()).min(MAX_TAIL_RESERVE));
                }
                size
            };
            let want = (known - self.tail.len()).min(body.len() - taken);
            self.tail.extend_from_slice(&body[taken..taken + want]);
            taken += want;
            if self.tail.len() < known {
                return Ok(taken); // the frame is used up
            }
            if self.whole_entries(&self.tail)? == self.tail.len() {
                let entry = self.tail.split().freeze();
                self.ready.push(SlaveOut::Append {
                    offset: self.emitted,
                    bytes: entry,
                });
                self.emitted += known as i64;
                return Ok(taken);
            }
        }
    }

    /// The length of the whole records and blanks at the front of `bytes`, which start at
    /// `self.emitted`; an entry is checked as soon as its size and magic are there.
    fn whole_entries(&self, bytes: &[u8]) -> Result<usize, CloseReason> {
        let seg = self.segment_size;
        let mut at = 0usize;
        while at < bytes.len() {
            let offset = self.emitted + at as i64;
            let to_segment_end = seg - offset % seg;
            if to_segment_end < MIN_ENTRY_LEN {
                // Java and Skiff always leave room for a blank; nothing can start here.
                return Err(CloseReason::BadRecord { offset });
            }
            let Some(head) = bytes.get(at..at + 8) else {
                break;
            };
            let size = i64::from(i32::from_be_bytes(head[..4].try_into().expect("4 bytes")));
            let magic = i32::from_be_bytes(head[4..].try_into().expect("4 bytes"));
            if !(MIN_ENTRY_LEN..=seg).contains(&size) {
                return Err(CloseReason::BadRecord { offset });
            }
            match magic {
                BLANK_MAGIC if size != to_segment_end => {
                    // The master's blank ends its segment: where it ends tells its segment size.
                    return Err(CloseReason::SegmentSize {
                        ours: seg,
                        master: offset % seg + size,
                    });
                }
                BLANK_MAGIC => {}
                MAGIC_V1 | MAGIC_V2 if size <= to_segment_end => {}
                _ => return Err(CloseReason::BadRecord { offset }),
            }
            if bytes.len() - at < size as usize {
                break;
            }
            at += size as usize;
        }
        Ok(at)
    }

    /// The store appended up to `end`. Reports it if the log grew (Java's
    /// `reportSlaveMaxOffsetPlus`).
    pub fn on_appended(&mut self, end: i64, now_ms: i64) {
        self.store_end = end;
        if self.connected && end > self.reported {
            self.report(now_ms);
        }
    }

    /// The master closed the connection. A split record's start is dropped with it.
    pub fn on_eof(&mut self) {
        self.close(CloseReason::Eof);
    }

    /// Housekeeping, then the periodic report.
    pub fn tick(&mut self, now_ms: i64) {
        if !self.connected {
            return;
        }
        let idle_ms = now_ms - self.last_read_ms;
        if idle_ms >= self.timings.housekeeping_interval_ms {
            self.close(CloseReason::Housekeeping { idle_ms });
        } else if now_ms - self.last_write_ms >= self.timings.heartbeat_interval_ms {
            self.report(now_ms);
        }
    }

    fn report(&mut self, now_ms: i64) {
        self.reported = self.store_end;
        self.last_write_ms = now_ms;
        self.ready
            .push(SlaveOut::Write(encode_report(self.store_end)));
    }

    fn close(&mut self, reason: CloseReason) {
        if self.connected {
            self.connected = false;
            self.tail.clear();
            self.ready.push(SlaveOut::Close(reason));
        }
    }

    /// What to do, in order; empties the queue.
    pub fn take_ready(&mut self) -> Vec<SlaveOut> {
        std::mem::take(&mut self.ready)
    }

    /// The next CommitLog byte the master must send: the store's end plus what was received and
    /// not appended yet (including a split record's start).
    pub fn expected(&self) -> i64 {
        self.emitted + self.tail.len() as i64
    }

    /// The latest time `tick` must be called if nothing else happens (report or housekeeping);
    /// `i64::MAX` while not connected.
    pub fn next_deadline(&self) -> i64 {
        if !self.connected {
            return i64::MAX;
        }
        (self.last_read_ms + self.timings.housekeeping_interval_ms)
            .min(self.last_write_ms + self.timings.heartbeat_interval_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_model::record::RecordFields;
    use skiff_protocol::ha::encode_transfer_header;

    const SEG: i64 = 1024;

    /// An encoded record with a body of `body_len` bytes (92 bytes of header and topic "t").
    fn record(body_len: usize) -> Vec<u8> {
        let host = "127.0.0.1:10911".parse().unwrap();
        let body = vec![b'x'; body_len];
        let fields = RecordFields {
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: 0,
            born_timestamp: 1,
            born_host: host,
            store_timestamp: 2,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: &body,
            topic: "t",
            properties: "",
        };
        let mut out = Vec::new();
        fields.encode(&mut out).unwrap();
        assert_eq!(out.len(), 92 + body_len);
        out
    }

    fn blank(size: usize) -> Vec<u8> {
        let mut out = vec![0u8; size];
        out[..4].copy_from_slice(&(size as i32).to_be_bytes());
        out[4..8].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
        out
    }

    /// A CommitLog from 0 holding records with these bodies, placed as the store does: a record
    /// that does not fit with 8 bytes to spare starts the next segment after a blank.
    fn log(bodies: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        for &body in bodies {
            let r = record(body);
            let room = (SEG - out.len() as i64 % SEG) as usize;
            if r.len() + 8 > room {
                out.extend(blank(room));
            }
            out.extend(r);
        }
        out
    }

    fn frame(offset: i64, body: &[u8]) -> BytesMut {
        let mut out = BytesMut::from(&encode_transfer_header(offset, body.len() as u32)[..]);
        out.extend_from_slice(body);
        out
    }

    fn core() -> SlaveCore {
        SlaveCore::new(HaTimings::default(), SEG, 1 << 20)
    }

    /// A core connected with `store_end`, its first report taken.
    fn connected(store_end: i64) -> SlaveCore {
        let mut c = core();
        c.on_connected(store_end, 0);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Write(encode_report(store_end))]
        );
        c
    }

    fn appends(out: &[SlaveOut]) -> Vec<(i64, Bytes)> {
        out.iter()
            .filter_map(|o| match o {
                SlaveOut::Append { offset, bytes } => Some((*offset, bytes.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn split_record_is_carried_to_the_next_frame() {
        let log = log(&[100, 100]);
        assert_eq!(log.len(), 384);
        let mut c = connected(0);
        c.on_bytes(&mut frame(0, &log[..250]), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Append {
                offset: 0,
                bytes: Bytes::copy_from_slice(&log[..192])
            }]
        );
        assert_eq!(c.expected(), 250, "the carried tail counts");
        c.on_bytes(&mut frame(250, &log[250..300]), 2);
        assert_eq!(c.take_ready(), vec![], "still incomplete");
        c.on_bytes(&mut frame(300, &log[300..]), 3);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Append {
                offset: 192,
                bytes: Bytes::copy_from_slice(&log[192..])
            }]
        );
        assert_eq!(c.expected(), 384);
    }

    #[test]
    fn a_header_split_in_the_middle_is_carried() {
        let log = log(&[10, 10]);
        let mut c = connected(0);
        let mut buf = frame(0, &log[..106]);
        buf.extend_from_slice(&frame(106, &log[106..])[..]);
        c.on_bytes(&mut buf, 1);
        assert!(buf.is_empty());
        let got = appends(&c.take_ready());
        assert_eq!(
            got,
            vec![
                (0, Bytes::copy_from_slice(&log[..102])),
                (102, Bytes::copy_from_slice(&log[102..]))
            ]
        );
    }

    #[test]
    fn blank_spans_to_the_segment_end() {
        // Four records of 292 bytes: the fourth does not fit the first segment.
        let log = log(&[200, 200, 200, 200]);
        assert_eq!(log.len() as i64, SEG + 292);
        assert_eq!(&log[876..884], &blank(148)[..8]);
        let mut c = connected(0);
        // The master cuts at the segment end: the blank's frame ends there.
        c.on_bytes(&mut frame(0, &log[..900]), 1);
        c.on_bytes(&mut frame(900, &log[900..SEG as usize]), 1);
        c.on_bytes(&mut frame(SEG, &log[SEG as usize..]), 1);
        let got = appends(&c.take_ready());
        assert_eq!(
            got,
            vec![
                (0, Bytes::copy_from_slice(&log[..876])),
                (876, Bytes::copy_from_slice(&log[876..SEG as usize])),
                (SEG, Bytes::copy_from_slice(&log[SEG as usize..])),
            ]
        );
    }

    #[test]
    fn an_empty_store_starts_at_the_masters_segment() {
        let whole = log(&[200, 200, 200, 200]);
        let mut c = connected(0);
        let tail = &whole[SEG as usize..];
        // A Java master heartbeats with its next transfer offset before any data.
        c.on_bytes(&mut frame(SEG, &[]), 1);
        c.on_bytes(&mut frame(7 * SEG, &[]), 1);
        assert_eq!(c.take_ready(), vec![]);
        c.on_bytes(&mut frame(SEG, tail), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Append {
                offset: SEG,
                bytes: Bytes::copy_from_slice(tail)
            }]
        );
        assert_eq!(c.expected(), SEG + tail.len() as i64);
    }

    #[test]
    fn heartbeat_at_the_expected_offset_is_accepted() {
        let log = log(&[100, 100]);
        let mut c = connected(192);
        c.on_bytes(&mut frame(192, &[]), 1);
        c.on_bytes(&mut frame(192, &log[192..250]), 1);
        c.on_bytes(&mut frame(250, &[]), 1);
        assert_eq!(c.take_ready(), vec![], "the heartbeat is at the tail's end");
        c.on_bytes(&mut frame(192, &[]), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::OffsetMismatch {
                expected: 250,
                got: 192
            })]
        );
    }

    #[test]
    fn offset_mismatch_closes_with_nothing_appended() {
        let log = log(&[100, 100]);
        let mut c = connected(192);
        c.on_bytes(&mut frame(0, &log), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::OffsetMismatch {
                expected: 192,
                got: 0
            })]
        );
        // Closed: nothing more until the next connect.
        c.on_bytes(&mut frame(192, &log[192..]), 2);
        c.tick(100_000);
        c.on_appended(500, 3);
        assert_eq!(c.take_ready(), vec![]);
    }

    #[test]
    fn misaligned_first_frame_on_an_empty_store_closes() {
        let log = log(&[100, 100]);
        let mut c = connected(0);
        c.on_bytes(&mut frame(192, &log[192..]), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::Misaligned { first: 192 })]
        );
    }

    #[test]
    fn bad_records_close_with_nothing_appended() {
        let good = record(100);
        let cases: Vec<(Vec<u8>, i64)> = vec![
            // Unknown magic after a good record: the good one is not appended either.
            ([&good[..], &[0, 0, 0, 100, 1, 2, 3, 4]].concat(), 192),
            // Size zero, negative, smaller than its header, larger than a segment.
            ([0, 0, 0, 0, 0xDA, 0xA3, 0x20, 0xA7].to_vec(), 0),
            ([0xff, 0xff, 0xff, 0xff, 0xDA, 0xA3, 0x20, 0xA7].to_vec(), 0),
            ([0, 0, 0, 4, 0xDA, 0xA3, 0x20, 0xA7].to_vec(), 0),
            ([0, 0, 4, 1, 0xDA, 0xA3, 0x20, 0xA7].to_vec(), 0),
        ];
        for (bytes, at) in cases {
            let mut c = connected(0);
            c.on_bytes(&mut frame(0, &bytes), 1);
            assert_eq!(
                c.take_ready(),
                vec![SlaveOut::Close(CloseReason::BadRecord { offset: at })],
                "{bytes:02x?}"
            );
        }
        // A record crossing the segment end.
        let mut c = connected(SEG - 100);
        let mut r = record(100);
        r[..4].copy_from_slice(&192i32.to_be_bytes());
        c.on_bytes(&mut frame(SEG - 100, &r[..50]), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::BadRecord {
                offset: SEG - 100
            })]
        );
        // Fewer than 8 bytes left in the segment: no record or blank fits there.
        let mut c = connected(SEG - 4);
        c.on_bytes(&mut frame(SEG - 4, &[0]), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::BadRecord { offset: SEG - 4 })]
        );
    }

    #[test]
    fn blank_not_reaching_our_segment_end_is_a_segment_size_mismatch() {
        // The master's segments are 512 bytes: its blank at 384 is 128 bytes long.
        let log = [log(&[100, 100]), blank(128)].concat();
        let mut c = connected(0);
        c.on_bytes(&mut frame(0, &log), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::SegmentSize {
                ours: SEG,
                master: 512
            })]
        );
    }

    #[test]
    fn codec_errors_close() {
        let mut c = connected(0);
        c.on_bytes(
            &mut BytesMut::from(&encode_transfer_header(0, u32::MAX)[..]),
            1,
        );
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::Codec(
                skiff_protocol::ha::HaCodecError::NegativeSize(-1)
            ))]
        );
        let mut c = SlaveCore::new(HaTimings::default(), SEG, 100);
        c.on_connected(0, 0);
        c.take_ready();
        c.on_bytes(&mut BytesMut::from(&encode_transfer_header(0, 101)[..]), 1);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::Codec(
                skiff_protocol::ha::HaCodecError::TooLarge {
                    size: 101,
                    max: 100
                }
            ))]
        );
    }

    #[test]
    fn truncated_frame_then_eof_appends_nothing() {
        let log = log(&[100, 100]);
        let mut c = connected(0);
        let whole = frame(0, &log);
        c.on_bytes(&mut BytesMut::from(&whole[..200]), 1);
        c.on_eof();
        assert_eq!(c.take_ready(), vec![SlaveOut::Close(CloseReason::Eof)]);

        // A split record's start is dropped too; the next connection starts at the store end.
        let mut c = connected(0);
        c.on_bytes(&mut frame(0, &log[..250]), 1);
        c.on_eof();
        assert_eq!(
            appends(&c.take_ready()),
            vec![(0, Bytes::copy_from_slice(&log[..192]))]
        );
        c.on_appended(192, 2);
        assert_eq!(c.take_ready(), vec![], "not connected: no report");
        c.on_connected(192, 3);
        assert_eq!(c.take_ready(), vec![SlaveOut::Write(encode_report(192))]);
        assert_eq!(c.expected(), 192);
        c.on_bytes(&mut frame(192, &log[192..]), 4);
        assert_eq!(
            appends(&c.take_ready()),
            vec![(192, Bytes::copy_from_slice(&log[192..]))]
        );
    }

    #[test]
    fn reports_at_connect_after_growth_and_every_interval() {
        let mut c = core();
        c.tick(0);
        assert_eq!(c.take_ready(), vec![], "nothing before a connection");
        assert_eq!(c.next_deadline(), i64::MAX);
        c.on_connected(4096, 1_000);
        assert_eq!(c.take_ready(), vec![SlaveOut::Write(encode_report(4096))]);
        c.on_appended(4096, 1_500);
        assert_eq!(c.take_ready(), vec![], "not grown");
        c.on_appended(4200, 2_000);
        assert_eq!(c.take_ready(), vec![SlaveOut::Write(encode_report(4200))]);
        assert_eq!(c.next_deadline(), 7_000);
        c.on_bytes(&mut frame(4096, &[]), 6_000);
        c.tick(6_999);
        assert_eq!(c.take_ready(), vec![]);
        c.tick(7_000);
        assert_eq!(c.take_ready(), vec![SlaveOut::Write(encode_report(4200))]);
        assert_eq!(c.next_deadline(), 12_000);
        c.tick(12_000);
        assert_eq!(c.take_ready(), vec![SlaveOut::Write(encode_report(4200))]);
        assert_eq!(c.next_deadline(), 17_000);
        // Housekeeping: 20 s after the last read (at 6 s).
        c.tick(25_999);
        assert!(!c
            .take_ready()
            .iter()
            .any(|o| matches!(o, SlaveOut::Close(_))));
        c.tick(26_000);
        assert_eq!(
            c.take_ready(),
            vec![SlaveOut::Close(CloseReason::Housekeeping {
                idle_ms: 20_000
            })]
        );
        assert_eq!(c.next_deadline(), i64::MAX);
    }

    /// Deterministic pseudo-random numbers (xorshift), for cuts.
    fn rng(seed: u64) -> impl FnMut(usize) -> usize {
        let mut s = seed | 1;
        move |n| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % n as u64) as usize
        }
    }

    #[test]
    fn any_cutting_appends_the_whole_log_record_by_record() {
        let bodies: Vec<usize> = (0..40).map(|i| (i * 37) % 300).collect();
        let log = log(&bodies);
        assert!(log.len() as i64 > 4 * SEG);
        for seed in 1..200 {
            let mut next = rng(seed);
            // The master: frames of random size that never cross a segment end.
            let mut wire = Vec::new();
            let mut at = 0usize;
            while at < log.len() {
                let seg_end = (at / SEG as usize + 1) * SEG as usize;
                let end = (at + 1 + next(400)).min(seg_end).min(log.len());
                if next(4) == 0 {
                    wire.extend_from_slice(&frame(at as i64, &[]));
                }
                wire.extend_from_slice(&frame(at as i64, &log[at..end]));
                at = end;
            }
            // The network: random reads.
            let mut c = connected(0);
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            let mut rest = &wire[..];
            while !rest.is_empty() {
                let n = (1 + next(600)).min(rest.len());
                buf.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                c.on_bytes(&mut buf, 1);
                for out in c.take_ready() {
                    let SlaveOut::Append { offset, bytes } = out else {
                        panic!("seed {seed}: {out:?}");
                    };
                    assert_eq!(offset, got.len() as i64, "seed {seed}");
                    // Whole entries only: every Append ends where a record or blank ends.
                    got.extend_from_slice(&bytes);
                }
            }
            assert_eq!(got, log, "seed {seed}");
            assert_eq!(c.expected(), log.len() as i64);
        }
    }
}
