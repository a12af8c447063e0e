//! Malformed and hostile input over raw TCP. Each case asserts what the Java broker (Apache
//! RocketMQ 5.3.3, which Skiff follows) does with the same bytes: a specific response code, or
//! closing the connection. Where 4.9 answers differently, that answer is asserted instead when the
//! target is an Apache 4.9 broker (`SKIFF_COMPAT_APACHE_VERSION=4.9.7`). After every case a fresh connection must still be served by both the name server
//! and the broker, and (for Skiff) the process must still be alive.
//!
//! Frames are written by hand (see skiff_compat_tests::remoting), never with Skiff's codec.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use skiff_compat_tests::remoting::{self, code, frame, request, Conn, Outcome};
use skiff_compat_tests::settings::{self, TargetKind};
use skiff_compat_tests::suite::shared_target;
use skiff_compat_tests::target::Target;

const SUCCESS: i64 = 0;
const SYSTEM_ERROR: i64 = 1;
const REQUEST_CODE_NOT_SUPPORTED: i64 = 3;
const MESSAGE_ILLEGAL: i64 = 13;
const NO_PERMISSION: i64 = 16;
const TOPIC_NOT_EXIST: i64 = 17;
const INVALID_PARAMETER: i64 = 29;

/// How long to wait for an answer (or for nothing, in the "silent" cases).
const WAIT: Duration = Duration::from_secs(5);
const SILENCE: Duration = Duration::from_millis(1500);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Port {
    Namesrv,
    Broker,
}

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// A response with this code echoing the opaque, with a remark unless the code is 0.
    Code(i64),
    /// The server closes the connection without answering.
    Closed,
    /// Nothing happens until we half-close; then the server closes.
    SilentUntilFin,
    /// No answer, and the connection stays open.
    Silent,
}

struct Case {
    name: String,
    port: Port,
    bytes: Vec<u8>,
    expect: Expect,
}

fn case(name: &str, port: Port, bytes: Vec<u8>, expect: Expect) -> Case {
    Case {
        name: format!("{name} ({port:?})"),
        port,
        bytes,
        expect,
    }
}

/// `v5` (what 5.3.3 and Skiff do), or `v4` when the target is an Apache 4.9 broker.
fn since5<T>(v5: T, v4: T) -> T {
    let apache4 = settings::target_kind().ok() == Some(TargetKind::Apache)
        && settings::apache_version().starts_with("4.");
    if apache4 {
        v4
    } else {
        v5
    }
}

fn addr(t: &Target, port: Port) -> String {
    match port {
        Port::Namesrv => t.namesrv(),
        Port::Broker => t.broker(),
    }
}

/// Runs one case; returns a mismatch description, if any.
fn check(t: &Target, c: &Case) -> Option<String> {
    let mut conn = match Conn::connect(&addr(t, c.port), WAIT) {
        Ok(conn) => conn,
        Err(e) => return Some(format!("{}: connect: {e:#}", c.name)),
    };
    // A server that closes early may reset our write of a large frame; that counts as a close.
    let wrote = conn.send(&c.bytes).is_ok();
    let got = match c.expect {
        Expect::Silent => conn.outcome(SILENCE),
        Expect::SilentUntilFin => match conn.outcome(SILENCE) {
            Ok(Outcome::Silent) => {
                conn.shutdown_write();
                conn.outcome(WAIT)
            }
            other => other,
        },
        _ => conn.outcome(WAIT),
    };
    let got = match got {
        Ok(o) => o,
        Err(e) if !wrote => return Some(format!("{}: write failed and then {e:#}", c.name)),
        Err(e) => return Some(format!("{}: {e:#}", c.name)),
    };
    println!("{}: {}", c.name, got.describe());
    let ok = match (&c.expect, &got) {
        (Expect::Code(want), Outcome::Response(r)) => {
            r.code() == *want
                && (*want == 0 || !r.remark().is_empty())
                && r.is_response()
                && r.opaque() == 77
        }
        (Expect::Closed | Expect::SilentUntilFin, Outcome::Closed) => true,
        (Expect::Silent, Outcome::Silent) => true,
        _ => false,
    };
    (!ok).then(|| {
        format!(
            "{}: expected {:?}, got {}",
            c.name,
            c.expect,
            got.describe()
        )
    })
}

/// A fresh connection to each port is served, and the target process is alive.
fn still_serving(t: &Target) -> Result<(), String> {
    let mut ns = Conn::connect(&t.namesrv(), WAIT).map_err(|e| format!("{e:#}"))?;
    let route = ns
        .call(
            code::GET_ROUTEINFO_BY_TOPIC,
            1,
            &[("topic", "TBW102")],
            &[],
            WAIT,
        )
        .map_err(|e| format!("name server: {e:#}"))?;
    if route.code() != 0 {
        return Err(format!(
            "name server route of TBW102: code {}",
            route.code()
        ));
    }
    let mut b = Conn::connect(&t.broker(), WAIT).map_err(|e| format!("{e:#}"))?;
    let hb = b
        .call(code::HEART_BEAT, 2, &[], &remoting::empty_heartbeat(), WAIT)
        .map_err(|e| format!("broker: {e:#}"))?;
    if hb.code() != 0 {
        return Err(format!("broker heartbeat: code {}", hb.code()));
    }
    t.check_alive().map_err(|e| format!("{e:#}"))
}

fn run_cases(cases: Vec<Case>) {
    let t = shared_target();
    let mut failures = Vec::new();
    for c in &cases {
        if let Some(f) = check(t, c) {
            failures.push(f);
        }
        if let Err(e) = still_serving(t) {
            panic!(
                "after {}: the target no longer serves: {e}\n{}",
                c.name,
                t.logs()
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn header_with(json: &str) -> Vec<u8> {
    json.as_bytes().to_vec()
}

/// `[i32 total][u8 type|u24 headerLen]` with arbitrary values, then `rest`, then 16 bytes of
/// padding: the 5.x Java server first sniffs for the HAProxy protocol and silently waits while a
/// connection has sent fewer than 16 bytes, which is not behaviour worth asserting.
fn raw(total: i32, mark: u32, rest: &[u8]) -> Vec<u8> {
    let mut v = total.to_be_bytes().to_vec();
    v.extend_from_slice(&mark.to_be_bytes());
    v.extend_from_slice(rest);
    v.extend_from_slice(&[0u8; 16]);
    v
}

#[test]
fn malformed_frames_close_the_connection() {
    let mut cases = Vec::new();
    for port in [Port::Namesrv, Port::Broker] {
        let valid = request(code::HEART_BEAT, 77, &[], &remoting::empty_heartbeat());
        cases.extend([
            case(
                "HTTP request instead of a frame (length 0x47455420 > 16 MiB)",
                port,
                b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
                Expect::Closed,
            ),
            case(
                "negative total length",
                port,
                raw(-1, 2, b"{}"),
                Expect::Closed,
            ),
            case(
                "total length 16 MiB + 1",
                port,
                raw(16 * 1024 * 1024 + 1, 2, b"{}"),
                Expect::Closed,
            ),
            case("total length 0", port, raw(0, 0, &[]), Expect::Closed),
            case(
                "header length beyond the frame",
                port,
                raw(4 + 2, 1000, b"{}"),
                Expect::Closed,
            ),
            case(
                "header that is not JSON",
                port,
                frame(b"{not json", &[]),
                Expect::Closed,
            ),
            case(
                "unknown serialize type 7",
                port,
                raw(4 + 2, (7 << 24) | 2, b"{}"),
                Expect::Closed,
            ),
            case(
                "garbage ROCKETMQ binary header",
                port,
                raw(4 + 4, (1 << 24) | 4, &[0xff; 4]),
                Expect::Closed,
            ),
            case(
                "truncated frame",
                port,
                valid[..valid.len() / 2].to_vec(),
                Expect::SilentUntilFin,
            ),
            case(
                "truncated length prefix",
                port,
                vec![0, 0],
                Expect::SilentUntilFin,
            ),
        ]);
    }
    run_cases(cases);
}

#[test]
fn unknown_request_codes_are_not_supported() {
    let mut cases = Vec::new();
    for port in [Port::Namesrv, Port::Broker] {
        // The 4.9 name server does not answer unknown codes at all.
        let expect = match port {
            Port::Namesrv => since5(Expect::Code(REQUEST_CODE_NOT_SUPPORTED), Expect::Silent),
            Port::Broker => Expect::Code(REQUEST_CODE_NOT_SUPPORTED),
        };
        cases.push(case(
            "request code 9999",
            port,
            request(9999, 77, &[], &[]),
            expect,
        ));
        cases.push(case(
            "request code -5",
            port,
            request(-5, 77, &[], &[]),
            expect,
        ));
    }
    let mut oneway = request(9999, 77, &[], &[]);
    let oneway_header = String::from_utf8(oneway[8..].to_vec()).expect("JSON header");
    oneway = frame(
        oneway_header.replace("\"flag\":0", "\"flag\":2").as_bytes(),
        &[],
    );
    cases.push(case(
        "oneway request code 9999",
        Port::Broker,
        oneway,
        Expect::Silent,
    ));
    cases.push(case(
        "route of a topic nobody has",
        Port::Namesrv,
        request(
            code::GET_ROUTEINFO_BY_TOPIC,
            77,
            &[("topic", "compat_no_such_topic")],
            &[],
        ),
        Expect::Code(TOPIC_NOT_EXIST),
    ));
    run_cases(cases);
}

fn now_ms() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
        .to_string()
}

fn send_v2(topic: &str, body: &[u8]) -> Vec<u8> {
    let born = now_ms();
    request(
        code::SEND_MESSAGE_V2,
        77,
        &remoting::send_v2_fields(topic, &born, ""),
        body,
    )
}

#[test]
fn sends_to_invalid_topics_are_refused() {
    let long = "t".repeat(128);
    let cases = vec![
        case(
            "topic with illegal characters",
            Port::Broker,
            send_v2("bad topic!", b"x"),
            since5(Expect::Code(INVALID_PARAMETER), Expect::Code(SYSTEM_ERROR)),
        ),
        case(
            "topic of 128 characters",
            Port::Broker,
            send_v2(&long, b"x"),
            since5(Expect::Code(INVALID_PARAMETER), Expect::Code(SYSTEM_ERROR)),
        ),
        case(
            "empty topic",
            Port::Broker,
            send_v2("", b"x"),
            since5(Expect::Code(INVALID_PARAMETER), Expect::Code(SYSTEM_ERROR)),
        ),
        // Java refuses only the system topics in TopicValidator's "not allowed to send" list;
        // TBW102 is not in it and takes the message.
        case(
            "reserved topic TBW102",
            Port::Broker,
            send_v2("TBW102", b"x"),
            Expect::Code(SUCCESS),
        ),
        case(
            "reserved topic SCHEDULE_TOPIC_XXXX",
            Port::Broker,
            send_v2("SCHEDULE_TOPIC_XXXX", b"x"),
            Expect::Code(NO_PERMISSION),
        ),
    ];
    run_cases(cases);
}

#[test]
fn bad_sends_are_refused() {
    let topic = format!("compat_raw_{}", std::process::id());
    let born = now_ms();
    let mut missing_topic = remoting::send_v2_fields(&topic, &born, "");
    missing_topic.retain(|(k, _)| *k != "b");
    let long_properties = format!("big\u{1}{}\u{2}", "v".repeat(40 * 1024));
    let mut bad_queue = remoting::send_v2_fields(&topic, &born, "");
    for f in bad_queue.iter_mut().filter(|(k, _)| *k == "e") {
        f.1 = "99";
    }
    let cases = vec![
        // Creates the topic (autoCreateTopicEnable) for the cases below.
        case(
            "a valid send",
            Port::Broker,
            send_v2(&topic, b"x"),
            Expect::Code(SUCCESS),
        ),
        case(
            "body over maxMessageSize (4 MiB + 1)",
            Port::Broker,
            send_v2(&topic, &vec![b'x'; 4 * 1024 * 1024 + 1]),
            Expect::Code(MESSAGE_ILLEGAL),
        ),
        // 5.3.3 fails on the null body (an NPE, answered as SYSTEM_ERROR); 4.9 stores it.
        case(
            "empty body",
            Port::Broker,
            send_v2(&topic, &[]),
            since5(Expect::Code(SYSTEM_ERROR), Expect::Code(SUCCESS)),
        ),
        case(
            "send without the topic field",
            Port::Broker,
            request(code::SEND_MESSAGE_V2, 77, &missing_topic, b"x"),
            Expect::Code(SYSTEM_ERROR),
        ),
        case(
            "send to queue 99 of a 4-queue topic",
            Port::Broker,
            request(code::SEND_MESSAGE_V2, 77, &bad_queue, b"x"),
            since5(Expect::Code(INVALID_PARAMETER), Expect::Code(SYSTEM_ERROR)),
        ),
        case(
            "properties over 32 KiB",
            Port::Broker,
            request(
                code::SEND_MESSAGE_V2,
                77,
                &remoting::send_v2_fields(&topic, &born, &long_properties),
                b"x",
            ),
            Expect::Code(MESSAGE_ILLEGAL),
        ),
        case(
            "heartbeat whose body is not JSON",
            Port::Broker,
            request(code::HEART_BEAT, 77, &[], b"{not json"),
            Expect::Code(SYSTEM_ERROR),
        ),
        case(
            "header without code",
            Port::Broker,
            frame(&header_with(r#"{"opaque":77,"flag":0}"#), &[]),
            Expect::Code(REQUEST_CODE_NOT_SUPPORTED),
        ),
    ];
    run_cases(cases);
}

/// DELETE_TOPIC_IN_BROKER of the broker's own topics is refused (5.3.3's
/// `validateSystemTopicWhenUpdateTopic`, on by default). Not run against 4.9, which deletes them
/// (and would leave the shared broker without its auto-create template).
#[test]
fn system_topics_cannot_be_deleted() {
    if !since5(true, false) {
        return;
    }
    const DELETE_TOPIC_IN_BROKER: i32 = 215;
    let cases = [
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "DefaultCluster",
        "rmq_sys_probe",
    ]
    .iter()
    .map(|topic| {
        case(
            &format!("delete system topic {topic}"),
            Port::Broker,
            request(DELETE_TOPIC_IN_BROKER, 77, &[("topic", topic)], &[]),
            Expect::Code(INVALID_PARAMETER),
        )
    })
    .collect();
    run_cases(cases);
}
