//! Framing: `[i32 total][u8 serializeType | u24 headerLen][header][body]`, big-endian, where
//! `total` counts everything after itself.
//!
//! [`RemotingCodec`] waits for a complete frame, then parses it with a cursor over the frame's
//! bytes; the body is a zero-copy slice of them. Anything malformed is a [`CodecError`], after
//! which the connection must be closed, as the Java server does: a stream whose framing is lost
//! cannot be resynchronised.
//!
//! ```
//! use bytes::BytesMut;
//! use skiff_protocol::remoting::{RemotingCodec, RemotingCommand};
//! use tokio_util::codec::{Decoder, Encoder};
//!
//! let mut codec = RemotingCodec::default();
//! let mut wire = BytesMut::new();
//! codec.encode(RemotingCommand::request(34, 1), &mut wire).unwrap();
//! let frame = codec.decode(&mut wire).unwrap().unwrap();
//! assert_eq!((frame.code, frame.opaque), (34, 1));
//! ```

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::command::{Body, RemotingCommand, SerializeType};
use super::header;
use super::DEFAULT_MAX_FRAME_LEN;

/// Why a frame could not be read or written. On decode, the connection must be closed.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("frame of {0} bytes exceeds the limit of {1} bytes")]
    FrameTooLarge(usize, usize),
    #[error("frame length {0} is negative or too small for a header")]
    BadFrameLength(i32),
    #[error("header length {header} does not fit a frame of {total} bytes")]
    BadHeaderLength { header: usize, total: usize },
    #[error("unknown serialize type {0}")]
    UnknownSerializeType(u8),
    #[error("bad JSON header: {0}")]
    BadJsonHeader(String),
    #[error("bad ROCKETMQ header: {0}")]
    BadBinaryHeader(&'static str),
    #[error("cannot encode: {0}")]
    Unencodable(&'static str),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Largest header the 24-bit length can describe.
const MAX_HEADER_LEN: usize = 0xFF_FFFF;

/// tokio codec for remoting frames. `max_frame_len` bounds a whole frame including its length
/// field, as Java's `LengthFieldBasedFrameDecoder` does.
#[derive(Debug, Clone)]
pub struct RemotingCodec {
    max_frame_len: usize,
}

impl RemotingCodec {
    pub fn new(max_frame_len: usize) -> Self {
        RemotingCodec { max_frame_len }
    }
}

impl Default for RemotingCodec {
    fn default() -> Self {
        RemotingCodec::new(DEFAULT_MAX_FRAME_LEN)
    }
}

impl Decoder for RemotingCodec {
    type Item = RemotingCommand;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RemotingCommand>, CodecError> {
        if src.len() < 4 {
            return Ok(None);
        }
        let total = i32::from_be_bytes([src[0], src[1], src[2], src[3]]);
        if total < 4 {
            return Err(CodecError::BadFrameLength(total));
        }
        let frame_len = total as usize + 4;
        if frame_len > self.max_frame_len {
            return Err(CodecError::FrameTooLarge(frame_len, self.max_frame_len));
        }
        if src.len() < frame_len {
            // No reserve of the declared length: a peer that declares 16 MiB and sends a few
            // bytes must not pin 16 MiB. The buffer grows (amortized) with what arrives.
            return Ok(None);
        }
        let mut frame = src.split_to(frame_len).freeze();
        frame.advance(4);
        decode_frame(frame).map(Some)
    }
}

/// Decodes one frame's content: everything after the `total` length field.
pub fn decode_frame(mut frame: Bytes) -> Result<RemotingCommand, CodecError> {
    let total = frame.len();
    if total < 4 {
        return Err(CodecError::BadFrameLength(total as i32));
    }
    let word = frame.get_u32();
    let serialize_type = (word >> 24) as u8;
    let header_len = (word & 0xFF_FFFF) as usize;
    if header_len > frame.len() {
        return Err(CodecError::BadHeaderLength {
            header: header_len,
            total,
        });
    }
    let header_bytes = frame.split_to(header_len);
    let (header, serialize_type) = match SerializeType::from_code(serialize_type) {
        Some(SerializeType::Json) => (header::decode_json(&header_bytes)?, SerializeType::Json),
        Some(SerializeType::RocketMq) => (
            header::decode_binary(&header_bytes)?,
            SerializeType::RocketMq,
        ),
        None => return Err(CodecError::UnknownSerializeType(serialize_type)),
    };
    Ok(header.into_command(Body::Single(frame), serialize_type))
}

impl Encoder<RemotingCommand> for RemotingCodec {
    type Error = CodecError;

    fn encode(&mut self, cmd: RemotingCommand, dst: &mut BytesMut) -> Result<(), CodecError> {
        encode_frame(&cmd, dst)
    }
}

/// Appends the complete frame for `cmd` (length field included) to `dst`, copying the body once.
pub fn encode_frame(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<(), CodecError> {
    let start = dst.len();
    let body_len = cmd.body.len();
    dst.reserve(8 + 256 + body_len);
    dst.put_u64(0); // total and header length, patched below
    match cmd.serialize_type {
        SerializeType::Json => header::encode_json(cmd, dst),
        SerializeType::RocketMq => {
            if let Err(err) = header::encode_binary(cmd, dst) {
                dst.truncate(start);
                return Err(err);
            }
        }
    }
    let header_len = dst.len() - start - 8;
    let total = 4 + header_len + body_len;
    if header_len > MAX_HEADER_LEN || total > i32::MAX as usize {
        dst.truncate(start);
        return Err(CodecError::Unencodable(
            "frame larger than the length fields allow",
        ));
    }
    let word = (u32::from(cmd.serialize_type.code()) << 24) | header_len as u32;
    dst[start..start + 4].copy_from_slice(&(total as u32).to_be_bytes());
    dst[start + 4..start + 8].copy_from_slice(&word.to_be_bytes());
    for chunk in cmd.body.chunks() {
        dst.put_slice(chunk);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_length_is_not_preallocated() {
        let mut codec = RemotingCodec::new(16 * 1024 * 1024);
        let mut src = BytesMut::from(&(15u32 << 20).to_be_bytes()[..]);
        src.extend_from_slice(&[0u8; 100]);
        assert!(codec.decode(&mut src).unwrap().is_none());
        assert!(src.capacity() < 64 * 1024, "{}", src.capacity());
    }

    #[test]
    fn waits_for_the_whole_frame() {
        let mut cmd = RemotingCommand::request(11, 5);
        cmd.body = Body::from(b"payload".to_vec());
        let mut wire = BytesMut::new();
        encode_frame(&cmd, &mut wire).unwrap();
        let mut codec = RemotingCodec::default();
        let mut partial = BytesMut::new();
        for (i, byte) in wire.iter().enumerate() {
            partial.put_u8(*byte);
            let decoded = codec.decode(&mut partial).unwrap();
            if i + 1 < wire.len() {
                assert!(decoded.is_none());
            } else {
                assert_eq!(decoded.unwrap(), cmd);
                assert!(partial.is_empty());
            }
        }
    }

    #[test]
    fn rejects_bad_lengths_and_types() {
        let mut codec = RemotingCodec::new(64);
        let mut big = BytesMut::from(&(61_i32).to_be_bytes()[..]);
        assert!(matches!(
            codec.decode(&mut big),
            Err(CodecError::FrameTooLarge(65, 64))
        ));
        let mut negative = BytesMut::from(&(-5_i32).to_be_bytes()[..]);
        assert!(matches!(
            codec.decode(&mut negative),
            Err(CodecError::BadFrameLength(-5))
        ));
        let mut short = BytesMut::from(&[0, 0, 0, 4, 0, 0, 0, 9][..]);
        assert!(matches!(
            codec.decode(&mut short),
            Err(CodecError::BadHeaderLength { .. })
        ));
        let mut unknown = BytesMut::from(&[0, 0, 0, 4, 7, 0, 0, 0][..]);
        assert!(matches!(
            codec.decode(&mut unknown),
            Err(CodecError::UnknownSerializeType(7))
        ));
    }

    #[test]
    fn chunked_bodies_are_written_in_order() {
        let mut cmd = RemotingCommand::response(0, 1);
        cmd.body = Body::Chunks(vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cd")]);
        let mut wire = BytesMut::new();
        encode_frame(&cmd, &mut wire).unwrap();
        assert!(wire.ends_with(b"abcd"));
        let decoded = RemotingCodec::default().decode(&mut wire).unwrap().unwrap();
        assert_eq!(decoded.body.to_bytes(), Bytes::from_static(b"abcd"));
    }
}
