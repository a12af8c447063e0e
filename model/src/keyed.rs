//! Records as key/value protocols (Kafka) carry them, and how such a record is stored as a
//! RocketMQ message and read back: the cross-protocol mapping of `docs/kafka.md`.
//!
//! A keyed record has a binary key, a binary value that may be absent (a tombstone), a timestamp
//! and ordered headers whose keys may repeat and whose values are binary. RocketMQ properties are
//! text, unique by name, and reserve the separator characters 0x01 and 0x02, so no property layout
//! can hold every record. The mapping therefore keeps two forms in one message:
//!
//! - the exact one, [`KAFKA_RECORD`]: the key, a tombstone flag and all headers in order, as one
//!   base64 property that reads back byte for byte;
//! - a readable mirror for RocketMQ consumers: the key as `KEYS` (so the IndexFile finds it) and
//!   each header as a user property, where the text allows it (valid UTF-8, no separator, not a
//!   RocketMQ system name, first of a repeated key).
//!
//! A message without [`KAFKA_RECORD`] (sent by a RocketMQ client) reads as a record with `KEYS` as
//! its key and its user properties as headers. The body is the value; the timestamp is the
//! message's born time.

use base64::Engine;
use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::message::{keys, Properties, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR};

/// The property holding a keyed record's exact key, tombstone flag and headers.
pub const KAFKA_RECORD: &str = "KAFKA_RECORD";

/// One record header: a text key (keys repeat) and a binary value, possibly null.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub key: String,
    pub value: Option<Bytes>,
}

/// A record as a key/value protocol sends and fetches it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyedRecord {
    /// Milliseconds since the epoch (Kafka's CreateTime).
    pub timestamp: i64,
    pub key: Option<Bytes>,
    /// `None` is a tombstone.
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
}

/// The version byte of [`KAFKA_RECORD`]'s encoding.
const FORMAT: u8 = 1;
const HAS_KEY: u8 = 0x1;
const NULL_VALUE: u8 = 0x2;

/// Property names a RocketMQ message uses for itself: never mirrored from a header, never read
/// as a header (Java's `MessageConst.STRING_HASH_SET`, in part, plus Skiff's own).
const SYSTEM_NAMES: &[&str] = &[
    keys::KEYS,
    keys::TAGS,
    keys::WAIT_STORE_MSG_OK,
    keys::DELAY_TIME_LEVEL,
    keys::RETRY_TOPIC,
    keys::REAL_TOPIC,
    keys::REAL_QUEUE_ID,
    keys::TRANSACTION_PREPARED,
    keys::PRODUCER_GROUP,
    keys::MIN_OFFSET,
    keys::MAX_OFFSET,
    keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    keys::CLUSTER,
    keys::MSG_REGION,
    keys::TRACE_ON,
    keys::TRANSACTION_ID,
    keys::RECONSUME_TIME,
    keys::MAX_RECONSUME_TIMES,
    keys::ORIGIN_MESSAGE_ID,
    keys::TIMER_DELIVER_MS,
    keys::TIMER_DELAY_SEC,
    keys::TIMER_DELAY_MS,
    keys::SHARDING_KEY,
    keys::POP_CK,
    keys::POP_FIRST_POP_TIME,
    KAFKA_RECORD,
    "INSTANCE_ID",
    "CORRECTION_FLAG",
    "MSG_TYPE",
    "BORN_HOST",
    "BORN_TIMESTAMP",
    "DUP_INFO",
    "EXTEND_UNIQ_INFO",
    "TRANSACTION_CHECK_TIMES",
    "CHECK_IMMUNITY_TIME_IN_SECONDS",
    "__STARTDELIVERTIME",
];

fn is_system_name(name: &str) -> bool {
    SYSTEM_NAMES.contains(&name)
}

/// Text a property can hold as it is.
fn property_text(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    let clean = !text.is_empty()
        && !text.contains(NAME_VALUE_SEPARATOR)
        && !text.contains(PROPERTY_SEPARATOR);
    clean.then_some(text)
}

impl KeyedRecord {
    /// The message body: the value, empty for a tombstone.
    pub fn body(&self) -> Bytes {
        self.value.clone().unwrap_or_default()
    }

    /// Adds the record's key and headers to `properties`, exactly and as a readable mirror.
    pub fn to_properties(&self, properties: &mut Properties) {
        if let Some(key) = self.key.as_deref().and_then(property_text) {
            properties.insert(keys::KEYS, key);
        }
        for header in &self.headers {
            let name = header.key.as_str();
            let mirrored = property_text(name.as_bytes()).is_some()
                && !is_system_name(name)
                && !properties.contains(name);
            if let (true, Some(value)) = (mirrored, header.value.as_deref().and_then(property_text))
            {
                properties.insert(name, value);
            }
        }
        properties.insert(KAFKA_RECORD, self.encode_exact());
    }

    /// [`KeyedRecord::from_message`] from the properties as stored: a message a Kafka client
    /// produced is read from its [`KAFKA_RECORD`] alone, without building every property (a
    /// fetch does this for each record it sends).
    pub fn from_stored(timestamp: i64, body: Bytes, properties: &[u8]) -> KeyedRecord {
        let exact =
            stored_exact(properties).and_then(|exact| Self::decode_exact(exact, timestamp, &body));
        match exact {
            Some(record) => record,
            None => Self::from_message(timestamp, body, &Properties::decode_bytes(properties)),
        }
    }

    /// The record a stored message reads as; `body` is the message body.
    pub fn from_message(timestamp: i64, body: Bytes, properties: &Properties) -> KeyedRecord {
        if let Some(record) = properties
            .get(KAFKA_RECORD)
            .and_then(|exact| Self::decode_exact(exact.as_bytes(), timestamp, &body))
        {
            return record;
        }
        KeyedRecord {
            timestamp,
            key: properties
                .get(keys::KEYS)
                .map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: Some(body),
            headers: properties
                .iter()
                .filter(|(name, _)| !is_system_name(name))
                .map(|(name, value)| Header {
                    key: name.to_string(),
                    value: Some(Bytes::copy_from_slice(value.as_bytes())),
                })
                .collect(),
        }
    }

    fn encode_exact(&self) -> String {
        let mut out = BytesMut::new();
        out.put_u8(FORMAT);
        let flags = if self.key.is_some() { HAS_KEY } else { 0 }
            | if self.value.is_none() { NULL_VALUE } else { 0 };
        out.put_u8(flags);
        if let Some(key) = &self.key {
            put_bytes(&mut out, key);
        }
        out.put_u32(self.headers.len() as u32);
        for header in &self.headers {
            put_bytes(&mut out, header.key.as_bytes());
            match &header.value {
                Some(value) => put_bytes(&mut out, value),
                None => out.put_i32(-1),
            }
        }
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(out)
    }

    /// `None` when the property is not this encoding (then the message reads as RocketMQ's).
    fn decode_exact(text: &[u8], timestamp: i64, body: &Bytes) -> Option<KeyedRecord> {
        let raw = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(text)
            .ok()?;
        let mut buf = &raw[..];
        if buf.remaining() < 2 || buf.get_u8() != FORMAT {
            return None;
        }
        let flags = buf.get_u8();
        let key = if flags & HAS_KEY != 0 {
            Some(get_bytes(&mut buf)?)
        } else {
            None
        };
        if buf.remaining() < 4 {
            return None;
        }
        let count = buf.get_u32() as usize;
        // Each header takes at least 8 bytes: a count beyond that is not this encoding.
        if count > buf.remaining() / 8 {
            return None;
        }
        let mut headers = Vec::with_capacity(count);
        for _ in 0..count {
            let key = String::from_utf8(get_bytes(&mut buf)?.to_vec()).ok()?;
            let value = get_nullable_bytes(&mut buf)?;
            headers.push(Header { key, value });
        }
        Some(KeyedRecord {
            timestamp,
            key,
            value: (flags & NULL_VALUE == 0).then(|| body.clone()),
            headers,
        })
    }
}

/// The last non-empty [`KAFKA_RECORD`] value of properties as stored, as
/// [`Properties::find`] reads it, without checking the rest is UTF-8 or building anything: the
/// separators are ASCII, so a byte search finds what the text search does, and the value is
/// base64, which [`KeyedRecord::decode_exact`] checks.
fn stored_exact(properties: &[u8]) -> Option<&[u8]> {
    properties
        .rsplit(|&b| b == PROPERTY_SEPARATOR as u8)
        .filter_map(|segment| {
            segment
                .strip_prefix(KAFKA_RECORD.as_bytes())?
                .strip_prefix(&[NAME_VALUE_SEPARATOR as u8])
        })
        .find(|value| !value.is_empty())
}

fn put_bytes(out: &mut BytesMut, bytes: &[u8]) {
    out.put_i32(bytes.len() as i32);
    out.put_slice(bytes);
}

fn get_nullable_bytes(buf: &mut &[u8]) -> Option<Option<Bytes>> {
    if buf.remaining() < 4 {
        return None;
    }
    let len = buf.get_i32();
    if len < 0 {
        return Some(None);
    }
    let len = len as usize;
    if buf.remaining() < len {
        return None;
    }
    let bytes = Bytes::copy_from_slice(&buf[..len]);
    buf.advance(len);
    Some(Some(bytes))
}

fn get_bytes(buf: &mut &[u8]) -> Option<Bytes> {
    get_nullable_bytes(buf)?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> KeyedRecord {
        KeyedRecord {
            timestamp: 1_700_000_000_123,
            key: Some(Bytes::from_static(b"key-7")),
            value: Some(Bytes::from_static(b"value")),
            headers: vec![
                Header {
                    key: "h".into(),
                    value: Some(Bytes::from_static(b"v7")),
                },
                Header {
                    key: "bin".into(),
                    value: Some(Bytes::from_static(&[0, 1, 2, 0xff, 7])),
                },
                Header {
                    key: "rep".into(),
                    value: Some(Bytes::from_static(b"one")),
                },
                Header {
                    key: "rep".into(),
                    value: Some(Bytes::from_static(b"two")),
                },
                Header {
                    key: "nothing".into(),
                    value: None,
                },
                Header {
                    key: keys::TAGS.into(),
                    value: Some(Bytes::from_static(b"not-a-tag")),
                },
            ],
        }
    }

    #[test]
    fn a_record_reads_back_exactly_and_mirrors_what_text_allows() {
        let record = record();
        let mut properties = Properties::new();
        properties.insert(keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "ID");
        record.to_properties(&mut properties);
        // The mirror: the key, text headers (first of a repeated key), no system name.
        assert_eq!(properties.get(keys::KEYS), Some("key-7"));
        assert_eq!(properties.get("h"), Some("v7"));
        assert_eq!(properties.get("rep"), Some("one"));
        assert_eq!(properties.get("bin"), None);
        assert_eq!(properties.get(keys::TAGS), None);
        // Through the stored text form and back.
        let stored = Properties::decode(&properties.encode());
        let read = KeyedRecord::from_message(record.timestamp, record.body(), &stored);
        assert_eq!(read, record);
        // Straight from the stored bytes, as a fetch reads it.
        let raw = properties.encode();
        let read = KeyedRecord::from_stored(record.timestamp, record.body(), raw.as_bytes());
        assert_eq!(read, record);
    }

    #[test]
    fn stored_properties_without_the_exact_form_read_as_rocketmq_messages() {
        let mut properties = Properties::new();
        properties.insert(keys::KEYS, "k");
        properties.insert("color", "red");
        let raw = properties.encode();
        let body = Bytes::from_static(b"body");
        assert_eq!(
            KeyedRecord::from_stored(3, body.clone(), raw.as_bytes()),
            KeyedRecord::from_message(3, body.clone(), &properties)
        );
        // Bytes that are not UTF-8 go through Java's lossy decoding, as before.
        let mut lossy = raw.into_bytes();
        lossy.extend_from_slice(b"x\x01\xff\x02");
        assert_eq!(
            KeyedRecord::from_stored(3, body.clone(), &lossy),
            KeyedRecord::from_message(3, body, &Properties::decode_bytes(&lossy))
        );
    }

    #[test]
    fn tombstones_and_absent_keys_survive() {
        let record = KeyedRecord {
            timestamp: 5,
            key: None,
            value: None,
            headers: Vec::new(),
        };
        let mut properties = Properties::new();
        record.to_properties(&mut properties);
        assert_eq!(record.body(), Bytes::new());
        let read = KeyedRecord::from_message(5, Bytes::new(), &properties);
        assert_eq!(read, record);
        // An empty key is a key.
        let empty_key = KeyedRecord {
            key: Some(Bytes::new()),
            ..record
        };
        let mut properties = Properties::new();
        empty_key.to_properties(&mut properties);
        assert_eq!(properties.get(keys::KEYS), None);
        assert_eq!(
            KeyedRecord::from_message(5, Bytes::new(), &properties),
            empty_key
        );
    }

    #[test]
    fn a_rocketmq_message_reads_as_keys_and_user_properties() {
        let properties: Properties = [
            (keys::KEYS, "order-1"),
            (keys::TAGS, "TagA"),
            (keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "ID"),
            ("color", "red"),
        ]
        .into_iter()
        .collect();
        let read = KeyedRecord::from_message(9, Bytes::from_static(b"body"), &properties);
        assert_eq!(read.key.as_deref(), Some(&b"order-1"[..]));
        assert_eq!(read.value.as_deref(), Some(&b"body"[..]));
        assert_eq!(
            read.headers,
            vec![Header {
                key: "color".into(),
                value: Some(Bytes::from_static(b"red"))
            }]
        );
    }

    #[test]
    fn a_damaged_exact_form_reads_as_a_rocketmq_message() {
        for damaged in ["", "!!", "AQ", "AQEAAAAF", "AQD/////"] {
            let properties: Properties = [(KAFKA_RECORD, damaged), (keys::KEYS, "k")]
                .into_iter()
                .collect();
            let read = KeyedRecord::from_message(1, Bytes::from_static(b"b"), &properties);
            assert_eq!(read.key.as_deref(), Some(&b"k"[..]), "{damaged:?}");
        }
    }

    proptest::proptest! {
        /// The byte search of a fetch finds the value the text search finds, whatever the
        /// properties hold: repeated, empty or prefixed names, separators in values.
        #[test]
        fn the_stored_exact_form_is_the_one_properties_find(
            raw in "(KAFKA_RECORD|KAFKA_RECORDS|XKAFKA_RECORD|KEYS|)(\\x01[A-Za-z0-9+/\\x01]{0,6})?(\\x02(KAFKA_RECORD|KEYS|)\\x01[A-Za-z0-9\\x01]{0,6}){0,4}\\x02?"
        ) {
            let found = Properties::find(&raw, KAFKA_RECORD).map(str::as_bytes);
            proptest::prop_assert_eq!(stored_exact(raw.as_bytes()), found);
        }
    }
}
