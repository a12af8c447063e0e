//! The classic HA replication stream of RocketMQ (`DefaultHAService`), as Java 5.3.3 puts it on
//! the wire. All integers are big-endian.
//!
//! ```text
//! slave → master   report    = i64 slaveMaxOffset                          (8 bytes)
//! master → slave   transfer  = i64 physOffset | i32 bodySize | bodySize bytes of CommitLog
//!                  heartbeat = the same 12-byte header with bodySize = 0
//! ```
//!
//! Transfer bodies are raw CommitLog bytes cut anywhere: a record may be split across frames.
//! Finding the records in them is the slave's business, not this codec's.
//!
//! This module owns the byte layouts only. It must not know sockets, the store or the replication
//! rules (which offsets are acceptable, when to send): those belong to the broker's HA state
//! machines. Both decoders keep what is incomplete and never reserve a size a peer declared, so
//! any chunking of the same bytes gives the same results.
//!
//! ```
//! use bytes::BytesMut;
//! use skiff_protocol::ha::{encode_report, encode_transfer_header, FrameDecoder, ReportDecoder};
//!
//! // The master reads the last complete report of what has arrived, as Java does.
//! let mut reports = ReportDecoder::default();
//! let wire = [encode_report(100), encode_report(164)].concat();
//! assert_eq!(reports.feed(&wire[..12]), Some(100));
//! assert_eq!(reports.feed(&wire[12..]), Some(164));
//!
//! // The slave waits for whole frames; an empty body is a heartbeat.
//! let mut wire = BytesMut::from(&encode_transfer_header(4096, 3)[..]);
//! wire.extend_from_slice(b"abc");
//! let mut frames = FrameDecoder::new(1 << 20);
//! let frame = frames.decode(&mut wire).unwrap().unwrap();
//! assert_eq!((frame.offset, &frame.body[..]), (4096, &b"abc"[..]));
//! assert!(frames.decode(&mut wire).unwrap().is_none());
//! ```

use bytes::{Bytes, BytesMut};

/// Size of a slave's report (`DefaultHAClient.REPORT_HEADER_SIZE`).
pub const REPORT_LEN: usize = 8;
/// Size of a transfer or heartbeat header (`DefaultHAConnection.TRANSFER_HEADER_SIZE`).
pub const TRANSFER_HEADER_LEN: usize = 12;

/// A slave's report: the CommitLog end it holds.
pub fn encode_report(offset: i64) -> [u8; REPORT_LEN] {
    offset.to_be_bytes()
}

/// The header of a transfer of `body_len` bytes starting at CommitLog `offset`; `body_len` 0 is
/// a heartbeat.
pub fn encode_transfer_header(offset: i64, body_len: u32) -> [u8; TRANSFER_HEADER_LEN] {
    let mut header = [0u8; TRANSFER_HEADER_LEN];
    header[..8].copy_from_slice(&offset.to_be_bytes());
    header[8..].copy_from_slice(&body_len.to_be_bytes());
    header
}

/// Reads slave reports on the master.
///
/// Java's master looks only at the last complete 8-byte group of each read
/// (`ReadSocketService.processReadEvent`): reports are cumulative, so older ones carry nothing
/// the last does not. The incomplete rest is kept for the next feed.
#[derive(Debug, Default, Clone)]
pub struct ReportDecoder {
    partial: [u8; REPORT_LEN],
    partial_len: usize,
}

impl ReportDecoder {
    /// The last report completed by `bytes`, or `None` if `bytes` completed none.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Option<i64> {
        let mut last = None;
        if self.partial_len > 0 {
            let take = (REPORT_LEN - self.partial_len).min(bytes.len());
            self.partial[self.partial_len..self.partial_len + take].copy_from_slice(&bytes[..take]);
            self.partial_len += take;
            bytes = &bytes[take..];
            if self.partial_len < REPORT_LEN {
                return None;
            }
            last = Some(i64::from_be_bytes(self.partial));
            self.partial_len = 0;
        }
        let whole = bytes.len() - bytes.len() % REPORT_LEN;
        if whole > 0 {
            let group = &bytes[whole - REPORT_LEN..whole];
            last = Some(i64::from_be_bytes(group.try_into().expect("8 bytes")));
        }
        let rest = &bytes[whole..];
        self.partial[..rest.len()].copy_from_slice(rest);
        self.partial_len = rest.len();
        last
    }
}

/// One master-to-slave frame: `body` is the CommitLog bytes from `offset`; empty is a heartbeat,
/// whose offset is the master's next transfer offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub offset: i64,
    pub body: Bytes,
}

impl Frame {
    pub fn is_heartbeat(&self) -> bool {
        self.body.is_empty()
    }
}

/// Why the master's stream cannot be read. The connection must be closed: a stream whose framing
/// is lost cannot be resynchronised.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
pub enum HaCodecError {
    #[error("frame offset {0} is negative")]
    NegativeOffset(i64),
    #[error("frame body size {0} is negative")]
    NegativeSize(i32),
    #[error("frame body of {size} bytes exceeds the limit of {max} bytes")]
    TooLarge { size: i32, max: usize },
}

/// Reads master frames on the slave. Java's slave checks neither sign nor size (a huge size just
/// stalls the link until housekeeping closes it); here both are errors, and `max_body` bounds the
/// memory a peer can make the slave hold.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    max_body: usize,
}

impl FrameDecoder {
    pub fn new(max_body: usize) -> Self {
        FrameDecoder { max_body }
    }

    /// The next whole frame at the front of `buf`, removed from it; `None` while incomplete.
    /// The header is checked as soon as it is there, before the body arrives.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, HaCodecError> {
        if buf.len() < TRANSFER_HEADER_LEN {
            return Ok(None);
        }
        let offset = i64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
        let size = i32::from_be_bytes(buf[8..12].try_into().expect("4 bytes"));
        if offset < 0 {
            return Err(HaCodecError::NegativeOffset(offset));
        }
        if size < 0 {
            return Err(HaCodecError::NegativeSize(size));
        }
        let body_len = size as usize;
        if body_len > self.max_body {
            return Err(HaCodecError::TooLarge {
                size,
                max: self.max_body,
            });
        }
        if buf.len() < TRANSFER_HEADER_LEN + body_len {
            // No reserve of the declared size: the buffer grows with what actually arrives.
            return Ok(None);
        }
        let mut frame = buf.split_to(TRANSFER_HEADER_LEN + body_len);
        let body = frame.split_off(TRANSFER_HEADER_LEN).freeze();
        Ok(Some(Frame { offset, body }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn wire(frames: &[Frame]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in frames {
            out.extend_from_slice(&encode_transfer_header(f.offset, f.body.len() as u32));
            out.extend_from_slice(&f.body);
        }
        out
    }

    /// Feeds `bytes` in pieces of the given lengths (cycled) and decodes after each piece.
    fn decode_chunked(
        bytes: &[u8],
        cuts: &[usize],
        max: usize,
    ) -> (Vec<Frame>, Option<HaCodecError>) {
        let mut decoder = FrameDecoder::new(max);
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        let mut rest = bytes;
        let mut i = 0;
        while !rest.is_empty() {
            let n = cuts[i % cuts.len()].clamp(1, rest.len());
            i += 1;
            buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            loop {
                match decoder.decode(&mut buf) {
                    Ok(Some(f)) => frames.push(f),
                    Ok(None) => break,
                    Err(e) => return (frames, Some(e)),
                }
            }
        }
        (frames, None)
    }

    #[test]
    fn golden_bytes() {
        // The bytes Java's ByteBuffer.putLong / putInt write (big-endian).
        assert_eq!(
            encode_report(0x0102_0304_0506_0708),
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(encode_report(-1), [0xff; 8]);
        assert_eq!(
            encode_transfer_header(1 << 30, 32 * 1024),
            [0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0x80, 0]
        );
        assert_eq!(
            encode_transfer_header(4096, 0),
            [0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn heartbeat_and_frame_decode() {
        let mut buf = BytesMut::from(&encode_transfer_header(4096, 0)[..]);
        buf.extend_from_slice(&encode_transfer_header(4096, 2));
        buf.extend_from_slice(b"xy");
        let mut d = FrameDecoder::new(16);
        let hb = d.decode(&mut buf).unwrap().unwrap();
        assert!(hb.is_heartbeat());
        assert_eq!(hb.offset, 4096);
        let f = d.decode(&mut buf).unwrap().unwrap();
        assert_eq!(f.body, Bytes::from_static(b"xy"));
        assert!(buf.is_empty());
        assert_eq!(d.decode(&mut buf), Ok(None));
    }

    #[test]
    fn byte_by_byte() {
        let frames = vec![
            Frame {
                offset: 0,
                body: Bytes::from_static(b"hello"),
            },
            Frame {
                offset: 5,
                body: Bytes::new(),
            },
            Frame {
                offset: 5,
                body: Bytes::from(vec![7u8; 300]),
            },
        ];
        let bytes = wire(&frames);
        assert_eq!(decode_chunked(&bytes, &[1], 1024), (frames, None));
    }

    #[test]
    fn refuses_negative_and_oversized_headers_before_the_body() {
        let mut d = FrameDecoder::new(100);
        let mut neg_offset = BytesMut::from(&encode_transfer_header(-8, 0)[..]);
        assert_eq!(
            d.decode(&mut neg_offset),
            Err(HaCodecError::NegativeOffset(-8))
        );
        let mut neg_size = BytesMut::from(&encode_transfer_header(8, u32::MAX)[..]);
        assert_eq!(d.decode(&mut neg_size), Err(HaCodecError::NegativeSize(-1)));
        let mut large = BytesMut::from(&encode_transfer_header(8, 101)[..]);
        assert_eq!(
            d.decode(&mut large),
            Err(HaCodecError::TooLarge {
                size: 101,
                max: 100
            })
        );
        let mut at_limit = BytesMut::from(&encode_transfer_header(8, 100)[..]);
        assert_eq!(d.decode(&mut at_limit), Ok(None), "waits for the body");
        assert_eq!(at_limit.len(), TRANSFER_HEADER_LEN, "nothing consumed");
    }

    #[test]
    fn reports_take_the_last_complete_group() {
        let mut d = ReportDecoder::default();
        assert_eq!(d.feed(&[]), None);
        let bytes = [encode_report(1), encode_report(2), encode_report(3)].concat();
        assert_eq!(d.feed(&bytes[..7]), None);
        assert_eq!(d.feed(&bytes[7..8]), Some(1));
        assert_eq!(d.feed(&bytes[8..23]), Some(2), "the third is incomplete");
        assert_eq!(d.feed(&bytes[23..]), Some(3));
        assert_eq!(d.feed(&bytes), Some(3), "several at once: the last");
        for b in encode_report(42) {
            let got = d.feed(&[b]);
            assert!(got.is_none() || got == Some(42));
        }
        assert_eq!(d.feed(&[]), None);
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_frames(
            frames in proptest::collection::vec(
                (0i64..i64::MAX, proptest::collection::vec(any::<u8>(), 0..200)), 0..10),
            cuts in proptest::collection::vec(1usize..64, 1..8),
        ) {
            let frames: Vec<Frame> = frames
                .into_iter()
                .map(|(offset, body)| Frame { offset, body: Bytes::from(body) })
                .collect();
            let bytes = wire(&frames);
            prop_assert_eq!(decode_chunked(&bytes, &cuts, 200), (frames, None));
        }

        #[test]
        fn arbitrary_bytes_decode_alike_in_any_chunking(
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
            cuts in proptest::collection::vec(1usize..40, 1..8),
        ) {
            let whole = decode_chunked(&bytes, &[bytes.len().max(1)], 64);
            prop_assert_eq!(decode_chunked(&bytes, &cuts, 64), whole);
        }

        #[test]
        fn reports_in_any_chunking(
            reports in proptest::collection::vec(any::<i64>(), 0..20),
            tail in 0usize..8,
            cuts in proptest::collection::vec(1usize..20, 1..8),
        ) {
            let mut bytes: Vec<u8> = reports.iter().flat_map(|r| encode_report(*r)).collect();
            bytes.extend(std::iter::repeat_n(0xAB, tail));
            let mut d = ReportDecoder::default();
            let mut last = None;
            let mut rest = &bytes[..];
            let mut i = 0;
            while !rest.is_empty() {
                let n = cuts[i % cuts.len()].min(rest.len());
                i += 1;
                if let Some(r) = d.feed(&rest[..n]) {
                    last = Some(r);
                }
                rest = &rest[n..];
            }
            prop_assert_eq!(last, reports.last().copied());
        }
    }
}
