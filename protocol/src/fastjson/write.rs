//! A serde serializer that writes what fastjson's `JSON.toJSONString` writes.
//!
//! fastjson sorts bean properties by name, omits `null` properties and map values, writes map keys
//! that are not strings bare (`{0:12}`, `{{"brokerName":…}:…}`) and, when pretty-printing, puts each
//! string-keyed entry on its own tab-indented line while bare-keyed maps stay on one line with only
//! the closing brace on the next (see `MapSerializer` in fastjson 1.2.x). Struct fields are therefore
//! rendered into buffers first and emitted in name order.

use std::fmt::Write as _;

use serde::ser::{self, Serialize};

use super::Error;

/// How to lay out the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Tab-indented, one member per line (`JSON.toJSONString(obj, true)`).
    pub pretty: bool,
    /// Quote integer and object map keys (`"0"`) instead of writing them bare.
    pub quote_all_keys: bool,
    /// Escape every non-ASCII character as `\uXXXX`.
    pub ascii_only: bool,
}

impl Style {
    /// fastjson's default output: compact, bare non-string keys.
    pub const COMPACT: Style = Style {
        pretty: false,
        quote_all_keys: false,
        ascii_only: false,
    };
    /// fastjson's pretty format, as used for the broker's config files.
    pub const PRETTY: Style = Style {
        pretty: true,
        quote_all_keys: false,
        ascii_only: false,
    };
    /// Standard JSON (fastjson's `BrowserCompatible`): every key quoted, non-ASCII escaped.
    pub const STANDARD: Style = Style {
        pretty: false,
        quote_all_keys: true,
        ascii_only: true,
    };
}

/// Serializes `value` in fastjson's compact form.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, Error> {
    to_string_with(value, Style::COMPACT)
}

/// Serializes `value` in fastjson's pretty form (tabs, as in Java's config files).
pub fn to_string_pretty<T: Serialize + ?Sized>(value: &T) -> Result<String, Error> {
    to_string_with(value, Style::PRETTY)
}

/// Serializes `value` in the given style. A top-level `None` is written as `null`.
pub fn to_string_with<T: Serialize + ?Sized>(value: &T, style: Style) -> Result<String, Error> {
    let rendered = render(value, style, 0)?;
    Ok(rendered.text.unwrap_or_else(|| "null".to_string()))
}

/// One rendered value; `text` is `None` for null, which objects omit.
struct Rendered {
    text: Option<String>,
}

fn render<T: Serialize + ?Sized>(value: &T, style: Style, depth: usize) -> Result<Rendered, Error> {
    let text = value.serialize(Writer { style, depth })?;
    Ok(Rendered { text })
}

impl ser::Error for Error {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        Error::Serialize(msg.to_string())
    }
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push('\t');
    }
}

fn write_str(out: &mut String, s: &str, ascii_only: bool) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c if ascii_only && !c.is_ascii() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04X}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Java's `Double.toString` writes whole numbers with `.0`; keep that so `0.0` stays a double.
fn write_f64(out: &mut String, v: f64) {
    if !v.is_finite() {
        out.push_str("null");
    } else if v.fract() == 0.0 && v.abs() < 1e16 {
        let _ = write!(out, "{v:.1}");
    } else {
        let _ = write!(out, "{v}");
    }
}

/// Collects members of an object (struct fields or map entries) and lays them out.
struct Members {
    style: Style,
    depth: usize,
    /// (key text, key is a string, value text)
    entries: Vec<(String, bool, String)>,
    sort: bool,
}

impl Members {
    fn new(style: Style, depth: usize, sort: bool) -> Self {
        Members {
            style,
            depth,
            entries: Vec::new(),
            sort,
        }
    }

    fn push_value<T: Serialize + ?Sized>(
        &mut self,
        key: String,
        is_string: bool,
        value: &T,
    ) -> Result<(), Error> {
        if let Some(text) = render(value, self.style, self.depth + 1)?.text {
            self.entries.push((key, is_string, text));
        }
        Ok(())
    }

    fn finish(mut self) -> Option<String> {
        if self.sort {
            self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        }
        let mut out = String::from("{");
        for (i, (key, is_string, value)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            // fastjson breaks the line only before string keys.
            if self.style.pretty && *is_string {
                newline(&mut out, self.depth + 1);
            }
            out.push_str(key);
            out.push(':');
            out.push_str(value);
        }
        if self.style.pretty && !self.entries.is_empty() {
            newline(&mut out, self.depth);
        }
        out.push('}');
        Some(out)
    }
}

struct Writer {
    style: Style,
    depth: usize,
}

type Out = Result<Option<String>, Error>;

impl ser::Serializer for Writer {
    type Ok = Option<String>;
    type Error = Error;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Variant<Seq>;
    type SerializeMap = MapWriter;
    type SerializeStruct = StructWriter;
    type SerializeStructVariant = Variant<StructWriter>;

    fn serialize_bool(self, v: bool) -> Out {
        Ok(Some(v.to_string()))
    }
    fn serialize_i8(self, v: i8) -> Out {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Out {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Out {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Out {
        Ok(Some(v.to_string()))
    }
    fn serialize_u8(self, v: u8) -> Out {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Out {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Out {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Out {
        Ok(Some(v.to_string()))
    }
    fn serialize_f32(self, v: f32) -> Out {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Out {
        let mut out = String::new();
        write_f64(&mut out, v);
        Ok(Some(out))
    }
    fn serialize_char(self, v: char) -> Out {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Out {
        let mut out = String::with_capacity(v.len() + 2);
        write_str(&mut out, v, self.style.ascii_only);
        Ok(Some(out))
    }
    fn serialize_bytes(self, v: &[u8]) -> Out {
        let items: Vec<String> = v.iter().map(u8::to_string).collect();
        Ok(Some(format!("[{}]", items.join(","))))
    }
    fn serialize_none(self) -> Out {
        Ok(None)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Out {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Out {
        Ok(None)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Out {
        Ok(None)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Out {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Out {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Out {
        let mut members = Members::new(self.style, self.depth, false);
        let mut key = String::new();
        write_str(&mut key, variant, self.style.ascii_only);
        members.push_value(key, true, value)?;
        Ok(members.finish())
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq, Error> {
        Ok(Seq {
            style: self.style,
            depth: self.depth,
            items: Vec::with_capacity(len.unwrap_or(0)),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Seq>, Error> {
        Ok(Variant {
            style: self.style,
            depth: self.depth,
            variant,
            inner: Seq {
                style: self.style,
                depth: self.depth + 1,
                items: Vec::with_capacity(len),
            },
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapWriter, Error> {
        Ok(MapWriter {
            members: Members::new(self.style, self.depth, false),
            key: None,
        })
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<StructWriter, Error> {
        Ok(StructWriter {
            members: Members::new(self.style, self.depth, true),
        })
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Variant<StructWriter>, Error> {
        Ok(Variant {
            style: self.style,
            depth: self.depth,
            variant,
            inner: StructWriter {
                members: Members::new(self.style, self.depth + 1, true),
            },
        })
    }
}

struct Seq {
    style: Style,
    depth: usize,
    items: Vec<String>,
}

impl Seq {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let text = render(value, self.style, self.depth)?.text;
        self.items.push(text.unwrap_or_else(|| "null".to_string()));
        Ok(())
    }

    fn finish(self) -> Option<String> {
        Some(format!("[{}]", self.items.join(",")))
    }
}

impl ser::SerializeSeq for Seq {
    type Ok = Option<String>;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Out {
        Ok(self.finish())
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Option<String>;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Out {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleStruct for Seq {
    type Ok = Option<String>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Out {
        Ok(self.finish())
    }
}

struct MapWriter {
    members: Members,
    /// The rendered pending key and whether it was a string.
    key: Option<(String, bool)>,
}

impl ser::SerializeMap for MapWriter {
    type Ok = Option<String>;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key.serialize(KeyWriter {
            style: self.members.style,
            depth: self.members.depth + 1,
        })?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let (key, is_string) = self
            .key
            .take()
            .ok_or_else(|| Error::Serialize("map value without a key".to_string()))?;
        self.members.push_value(key, is_string, value)
    }
    fn end(self) -> Out {
        Ok(self.members.finish())
    }
}

struct StructWriter {
    members: Members,
}

impl StructWriter {
    fn field<T: Serialize + ?Sized>(&mut self, name: &'static str, value: &T) -> Result<(), Error> {
        let mut key = String::with_capacity(name.len() + 2);
        write_str(&mut key, name, self.members.style.ascii_only);
        self.members.push_value(key, true, value)
    }
}

impl ser::SerializeStruct for StructWriter {
    type Ok = Option<String>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(name, value)
    }
    fn end(self) -> Out {
        Ok(self.members.finish())
    }
}

/// An enum variant carrying data, written as `{"Variant":…}`.
struct Variant<I> {
    style: Style,
    depth: usize,
    variant: &'static str,
    inner: I,
}

fn wrap_variant(style: Style, depth: usize, variant: &str, inner: Option<String>) -> Out {
    let mut out = String::from("{");
    if style.pretty {
        newline(&mut out, depth + 1);
    }
    write_str(&mut out, variant, style.ascii_only);
    out.push(':');
    out.push_str(inner.as_deref().unwrap_or("null"));
    if style.pretty {
        newline(&mut out, depth);
    }
    out.push('}');
    Ok(Some(out))
}

impl ser::SerializeTupleVariant for Variant<Seq> {
    type Ok = Option<String>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.inner.push(value)
    }
    fn end(self) -> Out {
        wrap_variant(self.style, self.depth, self.variant, self.inner.finish())
    }
}

impl ser::SerializeStructVariant for Variant<StructWriter> {
    type Ok = Option<String>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.inner.field(name, value)
    }
    fn end(self) -> Out {
        wrap_variant(
            self.style,
            self.depth,
            self.variant,
            self.inner.members.finish(),
        )
    }
}

/// Renders a map key: strings quoted, anything else bare (or quoted in [`Style::quote_all_keys`]).
struct KeyWriter {
    style: Style,
    depth: usize,
}

impl KeyWriter {
    fn bare(self, text: String) -> Result<(String, bool), Error> {
        if self.style.quote_all_keys {
            let mut out = String::with_capacity(text.len() + 2);
            write_str(&mut out, &text, self.style.ascii_only);
            Ok((out, false))
        } else {
            Ok((text, false))
        }
    }

    fn rendered<T: Serialize + ?Sized>(self, value: &T) -> Result<(String, bool), Error> {
        let text = render(value, self.style, self.depth)?
            .text
            .unwrap_or_else(|| "null".to_string());
        self.bare(text)
    }
}

type KeyOut = Result<(String, bool), Error>;

impl ser::Serializer for KeyWriter {
    type Ok = (String, bool);
    type Error = Error;
    type SerializeSeq = ser::Impossible<(String, bool), Error>;
    type SerializeTuple = ser::Impossible<(String, bool), Error>;
    type SerializeTupleStruct = ser::Impossible<(String, bool), Error>;
    type SerializeTupleVariant = ser::Impossible<(String, bool), Error>;
    type SerializeMap = ser::Impossible<(String, bool), Error>;
    type SerializeStruct = KeyStruct;
    type SerializeStructVariant = ser::Impossible<(String, bool), Error>;

    fn serialize_bool(self, v: bool) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> KeyOut {
        self.bare(v.to_string())
    }
    fn serialize_f32(self, v: f32) -> KeyOut {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> KeyOut {
        let mut out = String::new();
        write_f64(&mut out, v);
        self.bare(out)
    }
    fn serialize_char(self, v: char) -> KeyOut {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> KeyOut {
        let mut out = String::with_capacity(v.len() + 2);
        write_str(&mut out, v, self.style.ascii_only);
        Ok((out, true))
    }
    fn serialize_bytes(self, v: &[u8]) -> KeyOut {
        self.rendered(v)
    }
    fn serialize_none(self) -> KeyOut {
        self.bare("null".to_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> KeyOut {
        value.serialize(self)
    }
    fn serialize_unit(self) -> KeyOut {
        self.bare("null".to_string())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> KeyOut {
        self.bare("null".to_string())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> KeyOut {
        // fastjson writes enum keys as their quoted name.
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> KeyOut {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> KeyOut {
        Err(unsupported_key())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(unsupported_key())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(unsupported_key())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(unsupported_key())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(unsupported_key())
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(unsupported_key())
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<KeyStruct, Error> {
        let style = self.style;
        Ok(KeyStruct {
            writer: self,
            inner: StructWriter {
                members: Members::new(
                    Style {
                        pretty: false,
                        ..style
                    },
                    0,
                    true,
                ),
            },
        })
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(unsupported_key())
    }
}

fn unsupported_key() -> Error {
    Error::Serialize("map keys must be strings, numbers or structs".to_string())
}

/// A struct used as a map key (a `MessageQueue`): rendered compactly, then bare or quoted.
struct KeyStruct {
    writer: KeyWriter,
    inner: StructWriter,
}

impl ser::SerializeStruct for KeyStruct {
    type Ok = (String, bool);
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.inner.field(name, value)
    }
    fn end(self) -> KeyOut {
        let text = self.inner.members.finish().unwrap_or_default();
        self.writer.bare(text)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Bean {
        zeta: i32,
        alpha: Option<String>,
        missing: Option<String>,
        ratio: f64,
        by_id: BTreeMap<i64, &'static str>,
    }

    fn bean() -> Bean {
        Bean {
            zeta: 1,
            alpha: Some("a\"\\\n\u{1}é".into()),
            missing: None,
            ratio: 2.0,
            by_id: BTreeMap::from([(0, "x"), (-1, "y")]),
        }
    }

    #[test]
    fn beans_are_sorted_with_nulls_omitted_and_bare_integer_keys() {
        assert_eq!(
            to_string(&bean()).unwrap(),
            r#"{"alpha":"a\"\\\n\u0001é","byId":{-1:"y",0:"x"},"ratio":2.0,"zeta":1}"#
        );
    }

    #[test]
    fn standard_style_quotes_keys_and_escapes_non_ascii() {
        assert_eq!(
            to_string_with(&bean(), Style::STANDARD).unwrap(),
            r#"{"alpha":"a\"\\\n\u0001\u00E9","byId":{"-1":"y","0":"x"},"ratio":2.0,"zeta":1}"#
        );
        assert_eq!(
            to_string_with("😀", Style::STANDARD).unwrap(),
            r#""\uD83D\uDE00""#
        );
    }

    #[test]
    fn pretty_style_matches_fastjson_layout() {
        assert_eq!(
            to_string_pretty(&bean()).unwrap(),
            "{\n\t\"alpha\":\"a\\\"\\\\\\n\\u0001é\",\n\t\"byId\":{-1:\"y\",0:\"x\"\n\t},\n\t\"ratio\":2.0,\n\t\"zeta\":1\n}"
        );
        let empty: BTreeMap<String, i32> = BTreeMap::new();
        assert_eq!(to_string_pretty(&empty).unwrap(), "{}");
    }

    #[test]
    fn numbers_look_like_java_doubles() {
        assert_eq!(to_string(&0.0).unwrap(), "0.0");
        assert_eq!(to_string(&1.5).unwrap(), "1.5");
        assert_eq!(to_string(&f64::NAN).unwrap(), "null");
        assert_eq!(to_string(&None::<i32>).unwrap(), "null");
        assert_eq!(to_string(&vec![Some(1), None]).unwrap(), "[1,null]");
    }
}
