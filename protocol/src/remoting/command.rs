//! `RemotingCommand`: one remoting frame, decoded but not yet interpreted.

use std::collections::HashMap;

use bytes::Bytes;

/// How a frame's header is encoded (the high byte of the header-length word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SerializeType {
    /// Type 0: a JSON object. What every client sends by default.
    Json,
    /// Type 1: the fixed "ROCKETMQ" binary layout.
    RocketMq,
}

impl SerializeType {
    /// The type byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            SerializeType::Json => 0,
            SerializeType::RocketMq => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(SerializeType::Json),
            1 => Some(SerializeType::RocketMq),
            _ => None,
        }
    }

    /// The name Java writes in `serializeTypeCurrentRPC`.
    pub fn name(self) -> &'static str {
        match self {
            SerializeType::Json => "JSON",
            SerializeType::RocketMq => "ROCKETMQ",
        }
    }
}

/// The sender's implementation language (`LanguageCode`). Unknown values are kept, not refused:
/// new clients appear faster than this list grows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LanguageCode {
    #[default]
    Java,
    Cpp,
    DotNet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
    NodeJs,
    /// A code this list does not know (binary headers carry the byte).
    Unknown(u8),
}

const LANGUAGES: [(LanguageCode, &str); 14] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::DotNet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
    (LanguageCode::NodeJs, "NODE_JS"),
];

impl LanguageCode {
    /// The byte a binary header carries.
    pub fn code(self) -> u8 {
        match self {
            LanguageCode::Unknown(code) => code,
            known => LANGUAGES
                .iter()
                .position(|(l, _)| *l == known)
                .map_or(7, |i| i as u8),
        }
    }

    pub fn from_code(code: u8) -> Self {
        LANGUAGES
            .get(usize::from(code))
            .map_or(LanguageCode::Unknown(code), |(l, _)| *l)
    }

    /// The enum name a JSON header carries; unknown codes are written as `OTHER`.
    pub fn name(self) -> &'static str {
        match self {
            LanguageCode::Unknown(_) => "OTHER",
            known => LANGUAGES
                .iter()
                .find(|(l, _)| *l == known)
                .map_or("OTHER", |(_, n)| n),
        }
    }

    /// Reads an enum name; names this list does not know become [`LanguageCode::Other`].
    pub fn from_name(name: &str) -> Self {
        LANGUAGES
            .iter()
            .find(|(_, n)| *n == name)
            .map_or(LanguageCode::Other, |(l, _)| *l)
    }
}

/// A frame's payload. Decoded frames hold one buffer sliced from the frame (no copy); outgoing
/// pull replies hold the stored records as separate chunks so that the encoder copies each exactly
/// once, straight into the output buffer.
#[derive(Debug, Clone)]
pub enum Body {
    Single(Bytes),
    Chunks(Vec<Bytes>),
}

impl Default for Body {
    fn default() -> Self {
        Body::Single(Bytes::new())
    }
}

impl Body {
    pub fn empty() -> Self {
        Body::default()
    }

    /// Total length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Body::Single(bytes) => bytes.len(),
            Body::Chunks(chunks) => chunks.iter().map(Bytes::len).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body as one buffer: free for [`Body::Single`], a copy for several chunks.
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Body::Single(bytes) => bytes.clone(),
            Body::Chunks(chunks) if chunks.len() == 1 => chunks[0].clone(),
            Body::Chunks(chunks) => Bytes::from(chunks.concat()),
        }
    }

    /// The body's buffers in order.
    pub fn chunks(&self) -> &[Bytes] {
        match self {
            Body::Single(bytes) => std::slice::from_ref(bytes),
            Body::Chunks(chunks) => chunks,
        }
    }
}

/// Bodies are equal when their bytes are, however they are chunked.
impl PartialEq for Body {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.to_bytes() == other.to_bytes()
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Self {
        Body::Single(bytes)
    }
}

impl From<Vec<u8>> for Body {
    fn from(bytes: Vec<u8>) -> Self {
        Body::Single(bytes.into())
    }
}

impl From<&'static [u8]> for Body {
    fn from(bytes: &'static [u8]) -> Self {
        Body::Single(Bytes::from_static(bytes))
    }
}

/// Flag bit set on responses (`RPC_TYPE`).
pub const FLAG_RESPONSE: i32 = 0x1;
/// Flag bit set on requests that must not be answered (`RPC_ONEWAY`).
pub const FLAG_ONEWAY: i32 = 0x2;

/// One remoting frame: header fields, string-valued custom header fields, and the body.
#[derive(Debug, Clone, PartialEq)]
pub struct RemotingCommand {
    /// Request code on requests, response code on responses.
    pub code: i32,
    pub language: LanguageCode,
    /// The sender's `MQVersion` ordinal.
    pub version: i32,
    /// Request id; a response echoes its request's.
    pub opaque: i32,
    /// Bit 0: response; bit 1: oneway.
    pub flag: i32,
    pub remark: Option<String>,
    /// Custom header fields (`extFields`), always strings.
    pub ext_fields: HashMap<String, String>,
    pub body: Body,
    /// How the header was (or will be) encoded.
    pub serialize_type: SerializeType,
}

impl RemotingCommand {
    /// A request with `code`, written the way Skiff writes every header (JSON, JAVA, [`super::SKIFF_VERSION`]).
    pub fn request(code: i32, opaque: i32) -> Self {
        RemotingCommand {
            code,
            language: LanguageCode::Java,
            version: super::SKIFF_VERSION,
            opaque,
            flag: 0,
            remark: None,
            ext_fields: HashMap::new(),
            body: Body::default(),
            serialize_type: SerializeType::Json,
        }
    }

    /// A response with `code` to the request with `opaque`.
    pub fn response(code: i32, opaque: i32) -> Self {
        RemotingCommand {
            flag: FLAG_RESPONSE,
            ..RemotingCommand::request(code, opaque)
        }
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// A custom header field.
    pub fn ext(&self, name: &str) -> Option<&str> {
        self.ext_fields.get(name).map(String::as_str)
    }

    /// Sets a custom header field.
    pub fn set_ext(&mut self, name: impl Into<String>, value: impl ToString) {
        self.ext_fields.insert(name.into(), value.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_match_java() {
        assert_eq!(LanguageCode::Go.code(), 9);
        assert_eq!(LanguageCode::NodeJs.code(), 13);
        assert_eq!(LanguageCode::from_code(1), LanguageCode::Cpp);
        assert_eq!(LanguageCode::from_code(200), LanguageCode::Unknown(200));
        assert_eq!(LanguageCode::Unknown(200).code(), 200);
        assert_eq!(LanguageCode::from_name("NODE_JS"), LanguageCode::NodeJs);
        assert_eq!(LanguageCode::from_name("COBOL"), LanguageCode::Other);
        for code in 0..=13 {
            let lang = LanguageCode::from_code(code);
            assert_eq!(LanguageCode::from_name(lang.name()), lang);
        }
    }

    #[test]
    fn bodies_compare_by_content() {
        let single = Body::from(b"abcd".to_vec());
        let chunks = Body::Chunks(vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cd")]);
        assert_eq!(single, chunks);
        assert_eq!(chunks.len(), 4);
        assert_eq!(chunks.to_bytes(), Bytes::from_static(b"abcd"));
        assert!(Body::empty().is_empty());
    }
}
