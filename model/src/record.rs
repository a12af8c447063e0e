//! The stored message record: one CommitLog entry, and exactly the bytes a pull, view or query
//! response carries for each message (Apache RocketMQ `MessageDecoder` / `MessageExtEncoder`).
//!
//! All integers are big-endian. Version 1 (magic `0xDAA320A7`) has a one-byte topic length and is
//! what every client understands; version 2 (magic `0xDAA320AB`) has a two-byte topic length and is
//! written only for topics longer than 127 bytes, as the Java broker does.
//!
//! ```text
//!  0 TOTALSIZE i32        4 MAGICCODE i32      8 BODYCRC i32       12 QUEUEID i32
//! 16 FLAG i32            20 QUEUEOFFSET i64   28 PHYSICALOFFSET i64 36 SYSFLAG i32
//! 40 BORNTIMESTAMP i64   48 BORNHOST (4|16 + port i32)
//!    STORETIMESTAMP i64     STOREHOST (4|16 + port i32)
//!    RECONSUMETIMES i32     PREPARED TRANSACTION OFFSET i64
//!    BODY (i32 len + bytes) TOPIC (u8|i16 len + bytes) PROPERTIES (i16 len + bytes)
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{Buf, BufMut};

use crate::message::sys_flag;

/// Magic of a v1 record (one-byte topic length).
pub const MAGIC_V1: i32 = 0xDAA320A7_u32 as i32;
/// Magic of a v2 record (two-byte topic length).
pub const MAGIC_V2: i32 = 0xDAA320AB_u32 as i32;
/// Magic of the blank that fills the end of a CommitLog file a record did not fit into.
pub const BLANK_MAGIC: i32 = 0xCBD43194_u32 as i32;

/// Byte position of QUEUEOFFSET, patched in when the store assigns it.
pub const QUEUE_OFFSET_POS: usize = 20;
/// Byte position of PHYSICALOFFSET, patched in when the store assigns it.
pub const PHYSICAL_OFFSET_POS: usize = 28;
/// Byte position of SYSFLAG.
pub const SYS_FLAG_POS: usize = 36;
/// Byte position of BORNHOST (its width depends on the sys flag).
pub const BORN_HOST_POS: usize = 48;
/// Longest topic a v1 record can hold; longer topics are written as v2.
pub const MAX_V1_TOPIC_LEN: usize = 127;
/// Largest properties string (its length is a signed 16-bit field).
pub const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;

/// Errors while reading a record.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("record truncated: need {needed} bytes, have {available}")]
    Truncated { needed: usize, available: usize },
    #[error("unknown magic code {0:#010x}")]
    BadMagic(i32),
    #[error("record size field {declared} does not match its content ({computed})")]
    SizeMismatch { declared: i32, computed: usize },
    #[error("body CRC {stored} does not match computed {computed}")]
    BadCrc { stored: i32, computed: i32 },
    #[error("topic is not UTF-8")]
    BadTopic,
    #[error("topic of {0} bytes does not fit a record")]
    TopicTooLong(usize),
    #[error("properties of {0} bytes exceed 32767")]
    PropertiesTooLong(usize),
}

/// The PHYSICALOFFSET field of an encoded record; `None` if it is too short to have one.
pub fn physical_offset(record: &[u8]) -> Option<i64> {
    let field = record.get(PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8)?;
    Some(i64::from_be_bytes(field.try_into().ok()?))
}

/// Body CRC as Java computes it: IEEE CRC32 masked to 31 bits (`UtilAll.crc32`).
pub fn body_crc(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

/// Width in bytes of an encoded host (address + port) of `addr`.
fn host_len(addr: &SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => 8,
        SocketAddr::V6(_) => 20,
    }
}

fn put_host(out: &mut impl BufMut, addr: &SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => out.put_slice(&ip.octets()),
        IpAddr::V6(ip) => out.put_slice(&ip.octets()),
    }
    out.put_i32(i32::from(addr.port()));
}

fn get_host(buf: &mut &[u8], v6: bool) -> SocketAddr {
    let ip = if v6 {
        let mut octets = [0u8; 16];
        buf.copy_to_slice(&mut octets);
        IpAddr::V6(Ipv6Addr::from(octets))
    } else {
        let mut octets = [0u8; 4];
        buf.copy_to_slice(&mut octets);
        IpAddr::V4(Ipv4Addr::from(octets))
    };
    let port = buf.get_i32() as u16;
    SocketAddr::new(ip, port)
}

/// Everything needed to write one record. Offsets and the store timestamp may be left at zero and
/// patched later (see [`QUEUE_OFFSET_POS`], [`PHYSICAL_OFFSET_POS`], [`store_timestamp_pos`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFields<'a> {
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    /// The sys flag; its host-width bits are set from the addresses by [`RecordFields::encode`].
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    pub topic: &'a str,
    pub properties: &'a str,
}

impl RecordFields<'_> {
    /// The sys flag as written: with the IPv6 bits matching the two addresses.
    pub fn effective_sys_flag(&self) -> i32 {
        let mut flag = self.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
        if self.born_host.is_ipv6() {
            flag |= sys_flag::BORNHOST_V6;
        }
        if self.store_host.is_ipv6() {
            flag |= sys_flag::STOREHOST_V6;
        }
        flag
    }

    fn is_v2(&self) -> bool {
        self.topic.len() > MAX_V1_TOPIC_LEN
    }

    /// Total encoded size of the record (TOTALSIZE).
    pub fn encoded_len(&self) -> usize {
        let topic_len_width = if self.is_v2() { 2 } else { 1 };
        4 + 4
            + 4
            + 4
            + 4
            + 8
            + 8
            + 4
            + 8
            + host_len(&self.born_host)
            + 8
            + host_len(&self.store_host)
            + 4
            + 8
            + 4
            + self.body.len()
            + topic_len_width
            + self.topic.len()
            + 2
            + self.properties.len()
    }

    /// Appends the record to `out`. The body CRC is computed here.
    pub fn encode(&self, out: &mut impl BufMut) -> Result<(), RecordError> {
        if self.topic.len() > i16::MAX as usize {
            return Err(RecordError::TopicTooLong(self.topic.len()));
        }
        if self.properties.len() > MAX_PROPERTIES_LEN {
            return Err(RecordError::PropertiesTooLong(self.properties.len()));
        }
        let v2 = self.is_v2();
        out.put_i32(self.encoded_len() as i32);
        out.put_i32(if v2 { MAGIC_V2 } else { MAGIC_V1 });
        out.put_i32(body_crc(self.body));
        out.put_i32(self.queue_id);
        out.put_i32(self.flag);
        out.put_i64(self.queue_offset);
        out.put_i64(self.physical_offset);
        out.put_i32(self.effective_sys_flag());
        out.put_i64(self.born_timestamp);
        put_host(out, &self.born_host);
        out.put_i64(self.store_timestamp);
        put_host(out, &self.store_host);
        out.put_i32(self.reconsume_times);
        out.put_i64(self.prepared_transaction_offset);
        out.put_i32(self.body.len() as i32);
        out.put_slice(self.body);
        if v2 {
            out.put_i16(self.topic.len() as i16);
        } else {
            out.put_u8(self.topic.len() as u8);
        }
        out.put_slice(self.topic.as_bytes());
        out.put_i16(self.properties.len() as i16);
        out.put_slice(self.properties.as_bytes());
        Ok(())
    }
}

/// Byte position of STORETIMESTAMP in a record with this sys flag.
pub fn store_timestamp_pos(sys_flag: i32) -> usize {
    BORN_HOST_POS
        + if sys_flag & sys_flag::BORNHOST_V6 != 0 {
            20
        } else {
            8
        }
}

/// A decoded record whose body, topic and properties borrow from the source bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    pub total_size: i32,
    pub magic: i32,
    pub body_crc: i32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    pub topic: &'a str,
    pub properties: &'a [u8],
}

/// Fixed part of a record before the variable-width hosts, used to bound reads.
const MIN_RECORD_LEN: usize = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + 1 + 2;

impl<'a> Record<'a> {
    /// Decodes the record at the start of `bytes`. `check_crc` verifies the body CRC as the Java
    /// broker's recovery does; the declared total size must always match the content.
    pub fn decode(bytes: &'a [u8], check_crc: bool) -> Result<Self, RecordError> {
        let truncated = |needed: usize| RecordError::Truncated {
            needed,
            available: bytes.len(),
        };
        if bytes.len() < 8 {
            return Err(truncated(8));
        }
        let mut buf = bytes;
        let total_size = buf.get_i32();
        let magic = buf.get_i32();
        let v2 = match magic {
            MAGIC_V1 => false,
            MAGIC_V2 => true,
            other => return Err(RecordError::BadMagic(other)),
        };
        if total_size < MIN_RECORD_LEN as i32 {
            return Err(RecordError::SizeMismatch {
                declared: total_size,
                computed: MIN_RECORD_LEN,
            });
        }
        let total = total_size as usize;
        if bytes.len() < total {
            return Err(truncated(total));
        }
        // From here on every read stays inside `record`; running short means the size lied.
        let record = &bytes[..total];
        let mut buf = &record[8..];
        let size_mismatch = |computed: usize| RecordError::SizeMismatch {
            declared: total_size,
            computed,
        };
        let body_crc_field = buf.get_i32();
        let queue_id = buf.get_i32();
        let flag = buf.get_i32();
        let queue_offset = buf.get_i64();
        let physical_offset = buf.get_i64();
        let sys_flag_value = buf.get_i32();
        let born_timestamp = buf.get_i64();
        let born_v6 = sys_flag_value & sys_flag::BORNHOST_V6 != 0;
        let store_v6 = sys_flag_value & sys_flag::STOREHOST_V6 != 0;
        let hosts = if born_v6 { 20 } else { 8 } + if store_v6 { 20 } else { 8 };
        if buf.remaining() < hosts + 8 + 4 + 8 + 4 {
            return Err(size_mismatch(total + hosts));
        }
        let born_host = get_host(&mut buf, born_v6);
        let store_timestamp = buf.get_i64();
        let store_host = get_host(&mut buf, store_v6);
        let reconsume_times = buf.get_i32();
        let prepared_transaction_offset = buf.get_i64();
        let body_len = buf.get_i32();
        if body_len < 0 || buf.remaining() < body_len as usize {
            return Err(size_mismatch(total + body_len.max(0) as usize));
        }
        let body = &buf[..body_len as usize];
        buf.advance(body_len as usize);
        let topic_len = if v2 {
            if buf.remaining() < 2 {
                return Err(size_mismatch(total + 2));
            }
            // Java reads a signed short; a negative length is a damaged record.
            match usize::try_from(buf.get_i16()) {
                Ok(len) => len,
                Err(_) => return Err(size_mismatch(total + 2)),
            }
        } else {
            if buf.remaining() < 1 {
                return Err(size_mismatch(total + 1));
            }
            buf.get_u8() as usize
        };
        if buf.remaining() < topic_len + 2 {
            return Err(size_mismatch(total + topic_len + 2));
        }
        let topic = std::str::from_utf8(&buf[..topic_len]).map_err(|_| RecordError::BadTopic)?;
        buf.advance(topic_len);
        let props_len = buf.get_i16();
        if props_len < 0 || buf.remaining() != props_len as usize {
            return Err(size_mismatch(
                total - buf.remaining() + props_len.max(0) as usize,
            ));
        }
        let properties = buf;
        if check_crc {
            let computed = body_crc(body);
            if computed != body_crc_field {
                return Err(RecordError::BadCrc {
                    stored: body_crc_field,
                    computed,
                });
            }
        }
        Ok(Record {
            total_size,
            magic,
            body_crc: body_crc_field,
            queue_id,
            flag,
            queue_offset,
            physical_offset,
            sys_flag: sys_flag_value,
            born_timestamp,
            born_host,
            store_timestamp,
            store_host,
            reconsume_times,
            prepared_transaction_offset,
            body,
            topic,
            properties,
        })
    }

    /// The record's properties, parsed.
    pub fn parsed_properties(&self) -> crate::message::Properties {
        crate::message::Properties::decode_bytes(self.properties)
    }

    /// The offset message id of this record (see [`offset_msg_id`]).
    pub fn msg_id(&self) -> String {
        offset_msg_id(self.store_host, self.physical_offset)
    }

    /// Re-encodes the record (used to give records back to clients after rewriting a field).
    pub fn to_fields(&self) -> RecordFields<'a> {
        RecordFields {
            queue_id: self.queue_id,
            flag: self.flag,
            queue_offset: self.queue_offset,
            physical_offset: self.physical_offset,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            store_timestamp: self.store_timestamp,
            store_host: self.store_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
            body: self.body,
            topic: self.topic,
            properties: std::str::from_utf8(self.properties).unwrap_or(""),
        }
    }
}

/// The broker's message id: uppercase hex of store host address, port (i32) and CommitLog offset
/// (i64); 32 characters for IPv4, 56 for IPv6 (`MessageDecoder.createMessageId`). Clients decode it
/// to find the broker and offset, so it must be exact.
pub fn offset_msg_id(store_host: SocketAddr, physical_offset: i64) -> String {
    let mut raw = Vec::with_capacity(28);
    put_host(&mut raw, &store_host);
    raw.put_i64(physical_offset);
    let mut hex = String::with_capacity(raw.len() * 2);
    for byte in raw {
        const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
        hex.push(DIGITS[(byte >> 4) as usize] as char);
        hex.push(DIGITS[(byte & 0xF) as usize] as char);
    }
    hex
}

/// Decodes an offset message id into the store host and CommitLog offset.
pub fn decode_offset_msg_id(id: &str) -> Option<(SocketAddr, i64)> {
    if !matches!(id.len(), 32 | 56) || !id.is_ascii() {
        return None;
    }
    let mut raw = Vec::with_capacity(id.len() / 2);
    for pair in id.as_bytes().chunks(2) {
        let text = std::str::from_utf8(pair).ok()?;
        raw.push(u8::from_str_radix(text, 16).ok()?);
    }
    let mut buf = raw.as_slice();
    let host = get_host(&mut buf, id.len() == 56);
    Some((host, buf.get_i64()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn physical_offset_of_a_record_and_of_a_fragment() {
        let mut record = vec![0u8; 40];
        record[PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8]
            .copy_from_slice(&0x0102_0304_0506_0708_i64.to_be_bytes());
        assert_eq!(physical_offset(&record), Some(0x0102_0304_0506_0708));
        assert_eq!(physical_offset(&record[..PHYSICAL_OFFSET_POS + 7]), None);
    }

    fn sample<'a>(topic: &'a str, body: &'a [u8], props: &'a str) -> RecordFields<'a> {
        RecordFields {
            queue_id: 3,
            flag: 7,
            queue_offset: 42,
            physical_offset: 1 << 33,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: "10.0.0.9:53000".parse().unwrap(),
            store_timestamp: 1_700_000_000_123,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            reconsume_times: 1,
            prepared_transaction_offset: 0,
            body,
            topic,
            properties: props,
        }
    }

    #[test]
    fn v1_layout_matches_the_java_formula() {
        let fields = sample("TopicTest", b"hello", "TAGS\u{1}A\u{2}");
        // 91 + body + topic + properties for v1 with IPv4 hosts.
        assert_eq!(fields.encoded_len(), 91 + 5 + 9 + 7);
        let mut out = Vec::new();
        fields.encode(&mut out).unwrap();
        assert_eq!(out.len(), fields.encoded_len());
        assert_eq!(&out[4..8], &[0xDA, 0xA3, 0x20, 0xA7]);
        let record = Record::decode(&out, true).unwrap();
        assert_eq!(record.topic, "TopicTest");
        assert_eq!(record.body, b"hello");
        assert_eq!(record.queue_offset, 42);
        assert_eq!(record.physical_offset, 1 << 33);
        assert_eq!(record.store_timestamp, 1_700_000_000_123);
        assert_eq!(
            &out[store_timestamp_pos(0)..store_timestamp_pos(0) + 8],
            &1_700_000_000_123_i64.to_be_bytes()
        );
    }

    #[test]
    fn long_topics_use_v2() {
        let topic = "T".repeat(200);
        let fields = sample(&topic, b"", "");
        let mut out = Vec::new();
        fields.encode(&mut out).unwrap();
        assert_eq!(out.len(), fields.encoded_len());
        let record = Record::decode(&out, true).unwrap();
        assert_eq!(record.magic, MAGIC_V2);
        assert_eq!(record.topic, topic);
    }

    #[test]
    fn ipv6_hosts_set_their_flags() {
        let mut fields = sample("T", b"x", "");
        fields.born_host = "[::1]:1234".parse().unwrap();
        let mut out = Vec::new();
        fields.encode(&mut out).unwrap();
        let record = Record::decode(&out, true).unwrap();
        assert_eq!(
            record.sys_flag & sys_flag::BORNHOST_V6,
            sys_flag::BORNHOST_V6
        );
        assert_eq!(record.born_host, fields.born_host);
        assert_eq!(record.store_host, fields.store_host);
    }

    #[test]
    fn corrupt_records_are_rejected() {
        let fields = sample("TopicTest", b"hello", "");
        let mut out = Vec::new();
        fields.encode(&mut out).unwrap();
        let mut bad_crc = out.clone();
        let body_at = out.len() - 2 - 1 - 9 - 5;
        bad_crc[body_at] ^= 0xFF;
        assert!(matches!(
            Record::decode(&bad_crc, true),
            Err(RecordError::BadCrc { .. })
        ));
        assert!(Record::decode(&bad_crc, false).is_ok());
        assert!(matches!(
            Record::decode(&out[..out.len() - 1], true),
            Err(RecordError::Truncated { .. })
        ));
        let mut bad_size = out.clone();
        bad_size[3] -= 1;
        assert!(matches!(
            Record::decode(&bad_size, true),
            Err(RecordError::SizeMismatch { .. })
        ));
        let mut bad_magic = out;
        bad_magic[4] = 0;
        assert!(matches!(
            Record::decode(&bad_magic, true),
            Err(RecordError::BadMagic(_))
        ));
    }

    #[test]
    fn negative_v2_topic_lengths_are_rejected() {
        // Found by the decode_record fuzz target: a length of -1 once wrapped to usize::MAX.
        let topic = "T".repeat(200);
        let mut out = Vec::new();
        sample(&topic, b"", "").encode(&mut out).unwrap();
        let topic_len_at = out.len() - 2 - topic.len() - 2;
        out[topic_len_at..topic_len_at + 2].copy_from_slice(&(-1_i16).to_be_bytes());
        assert!(matches!(
            Record::decode(&out, false),
            Err(RecordError::SizeMismatch { .. })
        ));
    }

    #[test]
    fn offset_msg_ids_match_java() {
        // MessageDecoder.createMessageId for 127.0.0.1:10911 at offset 0x1234.
        let id = offset_msg_id("127.0.0.1:10911".parse().unwrap(), 0x1234);
        assert_eq!(id, "7F00000100002A9F0000000000001234");
        assert_eq!(
            decode_offset_msg_id(&id),
            Some(("127.0.0.1:10911".parse().unwrap(), 0x1234))
        );
        assert_eq!(decode_offset_msg_id("XYZ"), None);
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = Record::decode(&bytes, true);
        }

        #[test]
        fn round_trip(topic in "[A-Za-z0-9_%-]{1,200}", body in proptest::collection::vec(any::<u8>(), 0..64),
                      props in "[a-z\u{1}\u{2}]{0,40}", queue_offset in any::<i64>(), phys in any::<i64>()) {
            let mut fields = sample(&topic, &body, &props);
            fields.queue_offset = queue_offset;
            fields.physical_offset = phys;
            let mut out = Vec::new();
            fields.encode(&mut out).unwrap();
            let record = Record::decode(&out, true).unwrap();
            prop_assert_eq!(record.to_fields(), fields);
        }
    }
}
