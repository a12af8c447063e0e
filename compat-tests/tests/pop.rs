//! POP consumption with the 5.x Java client (4.9 has no POP): a group switched to POP mode is
//! consumed by an unchanged `DefaultMQPushConsumer` (scenario `pop-consume`); un-acked messages
//! come back after a restart and after `kill -9`, acked ones never (`pop-hold`, then
//! `pop-return`); and bad POP input over raw TCP gets Java's answers while the broker keeps
//! serving. See compat-tests/README.md.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use skiff_compat_tests::java::Client;
use skiff_compat_tests::remoting::{self, Conn};
use skiff_compat_tests::suite::{unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{FlushDisk, Stop, Target};

/// The client with POP.
const CLIENT: &str = "5.3.3";

/// Each test starts its own broker; one at a time keeps 2 cores from thrashing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(target: &Target, scenario: &str, id: &str, extra: &[(&str, &str)]) -> Result<()> {
    let client = Client::get(CLIENT)?;
    let (namesrv, broker) = (target.namesrv(), target.broker());
    let mut args = vec![
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id),
    ];
    args.extend_from_slice(extra);
    let dir = target.dir().join("runs").join(format!("{scenario}-{id}"));
    let started = Instant::now();
    client
        .run(scenario, &args, &dir, SCENARIO_TIMEOUT)
        .with_context(|| format!("{scenario} with client {CLIENT}"))?;
    println!("{scenario}: PASS in {:.1?}", started.elapsed());
    Ok(())
}

fn report(result: Result<()>, target: &Target) {
    if let Err(e) = result {
        panic!("{e:#}\n{}", target.logs());
    }
}

/// Two POP consumers share the queues, every message is consumed exactly once, and
/// RECONSUME_LATER or a throwing listener brings the message back with reconsumeTimes 1.
#[test]
fn push_consumer_consumes_by_pop() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = Target::start("pop", FlushDisk::Async).expect("start the target");
    let result = run(&target, "pop-consume", &unique_id(CLIENT), &[]);
    report(result.and_then(|()| target.check_alive()), &target);
}

fn unacked_come_back_after(stop: Stop) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let flush = if stop == Stop::Kill {
        FlushDisk::Sync
    } else {
        FlushDisk::Async
    };
    let target = Target::start("pop-restart", flush).expect("start the target");
    let result = (|| {
        let id = unique_id(CLIENT);
        let file = target.dir().join(format!("held-{id}.txt"));
        let file = file.to_string_lossy().to_string();
        run(&target, "pop-hold", &id, &[("out", &file)])?;
        // Let the broker save its offsets (every second in the harness) before a kill.
        std::thread::sleep(Duration::from_millis(1500));
        target.stop(stop)?;
        let took = target.restart()?;
        println!("{stop:?} and restart took {took:.1?}");
        run(&target, "pop-return", &id, &[("in", &file)])?;
        target.check_alive()
    })();
    report(result, &target);
}

#[test]
fn unacked_messages_come_back_after_a_restart() {
    unacked_come_back_after(Stop::Graceful);
}

#[test]
fn unacked_messages_come_back_after_kill9() {
    unacked_come_back_after(Stop::Kill);
}

const SUCCESS: i64 = 0;
const SYSTEM_ERROR: i64 = 1;
const TOPIC_NOT_EXIST: i64 = 17;
const INVALID_PARAMETER: i64 = 29;
const NO_MESSAGE: i64 = 208;
const POLLING_TIMEOUT: i64 = 210;

const POP_MESSAGE: i32 = 200050;
const ACK_MESSAGE: i32 = 200051;
const CHANGE_MESSAGE_INVISIBLETIME: i32 = 200053;
const NOTIFICATION: i32 = 200054;

const WAIT: Duration = Duration::from_secs(10);

/// A raw case: name, request code, header fields, expected response code.
type RawCase<'a> = (&'a str, i32, Vec<(&'a str, String)>, i64);

fn now_ms() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
        .to_string()
}

/// Raw POP frames with bad values get Java's codes; the broker serves a fresh connection after
/// each.
#[test]
fn bad_pop_input() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = Target::start("pop-bad", FlushDisk::Async).expect("start the target");
    let result = (|| -> Result<()> {
        let id = unique_id("raw");
        let topic = format!("compat_popbad_{id}");
        let group = format!("compat_popbad_{id}");
        let mut conn = Conn::connect(&target.broker(), WAIT)?;
        // A topic with one stored message (auto-created from TBW102).
        let born = now_ms();
        let props = "SEQ\u{1}0\u{2}";
        let fields = remoting::send_v2_fields(&topic, &born, props);
        let sent = conn.call(remoting::code::SEND_MESSAGE_V2, 1, &fields, b"x", WAIT)?;
        anyhow::ensure!(
            sent.code() == SUCCESS,
            "send: code {} {}",
            sent.code(),
            sent.remark()
        );

        let pop = |topic: &str, max: &str, invisible: &str, born: &str| {
            vec![
                ("consumerGroup", group.clone()),
                ("topic", topic.to_string()),
                ("queueId", "-1".to_string()),
                ("maxMsgNums", max.to_string()),
                ("invisibleTime", invisible.to_string()),
                ("pollTime", "0".to_string()),
                ("bornTime", born.to_string()),
                ("initMode", "0".to_string()),
                ("order", "false".to_string()),
            ]
        };
        let ack = |offset: &str, extra: &str, invisible: Option<&str>| {
            let mut f = vec![
                ("consumerGroup", group.clone()),
                ("topic", topic.clone()),
                ("queueId", "0".to_string()),
                ("offset", offset.to_string()),
                ("extraInfo", extra.to_string()),
            ];
            if let Some(i) = invisible {
                f.push(("invisibleTime", i.to_string()));
            }
            f
        };
        let now = now_ms();
        let cases: Vec<RawCase> = vec![
            (
                "pop of a topic that does not exist",
                POP_MESSAGE,
                pop("compat_no_such_topic_pop", "1", "60000", &now),
                TOPIC_NOT_EXIST,
            ),
            (
                "pop of more than 32 messages",
                POP_MESSAGE,
                pop(&topic, "33", "60000", &now),
                INVALID_PARAMETER,
            ),
            (
                "pop sent long ago",
                POP_MESSAGE,
                pop(&topic, "1", "60000", "1000"),
                POLLING_TIMEOUT,
            ),
            (
                "ack with a garbage extraInfo",
                ACK_MESSAGE,
                ack("0", "garbage", None),
                SYSTEM_ERROR,
            ),
            (
                "ack of a checkpoint that does not exist",
                ACK_MESSAGE,
                ack("0", "0 1700000000000 60000 0 0 broker-a 0 0", None),
                SUCCESS,
            ),
            (
                "ack beyond the queue",
                ACK_MESSAGE,
                ack(
                    "999999",
                    "0 1700000000000 60000 0 0 broker-a 0 999999",
                    None,
                ),
                NO_MESSAGE,
            ),
            (
                "change of invisible time with a garbage extraInfo",
                CHANGE_MESSAGE_INVISIBLETIME,
                ack("0", "1 2", Some("10000")),
                SYSTEM_ERROR,
            ),
        ];
        let mut failures = Vec::new();
        for (i, (name, code, fields, expected)) in cases.iter().enumerate() {
            let ext: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let mut c = Conn::connect(&target.broker(), WAIT)?;
            match c.call(*code, 100 + i as i32, &ext, b"", WAIT) {
                Ok(r) => {
                    println!("{name}: code {} remark {:?}", r.code(), r.remark());
                    if r.code() != *expected {
                        failures.push(format!(
                            "{name}: expected {expected}, got {} {:?}",
                            r.code(),
                            r.remark()
                        ));
                    }
                }
                Err(e) => failures.push(format!("{name}: {e:#}")),
            }
            let mut probe = Conn::connect(&target.broker(), WAIT)?;
            let hb = probe.call(
                remoting::code::HEART_BEAT,
                1,
                &[],
                &remoting::empty_heartbeat(),
                WAIT,
            );
            if !hb.is_ok_and(|r| r.code() == SUCCESS) {
                failures.push(format!(
                    "after {name}: the broker no longer answers HEART_BEAT"
                ));
            }
        }
        // Absurd invisible times: whatever Java answers, the broker must answer and keep serving.
        for invisible in ["-1", "9223372036854775807"] {
            let fields = pop(&topic, "1", invisible, &now_ms());
            let ext: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let r =
                Conn::connect(&target.broker(), WAIT)?.call(POP_MESSAGE, 200, &ext, b"", WAIT)?;
            println!(
                "pop with invisibleTime {invisible}: code {} remark {:?}",
                r.code(),
                r.remark()
            );
        }
        target.check_alive()?;
        anyhow::ensure!(failures.is_empty(), "{}", failures.join("\n"));
        Ok(())
    })();
    report(result, &target);
}

/// Queue offsets of the records in a POP/PULL body (QUEUEOFFSET is bytes 20..28 of a record).
fn queue_offsets(mut body: &[u8]) -> Vec<i64> {
    let mut out = Vec::new();
    while body.len() >= 28 {
        let size = i32::from_be_bytes(body[0..4].try_into().unwrap_or_default()) as usize;
        out.push(i64::from_be_bytes(
            body[20..28].try_into().unwrap_or_default(),
        ));
        if size < 28 || size > body.len() {
            break;
        }
        body = &body[size..];
    }
    out
}

fn ext(r: &remoting::Response, name: &str) -> String {
    r.header["extFields"][name]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Orderly POP (`order=true`): a queue is locked to the pop that read it until its messages are
/// acked or the invisible time passes; un-acked messages come back in order with their pop count.
#[test]
fn orderly_pop_locks_the_queue() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = Target::start("pop-order", FlushDisk::Async).expect("start the target");
    let result = (|| -> Result<()> {
        let id = unique_id("raw");
        let topic = format!("compat_poporder_{id}");
        let group = format!("compat_poporder_{id}");
        let mut conn = Conn::connect(&target.broker(), WAIT)?;
        let created = conn.call(
            17,
            1,
            &[
                ("topic", topic.as_str()),
                ("defaultTopic", "TBW102"),
                ("readQueueNums", "1"),
                ("writeQueueNums", "1"),
                ("perm", "6"),
                ("topicFilterType", "SINGLE_TAG"),
                ("topicSysFlag", "0"),
                ("order", "false"),
            ],
            b"",
            WAIT,
        )?;
        anyhow::ensure!(
            created.code() == SUCCESS,
            "create topic: {}",
            created.remark()
        );
        let send = |conn: &mut Conn, n: i32| -> Result<()> {
            let born = now_ms();
            let fields = remoting::send_v2_fields(&topic, &born, "");
            let r = conn.call(remoting::code::SEND_MESSAGE_V2, 10 + n, &fields, b"m", WAIT)?;
            anyhow::ensure!(r.code() == SUCCESS, "send: {} {}", r.code(), r.remark());
            Ok(())
        };
        for n in 0..3 {
            send(&mut conn, n)?;
        }
        let opaque = std::cell::Cell::new(100);
        let next_opaque = || {
            opaque.set(opaque.get() + 1);
            opaque.get()
        };
        let pop = |conn: &mut Conn, invisible: &str| -> Result<remoting::Response> {
            let born = now_ms();
            conn.call(
                POP_MESSAGE,
                next_opaque(),
                &[
                    ("consumerGroup", group.as_str()),
                    ("topic", topic.as_str()),
                    ("queueId", "-1"),
                    ("maxMsgNums", "32"),
                    ("invisibleTime", invisible),
                    ("pollTime", "0"),
                    ("bornTime", born.as_str()),
                    ("initMode", "0"),
                    ("order", "true"),
                ],
                b"",
                WAIT,
            )
        };
        // NOTIFICATION: the group has something to pop.
        let born = now_ms();
        let notified = conn.call(
            NOTIFICATION,
            99,
            &[
                ("consumerGroup", group.as_str()),
                ("topic", topic.as_str()),
                ("queueId", "-1"),
                ("pollTime", "0"),
                ("bornTime", born.as_str()),
                ("order", "true"),
            ],
            b"",
            WAIT,
        )?;
        anyhow::ensure!(
            notified.code() == SUCCESS && ext(&notified, "hasMsg") == "true",
            "notification: {} {} hasMsg {:?}",
            notified.code(),
            notified.remark(),
            ext(&notified, "hasMsg")
        );
        // First pop: all three, in order, never popped before.
        let first = pop(&mut conn, "2000")?;
        anyhow::ensure!(
            first.code() == SUCCESS,
            "first pop: {} {}",
            first.code(),
            first.remark()
        );
        anyhow::ensure!(
            queue_offsets(&first.body) == [0, 1, 2],
            "first pop got {:?}",
            queue_offsets(&first.body)
        );
        anyhow::ensure!(
            ext(&first, "reviveQid") == "999",
            "reviveQid {}",
            ext(&first, "reviveQid")
        );
        // The queue is locked: nothing for anyone until acked or expired.
        let locked = pop(&mut conn, "2000")?;
        anyhow::ensure!(
            locked.code() == POLLING_TIMEOUT,
            "locked queue popped: {}",
            locked.code()
        );
        // Not acked: after the invisible time the same messages come back, in order, counted.
        std::thread::sleep(Duration::from_millis(2500));
        let again = pop(&mut conn, "60000")?;
        anyhow::ensure!(
            again.code() == SUCCESS,
            "re-pop: {} {}",
            again.code(),
            again.remark()
        );
        anyhow::ensure!(
            queue_offsets(&again.body) == [0, 1, 2],
            "re-pop got {:?}",
            queue_offsets(&again.body)
        );
        println!(
            "orderCountInfo after expiry: {:?}",
            ext(&again, "orderCountInfo")
        );
        let pop_time = ext(&again, "popTime");
        // Ack all three (in order); then only a new message is popped.
        for offset in 0..3 {
            let extra = format!("0 {pop_time} 60000 999 0 broker-a 0 {offset}");
            let offset = offset.to_string();
            let r = conn.call(
                ACK_MESSAGE,
                next_opaque(),
                &[
                    ("consumerGroup", group.as_str()),
                    ("topic", topic.as_str()),
                    ("queueId", "0"),
                    ("offset", offset.as_str()),
                    ("extraInfo", extra.as_str()),
                ],
                b"",
                WAIT,
            )?;
            anyhow::ensure!(
                r.code() == SUCCESS,
                "ack {offset}: {} {}",
                r.code(),
                r.remark()
            );
        }
        send(&mut conn, 3)?;
        let next = pop(&mut conn, "60000")?;
        anyhow::ensure!(
            next.code() == SUCCESS,
            "pop after ack: {} {}",
            next.code(),
            next.remark()
        );
        anyhow::ensure!(
            queue_offsets(&next.body) == [3],
            "pop after ack got {:?}",
            queue_offsets(&next.body)
        );
        target.check_alive()
    })();
    report(result, &target);
}
