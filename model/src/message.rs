//! A message as producers send it and consumers receive it: body, user flag and properties.
//!
//! RocketMQ carries everything beyond the body (tags, keys, the client's unique id, delay level,
//! transaction markers, user properties) as one properties string, `name 0x01 value 0x02` repeated.
//! The same string travels in send headers, in batch bodies and in stored records, so its codec
//! lives here, once.

use bytes::Bytes;

/// Separates a property name from its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Terminates each property.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// Property names the broker reads or writes (`MessageConst` in Apache RocketMQ).
pub mod keys {
    pub const KEYS: &str = "KEYS";
    pub const TAGS: &str = "TAGS";
    pub const WAIT_STORE_MSG_OK: &str = "WAIT";
    pub const DELAY_TIME_LEVEL: &str = "DELAY";
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    pub const REAL_QUEUE_ID: &str = "REAL_QID";
    pub const TRANSACTION_PREPARED: &str = "TRAN_MSG";
    pub const PRODUCER_GROUP: &str = "PGROUP";
    pub const MIN_OFFSET: &str = "MIN_OFFSET";
    pub const MAX_OFFSET: &str = "MAX_OFFSET";
    pub const UNIQ_CLIENT_MESSAGE_ID_KEYIDX: &str = "UNIQ_KEY";
    pub const CLUSTER: &str = "CLUSTER";
    /// The region of the broker that stored the message (`regionId`).
    pub const MSG_REGION: &str = "MSG_REGION";
    /// The broker's `traceOn`, `true` or `false` (Java's `PROPERTY_TRACE_SWITCH`).
    pub const TRACE_ON: &str = "TRACE_ON";
    pub const TRANSACTION_ID: &str = "__transactionId__";
    pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
    pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
    pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
    pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
    pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
    pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
    pub const SHARDING_KEY: &str = "__SHARDINGKEY";
    /// A popped message's checkpoint handle (`extraInfo`).
    pub const POP_CK: &str = "POP_CK";
    /// When a message was first popped.
    pub const POP_FIRST_POP_TIME: &str = "1ST_POP_TIME";
}

/// `MessageSysFlag` bits carried in the record and in send headers.
pub mod sys_flag {
    pub const COMPRESSED: i32 = 0x1;
    pub const MULTI_TAGS: i32 = 0x2;
    pub const TRANSACTION_NOT_TYPE: i32 = 0;
    pub const TRANSACTION_PREPARED_TYPE: i32 = 0x4;
    pub const TRANSACTION_COMMIT_TYPE: i32 = 0x8;
    pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0xC;
    pub const TRANSACTION_TYPE_MASK: i32 = 0xC;
    pub const BORNHOST_V6: i32 = 0x10;
    pub const STOREHOST_V6: i32 = 0x20;
    pub const NEED_UNWRAP: i32 = 0x40;
    pub const INNER_BATCH: i32 = 0x80;
    pub const COMPRESSION_TYPE_MASK: i32 = 0x700;

    /// The transaction type bits of `flag` (one of the `TRANSACTION_*` values).
    pub fn transaction_type(flag: i32) -> i32 {
        flag & TRANSACTION_TYPE_MASK
    }
}

/// Message properties in the order they were set; names are unique.
///
/// Order is kept so that a decoded-then-encoded string is byte-identical to what the client sent
/// (Java uses a `HashMap`, so no client relies on order; identical bytes just make tests simple).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: Vec<(String, String)>,
}

impl Properties {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the wire/disk form with Java's rules (`MessageDecoder.string2messageProperties`):
    /// segments shorter than three characters, or with an empty name or value, are skipped; a
    /// repeated name keeps its last value.
    pub fn decode(text: &str) -> Self {
        let mut props = Properties::new();
        for segment in text.split(PROPERTY_SEPARATOR) {
            if segment.len() < 3 {
                continue;
            }
            if let Some((name, value)) = segment.split_once(NAME_VALUE_SEPARATOR) {
                if !name.is_empty() && !value.is_empty() {
                    props.insert(name, value);
                }
            }
        }
        props
    }

    /// The value `Properties::decode(text).get(name)` gives, found without building the map: the
    /// SQL92 filter asks for a name or two of every record a pull scans.
    pub fn find<'a>(text: &'a str, name: &str) -> Option<&'a str> {
        if name.is_empty() {
            return None;
        }
        let mut found = None;
        for segment in text.split(PROPERTY_SEPARATOR) {
            if let Some((n, value)) = segment.split_once(NAME_VALUE_SEPARATOR) {
                // decode's rules: a repeated name keeps its last value, empty values are skipped.
                if n == name && !value.is_empty() {
                    found = Some(value);
                }
            }
        }
        found
    }

    /// Parses properties stored as UTF-8 bytes; invalid UTF-8 is replaced, as Java's decoder does.
    pub fn decode_bytes(bytes: &[u8]) -> Self {
        Self::decode(&String::from_utf8_lossy(bytes))
    }

    /// The wire/disk form: `name 0x01 value 0x02` for every entry (Java writes the trailing 0x02).
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(self.encoded_len());
        for (name, value) in &self.entries {
            out.push_str(name);
            out.push(NAME_VALUE_SEPARATOR);
            out.push_str(value);
            out.push(PROPERTY_SEPARATOR);
        }
        out
    }

    /// Byte length of [`Properties::encode`] without building it.
    pub fn encoded_len(&self) -> usize {
        self.entries
            .iter()
            .map(|(n, v)| n.len() + v.len() + 2)
            .sum()
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Sets `name`, replacing an existing value in place.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let name = name.into();
        let value = value.into();
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((name, value)),
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<String> {
        let index = self.entries.iter().position(|(n, _)| n == name)?;
        Some(self.entries.remove(index).1)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The `TAGS` property.
    pub fn tags(&self) -> Option<&str> {
        self.get(keys::TAGS)
    }

    /// The `KEYS` property split on spaces, as the IndexFile indexes them.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.get(keys::KEYS)
            .unwrap_or("")
            .split(' ')
            .filter(|k| !k.is_empty())
    }

    /// The client-assigned unique id (`UNIQ_KEY`).
    pub fn uniq_key(&self) -> Option<&str> {
        self.get(keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    }

    /// The delay level requested with `DELAY`, if it parses and is positive.
    pub fn delay_level(&self) -> Option<i32> {
        self.get(keys::DELAY_TIME_LEVEL)
            .and_then(|v| v.trim().parse().ok())
            .filter(|level: &i32| *level > 0)
    }
}

impl<N: Into<String>, V: Into<String>> FromIterator<(N, V)> for Properties {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut props = Properties::new();
        for (n, v) in iter {
            props.insert(n, v);
        }
        props
    }
}

/// One message as a producer hands it to the broker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    /// The producer's user flag (`Message#setFlag`), stored verbatim.
    pub flag: i32,
    /// The body as sent; compressed when the send's sys flag says so.
    pub body: Bytes,
    pub properties: Properties,
}

/// The tag code a ConsumeQueue entry carries for a message: Java's `String.hashCode` of its tag
/// (sign-extended), or 0 when it has none.
pub fn tags_code(tags: Option<&str>) -> i64 {
    match tags {
        Some(t) if !t.is_empty() => i64::from(crate::java_string_hash(t)),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decodes_java_output() {
        let text =
            "KEYS\u{1}k1 k2\u{2}TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}7F0000010001\u{2}WAIT\u{1}true\u{2}";
        let props = Properties::decode(text);
        assert_eq!(props.tags(), Some("TagA"));
        assert_eq!(props.keys().collect::<Vec<_>>(), vec!["k1", "k2"]);
        assert_eq!(props.uniq_key(), Some("7F0000010001"));
        assert_eq!(props.encode(), text);
    }

    #[test]
    fn skips_what_java_skips() {
        // too short, empty value, empty name, and no separator at all
        let props =
            Properties::decode("a\u{1}\u{2}k\u{1}\u{2}\u{1}vv\u{2}novalue\u{2}ok\u{1}1\u{2}");
        assert_eq!(props.iter().collect::<Vec<_>>(), vec![("ok", "1")]);
    }

    #[test]
    fn repeated_names_keep_the_last_value() {
        let props = Properties::decode("A\u{1}1\u{2}A\u{1}2\u{2}");
        assert_eq!(props.get("A"), Some("2"));
        assert_eq!(props.len(), 1);
    }

    #[test]
    fn tag_codes_are_java_hash_codes() {
        assert_eq!(tags_code(Some("TagA")), 2598919);
        assert_eq!(tags_code(None), 0);
        assert_eq!(tags_code(Some("")), 0);
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip(entries in proptest::collection::vec(
            ("[A-Za-z_]{1,12}", "[^\u{1}\u{2}]{1,20}"), 0..8)) {
            let props: Properties = entries.into_iter().collect();
            let encoded = props.encode();
            prop_assert_eq!(encoded.len(), props.encoded_len());
            prop_assert_eq!(Properties::decode(&encoded), props);
        }

        #[test]
        fn find_agrees_with_decode(text in "[ab\u{1}\u{2}]{0,24}", name in "[ab]{0,2}") {
            let decoded = Properties::decode(&text);
            prop_assert_eq!(Properties::find(&text, &name), decoded.get(&name));
        }
    }
}
