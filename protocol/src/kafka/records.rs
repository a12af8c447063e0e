//! Kafka record batches (magic 2, the only format Kafka 4.x accepts), parsed and written here
//! rather than by `kafka-protocol`: that crate keeps record headers in a map (repeated header keys
//! collapse), decompresses without a size limit and trusts the record count for its allocation.
//!
//! A batch is a 61-byte header followed by its records, possibly compressed:
//!
//! | offset | field | notes |
//! |---|---|---|
//! | 0 | baseOffset i64 | the producer sends 0; the broker assigns |
//! | 8 | batchLength i32 | bytes after this field |
//! | 12 | partitionLeaderEpoch i32 | |
//! | 16 | magic i8 | 2 |
//! | 17 | crc u32 | CRC-32C of bytes 21.. |
//! | 21 | attributes i16 | bits 0–2 compression, 3 LogAppendTime, 4 transactional, 5 control |
//! | 23 | lastOffsetDelta i32 | |
//! | 27 | baseTimestamp i64, 35 maxTimestamp i64 | |
//! | 43 | producerId i64, 51 producerEpoch i16, 53 baseSequence i32 | |
//! | 57 | record count i32 | |
//!
//! Each record: length, attributes i8, timestampDelta, offsetDelta, key, value, headers, all
//! lengths and deltas as zig-zag varints (-1 = null).

use std::io::Read;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use skiff_model::keyed::{Header, KeyedRecord};

/// Bytes of a batch before its records.
pub const BATCH_HEADER_LEN: usize = 61;
/// The batch magic Skiff reads and writes.
pub const MAGIC: i8 = 2;

const COMPRESSION_MASK: i16 = 0x7;
const TRANSACTIONAL: i16 = 0x10;
const CONTROL: i16 = 0x20;

/// Why a produced batch was refused; each maps to a Kafka error code.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordsError {
    /// CORRUPT_MESSAGE (2): a bad length, a bad checksum, a record that does not parse.
    #[error("corrupt record batch: {0}")]
    Corrupt(String),
    /// UNSUPPORTED_FOR_MESSAGE_FORMAT (43): magic 0 or 1.
    #[error("record batch magic {0} is not supported (only magic 2)")]
    Magic(i8),
    /// UNSUPPORTED_COMPRESSION_TYPE (76).
    #[error("compression codec {0} is not supported")]
    Compression(i16),
    /// INVALID_RECORD (87): transactional or control batches, which Skiff does not serve yet.
    #[error("{0}")]
    Invalid(&'static str),
    /// MESSAGE_TOO_LARGE (10): the records decompress to more than the limit.
    #[error("the batch decompresses to more than {0} bytes")]
    TooLarge(usize),
}

fn corrupt(what: impl Into<String>) -> RecordsError {
    RecordsError::Corrupt(what.into())
}

/// One produced batch: its header fields and its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub last_offset_delta: i32,
    pub records: Vec<KeyedRecord>,
}

/// Parses the batches of a Produce partition's `records`; decompressed records may take at most
/// `max_uncompressed` bytes per batch.
pub fn decode_batches(
    mut bytes: Bytes,
    max_uncompressed: usize,
) -> Result<Vec<Batch>, RecordsError> {
    let mut batches = Vec::new();
    while bytes.has_remaining() {
        if bytes.len() < BATCH_HEADER_LEN {
            return Err(corrupt("a batch shorter than its header"));
        }
        let batch_length = (&bytes[8..12]).get_i32();
        let total = usize::try_from(batch_length)
            .ok()
            .and_then(|len| len.checked_add(12))
            .filter(|total| *total >= BATCH_HEADER_LEN && *total <= bytes.len())
            .ok_or_else(|| corrupt(format!("batch length {batch_length} does not fit")))?;
        let batch = bytes.split_to(total);
        batches.push(decode_batch(batch, max_uncompressed)?);
    }
    if batches.is_empty() {
        return Err(corrupt("no record batch"));
    }
    Ok(batches)
}

fn decode_batch(batch: Bytes, max_uncompressed: usize) -> Result<Batch, RecordsError> {
    let magic = batch[16] as i8;
    if magic != MAGIC {
        return Err(RecordsError::Magic(magic));
    }
    let crc = (&batch[17..21]).get_u32();
    if crc32c::crc32c(&batch[21..]) != crc {
        return Err(corrupt("checksum mismatch"));
    }
    let mut header = &batch[21..BATCH_HEADER_LEN];
    let attributes = header.get_i16();
    let last_offset_delta = header.get_i32();
    let base_timestamp = header.get_i64();
    let _max_timestamp = header.get_i64();
    let producer_id = header.get_i64();
    let producer_epoch = header.get_i16();
    let base_sequence = header.get_i32();
    let count = header.get_i32();
    if attributes & CONTROL != 0 {
        return Err(RecordsError::Invalid("control batches are not accepted"));
    }
    if attributes & TRANSACTIONAL != 0 {
        return Err(RecordsError::Invalid(
            "transactional batches are not served by Skiff yet",
        ));
    }
    let body = batch.slice(BATCH_HEADER_LEN..);
    let count = usize::try_from(count).map_err(|_| corrupt("negative record count"))?;
    let body = match attributes & COMPRESSION_MASK {
        0 => body,
        codec => decompress(codec, body, max_uncompressed)?,
    };
    // Every record takes at least 7 bytes: a larger count cannot be true.
    if count > body.len() / 7 + 1 {
        return Err(corrupt(format!("{count} records in {} bytes", body.len())));
    }
    let mut records = Vec::with_capacity(count);
    let mut buf = body;
    for _ in 0..count {
        records.push(decode_record(&mut buf, base_timestamp)?);
    }
    if buf.has_remaining() {
        return Err(corrupt("bytes after the last record"));
    }
    if last_offset_delta != count as i32 - 1 {
        return Err(corrupt(format!(
            "lastOffsetDelta {last_offset_delta} for {count} records"
        )));
    }
    Ok(Batch {
        producer_id,
        producer_epoch,
        base_sequence,
        last_offset_delta,
        records,
    })
}

fn decode_record(buf: &mut Bytes, base_timestamp: i64) -> Result<KeyedRecord, RecordsError> {
    let length = usize::try_from(varint(buf)?).map_err(|_| corrupt("negative record length"))?;
    if length > buf.len() {
        return Err(corrupt("a record longer than its batch"));
    }
    let mut record = buf.split_to(length);
    if !record.has_remaining() {
        return Err(corrupt("an empty record"));
    }
    let _attributes = record.get_i8();
    let timestamp_delta = varlong(&mut record)?;
    let _offset_delta = varint(&mut record)?;
    let key = nullable_bytes(&mut record)?;
    let value = nullable_bytes(&mut record)?;
    let count =
        usize::try_from(varint(&mut record)?).map_err(|_| corrupt("negative header count"))?;
    // A header takes at least 2 bytes.
    if count > record.len() / 2 {
        return Err(corrupt("more headers than bytes"));
    }
    let mut headers = Vec::with_capacity(count);
    for _ in 0..count {
        let key = nullable_bytes(&mut record)?.ok_or_else(|| corrupt("a null header key"))?;
        let key = String::from_utf8(key.to_vec()).map_err(|_| corrupt("a header key not UTF-8"))?;
        let value = nullable_bytes(&mut record)?;
        headers.push(Header { key, value });
    }
    if record.has_remaining() {
        return Err(corrupt("bytes after a record's headers"));
    }
    Ok(KeyedRecord {
        timestamp: base_timestamp.wrapping_add(timestamp_delta),
        key,
        value,
        headers,
    })
}

/// Decompresses a batch's records with the codec Kafka names by `codec`, reading at most
/// `limit` bytes of output.
fn decompress(codec: i16, body: Bytes, limit: usize) -> Result<Bytes, RecordsError> {
    let bounded = |reader: &mut dyn Read| -> Result<Bytes, RecordsError> {
        let mut out = Vec::new();
        reader
            .take(limit as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|err| corrupt(format!("cannot decompress: {err}")))?;
        if out.len() > limit {
            return Err(RecordsError::TooLarge(limit));
        }
        Ok(Bytes::from(out))
    };
    match codec {
        1 => bounded(&mut flate2::read::GzDecoder::new(&body[..])),
        2 => snappy(&body, limit),
        3 => bounded(
            &mut lz4::Decoder::new(&body[..])
                .map_err(|err| corrupt(format!("cannot decompress: {err}")))?,
        ),
        4 => bounded(
            &mut zstd::stream::read::Decoder::new(&body[..])
                .map_err(|err| corrupt(format!("cannot decompress: {err}")))?,
        ),
        other => Err(RecordsError::Compression(other)),
    }
}

/// The stream header of snappy-java's framing, which Java and librdkafka producers write.
const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";

/// Snappy as Kafka writes it: snappy-java's framing (a 16-byte header, then blocks each
/// prefixed by its compressed length), or one raw block.
fn snappy(body: &[u8], limit: usize) -> Result<Bytes, RecordsError> {
    let mut out = Vec::new();
    let decode_block = |block: &[u8], out: &mut Vec<u8>| -> Result<(), RecordsError> {
        let len = snap::raw::decompress_len(block)
            .map_err(|err| corrupt(format!("cannot decompress: {err}")))?;
        if out.len() + len > limit {
            return Err(RecordsError::TooLarge(limit));
        }
        let start = out.len();
        out.resize(start + len, 0);
        snap::raw::Decoder::new()
            .decompress(block, &mut out[start..])
            .map_err(|err| corrupt(format!("cannot decompress: {err}")))?;
        Ok(())
    };
    if body.len() >= 16 && body.starts_with(XERIAL_MAGIC) {
        let mut rest = &body[16..];
        while rest.has_remaining() {
            if rest.len() < 4 {
                return Err(corrupt("a truncated snappy block"));
            }
            let len = rest.get_u32() as usize;
            if len > rest.len() {
                return Err(corrupt("a truncated snappy block"));
            }
            decode_block(&rest[..len], &mut out)?;
            rest.advance(len);
        }
    } else {
        decode_block(body, &mut out)?;
    }
    Ok(Bytes::from(out))
}

fn varlong(buf: &mut impl Buf) -> Result<i64, RecordsError> {
    let mut raw: u64 = 0;
    for shift in (0..70).step_by(7) {
        if !buf.has_remaining() {
            return Err(corrupt("a truncated varint"));
        }
        let byte = buf.get_u8();
        raw |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
        }
    }
    Err(corrupt("a varint longer than 10 bytes"))
}

fn varint(buf: &mut impl Buf) -> Result<i32, RecordsError> {
    i32::try_from(varlong(buf)?).map_err(|_| corrupt("a varint out of range"))
}

fn nullable_bytes(buf: &mut Bytes) -> Result<Option<Bytes>, RecordsError> {
    let len = varint(buf)?;
    if len < 0 {
        return Ok(None);
    }
    let len = len as usize;
    if len > buf.len() {
        return Err(corrupt("a field longer than its record"));
    }
    Ok(Some(buf.split_to(len)))
}

fn put_varlong(out: &mut BytesMut, value: i64) {
    let mut raw = ((value << 1) ^ (value >> 63)) as u64;
    while raw >= 0x80 {
        out.put_u8((raw as u8) | 0x80);
        raw >>= 7;
    }
    out.put_u8(raw as u8);
}

fn varlong_len(value: i64) -> usize {
    let raw = ((value << 1) ^ (value >> 63)) as u64;
    (64 - raw.leading_zeros() as usize).max(1).div_ceil(7)
}

fn put_nullable(out: &mut BytesMut, bytes: Option<&[u8]>) {
    match bytes {
        Some(bytes) => {
            put_varlong(out, bytes.len() as i64);
            out.put_slice(bytes);
        }
        None => put_varlong(out, -1),
    }
}

/// The record count a batch's header declares (0 for bytes shorter than a header).
pub fn batch_record_count(batch: &[u8]) -> i32 {
    batch
        .get(BATCH_HEADER_LEN - 4..BATCH_HEADER_LEN)
        .map_or(0, |count| {
            i32::from_be_bytes(count.try_into().expect("4 bytes"))
        })
}

/// Appends one uncompressed batch holding `records`, the first at `base_offset` and the others
/// at the following offsets (CreateTime timestamps, no producer id).
pub fn encode_batch(out: &mut BytesMut, base_offset: i64, records: &[KeyedRecord]) {
    let start = out.len();
    let base_timestamp = records.first().map_or(-1, |r| r.timestamp);
    let max_timestamp = records.iter().map(|r| r.timestamp).max().unwrap_or(-1);
    out.put_i64(base_offset);
    out.put_i32(0); // batchLength, set below
    out.put_i32(-1); // partitionLeaderEpoch: Skiff publishes no leader epochs
    out.put_i8(MAGIC);
    out.put_u32(0); // crc, set below
    out.put_i16(0); // attributes: no compression, CreateTime
    out.put_i32(records.len() as i32 - 1);
    out.put_i64(base_timestamp);
    out.put_i64(max_timestamp);
    out.put_i64(-1); // producerId
    out.put_i16(-1); // producerEpoch
    out.put_i32(-1); // baseSequence
    out.put_i32(records.len() as i32);
    for (delta, record) in records.iter().enumerate() {
        // The length first, computed, so that the value is copied once, into `out`.
        let timestamp_delta = record.timestamp.wrapping_sub(base_timestamp);
        put_varlong(
            out,
            record_body_len(record, delta as i64, timestamp_delta) as i64,
        );
        out.put_i8(0);
        put_varlong(out, timestamp_delta);
        put_varlong(out, delta as i64);
        put_nullable(out, record.key.as_deref());
        put_nullable(out, record.value.as_deref());
        put_varlong(out, record.headers.len() as i64);
        for header in &record.headers {
            put_nullable(out, Some(header.key.as_bytes()));
            put_nullable(out, header.value.as_deref());
        }
    }
    let batch_length = (out.len() - start - 12) as i32;
    out[start + 8..start + 12].copy_from_slice(&batch_length.to_be_bytes());
    let crc = crc32c::crc32c(&out[start + 21..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
}

/// The size [`encode_batch`] gives `records` beyond the batch header, without encoding: what a
/// fetch counts against its byte limits.
pub fn encoded_record_len(record: &KeyedRecord, offset_delta: i64, timestamp_delta: i64) -> usize {
    let len = record_body_len(record, offset_delta, timestamp_delta);
    varlong_len(len as i64) + len
}

/// A record's encoded size after its length prefix.
fn record_body_len(record: &KeyedRecord, offset_delta: i64, timestamp_delta: i64) -> usize {
    let field = |bytes: Option<&[u8]>| match bytes {
        Some(b) => varlong_len(b.len() as i64) + b.len(),
        None => 1,
    };
    let mut len = 1
        + varlong_len(timestamp_delta)
        + varlong_len(offset_delta)
        + field(record.key.as_deref())
        + field(record.value.as_deref())
        + varlong_len(record.headers.len() as i64);
    for header in &record.headers {
        len += field(Some(header.key.as_bytes())) + field(header.value.as_deref());
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(i: u8) -> KeyedRecord {
        KeyedRecord {
            timestamp: 1_700_000_000_000 + i64::from(i),
            key: (!i.is_multiple_of(3)).then(|| Bytes::from(format!("key-{i}"))),
            value: (!i.is_multiple_of(5)).then(|| Bytes::from(vec![i; usize::from(i) * 7])),
            headers: vec![
                Header {
                    key: "rep".into(),
                    value: Some(Bytes::from_static(&[0, 1, 0xff])),
                },
                Header {
                    key: "rep".into(),
                    value: None,
                },
            ],
        }
    }

    fn encoded(records: &[KeyedRecord]) -> Bytes {
        let mut out = BytesMut::new();
        encode_batch(&mut out, 0, records);
        out.freeze()
    }

    #[test]
    fn a_written_batch_reads_back_with_repeated_and_null_headers() {
        let records: Vec<_> = (0..20).map(record).collect();
        let batches = decode_batches(encoded(&records), 1 << 20).unwrap();
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].records, records);
        assert_eq!(batches[0].last_offset_delta, 19);
        let body_len: usize = records
            .iter()
            .enumerate()
            .map(|(i, r)| encoded_record_len(r, i as i64, r.timestamp - records[0].timestamp))
            .sum();
        assert_eq!(encoded(&records).len(), BATCH_HEADER_LEN + body_len);
    }

    #[test]
    fn two_batches_back_to_back_both_read() {
        let mut out = BytesMut::new();
        encode_batch(&mut out, 0, &[record(1)]);
        encode_batch(&mut out, 1, &[record(2), record(4)]);
        let batches = decode_batches(out.freeze(), 1 << 20).unwrap();
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[1].records.len(), 2);
    }

    #[test]
    fn damage_is_refused_with_the_right_error() {
        let good = encoded(&[record(1), record(2)]);
        let mut bad_crc = good.to_vec();
        let last = bad_crc.len() - 1;
        bad_crc[last] ^= 1;
        assert!(matches!(
            decode_batches(Bytes::from(bad_crc), 1 << 20),
            Err(RecordsError::Corrupt(_))
        ));
        let mut old_magic = good.to_vec();
        old_magic[16] = 1;
        assert_eq!(
            decode_batches(Bytes::from(old_magic), 1 << 20),
            Err(RecordsError::Magic(1))
        );
        let mut huge_count = good.to_vec();
        huge_count[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
        let crc = crc32c::crc32c(&huge_count[21..]);
        huge_count[17..21].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            decode_batches(Bytes::from(huge_count), 1 << 20),
            Err(RecordsError::Corrupt(_))
        ));
        assert!(decode_batches(good.slice(..good.len() - 1), 1 << 20).is_err());
        assert!(decode_batches(Bytes::new(), 1 << 20).is_err());
    }

    /// A batch of `records` whose record section is compressed by `compress`, as producers write.
    fn compressed(
        codec: i16,
        records: &[KeyedRecord],
        compress: impl Fn(&[u8]) -> Vec<u8>,
    ) -> Bytes {
        let plain = encoded(records);
        let mut out = BytesMut::new();
        out.put_slice(&plain[..BATCH_HEADER_LEN]);
        out.put_slice(&compress(&plain[BATCH_HEADER_LEN..]));
        let batch_length = (out.len() - 12) as i32;
        out[8..12].copy_from_slice(&batch_length.to_be_bytes());
        out[21..23].copy_from_slice(&codec.to_be_bytes());
        let crc = crc32c::crc32c(&out[21..]);
        out[17..21].copy_from_slice(&crc.to_be_bytes());
        out.freeze()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn xerial_snappy(data: &[u8]) -> Vec<u8> {
        let mut out = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
        for chunk in data.chunks(1000) {
            let block = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
            out.extend_from_slice(&(block.len() as u32).to_be_bytes());
            out.extend_from_slice(&block);
        }
        out
    }

    fn lz4_frame(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = lz4::EncoderBuilder::new().build(Vec::new()).unwrap();
        encoder.write_all(data).unwrap();
        let (out, result) = encoder.finish();
        result.unwrap();
        out
    }

    #[test]
    fn every_compression_reads_back() {
        let records: Vec<_> = (0..50).map(record).collect();
        type Compress = Box<dyn Fn(&[u8]) -> Vec<u8>>;
        let cases: [(i16, Compress); 5] = [
            (1, Box::new(gzip)),
            (2, Box::new(xerial_snappy)),
            (
                2,
                Box::new(|d| snap::raw::Encoder::new().compress_vec(d).unwrap()),
            ),
            (3, Box::new(lz4_frame)),
            (4, Box::new(|d| zstd::encode_all(d, 1).unwrap())),
        ];
        for (codec, compress) in cases {
            let batch = compressed(codec, &records, compress);
            let read = decode_batches(batch, 1 << 20).unwrap();
            assert_eq!(read[0].records, records, "codec {codec}");
        }
        let batch = compressed(5, &records, |d| d.to_vec());
        assert_eq!(
            decode_batches(batch, 1 << 20),
            Err(RecordsError::Compression(5))
        );
    }

    #[test]
    fn a_decompression_bomb_stops_at_the_limit() {
        let big = KeyedRecord {
            value: Some(Bytes::from(vec![0u8; 1 << 20])),
            ..record(1)
        };
        for (codec, compress) in [
            (1, gzip as fn(&[u8]) -> Vec<u8>),
            (2, xerial_snappy),
            (3, lz4_frame),
        ] {
            let batch = compressed(codec, std::slice::from_ref(&big), compress);
            assert_eq!(
                decode_batches(batch, 64 * 1024),
                Err(RecordsError::TooLarge(64 * 1024)),
                "codec {codec}"
            );
        }
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode_batches(Bytes::from(bytes), 4096);
        }

        #[test]
        fn varlongs_round_trip(value in any::<i64>()) {
            let mut out = BytesMut::new();
            put_varlong(&mut out, value);
            prop_assert_eq!(out.len(), varlong_len(value));
            prop_assert_eq!(varlong(&mut out.freeze()).unwrap(), value);
        }
    }
}
