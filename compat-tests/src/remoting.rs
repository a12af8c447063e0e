//! Hand-written RocketMQ remoting frames over a blocking TCP stream, for the readiness probe and
//! the bad-input tests. Deliberately independent of Skiff's codec: it writes exactly the bytes the
//! Java client would (`[i32 total][u8 serializeType | u24 headerLen][JSON header][body]`).
//! Over TLS too ([`Conn::connect_tls`]), for targets that refuse plain connections.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

/// Request codes used by the harness.
pub mod code {
    pub const SEND_MESSAGE_V2: i32 = 310;
    pub const HEART_BEAT: i32 = 34;
    pub const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
    pub const GET_BROKER_CLUSTER_INFO: i32 = 106;
    pub const GET_MAX_OFFSET: i32 = 30;
}

/// Serialises a JSON request header as the Java client does (code, language, version, opaque, flag,
/// extFields with string values).
pub fn request_header(code: i32, opaque: i32, ext: &[(&str, &str)]) -> Vec<u8> {
    let ext: Map<String, Value> = ext
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    let header = json!({
        "code": code,
        "language": "JAVA",
        "version": 409,
        "opaque": opaque,
        "flag": 0,
        "extFields": ext,
        "serializeTypeCurrentRPC": "JSON",
    });
    serde_json::to_vec(&header).expect("a JSON value serialises")
}

/// A frame from raw parts: total = 4 + header + body; serialize type 0 (JSON).
pub fn frame(header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + header.len() + body.len());
    out.extend_from_slice(&((4 + header.len() + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&(header.len() as u32 & 0x00FF_FFFF).to_be_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(body);
    out
}

pub fn request(code: i32, opaque: i32, ext: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    frame(&request_header(code, opaque, ext), body)
}

/// A decoded response.
#[derive(Debug, Clone)]
pub struct Response {
    pub header: Value,
    pub body: Vec<u8>,
}

impl Response {
    pub fn code(&self) -> i64 {
        self.header["code"].as_i64().unwrap_or(i64::MIN)
    }

    pub fn opaque(&self) -> i64 {
        self.header["opaque"].as_i64().unwrap_or(i64::MIN)
    }

    pub fn remark(&self) -> String {
        self.header["remark"].as_str().unwrap_or("").to_string()
    }

    pub fn is_response(&self) -> bool {
        self.header["flag"].as_i64().unwrap_or(0) & 1 == 1
    }
}

/// What the peer did after we wrote something.
#[derive(Debug)]
pub enum Outcome {
    Response(Response),
    /// EOF or reset before a complete frame arrived.
    Closed,
    /// Neither a frame nor a close within the wait.
    Silent,
}

impl Outcome {
    /// One line for assertion messages.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Response(r) => format!("response code {} remark {:?}", r.code(), r.remark()),
            Outcome::Closed => "connection closed".into(),
            Outcome::Silent => "no answer and no close".into(),
        }
    }
}

/// A plain socket, or a TLS session over one.
enum Io {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Io {
    fn tcp(&self) -> &TcpStream {
        match self {
            Io::Plain(s) => s,
            Io::Tls(s) => s.get_ref(),
        }
    }

    fn rw(&mut self) -> &mut dyn ReadWrite {
        match self {
            Io::Plain(s) => s,
            Io::Tls(s) => &mut **s,
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

pub struct Conn {
    stream: Io,
    buf: Vec<u8>,
}

impl Conn {
    pub fn connect(addr: &str, timeout: Duration) -> Result<Conn> {
        let sa: SocketAddr = addr.parse().with_context(|| format!("address {addr}"))?;
        let stream =
            TcpStream::connect_timeout(&sa, timeout).with_context(|| format!("connect {addr}"))?;
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        Ok(Conn {
            stream: Io::Plain(stream),
            buf: Vec::new(),
        })
    }

    /// [`Conn::connect`] over TLS, trusting any server certificate (as Java's clients do in their
    /// default `tls.test.mode.enable`); the handshake completes within `timeout`.
    pub fn connect_tls(addr: &str, timeout: Duration) -> Result<Conn> {
        let Io::Plain(tcp) = Conn::connect(addr, timeout)?.stream else {
            unreachable!("connect is plain")
        };
        let name = rustls::pki_types::ServerName::try_from("localhost")?;
        let tls = rustls::ClientConnection::new(crate::tls::client_config(), name)?;
        let mut stream = rustls::StreamOwned::new(tls, tcp);
        stream.sock.set_read_timeout(Some(timeout))?;
        while stream.conn.is_handshaking() {
            stream
                .conn
                .complete_io(&mut stream.sock)
                .with_context(|| format!("TLS handshake with {addr}"))?;
        }
        Ok(Conn {
            stream: Io::Tls(Box::new(stream)),
            buf: Vec::new(),
        })
    }

    /// Writes raw bytes. A peer that closes early may make this fail with EPIPE/ECONNRESET, which
    /// is reported as an error for the caller to judge.
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let rw = self.stream.rw();
        rw.write_all(bytes)?;
        rw.flush()
    }

    pub fn shutdown_write(&self) {
        let _ = self.stream.tcp().shutdown(Shutdown::Write);
    }

    /// Waits up to `wait` for one complete frame, a close, or nothing.
    pub fn outcome(&mut self, wait: Duration) -> Result<Outcome> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(resp) = self.take_frame()? {
                return Ok(Outcome::Response(resp));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Outcome::Silent);
            }
            self.stream.tcp().set_read_timeout(Some(left))?;
            let mut chunk = [0u8; 64 * 1024];
            match self.stream.rw().read(&mut chunk) {
                Ok(0) => return Ok(Outcome::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(Outcome::Silent)
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                    ) =>
                {
                    return Ok(Outcome::Closed)
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn take_frame(&mut self) -> Result<Option<Response>> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let total = i32::from_be_bytes(self.buf[0..4].try_into().expect("4 bytes"));
        if !(4..=16 * 1024 * 1024).contains(&total) {
            bail!("peer sent a frame of length {total}");
        }
        let total = total as usize;
        if self.buf.len() < 4 + total {
            return Ok(None);
        }
        let frame: Vec<u8> = self.buf.drain(..4 + total).collect();
        let mark = u32::from_be_bytes(frame[4..8].try_into().expect("4 bytes"));
        let (ser, header_len) = (mark >> 24, (mark & 0x00FF_FFFF) as usize);
        if ser != 0 {
            bail!("peer answered with serialize type {ser}, expected JSON (0)");
        }
        if 8 + header_len > frame.len() {
            bail!("peer sent header length {header_len} in a frame of {total}");
        }
        let header: Value = serde_json::from_slice(&frame[8..8 + header_len])
            .with_context(|| "peer sent a header that is not JSON")?;
        Ok(Some(Response {
            header,
            body: frame[8 + header_len..].to_vec(),
        }))
    }

    /// Sends a request and waits for its response (the one with the same opaque).
    pub fn call(
        &mut self,
        code: i32,
        opaque: i32,
        ext: &[(&str, &str)],
        body: &[u8],
        wait: Duration,
    ) -> Result<Response> {
        self.send(&request(code, opaque, ext, body))?;
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.outcome(left)? {
                Outcome::Response(r) if r.opaque() == opaque as i64 => return Ok(r),
                // Server-initiated requests (none expected here) are skipped.
                Outcome::Response(_) => continue,
                other => bail!("request {code}: {}", other.describe()),
            }
        }
    }

    /// GET_MAX_OFFSET: the end of `topic`'s queue `queue` on the broker this connects to.
    pub fn max_offset(&mut self, topic: &str, queue: i32, wait: Duration) -> Result<i64> {
        let q = queue.to_string();
        let fields = [("topic", topic), ("queueId", q.as_str())];
        let r = self.call(code::GET_MAX_OFFSET, 3, &fields, b"", wait)?;
        if r.code() != 0 {
            bail!("max offset of {topic}/{queue}: {}", r.header);
        }
        Ok(r.header["extFields"]["offset"]
            .as_str()
            .context("no offset")?
            .parse()?)
    }
}

/// `ext` plus the `AccessKey` and `Signature` fields `AclClientRPCHook` adds for `(access_key,
/// secret_key)`: HMAC-SHA1 (base64) of the field values sorted by name, then the body.
pub fn signed_fields(
    ext: &[(&str, &str)],
    body: &[u8],
    access_key: &str,
    secret_key: &str,
) -> Vec<(String, String)> {
    use base64::Engine;
    use hmac::{Hmac, Mac};
    let mut fields: std::collections::BTreeMap<String, String> = ext
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    fields.insert("AccessKey".into(), access_key.into());
    let mut mac = <Hmac<sha1::Sha1> as Mac>::new_from_slice(secret_key.as_bytes())
        .expect("HMAC takes any key");
    for v in fields.values() {
        mac.update(v.as_bytes());
    }
    mac.update(body);
    let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    fields.insert("Signature".into(), signature);
    fields.into_iter().collect()
}

/// HEART_BEAT body of a client with no producers or consumers.
pub fn empty_heartbeat() -> Vec<u8> {
    br#"{"clientID":"skiff-compat-probe","consumerDataSet":[],"producerDataSet":[]}"#.to_vec()
}

/// Builds SEND_MESSAGE_V2 extFields as the Java producer does (one-letter names).
pub fn send_v2_fields<'a>(
    topic: &'a str,
    born: &'a str,
    properties: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("a", "skiff_compat_raw_producer"),
        ("b", topic),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", "0"),
        ("f", "0"),
        ("g", born),
        ("h", "0"),
        ("i", properties),
        ("j", "0"),
        ("k", "false"),
        ("m", "false"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_layout_matches_the_java_encoder() {
        let f = frame(b"{}", b"xyz");
        assert_eq!(&f[0..4], &9i32.to_be_bytes()); // 4 + 2 + 3
        assert_eq!(&f[4..8], &[0, 0, 0, 2]);
        assert_eq!(&f[8..], b"{}xyz");
    }

    #[test]
    fn request_header_carries_string_ext_fields() {
        let h: Value = serde_json::from_slice(&request_header(105, 7, &[("topic", "T")])).unwrap();
        assert_eq!(h["code"], 105);
        assert_eq!(h["opaque"], 7);
        assert_eq!(h["flag"], 0);
        assert_eq!(h["extFields"]["topic"], "T");
    }
}
