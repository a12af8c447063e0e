//! What a CommitLog record means for the queues built from it (Java's `DispatchRequest`).
//!
//! The live put path and recovery both describe each record as a [`Dispatch`] and hand it to the
//! same code, so a ConsumeQueue rebuilt from the CommitLog is byte-identical to the one written
//! live. Recovery and a slave's replicated appends write entries with the same function,
//! [`Dispatch::put_entry`].

use std::borrow::Cow;
use std::io;
use std::ops::Deref;

pub(crate) use skiff_model::delay::DelayLevels;
use skiff_model::message::{keys, sys_flag, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR};
use skiff_model::record::Record;

use crate::consume_queue::{ConsumeQueue, CqEntry, Gaps, Put};

/// Topic of delayed messages; their entries carry the deliver time instead of a tag code.
pub(crate) const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";

/// One record as the dispatchers see it.
#[derive(Debug, Clone)]
pub(crate) struct Dispatch<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub commit_log_offset: i64,
    pub size: i32,
    pub queue_offset: i64,
    pub sys_flag: i32,
    pub store_timestamp: i64,
    pub properties: Cow<'a, str>,
}

impl<'a> Dispatch<'a> {
    /// Describes a decoded record.
    pub(crate) fn from_record(record: &Record<'a>) -> Self {
        Dispatch {
            topic: record.topic,
            queue_id: record.queue_id,
            commit_log_offset: record.physical_offset,
            size: record.total_size,
            queue_offset: record.queue_offset,
            sys_flag: record.sys_flag,
            store_timestamp: record.store_timestamp,
            // Java decodes properties as UTF-8, replacing what is not. `from_utf8` first: its
            // check is several times faster on the (usual) valid text.
            properties: match std::str::from_utf8(record.properties) {
                Ok(text) => Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(record.properties),
            },
        }
    }

    /// Prepared and rolled-back transaction records are never consumed: no queue entry.
    pub(crate) fn has_queue_entry(&self) -> bool {
        has_queue_entry(self.sys_flag)
    }

    /// The ConsumeQueue entry of this record.
    pub(crate) fn entry(&self, delays: &DelayLevels) -> CqEntry {
        CqEntry {
            offset: self.commit_log_offset,
            size: self.size,
            tags_code: tags_code(self.topic, &self.properties, self.store_timestamp, delays),
        }
    }

    /// Writes this record's entry at the queue offset the record carries, into the queue
    /// `queue_of` finds (or makes) for its topic and queue id; `None` for a record without an
    /// entry. This is how recovery and a slave's replicated appends build queues from records.
    pub(crate) fn put_entry<Q: Deref<Target = ConsumeQueue>>(
        &self,
        delays: &DelayLevels,
        gaps: Gaps,
        queue_of: impl FnOnce(&str, i32) -> io::Result<Q>,
    ) -> io::Result<Option<Put>> {
        if !self.has_queue_entry() {
            return Ok(None);
        }
        let queue = queue_of(self.topic, self.queue_id)?;
        queue
            .put(self.queue_offset, self.entry(delays), gaps)
            .map(Some)
    }
}

pub(crate) fn has_queue_entry(flag: i32) -> bool {
    matches!(
        sys_flag::transaction_type(flag),
        sys_flag::TRANSACTION_NOT_TYPE | sys_flag::TRANSACTION_COMMIT_TYPE
    )
}

/// The tag code of a record: Java's `String.hashCode` of `TAGS`, or for `SCHEDULE_TOPIC_XXXX`
/// the time the delayed message is due (`CommitLog.checkMessageAndReturnSize`).
pub(crate) fn tags_code(
    topic: &str,
    properties: &str,
    store_timestamp: i64,
    delays: &DelayLevels,
) -> i64 {
    if topic == SCHEDULE_TOPIC {
        let level =
            property(properties, keys::DELAY_TIME_LEVEL).and_then(|v| v.parse::<i32>().ok());
        if let Some(level) = level.and_then(|l| delays.effective_level(l)) {
            return delays.deliver_time(level, store_timestamp);
        }
    }
    skiff_model::message::tags_code(property(properties, keys::TAGS))
}

/// The value of property `name`, without building a map: the same rules as
/// `skiff_model::message::Properties::decode` (segments shorter than 3 bytes or with an empty name
/// or value are skipped; the last occurrence wins).
pub(crate) fn property<'a>(properties: &'a str, name: &str) -> Option<&'a str> {
    let mut found = None;
    for segment in properties.split(PROPERTY_SEPARATOR) {
        if segment.len() < 3 {
            continue;
        }
        if let Some((key, value)) = segment.split_once(NAME_VALUE_SEPARATOR) {
            if key == name && !value.is_empty() {
                found = Some(value);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use skiff_model::message::Properties;

    #[test]
    fn tag_codes_and_deliver_times() {
        let delays =
            DelayLevels::parse("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
                .unwrap();
        assert_eq!(delays.max_level(), 18);
        let props = "TAGS\u{1}TagA\u{2}DELAY\u{1}3\u{2}";
        assert_eq!(tags_code("T", props, 1000, &delays), 2598919);
        assert_eq!(tags_code(SCHEDULE_TOPIC, props, 1000, &delays), 11_000);
        let too_high = "DELAY\u{1}99\u{2}";
        assert_eq!(tags_code(SCHEDULE_TOPIC, too_high, 0, &delays), 7_200_000);
        assert_eq!(tags_code("T", "", 0, &delays), 0);
        assert!(DelayLevels::parse("1x").is_err());
    }

    #[test]
    fn transactions_without_queue_entries() {
        assert!(has_queue_entry(0));
        assert!(has_queue_entry(sys_flag::TRANSACTION_COMMIT_TYPE));
        assert!(!has_queue_entry(sys_flag::TRANSACTION_PREPARED_TYPE));
        assert!(!has_queue_entry(sys_flag::TRANSACTION_ROLLBACK_TYPE | 0x1));
    }

    proptest! {
        #[test]
        fn property_agrees_with_the_model(text in "[AB\u{1}\u{2}x]{0,30}") {
            let parsed = Properties::decode(&text);
            for name in ["A", "B", "AB", "x"] {
                prop_assert_eq!(property(&text, name), parsed.get(name));
            }
        }
    }
}
