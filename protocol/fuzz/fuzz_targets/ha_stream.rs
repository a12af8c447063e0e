//! Feeds arbitrary bytes to both HA decoders, as a hostile peer would: the transfer frames a
//! slave reads and the reports a master reads. Input: `[n][n chunk lengths][stream]`. The stream
//! decoded at once and decoded in those chunks must give the same frames (and the same error),
//! every frame must re-encode to the bytes it came from, and the last report must be the last
//! complete 8-byte group whatever the chunking.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use skiff_protocol::ha::{
    encode_transfer_header, Frame, FrameDecoder, HaCodecError, ReportDecoder, REPORT_LEN,
};

const MAX_BODY: usize = 4096;

/// Splits `stream` into pieces of the lengths in `cuts` (cycled; 0 counts as 1).
fn chunks<'a>(stream: &'a [u8], cuts: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = stream;
    let mut i = 0;
    while !rest.is_empty() {
        let n = cuts
            .get(i % cuts.len().max(1))
            .map_or(rest.len(), |&c| usize::from(c).max(1))
            .min(rest.len());
        i += 1;
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

fn frames(pieces: &[&[u8]]) -> (Vec<Frame>, Option<HaCodecError>) {
    let mut decoder = FrameDecoder::new(MAX_BODY);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    assert!(frame.body.len() <= MAX_BODY);
                    out.push(frame);
                }
                Ok(None) => break,
                Err(err) => return (out, Some(err)),
            }
        }
    }
    (out, None)
}

fn last_report(pieces: &[&[u8]]) -> Option<i64> {
    let mut decoder = ReportDecoder::default();
    pieces.iter().fold(None, |last, p| decoder.feed(p).or(last))
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n).min(rest.len());
    let (cuts, stream) = rest.split_at(n);

    let whole = frames(&[stream]);
    let chunked = frames(&chunks(stream, cuts));
    assert_eq!(whole, chunked);
    let mut reencoded = Vec::new();
    for frame in &whole.0 {
        reencoded.extend_from_slice(&encode_transfer_header(
            frame.offset,
            frame.body.len() as u32,
        ));
        reencoded.extend_from_slice(&frame.body);
    }
    assert_eq!(&stream[..reencoded.len()], &reencoded[..]);

    let groups = stream.len() / REPORT_LEN;
    let expected = (groups > 0).then(|| {
        let at = (groups - 1) * REPORT_LEN;
        i64::from_be_bytes(stream[at..at + REPORT_LEN].try_into().unwrap())
    });
    assert_eq!(last_report(&[stream]), expected);
    assert_eq!(last_report(&chunks(stream, cuts)), expected);
});
