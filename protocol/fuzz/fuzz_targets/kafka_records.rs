//! Feeds arbitrary bytes to the Kafka record-batch parser, as a Produce request's records. The
//! batch length and CRC-32C are set right first (when the input is long enough for a header), so
//! that the fuzzer explores the records, the compressions and the counts rather than the checksum.
//! Parsing must never panic nor decompress past its limit.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use skiff_protocol::kafka::records::{decode_batches, BATCH_HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    let mut batch = data.to_vec();
    if batch.len() >= BATCH_HEADER_LEN {
        let length = (batch.len() - 12) as i32;
        batch[8..12].copy_from_slice(&length.to_be_bytes());
        batch[16] = 2;
        let crc = crc32c::crc32c(&batch[21..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
    }
    if let Ok(batches) = decode_batches(Bytes::from(batch), 1 << 20) {
        for batch in batches {
            assert!(batch.records.iter().all(|r| r.value.as_ref().map_or(0, |v| v.len()) <= 1 << 20));
        }
    }
});
