//! The two header encodings: JSON (type 0) and the "ROCKETMQ" binary layout (type 1).
//!
//! JSON is written exactly as Java's fastjson writes `RemotingCommand` (compact, keys sorted, nulls
//! omitted, `extFields` values as strings) and read tolerantly: every field has Java's default
//! (a missing `code` is request code 0), numbers and booleans in `extFields` are stringified (ali-ons sends them), unknown keys
//! and language names are accepted, and text that is fastjson but not JSON is retried with the
//! lenient reader.
//!
//! Binary layout (big-endian): `i16 code, u8 language, i16 version, i32 opaque, i32 flag,
//! i32 remarkLen + remark, i32 extLen + (i16 keyLen + key, i32 valLen + value)*`. A zero length
//! means null, so an empty string does not survive a binary header (Java has the same quirk).

use std::collections::HashMap;
use std::fmt;

use bytes::{Buf, BufMut, BytesMut};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::command::{Body, LanguageCode, RemotingCommand, SerializeType};
use super::frame::CodecError;

/// Header fields as decoded, before the body is attached.
pub(super) struct Header {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: HashMap<String, String>,
}

impl Header {
    pub fn into_command(self, body: Body, serialize_type: SerializeType) -> RemotingCommand {
        RemotingCommand {
            code: self.code,
            language: self.language,
            version: self.version,
            opaque: self.opaque,
            flag: self.flag,
            remark: self.remark,
            ext_fields: self.ext_fields,
            body,
            serialize_type,
        }
    }
}

// ---------------------------------------------------------------- JSON

/// The JSON header as clients send it; see [`Lenient`] and [`ExtValue`] for the tolerances.
#[derive(Deserialize)]
struct JsonHeader {
    // Java fills missing int fields with 0, so a header without `code` is request code 0, which
    // no processor serves: REQUEST_CODE_NOT_SUPPORTED rather than a closed connection.
    #[serde(default)]
    code: Lenient,
    #[serde(default)]
    opaque: Lenient,
    #[serde(default)]
    flag: Lenient,
    #[serde(default)]
    version: Lenient,
    #[serde(default)]
    language: Language,
    #[serde(default)]
    remark: ExtValue,
    #[serde(default, rename = "extFields")]
    ext_fields: ExtFields,
}

/// An `int` header field: a number, a numeric string, or null (0), as fastjson would accept.
#[derive(Default)]
struct Lenient(i32);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let number = match Value::deserialize(d)? {
            Value::Null => return Ok(Lenient(0)),
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        };
        number
            .and_then(|n| i32::try_from(n).ok())
            .map(Lenient)
            .ok_or_else(|| D::Error::custom("header field is not a 32-bit integer"))
    }
}

/// `language`: an enum name (unknown names become OTHER) or, leniently, its numeric code.
#[derive(Default)]
struct Language(LanguageCode);

impl<'de> Deserialize<'de> for Language {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Language(match Value::deserialize(d)? {
            Value::String(name) => LanguageCode::from_name(&name),
            Value::Number(n) => n
                .as_u64()
                .and_then(|c| u8::try_from(c).ok())
                .map_or(LanguageCode::Other, LanguageCode::from_code),
            _ => LanguageCode::Java,
        }))
    }
}

/// An `extFields` value (or `remark`): strings as they are, numbers and booleans stringified as
/// fastjson does when it fills a `HashMap<String, String>`, null as absent.
#[derive(Default)]
struct ExtValue(Option<String>);

impl<'de> Deserialize<'de> for ExtValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ExtValueVisitor).map(ExtValue)
    }
}

/// Visits the value directly: every send carries a dozen of them, so no `Value` in between.
struct ExtValueVisitor;

impl<'de> Visitor<'de> for ExtValueVisitor {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v).to_string()))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let value = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Some(value.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let value = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(Some(value.to_string()))
    }
}

/// `extFields`: an object whose null values are left out, or null for none.
#[derive(Default)]
struct ExtFields(HashMap<String, String>);

impl<'de> Deserialize<'de> for ExtFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = HashMap<String, String>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object or null")
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(HashMap::new())
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = HashMap::with_capacity(map.size_hint().unwrap_or(16));
                while let Some((key, ExtValue(value))) = map.next_entry::<String, ExtValue>()? {
                    if let Some(value) = value {
                        fields.insert(key, value);
                    }
                }
                Ok(fields)
            }
        }
        d.deserialize_any(FieldsVisitor).map(ExtFields)
    }
}

pub(super) fn decode_json(bytes: &[u8]) -> Result<Header, CodecError> {
    let header: JsonHeader = match serde_json::from_slice(bytes) {
        Ok(header) => header,
        // Not strict JSON (or a duplicate key): give fastjson's dialect a chance before failing.
        Err(strict) => {
            let value = crate::fastjson::parse_slice(bytes)
                .map_err(|_| CodecError::BadJsonHeader(strict.to_string()))?;
            serde_json::from_value(value).map_err(|e| CodecError::BadJsonHeader(e.to_string()))?
        }
    };
    Ok(Header {
        code: header.code.0,
        language: header.language.0,
        version: header.version.0,
        opaque: header.opaque.0,
        flag: header.flag.0,
        remark: header.remark.0,
        ext_fields: header.ext_fields.0,
    })
}

fn json_str(out: &mut BytesMut, s: &str) {
    // Writing to a BytesMut cannot fail, and a &str always serializes.
    let _ = serde_json::to_writer(out.writer(), s);
}

/// Writes the header as Java does: `{"code":…,"extFields":{…},"flag":…,"language":"JAVA",
/// "opaque":…,"remark":…,"serializeTypeCurrentRPC":"JSON","version":…}`, extFields sorted.
pub(super) fn encode_json(cmd: &RemotingCommand, out: &mut BytesMut) {
    out.put_slice(b"{\"code\":");
    out.put_slice(cmd.code.to_string().as_bytes());
    if !cmd.ext_fields.is_empty() {
        out.put_slice(b",\"extFields\":{");
        let mut fields: Vec<_> = cmd.ext_fields.iter().collect();
        fields.sort_unstable();
        for (i, (key, value)) in fields.into_iter().enumerate() {
            if i > 0 {
                out.put_u8(b',');
            }
            json_str(out, key);
            out.put_u8(b':');
            json_str(out, value);
        }
        out.put_u8(b'}');
    }
    out.put_slice(b",\"flag\":");
    out.put_slice(cmd.flag.to_string().as_bytes());
    out.put_slice(b",\"language\":\"");
    out.put_slice(cmd.language.name().as_bytes());
    out.put_slice(b"\",\"opaque\":");
    out.put_slice(cmd.opaque.to_string().as_bytes());
    if let Some(remark) = &cmd.remark {
        out.put_slice(b",\"remark\":");
        json_str(out, remark);
    }
    out.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    out.put_slice(cmd.version.to_string().as_bytes());
    out.put_u8(b'}');
}

// ---------------------------------------------------------------- ROCKETMQ binary

/// Fixed part of a binary header: code, language, version, opaque, flag, remark length, ext length.
const BINARY_FIXED_LEN: usize = 2 + 1 + 2 + 4 + 4 + 4 + 4;

fn bad(reason: &'static str) -> CodecError {
    CodecError::BadBinaryHeader(reason)
}

/// Reads a length-prefixed UTF-8 string; a zero length is null (`None`).
fn read_str(buf: &mut &[u8], len: i64) -> Result<Option<String>, CodecError> {
    if len < 0 {
        return Err(bad("negative string length"));
    }
    let len = len as usize;
    if len > buf.remaining() {
        return Err(bad("string runs past the header"));
    }
    if len == 0 {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&buf[..len]).into_owned();
    buf.advance(len);
    Ok(Some(text))
}

pub(super) fn decode_binary(mut buf: &[u8]) -> Result<Header, CodecError> {
    if buf.remaining() < BINARY_FIXED_LEN {
        return Err(bad("shorter than its fixed part"));
    }
    let code = i32::from(buf.get_i16());
    let language = LanguageCode::from_code(buf.get_u8());
    let version = i32::from(buf.get_i16());
    let opaque = buf.get_i32();
    let flag = buf.get_i32();
    let remark_len = buf.get_i32();
    let remark = read_str(&mut buf, remark_len.into())?;
    if buf.remaining() < 4 {
        return Err(bad("no extFields length"));
    }
    let ext_len = buf.get_i32();
    if ext_len < 0 || ext_len as usize > buf.remaining() {
        return Err(bad("extFields length out of range"));
    }
    let (mut ext, rest) = buf.split_at(ext_len as usize);
    if !rest.is_empty() {
        return Err(bad("bytes left after extFields"));
    }
    let mut ext_fields = HashMap::new();
    while ext.has_remaining() {
        if ext.remaining() < 2 {
            return Err(bad("truncated extFields key"));
        }
        let key_len = ext.get_i16();
        let key = read_str(&mut ext, key_len.into())?;
        if ext.remaining() < 4 {
            return Err(bad("truncated extFields value"));
        }
        let value_len = ext.get_i32();
        let value = read_str(&mut ext, value_len.into())?;
        // Java stores null keys and values; a null value reads as absent, so drop both.
        if let (Some(key), Some(value)) = (key, value) {
            ext_fields.insert(key, value);
        }
    }
    Ok(Header {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
    })
}

pub(super) fn encode_binary(cmd: &RemotingCommand, out: &mut BytesMut) -> Result<(), CodecError> {
    let code = i16::try_from(cmd.code)
        .map_err(|_| CodecError::Unencodable("code does not fit a binary header"))?;
    let version = i16::try_from(cmd.version)
        .map_err(|_| CodecError::Unencodable("version does not fit a binary header"))?;
    out.put_i16(code);
    out.put_u8(cmd.language.code());
    out.put_i16(version);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    let remark = cmd.remark.as_deref().unwrap_or("");
    out.put_i32(remark.len() as i32);
    out.put_slice(remark.as_bytes());
    let ext_len_at = out.len();
    out.put_i32(0);
    let mut fields: Vec<_> = cmd.ext_fields.iter().collect();
    fields.sort_unstable();
    for (key, value) in fields {
        let key_len = i16::try_from(key.len())
            .map_err(|_| CodecError::Unencodable("extFields key longer than 32767 bytes"))?;
        out.put_i16(key_len);
        out.put_slice(key.as_bytes());
        out.put_i32(value.len() as i32);
        out.put_slice(value.as_bytes());
    }
    let ext_len = (out.len() - ext_len_at - 4) as i32;
    out[ext_len_at..ext_len_at + 4].copy_from_slice(&ext_len.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_header_tolerates_what_other_clients_send() {
        // ali-ons: numbers and booleans in extFields, no remark, no serializeTypeCurrentRPC.
        let header = decode_json(
            br#"{"code":310,"language":"JAVA","version":121,"opaque":3,"flag":0,"extFields":{"a":"pg","e":0,"k":false,"x":null,"y":1.5}}"#,
        )
        .unwrap();
        assert_eq!(header.code, 310);
        assert_eq!(header.ext_fields["e"], "0");
        assert_eq!(header.ext_fields["k"], "false");
        assert_eq!(header.ext_fields["y"], "1.5");
        assert!(!header.ext_fields.contains_key("x"));
        let header =
            decode_json(br#"{"code":34,"opaque":9,"extFields":{"n":{"b":[1,"c"]}}}"#).unwrap();
        assert_eq!(header.ext_fields["n"], r#"{"b":[1,"c"]}"#);
        let header = decode_json(br#"{"code":34,"opaque":9,"extFields":null}"#).unwrap();
        assert!(header.ext_fields.is_empty());
        // Missing fields take Java's defaults.
        let header =
            decode_json(br#"{"code":34,"opaque":9,"language":"COBOL","extra":[1]}"#).unwrap();
        assert_eq!((header.flag, header.version), (0, 0));
        assert_eq!(header.language, LanguageCode::Other);
        let header = decode_json(br#"{"code":"34","opaque":9}"#).unwrap();
        assert_eq!(header.code, 34);
        assert_eq!(header.language, LanguageCode::Java);
        assert_eq!(decode_json(br#"{"opaque":9}"#).unwrap().code, 0);
        assert!(decode_json(br#"{"code":1.5,"opaque":9}"#).is_err());
        assert!(decode_json(br#"{"code":4294967296,"opaque":9}"#).is_err());
        assert!(decode_json(b"not json").is_err());
        // fastjson dialect: unquoted names.
        let header = decode_json(br#"{code:11,opaque:2,extFields:{topic:'T'}}"#).unwrap();
        assert_eq!(header.ext_fields["topic"], "T");
    }

    #[test]
    fn binary_header_round_trips_and_drops_empty_values() {
        let mut cmd = RemotingCommand::request(310, 7);
        cmd.set_ext("topic", "T");
        cmd.set_ext("empty", "");
        cmd.remark = Some("hi".to_string());
        let mut out = BytesMut::new();
        encode_binary(&cmd, &mut out).unwrap();
        let header = decode_binary(&out).unwrap();
        assert_eq!(header.ext_fields.len(), 1);
        assert_eq!(header.ext_fields["topic"], "T");
        assert_eq!(header.remark.as_deref(), Some("hi"));
        cmd.code = 200_050;
        assert!(encode_binary(&cmd, &mut BytesMut::new()).is_err());
    }

    #[test]
    fn binary_header_rejects_lies() {
        let mut cmd = RemotingCommand::request(11, 1);
        cmd.set_ext("k", "v");
        let mut out = BytesMut::new();
        encode_binary(&cmd, &mut out).unwrap();
        for cut in 0..out.len() {
            assert!(decode_binary(&out[..cut]).is_err(), "cut at {cut}");
        }
        let mut negative = out.clone();
        negative[13..17].copy_from_slice(&(-1_i32).to_be_bytes());
        assert!(decode_binary(&negative).is_err());
    }
}
