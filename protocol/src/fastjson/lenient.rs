//! A serde [`Deserializer`] over a parsed JSON value that converts scalars the way fastjson's
//! `TypeUtils.cast*` does, so that a body written by any client (Java fastjson, Go `jsoniter`,
//! C++ `jsoncpp`) reads into the same typed value as on the Java broker:
//!
//! * numbers from strings (`"2598919"`, `" 12 "`, `"1,000"`, `"5.0"`), from booleans (1/0) and
//!   from floats (truncated, as Java's `Number.intValue`);
//! * booleans from strings (`"true"`, `"FALSE"`, `"1"`, `"0"`, `"Y"`, `"N"`, `"T"`, `"F"`) and
//!   from numbers (non-zero is true);
//! * strings from numbers and booleans (their JSON text);
//! * enums from their name or their ordinal;
//! * struct members matched exactly, else as fastjson's `smartMatch` does (ignoring case, `_` and
//!   `-`); unknown members ignored (serde's default), `null` members treated as absent so that
//!   `#[serde(default)]` applies, and `null` for a scalar read as the Java primitive default.
//!
//! Output is untouched: writing stays exact (see `write.rs`).

use serde::de::value::StrDeserializer;
use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};

type Error = serde_json::Error;

/// Deserializes `T` from `value` with fastjson's conversions.
pub(super) fn from_value<T: de::DeserializeOwned>(value: Value) -> Result<T, Error> {
    T::deserialize(Lenient(value))
}

struct Lenient(Value);

fn invalid(value: &Value, expected: &str) -> Error {
    de::Error::custom(format!("expected {expected}, found {value}"))
}

/// fastjson's `castToLong`/`castToInt` for strings: trimmed, thousands separators dropped,
/// decimals truncated.
fn parse_integer(text: &str) -> Option<i128> {
    let text = text.trim();
    let cleaned: String;
    let text = if text.contains(',') {
        cleaned = text.replace(',', "");
        cleaned.as_str()
    } else {
        text
    };
    let text = text.strip_prefix('+').unwrap_or(text);
    if let Ok(n) = text.parse::<i128>() {
        return Some(n);
    }
    let float = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
    Some(float.trunc() as i128)
}

/// fastjson's `castToBoolean` for strings.
fn parse_bool(text: &str) -> Option<bool> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("true") || matches!(text, "1" | "Y" | "T" | "y" | "t") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") || matches!(text, "0" | "N" | "F" | "n" | "f") {
        Some(false)
    } else {
        None
    }
}

impl Lenient {
    /// The value as an integer, or `None` for `null` (the Java primitive default, 0).
    fn integer(&self) -> Result<i128, Error> {
        match &self.0 {
            Value::Null => Ok(0),
            Value::Bool(b) => Ok(i128::from(*b)),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Ok(i128::from(i))
                } else if let Some(u) = n.as_u64() {
                    Ok(i128::from(u))
                } else {
                    Ok(n.as_f64().unwrap_or(0.0).trunc() as i128)
                }
            }
            Value::String(s) if s.trim().is_empty() || s == "null" => Ok(0),
            Value::String(s) => parse_integer(s).ok_or_else(|| invalid(&self.0, "a number")),
            other => Err(invalid(other, "a number")),
        }
    }

    fn float(&self) -> Result<f64, Error> {
        match &self.0 {
            Value::Null => Ok(0.0),
            Value::Bool(b) => Ok(f64::from(u8::from(*b))),
            Value::Number(n) => Ok(n.as_f64().unwrap_or(0.0)),
            Value::String(s) if s.trim().is_empty() || s == "null" => Ok(0.0),
            Value::String(s) => s
                .trim()
                .replace(',', "")
                .parse::<f64>()
                .map_err(|_| invalid(&self.0, "a number")),
            other => Err(invalid(other, "a number")),
        }
    }
}

macro_rules! integer {
    ($method:ident, $ty:ty, $visit:ident) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            let n = self.integer()?;
            // Out of range for the target: refuse rather than wrap silently.
            let n = <$ty>::try_from(n)
                .map_err(|_| invalid(&self.0, concat!("a number that fits ", stringify!($ty))))?;
            visitor.$visit(n)
        }
    };
}

impl<'de> Deserializer<'de> for Lenient {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(0.0))
                }
            }
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visitor.visit_seq(Seq(items.into_iter())),
            Value::Object(map) => visitor.visit_map(Members::new(map, &[])),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.0 {
            Value::Null => visitor.visit_bool(false),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(_) => visitor.visit_bool(self.integer()? != 0),
            Value::String(s) if s.trim().is_empty() || s == "null" => visitor.visit_bool(false),
            Value::String(s) => {
                visitor.visit_bool(parse_bool(s).ok_or_else(|| invalid(&self.0, "a boolean"))?)
            }
            other => Err(invalid(other, "a boolean")),
        }
    }

    integer!(deserialize_i8, i8, visit_i8);
    integer!(deserialize_i16, i16, visit_i16);
    integer!(deserialize_i32, i32, visit_i32);
    integer!(deserialize_i64, i64, visit_i64);
    integer!(deserialize_i128, i128, visit_i128);
    integer!(deserialize_u8, u8, visit_u8);
    integer!(deserialize_u16, u16, visit_u16);
    integer!(deserialize_u32, u32, visit_u32);
    integer!(deserialize_u64, u64, visit_u64);
    integer!(deserialize_u128, u128, visit_u128);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_f32(self.float()? as f32)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_f64(self.float()?)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_string(String::new()),
            Value::String(s) => visitor.visit_string(s),
            // Numbers, booleans, objects and arrays become their JSON text, as fastjson's
            // `castToString` (`toString()` / `toJSONString`) gives them.
            other => visitor.visit_string(other.to_string()),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.0.deserialize_bytes(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.0.deserialize_byte_buf(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            value => visitor.visit_some(Lenient(value)),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(items) => visitor.visit_seq(Seq(items.into_iter())),
            // A missing collection reads as empty, as fastjson leaves a Java collection empty.
            Value::Null => visitor.visit_seq(Seq(Vec::new().into_iter())),
            // A JSON array sent as a string (`"[…]"`), which fastjson also parses.
            Value::String(s) if s.trim_start().starts_with('[') => match super::parse(&s) {
                Ok(Value::Array(items)) => visitor.visit_seq(Seq(items.into_iter())),
                _ => Err(invalid(&Value::String(s), "an array")),
            },
            other => Err(invalid(&other, "an array")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_struct("", &[], visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(map) => visitor.visit_map(Members::new(map, fields)),
            Value::Null => visitor.visit_map(Members::new(Map::new(), fields)),
            // An object sent as a string holding its JSON text.
            Value::String(s) if s.trim_start().starts_with('{') => match super::parse(&s) {
                Ok(Value::Object(map)) => visitor.visit_map(Members::new(map, fields)),
                _ => Err(invalid(&Value::String(s), "an object")),
            },
            other => Err(invalid(&other, "an object")),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            // fastjson reads an enum from its ordinal too.
            Value::Number(n) => {
                let name = n
                    .as_u64()
                    .and_then(|i| variants.get(usize::try_from(i).ok()?))
                    .ok_or_else(|| invalid(&Value::Number(n.clone()), "an enum ordinal"))?;
                let name: StrDeserializer<'_, Error> = (*name).into_deserializer();
                visitor.visit_enum(name)
            }
            Value::String(s) => {
                let name = variants
                    .iter()
                    .find(|v| **v == s.trim())
                    .or_else(|| variants.iter().find(|v| v.eq_ignore_ascii_case(s.trim())))
                    .copied()
                    .ok_or_else(|| de::Error::unknown_variant(&s, variants))?;
                let name: StrDeserializer<'_, Error> = name.into_deserializer();
                visitor.visit_enum(name)
            }
            other => other.deserialize_enum("", variants, visitor),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

struct Seq(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for Seq {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(Lenient(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// The members of an object, `null` ones dropped, keys matched to `fields` as fastjson does.
struct Members {
    entries: std::vec::IntoIter<(String, Value)>,
    value: Option<Value>,
}

/// fastjson's `smartMatch` key form: lower case without `_` and `-`.
fn smart_key(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

impl Members {
    fn new(map: Map<String, Value>, fields: &'static [&'static str]) -> Self {
        // A member that matches a field only loosely never shadows one spelled exactly.
        let exact: Vec<&str> = fields
            .iter()
            .copied()
            .filter(|f| map.contains_key(*f))
            .collect();
        let entries: Vec<(String, Value)> = map
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .filter_map(|(key, v)| {
                if fields.is_empty() || fields.contains(&key.as_str()) {
                    return Some((key, v));
                }
                let smart = smart_key(&key);
                match fields.iter().find(|f| smart_key(f) == smart) {
                    Some(field) if exact.contains(field) => None,
                    Some(field) => Some(((*field).to_string(), v)),
                    None => Some((key, v)),
                }
            })
            .collect();
        Members {
            entries: entries.into_iter(),
            value: None,
        }
    }
}

impl<'de> MapAccess<'de> for Members {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(Lenient(Value::String(key))).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| <Error as de::Error>::custom("value requested before its key"))?;
        seed.deserialize(Lenient(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    struct Sample {
        count: i32,
        offset: i64,
        flag: bool,
        ratio: f64,
        name: String,
        codes: BTreeSet<i32>,
        by_id: BTreeMap<i32, String>,
        maybe: Option<i64>,
        kind: Kind,
    }

    #[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
    #[allow(clippy::enum_variant_names)] // Java's ConsumeType names
    enum Kind {
        #[default]
        ConsumeActively,
        ConsumePassively,
        ConsumePop,
    }

    fn read(value: Value) -> Result<Sample, Error> {
        from_value(value)
    }

    #[test]
    fn numbers_booleans_and_strings_convert_as_fastjson_does() {
        let sample = read(json!({
            "count": "12", "offset": " 1,000 ", "flag": "TRUE", "ratio": "2.5", "name": 42,
            "codes": ["2598919", 5, "-3"], "byId": {"7": 9}, "maybe": "8", "kind": 1,
        }))
        .unwrap();
        assert_eq!(
            sample,
            Sample {
                count: 12,
                offset: 1000,
                flag: true,
                ratio: 2.5,
                name: "42".into(),
                codes: BTreeSet::from([2598919, 5, -3]),
                by_id: BTreeMap::from([(7, "9".into())]),
                maybe: Some(8),
                kind: Kind::ConsumePassively,
            }
        );
        let sample =
            read(json!({"count": 3.9, "flag": 1, "name": true, "kind": "consume_pop"})).unwrap();
        assert_eq!(
            (sample.count, sample.flag, sample.name.as_str()),
            (3, true, "true")
        );
        assert_eq!(sample.kind, Kind::ConsumePop);
        assert!(!read(json!({"flag": "N"})).unwrap().flag);
        assert!(!read(json!({"flag": 0})).unwrap().flag);
    }

    #[test]
    fn nulls_and_empty_strings_are_defaults_and_unknown_members_are_ignored() {
        let sample = read(json!({
            "count": null, "offset": "", "name": null, "codes": null, "maybe": null,
            "somethingElse": {"deep": [1, 2]},
        }))
        .unwrap();
        assert_eq!(sample, Sample::default());
        assert_eq!(
            read(json!({"codes": [null]})).unwrap().codes,
            BTreeSet::from([0])
        );
    }

    #[test]
    fn members_match_as_fastjson_smart_match() {
        let sample = read(json!({"COUNT": 1, "by_id": {"1": "a"}, "Flag": true})).unwrap();
        assert_eq!(sample.count, 1);
        assert_eq!(sample.by_id[&1], "a");
        assert!(sample.flag);
        // A loose spelling never shadows the exact one.
        assert_eq!(read(json!({"count": 1, "Count": 2})).unwrap().count, 1);
    }

    #[test]
    fn what_fastjson_refuses_is_refused() {
        for bad in [
            json!({"count": "twelve"}),
            json!({"count": [1]}),
            json!({"count": "4294967296"}),
            json!({"flag": "maybe"}),
            json!({"codes": 5}),
            json!({"kind": "NOPE"}),
            json!({"kind": 9}),
            json!([1, 2]),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn strings_holding_json_read_as_their_value() {
        let sample = read(json!({"codes": "[1,2]"})).unwrap();
        assert_eq!(sample.codes, BTreeSet::from([1, 2]));
        let nested: BTreeMap<String, Sample> =
            from_value(json!({"a": "{\"count\":\"4\"}"})).unwrap();
        assert_eq!(nested["a"].count, 4);
    }

    fn stringify_scalars(value: Value) -> Value {
        match value {
            Value::Number(n) => Value::String(n.to_string()),
            Value::Bool(b) => Value::String(b.to_string()),
            Value::Array(items) => Value::Array(items.into_iter().map(stringify_scalars).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, stringify_scalars(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    proptest! {
        /// Whatever a typed body holds, writing every scalar as a string (as the Go client does
        /// for sets) reads back to the same value.
        #[test]
        fn stringified_scalars_read_back_the_same(
            count in any::<i32>(),
            offset in any::<i64>(),
            flag in any::<bool>(),
            codes in proptest::collection::btree_set(any::<i32>(), 0..8),
            by_id in proptest::collection::btree_map(any::<i32>(), "[a-z]{0,4}", 0..4),
            maybe in proptest::option::of(any::<i64>()),
            kind in 0..3usize,
        ) {
            let sample = Sample {
                count, offset, flag, ratio: 0.5, name: "n".into(), codes, by_id, maybe,
                kind: [Kind::ConsumeActively, Kind::ConsumePassively, Kind::ConsumePop][kind],
            };
            let value = serde_json::to_value(&sample).unwrap();
            prop_assert_eq!(&read(value.clone()).unwrap(), &sample);
            prop_assert_eq!(&read(stringify_scalars(value)).unwrap(), &sample);
        }

        /// Arbitrary JSON never panics the reader, whatever the target type.
        #[test]
        fn arbitrary_values_never_panic(text in r#"[{}\[\]":,0-9a-z'\\ .-]{0,80}"#) {
            if let Ok(value) = crate::fastjson::parse(&text) {
                let _ = read(value.clone());
                let _ = from_value::<skiff_model::consumer::HeartbeatData>(value);
            }
        }
    }
}
