//! The JSON dialect of fastjson 1.x, which Java RocketMQ uses for every response body and for the
//! broker's `config/*.json` files.
//!
//! fastjson writes maps whose keys are not strings with *bare* keys: `{0:"10.0.0.5:10911"}` for a
//! `Map<Long, String>` and `{{"brokerName":"b","queueId":0,"topic":"T"}:{…}}` for a map keyed by
//! `MessageQueue`. Its pretty printer indents with tabs and prints such maps on one line. None of
//! that is standard JSON, so this module has both directions:
//!
//! * Reading: [`parse`] accepts standard JSON plus fastjson's extensions (bare integer, object and
//!   identifier keys, single-quoted strings, trailing commas) and yields a [`serde_json::Value`].
//!   Bare integer keys become their decimal text (`"0"`, which serde reads into integer-keyed
//!   maps); a bare object key becomes its compact JSON text (parse it again with [`parse`] or
//!   [`from_str`]). [`from_str`]/[`from_slice`]/[`from_value`] go on to a typed value as leniently
//!   as fastjson's bean deserializer: numbers written as strings (the Go client's `codeSet`),
//!   booleans as strings or numbers, enums by ordinal, members matched ignoring case and `_`,
//!   unknown members ignored and `null` members treated as absent.
//! * Writing: [`to_string`], [`to_string_pretty`] and [`to_string_with`] serialize any
//!   [`serde::Serialize`] value the way fastjson does: struct fields sorted by name, `null` fields
//!   omitted, map keys that are not strings (integers, structs) written bare, and the pretty form
//!   byte-for-byte like `JSON.toJSONString(obj, true)`. [`Style::STANDARD`] instead quotes every key
//!   and escapes non-ASCII text, like fastjson's `BrowserCompatible` feature.
//!
//! ```
//! use std::collections::BTreeMap;
//! use skiff_protocol::fastjson;
//!
//! let text = "{\"offsetTable\":{\"T@g\":{0:12,1:0}}}";
//! let value = fastjson::parse(text).unwrap();
//! assert_eq!(value["offsetTable"]["T@g"]["0"], 12);
//!
//! let mut table = BTreeMap::new();
//! table.insert("T@g".to_string(), BTreeMap::from([(0, 12_i64), (1, 0)]));
//! assert_eq!(
//!     fastjson::consumer_offset_file(&table),
//!     "{\n\t\"offsetTable\":{\n\t\t\"T@g\":{0:12,1:0\n\t\t}\n\t}\n}"
//! );
//! ```

mod lenient;
mod read;
mod write;

use std::collections::BTreeMap;

pub use read::{from_slice, from_str, from_value, parse, parse_slice};
pub use write::{to_string, to_string_pretty, to_string_with, Style};

/// Why text could not be read or a value could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The text is not JSON, not even in fastjson's dialect.
    #[error("invalid JSON at byte {position}: {message}")]
    Syntax { position: usize, message: String },
    /// The JSON does not have the shape of the requested type.
    #[error("unexpected JSON shape: {0}")]
    Shape(String),
    /// A value could not be serialized.
    #[error("cannot serialize: {0}")]
    Serialize(String),
}

/// The content of `consumerOffset.json` (and `lmqConsumerOffset.json`): committed offsets by
/// `topic@group`, then by queue id, pretty-printed as Java's `ConsumerOffsetManager` does.
pub fn consumer_offset_file(table: &BTreeMap<String, BTreeMap<i32, i64>>) -> String {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct ConsumerOffsetFile<'a> {
        offset_table: &'a BTreeMap<String, BTreeMap<i32, i64>>,
    }
    to_string_pretty(&ConsumerOffsetFile {
        offset_table: table,
    })
    .expect("string- and integer-keyed maps of integers always serialize")
}

/// Reads `consumerOffset.json` written by Skiff or by Java RocketMQ (4.9 or 5.x; 5.x extras such as
/// `dataVersion` and `groupTopicMap` are ignored).
pub fn read_consumer_offset_file(
    text: &str,
) -> Result<BTreeMap<String, BTreeMap<i32, i64>>, Error> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ConsumerOffsetFile {
        #[serde(default)]
        offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
    }
    from_str::<ConsumerOffsetFile>(text).map(|file| file.offset_table)
}
