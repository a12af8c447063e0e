//! Transactional messages (issue 7, item 2) with the official TransactionMQProducer, against a
//! target whose transaction check runs every second (`transactionCheckInterval=1000`) and checks
//! halves older than 4 s (`transactionTimeOut=4000`), so every scenario takes seconds. The Java
//! broker batches op records for `transactionOpBatchInterval` (3 s by default), which would let it
//! check (and commit twice) halves already resolved; 200 ms keeps it exact. Skiff writes each op
//! record at once and only warns that it ignores the key.
//!
//! - `local_commit_rollback_and_check_back`: commit / rollback in the local transaction, UNKNOW
//!   answered commit / rollback by the check-back: exactly the committed ones are delivered, once.
//! - `undecided_halves_are_checked_then_discarded`: a producer that always answers UNKNOW is asked
//!   `transactionCheckMax` (3) times, then the half is in `TRANS_CHECK_MAX_TIME_TOPIC`.
//! - `bad_end_transactions_get_javas_answers`: raw END_TRANSACTION frames with unknown offsets,
//!   non-half messages, wrong groups and garbage values.
//! - `restart_and_kill9_keep_transactions`: committed, rolled back and pending halves across a
//!   SIGTERM restart and a `kill -9`: nothing committed lost, nothing rolled back delivered, the
//!   pending ones resolved by the check-back of a new producer of the group. Its broker (checks
//!   every 3 s, up to 15) also runs `tx-immunity`: an UNKNOW message with
//!   `CHECK_IMMUNITY_TIME_IN_SECONDS=8` is first checked no sooner than 8 s after its send, then
//!   committed by the check-back and delivered once. (Java counts every renewal of an immune half
//!   towards `transactionCheckMax`, so on the shared broker, 3 checks a second apart, it would be
//!   discarded unasked; Skiff does the same.)

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use skiff_compat_tests::java::Client;
use skiff_compat_tests::remoting::{self, code, Conn, Response};
use skiff_compat_tests::settings;
use skiff_compat_tests::suite::{run_for_all_clients, unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{FlushDisk, Options, Stop, Target};

const END_TRANSACTION: i32 = 37;
const SUCCESS: i64 = 0;
const SYSTEM_ERROR: i64 = 1;
const WAIT: Duration = Duration::from_secs(10);
/// `transactionCheckMax` of the shared target.
const CHECK_MAX: &str = "3";

fn options(check_interval_ms: u64, check_max: &str) -> Options {
    Options {
        broker_settings: vec![
            ("transactionCheckInterval", check_interval_ms.to_string()),
            ("transactionTimeOut", "4000".into()),
            ("transactionCheckMax", check_max.into()),
            ("transactionOpBatchInterval", "200".into()),
        ],
        ..Options::new(FlushDisk::Async).expect("settings")
    }
}

fn shared() -> &'static Target {
    static SHARED: OnceLock<Result<Target, String>> = OnceLock::new();
    match SHARED.get_or_init(|| {
        Target::start_with("tx", options(1000, CHECK_MAX)).map_err(|e| format!("{e:#}"))
    }) {
        Ok(t) => t,
        Err(e) => panic!("could not start the target: {e}"),
    }
}

#[test]
fn local_commit_rollback_and_check_back() {
    run_for_all_clients(shared(), "tx-local", &[]);
}

#[test]
fn undecided_halves_are_checked_then_discarded() {
    run_for_all_clients(shared(), "tx-never", &[("check-max", CHECK_MAX)]);
}

fn now_ms() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string()
}

/// Sends one message over raw SEND_MESSAGE_V2; returns its (queue offset, CommitLog offset).
fn raw_send(conn: &mut Conn, opaque: i32, topic: &str, properties: &str) -> (String, String) {
    let born = now_ms();
    let mut fields = remoting::send_v2_fields(topic, &born, properties);
    fields.retain(|(k, _)| *k != "f");
    // The Java producer marks a prepared message in the sys flag too.
    let sys_flag = if properties.contains("TRAN_MSG") {
        "4"
    } else {
        "0"
    };
    fields.push(("f", sys_flag));
    let r = conn
        .call(code::SEND_MESSAGE_V2, opaque, &fields, b"raw body", WAIT)
        .expect("send");
    assert_eq!(r.code(), SUCCESS, "send: {}", r.remark());
    let ext = &r.header["extFields"];
    let msg_id = ext["msgId"].as_str().expect("msgId").to_string();
    let offset = i64::from_str_radix(&msg_id[msg_id.len() - 16..], 16).expect("offset id");
    let queue_offset = ext["queueOffset"]
        .as_str()
        .expect("queueOffset")
        .to_string();
    (queue_offset, offset.to_string())
}

/// A raw END_TRANSACTION case: name, header fields, expected code and (Java's own) remark.
type Case<'a> = (&'a str, Vec<(&'a str, String)>, i64, Option<&'a str>);

fn end_transaction(conn: &mut Conn, opaque: i32, fields: &[(&str, &str)]) -> Response {
    conn.call(END_TRANSACTION, opaque, fields, &[], WAIT)
        .expect("END_TRANSACTION answered")
}

#[test]
fn bad_end_transactions_get_javas_answers() {
    let t = shared();
    let id = unique_id("raw");
    let topic = format!("compat_txraw_{id}");
    let group = format!("compat_txrawp_{id}");
    let mut conn = Conn::connect(&t.broker(), WAIT).expect("connect");
    let half_props =
        format!("TRAN_MSG\u{1}true\u{2}PGROUP\u{1}{group}\u{2}UNIQ_KEY\u{1}U{id}\u{2}");
    let (half_queue_offset, half_offset) = raw_send(&mut conn, 1, &topic, &half_props);
    let (plain_queue_offset, plain_offset) = raw_send(&mut conn, 2, &topic, "");
    let fields = |group: &str, queue_offset: &str, offset: &str, commit: &str| {
        vec![
            ("producerGroup", group.to_string()),
            ("tranStateTableOffset", queue_offset.to_string()),
            ("commitLogOffset", offset.to_string()),
            ("commitOrRollback", commit.to_string()),
            ("fromTransactionCheck", "false".to_string()),
            ("msgId", "U".to_string()),
        ]
    };
    let (g, hq, ho, pq, po) = (
        group.as_str(),
        half_queue_offset.as_str(),
        half_offset.as_str(),
        plain_queue_offset.as_str(),
        plain_offset.as_str(),
    );
    let inside = (ho.parse::<i64>().unwrap() + 5).to_string();
    let not_found = "Find prepared transaction message failed";
    let cases: Vec<Case> = vec![
        (
            "unknown CommitLog offset",
            fields(g, hq, "999999999", "8"),
            SYSTEM_ERROR,
            Some(not_found),
        ),
        (
            "negative CommitLog offset",
            fields(g, hq, "-1", "12"),
            SYSTEM_ERROR,
            Some(not_found),
        ),
        (
            "offset inside the half's record",
            fields(g, hq, &inside, "8"),
            SYSTEM_ERROR,
            None,
        ),
        (
            "a plain message, not a half",
            fields(g, pq, po, "8"),
            SYSTEM_ERROR,
            None,
        ),
        (
            "wrong producer group",
            fields("someone_else", hq, ho, "8"),
            SYSTEM_ERROR,
            Some("The producer group wrong"),
        ),
        (
            "wrong transaction state table offset",
            fields(g, "12345", ho, "8"),
            SYSTEM_ERROR,
            Some("The transaction state table offset wrong"),
        ),
        (
            "garbage offset",
            fields(g, hq, "not-a-number", "8"),
            SYSTEM_ERROR,
            None,
        ),
        (
            "commitOrRollback out of range",
            fields(g, hq, ho, "5"),
            SYSTEM_ERROR,
            None,
        ),
        (
            "missing producerGroup",
            fields(g, hq, ho, "8")
                .into_iter()
                .filter(|(k, _)| *k != "producerGroup")
                .collect(),
            SYSTEM_ERROR,
            // Java 5.3.3 does not enforce the field here; the group check fails instead.
            Some("The producer group wrong"),
        ),
        (
            "rollback of the half",
            fields(g, hq, ho, "12"),
            SUCCESS,
            None,
        ),
    ];
    let mut failures = Vec::new();
    for (i, (name, fields, expected, remark)) in cases.iter().enumerate() {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = end_transaction(&mut conn, 10 + i as i32, &fields);
        println!("{name}: code {} remark {:?}", r.code(), r.remark());
        if r.code() != *expected || remark.is_some_and(|m| r.remark() != m) {
            failures.push(format!(
                "{name}: expected {expected} {remark:?}, got {} {:?}",
                r.code(),
                r.remark()
            ));
        }
        let hb = conn.call(
            code::HEART_BEAT,
            100 + i as i32,
            &[],
            &remoting::empty_heartbeat(),
            WAIT,
        );
        if !hb.as_ref().is_ok_and(|hb| hb.code() == SUCCESS) {
            failures.push(format!("{name}: the broker stopped serving"));
        }
    }
    if let Err(e) = t.check_alive() {
        failures.push(format!("{e:#}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The restart test has its own broker; the mutex keeps it from running beside another restart.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn restart_and_kill9_keep_transactions() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Checks every 3 s, up to 15 times: pending halves outlive the restart and the time until
    // the verifying producer connects.
    let target = Target::start_with("txrestart", options(3000, "15")).expect("start");
    let mut failures = Vec::new();
    for version in settings::client_versions() {
        let client = Client::get(&version).expect("client");
        if let Err(e) = run(&target, &client, "tx-immunity", &unique_id(&version)) {
            failures.push(format!("immunity, {version}: {e:#}"));
        }
    }
    for stop in [Stop::Kill, Stop::Graceful] {
        let mut runs = Vec::new();
        for version in settings::client_versions() {
            let client = Client::get(&version).expect("client");
            let id = unique_id(&version);
            match run(&target, &client, "tx-restart-produce", &id) {
                Ok(()) => runs.push((client, id)),
                // Its verify would only wait out its timeout while the other clients' pending
                // halves use up their checks.
                Err(e) => failures.push(format!("{stop:?}, {version}: {e:#}")),
            }
        }
        target.stop(stop).expect("stop");
        let took = target.restart().expect("restart");
        println!("{stop:?}: restarted in {took:.1?}");
        for (client, id) in &runs {
            if let Err(e) = run(&target, client, "tx-restart-verify", id) {
                failures.push(format!("{stop:?}, {}: {e:#}", client.version));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n{}\n(the data directory is kept: {})",
        failures.join("\n\n"),
        target.logs(),
        target.dir().display()
    );
}

fn run(target: &Target, client: &Client, scenario: &str, id: &str) -> anyhow::Result<()> {
    let namesrv = target.namesrv();
    let broker = target.broker();
    let args = [
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id),
    ];
    let dir = target.dir().join("runs").join(format!("{scenario}-{id}"));
    let started = std::time::Instant::now();
    client.run(scenario, &args, &dir, SCENARIO_TIMEOUT)?;
    println!(
        "{scenario} with client {}: PASS in {:.1?}",
        client.version,
        started.elapsed()
    );
    target.check_alive()
}
