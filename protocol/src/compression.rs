//! Message bodies RocketMQ producers compress: a body over `compressMsgBodyOverHowmuch` (4 KiB)
//! is stored compressed, with the `COMPRESSED` system flag and, from 5.x, the codec in the
//! flag's compression bits (`MessageSysFlag`): LZ4 (frame format), ZSTD, or ZLIB (also what 4.x
//! clients, which set no codec bits, write). RocketMQ consumers undo it themselves; a protocol
//! whose clients know nothing of the flag (Kafka) gets the body undone here.

use std::io::Read;

use skiff_model::message::sys_flag;

/// The body a client sent, if `body` is compressed as `flag` says; `None` when it is not
/// compressed, or does not decompress within `limit` bytes (then the stored bytes stand).
pub fn decompressed_body(flag: i32, body: &[u8], limit: usize) -> Option<Vec<u8>> {
    if flag & sys_flag::COMPRESSED == 0 {
        return None;
    }
    let mut out = Vec::new();
    let read = match (flag & sys_flag::COMPRESSION_TYPE_MASK) >> 8 {
        1 => lz4::Decoder::new(body).and_then(|d| d.take(limit as u64 + 1).read_to_end(&mut out)),
        2 => zstd::stream::read::Decoder::new(body)
            .and_then(|d| d.take(limit as u64 + 1).read_to_end(&mut out)),
        0 | 3 => flate2::read::ZlibDecoder::new(body)
            .take(limit as u64 + 1)
            .read_to_end(&mut out),
        _ => return None,
    };
    (read.is_ok() && out.len() <= limit).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn every_codec_a_rocketmq_client_writes_is_undone() {
        let body = b"a body worth compressing, a body worth compressing".repeat(100);
        let zlib = {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(5));
            e.write_all(&body).unwrap();
            e.finish().unwrap()
        };
        let lz4 = {
            let mut e = lz4::EncoderBuilder::new().build(Vec::new()).unwrap();
            e.write_all(&body).unwrap();
            let (out, result) = e.finish();
            result.unwrap();
            out
        };
        let zstd = zstd::encode_all(&body[..], 3).unwrap();
        let compressed = sys_flag::COMPRESSED;
        for (flag, bytes) in [
            (compressed, &zlib),
            (compressed | 0x300, &zlib),
            (compressed | 0x100, &lz4),
            (compressed | 0x200, &zstd),
        ] {
            assert_eq!(
                decompressed_body(flag, bytes, 1 << 20).as_deref(),
                Some(&body[..])
            );
        }
        // Not flagged, a limit too small, or not what the flag says: the stored bytes stand.
        assert_eq!(decompressed_body(0, &zlib, 1 << 20), None);
        assert_eq!(decompressed_body(compressed, &zlib, 100), None);
        assert_eq!(decompressed_body(compressed | 0x200, &zlib, 1 << 20), None);
    }
}
