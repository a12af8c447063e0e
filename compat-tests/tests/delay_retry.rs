//! Delay levels, retries and dead letters (issue #7, items 1 and 3), with the official Java
//! clients. The broker runs with short delay levels (`messageDelayLevel`, the same setting for
//! Apache and Skiff) so that the whole file takes seconds per scenario: level 1 = 1 s, 2 = 2 s,
//! 3 = 3 s, every other level 1 s. See DelayRetry.java for what each scenario checks.
//!
//! - `delay_levels`: levels 1, 2, 3 and 99 (clamped) delivered no earlier than their delay and
//!   under a second late, with REAL_TOPIC / REAL_QID / DELAY as stored.
//! - `retry_then_dead_letters`: RECONSUME_LATER comes back through %RETRY% (reconsume times 0, 1,
//!   2, same msgId and properties), then the message is in %DLQ%group.
//! - `orderly_suspend_then_dead_letters`: an orderly consumer past its maxReconsumeTimes sends the
//!   message to the DLQ (the broker sends a locked group's messages there at once, as Java).
//! - `pending_delays_survive_restart_and_kill9`: delayed messages pending at a SIGTERM or a kill -9
//!   are all delivered afterwards (at least once), none early.
//! - `send_back_bad_input`: CONSUMER_SEND_MSG_BACK with an offset that holds no message, an illegal
//!   group, an absurd or negative delay level, a missing field: Java's codes and remarks (raw
//!   frames).

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use skiff_compat_tests::java::Client;
use skiff_compat_tests::remoting::{self, code, Conn};
use skiff_compat_tests::settings;
use skiff_compat_tests::suite::{unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{FlushDisk, Options, Stop, Target};

/// 18 levels: 1 s, 2 s, 3 s, then 1 s each (so the retry ladder 3, 4, 5 … is quick).
const LEVELS: &str = "1s 2s 3s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s";

const CONSUMER_SEND_MSG_BACK: i32 = 36;
const SUCCESS: i64 = 0;
const SYSTEM_ERROR: i64 = 1;
const SUBSCRIPTION_GROUP_NOT_EXIST: i64 = 26;
const WAIT: Duration = Duration::from_secs(10);

/// One test at a time: against Apache several JVMs at once on 2 cores make client calls time out,
/// and the lateness checks need a lightly loaded broker.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn levels_ms() -> String {
    LEVELS
        .split_whitespace()
        .map(|l| (l.trim_end_matches('s').parse::<u64>().unwrap() * 1000).to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn options(flush: FlushDisk) -> Options {
    Options {
        broker_settings: vec![
            ("messageDelayLevel", LEVELS.into()),
            ("flushDelayOffsetInterval", "1000".into()),
        ],
        ..Options::new(flush).expect("settings")
    }
}

/// The target shared by the scenarios of this file.
fn target() -> &'static Target {
    static SHARED: OnceLock<std::result::Result<Target, String>> = OnceLock::new();
    match SHARED.get_or_init(|| {
        Target::start_with("delay", options(FlushDisk::Async)).map_err(|e| format!("{e:#}"))
    }) {
        Ok(t) => t,
        Err(e) => panic!("could not start the target: {e}"),
    }
}

fn run_scenario(target: &Target, scenario: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let levels = levels_ms();
    let mut failures = Vec::new();
    for version in settings::client_versions() {
        let started = Instant::now();
        let result = (|| -> Result<()> {
            let client = Client::get(&version)?;
            let id = unique_id(&version);
            let (namesrv, broker) = (target.namesrv(), target.broker());
            let args = [
                ("namesrv", namesrv.as_str()),
                ("broker", broker.as_str()),
                ("id", id.as_str()),
                ("levels", levels.as_str()),
            ];
            let dir = target.dir().join("runs").join(format!("{scenario}-{id}"));
            client.run(scenario, &args, &dir, SCENARIO_TIMEOUT)?;
            target.check_alive()
        })();
        match result {
            Ok(()) => println!(
                "{scenario} with client {version}: PASS in {:.1?}",
                started.elapsed()
            ),
            Err(e) => failures.push(format!("{scenario} with client {version}: {e:#}")),
        }
    }
    if !failures.is_empty() {
        panic!("{}\n{}", failures.join("\n\n"), target.logs());
    }
}

#[test]
fn delay_levels() {
    run_scenario(target(), "delay-levels");
}

#[test]
fn retry_then_dead_letters() {
    run_scenario(target(), "retry-dlq");
}

#[test]
fn orderly_suspend_then_dead_letters() {
    run_scenario(target(), "orderly-dlq");
}

/// Delayed messages pending at a stop are delivered after the restart, for a graceful stop and for
/// kill -9, by whichever broker the target is.
#[test]
fn pending_delays_survive_restart_and_kill9() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The shared target first: two targets choosing free ports at once could pick the same ones.
    let _ = target();
    let target = Target::start_with("delay-restart", options(FlushDisk::Async)).expect("start");
    if let Err(e) = restart_rounds(&target) {
        panic!("{e:#}\n{}", target.logs());
    }
}

fn restart_rounds(target: &Target) -> Result<()> {
    let levels = levels_ms();
    for version in settings::client_versions() {
        let client = Client::get(&version)?;
        for (round, stop) in [("sigterm", Stop::Graceful), ("kill9", Stop::Kill)] {
            let id = unique_id(&version);
            let file = target.dir().join(format!("delayed-{id}.txt"));
            let file = file.to_string_lossy().to_string();
            let (namesrv, broker) = (target.namesrv(), target.broker());
            let mut args = vec![
                ("namesrv", namesrv.as_str()),
                ("broker", broker.as_str()),
                ("id", id.as_str()),
                ("levels", levels.as_str()),
                ("round", round),
            ];
            let runs = target.dir().join("runs");
            let mut produce = args.clone();
            produce.extend([("out", file.as_str()), ("count", "20")]);
            client
                .run(
                    "delay-produce",
                    &produce,
                    &runs.join(format!("produce-{id}")),
                    SCENARIO_TIMEOUT,
                )
                .context("delay-produce")?;
            let t = Instant::now();
            target.stop(stop)?;
            target.restart()?;
            println!(
                "{round} with client {version}: stopped and restarted in {:.1?}",
                t.elapsed()
            );
            args.push(("in", file.as_str()));
            client
                .run(
                    "delay-verify",
                    &args,
                    &runs.join(format!("verify-{id}")),
                    SCENARIO_TIMEOUT,
                )
                .with_context(|| format!("delay-verify after {round}"))?;
            println!("{round} with client {version}: PASS");
        }
    }
    Ok(())
}

fn now_ms() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string()
}

/// Sends one message with a raw SEND_MESSAGE_V2; returns its CommitLog offset (from the offset
/// message id the broker answers with).
fn raw_send(conn: &mut Conn, topic: &str) -> Result<i64> {
    let born = now_ms();
    let fields = remoting::send_v2_fields(topic, &born, "TAGS\u{1}bad\u{2}");
    let r = conn.call(code::SEND_MESSAGE_V2, 2, &fields, b"send me back", WAIT)?;
    anyhow::ensure!(r.code() == SUCCESS, "send: {}", r.header);
    let msg_id = r.header["extFields"]["msgId"]
        .as_str()
        .context("no msgId")?
        .to_string();
    Ok(i64::from_str_radix(&msg_id[msg_id.len() - 16..], 16)?)
}

/// Java dispatches to the ConsumeQueues asynchronously: wait (bounded) until `queue` reaches
/// `expected`, and return what it has.
fn wait_max_offset(conn: &mut Conn, topic: &str, queue: i32, expected: i64) -> Result<i64> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = conn.max_offset(topic, queue, WAIT)?;
        if got >= expected || Instant::now() > deadline {
            return Ok(got);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn send_back(conn: &mut Conn, fields: &[(&str, &str)]) -> Result<(i64, String)> {
    let r = conn.call(CONSUMER_SEND_MSG_BACK, 4, fields, b"", WAIT)?;
    Ok((r.code(), r.remark()))
}

#[test]
fn send_back_bad_input() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = target();
    let result = (|| -> Result<()> {
        let mut conn = Conn::connect(&target.broker(), WAIT)?;
        let id = unique_id("raw");
        let topic = format!("compat_sendback_{id}");
        let group = format!("compat_sendback_g_{id}");
        let offset = raw_send(&mut conn, &topic)?.to_string();

        for nowhere in ["123456789012", "-1"] {
            let (code, remark) = send_back(
                &mut conn,
                &[("offset", nowhere), ("group", &group), ("delayLevel", "0")],
            )?;
            assert_eq!(code, SYSTEM_ERROR, "offset {nowhere}: {remark}");
            assert_eq!(remark, format!("look message by offset failed, {nowhere}"));
        }

        let (code, remark) = send_back(
            &mut conn,
            &[
                ("offset", &offset),
                ("group", "bad/group"),
                ("delayLevel", "0"),
            ],
        )?;
        assert_eq!(code, SUBSCRIPTION_GROUP_NOT_EXIST, "{remark}");
        assert_eq!(
            remark,
            "subscription group not exist, bad/group \nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
        );

        // Absurd levels are clamped to the highest: the copy waits in the last schedule queue.
        let before = conn.max_offset("SCHEDULE_TOPIC_XXXX", 17, WAIT)?;
        let (code, remark) = send_back(
            &mut conn,
            &[
                ("offset", &offset),
                ("group", &group),
                ("delayLevel", "100000"),
            ],
        )?;
        assert_eq!((code, remark.as_str()), (SUCCESS, ""), "absurd level");
        let after = wait_max_offset(&mut conn, "SCHEDULE_TOPIC_XXXX", 17, before + 1)?;
        assert_eq!(
            after,
            before + 1,
            "the clamped copy is not in the level-18 queue"
        );

        // A negative level means the dead letters, at once.
        let (code, remark) = send_back(
            &mut conn,
            // Clients always name the original topic; without it Java 5.3.3 fails on the way to
            // the dead letters (a NullPointerException in its metrics).
            &[
                ("offset", &offset),
                ("group", &group),
                ("delayLevel", "-3"),
                ("originTopic", &topic),
            ],
        )?;
        assert_eq!((code, remark.as_str()), (SUCCESS, ""), "negative level");
        let dlq = format!("%DLQ%{group}");
        assert_eq!(
            wait_max_offset(&mut conn, &dlq, 0, 1)?,
            1,
            "nothing in {dlq}"
        );

        // A required header field missing: Java's header decoding fails with SYSTEM_ERROR.
        let (code, remark) = send_back(&mut conn, &[("offset", &offset), ("group", &group)])?;
        assert_eq!(code, SYSTEM_ERROR, "missing delayLevel: {remark}");
        // (5.3.3 names it in a NullPointerException, Skiff as 4.9 does: "the custom field ...")
        assert!(remark.to_lowercase().contains("delaylevel"), "{remark}");
        Ok(())
    })();
    if let Err(e) = result {
        panic!("{e:#}\n{}", target.logs());
    }
    target.check_alive().expect("the target survived");
}

/// A store written by the Java broker with delayed messages still pending: after Skiff opens it
/// (same ports, data directory and settings) they are all delivered, none early, and what the Java
/// broker had delivered already (its `delayOffset.json`) is not delivered again. Against Apache the
/// Java broker reopens its own store, which validates the expectations.
#[test]
fn java_store_hands_pending_delays_to_skiff() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _ = target();
    let reader = settings::target_kind().expect("settings");
    // Level 2 waits 20 s: long enough to outlast the Java broker's graceful stop.
    let levels = "1s 20s";
    let opts = Options {
        kind: skiff_compat_tests::settings::TargetKind::Apache,
        broker_settings: vec![
            ("messageDelayLevel", levels.into()),
            ("flushDelayOffsetInterval", "1000".into()),
        ],
        ..Options::new(FlushDisk::Async).expect("settings")
    };
    let target = Target::start_with("delay-handover", opts).expect("start the Java broker");
    let result = (|| -> Result<()> {
        let client = Client::get(&settings::store_client())?;
        let id = unique_id(&client.version);
        let (namesrv, broker) = (target.namesrv(), target.broker());
        let base = [
            ("namesrv", namesrv.as_str()),
            ("broker", broker.as_str()),
            ("id", id.as_str()),
            ("levels", "1000,20000"),
        ];
        let runs = target.dir().join("runs");
        let file = |batch: &str| {
            target
                .dir()
                .join(format!("delayed-{id}-{batch}.txt"))
                .to_string_lossy()
                .to_string()
        };
        let (delivered, pending) = (file("b1"), file("b2"));
        let run = |scenario: &str, extra: &[(&str, &str)], dir: &str| -> Result<()> {
            let mut args = base.to_vec();
            args.extend_from_slice(extra);
            client
                .run(scenario, &args, &runs.join(dir), SCENARIO_TIMEOUT)
                .with_context(|| format!("{scenario} ({dir})"))?;
            Ok(())
        };
        // Delivered by Java before the handover...
        let b1 = [("batch", "b1"), ("level", "1"), ("count", "10")];
        run(
            "delay-produce",
            &[&b1[..], &[("out", &delivered)]].concat(),
            "produce-b1",
        )?;
        run(
            "delay-verify",
            &[("batch", "b1"), ("in", &delivered), ("round", "java")],
            "verify-b1-java",
        )?;
        // ...and pending at the handover.
        let b2 = [("batch", "b2"), ("level", "2"), ("count", "10")];
        run(
            "delay-produce",
            &[&b2[..], &[("out", &pending)]].concat(),
            "produce-b2",
        )?;
        let t = Instant::now();
        target.stop_all(Stop::Graceful)?;
        target.restart_as(reader)?;
        println!("handover to {reader:?} took {:.1?}", t.elapsed());
        run(
            "delay-verify",
            &[
                ("batch", "b2"),
                ("in", &pending),
                ("round", "after"),
                ("once", "true"),
            ],
            "verify-b2-after",
        )?;
        run(
            "delay-verify",
            &[
                ("batch", "b1"),
                ("in", &delivered),
                ("round", "after"),
                ("once", "true"),
            ],
            "verify-b1-after",
        )?;
        Ok(())
    })();
    if let Err(e) = result {
        panic!("{e:#}\n{}", target.logs());
    }
}
