//! A lenient reader for fastjson output: standard JSON plus bare keys, single quotes and trailing
//! commas. Input comes from the network, so it never panics and bounds its nesting depth.

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use super::Error;

/// Deeper nesting than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 128;

/// Parses fastjson-dialect text into a JSON value (see the module docs for how bare keys map).
pub fn parse(text: &str) -> Result<Value, Error> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut parser = Parser {
        text: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    parser.skip_ws();
    let value = parser.value()?;
    parser.skip_ws();
    if parser.pos != parser.text.len() {
        return Err(parser.error("trailing characters after the value"));
    }
    Ok(value)
}

/// [`parse`] for UTF-8 bytes.
pub fn parse_slice(bytes: &[u8]) -> Result<Value, Error> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::Syntax {
        position: e.valid_up_to(),
        message: "not UTF-8".to_string(),
    })?;
    parse(text)
}

/// Parses fastjson-dialect text into `T` with fastjson's conversions (numbers as strings and the
/// like, see `lenient.rs`); `null` members count as absent.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    from_value(parse(text)?)
}

/// [`from_str`] for UTF-8 bytes.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    from_value(parse_slice(bytes)?)
}

/// A parsed value into `T` with fastjson's conversions.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    super::lenient::from_value(value).map_err(|e| Error::Shape(e.to_string()))
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> Error {
        Error::Syntax {
            position: self.pos,
            message: message.to_string(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0C) = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), Error> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", byte as char)))
        }
    }

    fn value(&mut self) -> Result<Value, Error> {
        match self.peek() {
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(quote @ (b'"' | b'\'')) => self.string(quote).map(Value::String),
            Some(b'-' | b'+' | b'0'..=b'9' | b'.') => self.number().map(Value::Number),
            Some(b'a'..=b'z' | b'A'..=b'Z') => match self.identifier() {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                "null" | "undefined" => Ok(Value::Null),
                _ => Err(self.error("unknown literal")),
            },
            Some(_) => Err(self.error("expected a value")),
            None => Err(self.error("unexpected end of input")),
        }
    }

    fn nested(&mut self, parse: fn(&mut Self) -> Result<Value, Error>) -> Result<Value, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    fn object(&mut self) -> Result<Value, Error> {
        self.expect(b'{')?;
        let mut map = Map::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                Some(b',') => {
                    // fastjson tolerates empty members and trailing commas.
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            let key = self.key()?;
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            let value = self.value()?;
            map.insert(key, value);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(self.error("expected ',' or '}'")),
            }
        }
    }

    /// An object key: a string, or one of fastjson's bare forms.
    fn key(&mut self) -> Result<String, Error> {
        match self.peek() {
            Some(quote @ (b'"' | b'\'')) => self.string(quote),
            Some(b'-' | b'+' | b'0'..=b'9') => self.number().map(|n| n.to_string()),
            // A bean used as a map key (`MessageQueue`): keep its JSON text as the key.
            Some(b'{' | b'[') => self.value().map(|v| v.to_string()),
            Some(b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$') => Ok(self.identifier().to_string()),
            _ => Err(self.error("expected an object key")),
        }
    }

    fn identifier(&mut self) -> &str {
        let start = self.pos;
        while let Some(b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'$') = self.peek() {
            self.pos += 1;
        }
        // Only ASCII bytes were consumed, so this cannot fail.
        std::str::from_utf8(&self.text[start..self.pos]).unwrap_or_default()
    }

    fn array(&mut self) -> Result<Value, Error> {
        self.expect(b'[')?;
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            items.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                _ => return Err(self.error("expected ',' or ']'")),
            }
        }
    }

    fn number(&mut self) -> Result<Number, Error> {
        let start = self.pos;
        while let Some(b'-' | b'+' | b'0'..=b'9' | b'.' | b'e' | b'E') = self.peek() {
            self.pos += 1;
        }
        // Only ASCII bytes were consumed.
        let raw = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or_default();
        // fastjson may suffix longs with L and floats with F or D.
        if let Some(b'L' | b'F' | b'D' | b'l' | b'f' | b'd') = self.peek() {
            self.pos += 1;
        }
        let text = raw.strip_prefix('+').unwrap_or(raw);
        if let Ok(n) = text.parse::<i64>() {
            return Ok(n.into());
        }
        if let Ok(n) = text.parse::<u64>() {
            return Ok(n.into());
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .ok_or_else(|| Error::Syntax {
                position: start,
                message: format!("invalid number {raw:?}"),
            })
    }

    fn string(&mut self, quote: u8) -> Result<String, Error> {
        self.expect(quote)?;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == quote || b == b'\\' {
                    break;
                }
                self.pos += 1;
            }
            // The input is a &str and we stopped at ASCII bytes, so this is a char boundary.
            out.push_str(std::str::from_utf8(&self.text[start..self.pos]).unwrap_or_default());
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b) if b == quote => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(_) => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), Error> {
        let Some(code) = self.peek() else {
            return Err(self.error("unterminated escape"));
        };
        self.pos += 1;
        match code {
            b'"' => out.push('"'),
            b'\'' => out.push('\''),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'x' => {
                let unit = self.hex(2)?;
                out.push(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            b'u' => {
                let unit = self.hex(4)?;
                let ch = if (0xD800..0xDC00).contains(&unit)
                    && self.text[self.pos..].starts_with(b"\\u")
                {
                    let save = self.pos;
                    self.pos += 2;
                    let low = self.hex(4)?;
                    if (0xDC00..0xE000).contains(&low) {
                        char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                    } else {
                        self.pos = save;
                        None
                    }
                } else {
                    char::from_u32(unit)
                };
                // Lone surrogates are what Java strings may hold; Rust strings cannot.
                out.push(ch.unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            _ => return Err(self.error("invalid escape")),
        }
        Ok(())
    }

    fn hex(&mut self, digits: usize) -> Result<u32, Error> {
        let end = self.pos + digits;
        let text = self
            .text
            .get(self.pos..end)
            .and_then(|h| std::str::from_utf8(h).ok())
            .ok_or_else(|| self.error("truncated escape"))?;
        let value = u32::from_str_radix(text, 16).map_err(|_| self.error("invalid hex escape"))?;
        self.pos = end;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn standard_json_reads_as_serde_json_does() {
        let text =
            r#"{"a":[1,-2,3.5,true,false,null],"b":{"c":"d\"\u00e9\n"},"e":18446744073709551615}"#;
        assert_eq!(
            parse(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn bare_integer_keys_become_decimal_text() {
        let value =
            parse(r#"{"brokerAddrs":{0:"10.0.0.5:10911",1:"10.0.0.6:10911",-1:"x"}}"#).unwrap();
        assert_eq!(value["brokerAddrs"]["0"], "10.0.0.5:10911");
        assert_eq!(value["brokerAddrs"]["1"], "10.0.0.6:10911");
        assert_eq!(value["brokerAddrs"]["-1"], "x");
        let typed: std::collections::BTreeMap<i64, String> = from_str(r#"{0:"a",1:"b"}"#).unwrap();
        assert_eq!(typed[&1], "b");
    }

    #[test]
    fn bare_object_keys_keep_their_json_text() {
        let value = parse(
            r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":10}}}"#,
        )
        .unwrap();
        let (key, inner) = value["offsetTable"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        assert_eq!(
            parse(key).unwrap(),
            json!({"brokerName":"b","queueId":0,"topic":"T"})
        );
        assert_eq!(inner["maxOffset"], 10);
    }

    #[test]
    fn other_fastjson_liberties() {
        let value = parse("\u{feff}{code:0, 'remark':'it''s', \"list\":[1,2,],}").unwrap_err();
        assert!(matches!(value, Error::Syntax { .. }));
        let value = parse("{code:0, 'remark':'a\\'b', \"list\":[1,2,], n:5L,}").unwrap();
        assert_eq!(value, json!({"code":0,"remark":"a'b","list":[1,2],"n":5}));
    }

    #[test]
    fn pretty_printed_files_with_tabs_parse() {
        let text = "{\n\t\"offsetTable\":{\n\t\t\"TopicTest@cg\":{0:250,1:248\n\t\t}\n\t}\n}";
        let offsets: std::collections::BTreeMap<
            String,
            std::collections::BTreeMap<String, std::collections::BTreeMap<i32, i64>>,
        > = from_str(text).unwrap();
        assert_eq!(offsets["offsetTable"]["TopicTest@cg"][&1], 248);
    }

    #[test]
    fn surrogate_pairs_and_lone_surrogates() {
        assert_eq!(parse(r#""\ud83d\ude00""#).unwrap(), "😀");
        assert_eq!(parse(r#""\ud83d!""#).unwrap(), "\u{fffd}!");
    }

    #[test]
    fn nulls_fall_back_to_defaults() {
        #[derive(serde::Deserialize)]
        struct T {
            #[serde(default)]
            name: String,
        }
        let t: T = from_str(r#"{"name":null}"#).unwrap();
        assert_eq!(t.name, "");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = "[".repeat(10_000);
        assert!(parse(&text).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in ".{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn arbitrary_json_like_text_never_panics(text in r#"[{}\[\]":,0-9a-z'\\ .-]{0,120}"#) {
            let _ = parse(&text);
        }
    }
}
