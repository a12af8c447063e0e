//! Master/slave replication on RocketMQ's classic HA protocol (issue 11), with the official Java
//! client, for each pairing of broker kinds: against the Apache target an Apache master with an
//! Apache slave (the reference); against the Skiff target a Skiff pair, an Apache master with a
//! Skiff slave and a Skiff master with an Apache slave.
//!
//! Each pair runs one story, SYNC_MASTER with `inSyncReplicas=2` and the slave's
//! `slaveReadEnable=true`:
//!
//! 1. With only the master up, messages sent without WAIT (so the master does not wait for a slave)
//!    are consumed by a push consumer group, which commits its offsets.
//! 2. The slave starts, finds its master through the name server, catches up on the CommitLog and
//!    syncs the topic and the group's committed offsets.
//! 3. Messages sent with WAIT are acknowledged SEND_OK: each is on the slave by then.
//! 4. The master is killed (`kill -9`). On the slave, every acknowledged message is found at the
//!    queue offset and under the msgId it was acknowledged with, and the consumer group, started
//!    again, consumes the rest from the slave, from the offsets it committed on the master, with
//!    nothing consumed twice.

use std::fs;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use skiff_compat_tests::ha::{HaPair, PairOptions};
use skiff_compat_tests::java::Client;
use skiff_compat_tests::settings::{self, TargetKind};
use skiff_compat_tests::suite::{unique_id, SCENARIO_TIMEOUT};

/// Each test runs three broker processes and several client JVMs: one at a time on 2 cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The queues of a topic the Java producer creates (its `defaultTopicQueueNums`).
const QUEUES: i32 = 4;
/// Covers an Apache slave's first metadata sync, 10 s after it starts.
const SYNC_TIMEOUT: Duration = Duration::from_secs(90);

fn run_pair(master: TargetKind, slave: TargetKind, version: &str) -> Result<()> {
    let pair = HaPair::start(
        &format!("ha-{master:?}-{slave:?}").to_lowercase(),
        PairOptions {
            master,
            slave,
            master_role: "SYNC_MASTER",
            settings: vec![
                ("inSyncReplicas", "2".into()),
                ("slaveReadEnable", "true".into()),
            ],
        },
    )?;
    let what = pair.describe();
    let result = story(&pair, version);
    if result.is_err() {
        pair.keep_as_failed();
    }
    result.with_context(|| format!("{what}, client {version}\n{}", pair.logs()))
}

fn story(pair: &HaPair, version: &str) -> Result<()> {
    let client = Client::get(version)?;
    let id = unique_id(version);
    let topic = format!("compat_restart_{id}");
    let group = format!("compat_ha_{id}");
    let namesrv = pair.namesrv();
    let file = |name: &str| pair.dir().join(format!("{name}.txt"));
    let (before, during, all) = (file("before"), file("during"), file("all"));
    let step = std::cell::Cell::new(0);
    let run = |scenario: &str, extra: &[(&str, &str)]| -> Result<()> {
        let mut args = vec![("namesrv", namesrv.as_str()), ("id", id.as_str())];
        args.extend_from_slice(extra);
        step.set(step.get() + 1);
        let dir = pair
            .dir()
            .join("runs")
            .join(format!("{}-{scenario}", step.get()));
        let started = Instant::now();
        client
            .run(scenario, &args, &dir, SCENARIO_TIMEOUT)
            .with_context(|| format!("{scenario} {extra:?}"))?;
        println!("  {scenario}: PASS in {:.1?}", started.elapsed());
        Ok(())
    };
    let path = |p: &std::path::Path| p.to_string_lossy().to_string();

    run(
        "restart-produce",
        &[
            ("count", "60"),
            ("prefix", "before"),
            ("wait-store-ok", "false"),
            ("out", &path(&before)),
        ],
    )?;
    run(
        "ha-consume",
        &[("in", &path(&before)), ("instance", "ha-first")],
    )?;

    let started = Instant::now();
    pair.start_slave()?;
    pair.wait_slave_synced(&topic, QUEUES, Some(&group), SYNC_TIMEOUT)?;
    println!("  slave registered and synced in {:.1?}", started.elapsed());

    // Every send must be SEND_OK: the master waits for the slave.
    run(
        "restart-produce",
        &[
            ("count", "200"),
            ("prefix", "during"),
            ("out", &path(&during)),
        ],
    )?;
    pair.kill_master()?;
    println!("  master killed");

    fs::write(
        &all,
        fs::read_to_string(&before)? + &fs::read_to_string(&during)?,
    )?;
    run(
        "restart-verify",
        &[("send-after", "false"), ("in", &path(&all))],
    )?;
    run(
        "ha-consume",
        &[
            ("consumed", &path(&before)),
            ("instance", "ha-second"),
            ("in", &path(&during)),
        ],
    )?;
    pair.check_alive()
}

fn versions() -> (String, String) {
    let v = settings::client_versions();
    let first = v.first().cloned().unwrap_or_else(|| "5.3.3".into());
    let last = v.last().cloned().unwrap_or_else(|| first.clone());
    (first, last)
}

fn check(master: TargetKind, slave: TargetKind, version: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    println!("{master:?} master + {slave:?} slave, client {version}:");
    if let Err(e) = run_pair(master, slave, version) {
        panic!("{e:#}");
    }
    println!("PASS in {:.1?}", started.elapsed());
}

/// A pair of the target's own kind: Apache + Apache is the reference the other pairings follow.
#[test]
fn sync_master_pair_of_the_target_kind() {
    let kind = settings::target_kind().expect("SKIFF_COMPAT_TARGET");
    check(kind, kind, &versions().1);
}

/// A Skiff slave of a running Apache master: the first step of a migration.
#[test]
fn apache_master_with_skiff_slave() {
    if settings::target_kind().expect("SKIFF_COMPAT_TARGET") != TargetKind::Skiff {
        println!("skipped: a mixed pair is a Skiff target's test");
        return;
    }
    check(TargetKind::Apache, TargetKind::Skiff, &versions().0);
}

/// An Apache slave of a Skiff master: the way back.
#[test]
fn skiff_master_with_apache_slave() {
    if settings::target_kind().expect("SKIFF_COMPAT_TARGET") != TargetKind::Skiff {
        println!("skipped: a mixed pair is a Skiff target's test");
        return;
    }
    check(TargetKind::Skiff, TargetKind::Apache, &versions().1);
}

/// `skiff migrate` on a running Apache master, there and back: `plan` writes the Skiff slave's
/// config, the slave started from it catches up while a producer keeps sending (`replicate`), and
/// `verify` finds the CommitLog, every queue's max offset, the last records and the committed
/// offsets equal. `cutover` runs while a producer keeps sending: writes stop on the Java master,
/// the Java master is stopped when the command asks, and the Skiff broker becomes the master in
/// place; the producer's sends go to it without a restart. Every acknowledged message is at its
/// queue offset, and the consumer group resumes where it committed on the Java master, with
/// nothing consumed twice. Then `rollback`: the old Java master, started again as a slave of the
/// Skiff master, copies what it missed; the Skiff master turns into a slave, the Java broker is
/// restarted as master when the command asks, and every acknowledged message is there.
#[test]
fn migrate_plan_replicate_verify_from_a_running_apache_master() {
    if settings::target_kind().expect("SKIFF_COMPAT_TARGET") != TargetKind::Skiff {
        println!("skipped: skiff migrate is a Skiff target's test");
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = migrate_story() {
        panic!("{e:#}");
    }
}

/// Runs `skiff migrate <args>` and, when a line of its output contains `asks`, does `answer`
/// (what an operator does when told); returns its exit status and output.
fn skiff_migrate_asking(
    pair: &HaPair,
    args: &[&str],
    asks: &str,
    answer: impl FnOnce() -> Result<()>,
) -> Result<(bool, String)> {
    use std::io::BufRead;
    use std::process::Stdio;
    use std::sync::mpsc;

    let mut child = std::process::Command::new(skiff_compat_tests::target::skiff_bin()?)
        .arg("migrate")
        .arg("-n")
        .arg(pair.namesrv())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().context("no stdout")?;
    let stderr = child.stderr.take().context("no stderr")?;
    let readers = [
        Box::new(stdout) as Box<dyn std::io::Read + Send>,
        Box::new(stderr),
    ]
    .map(|out| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        })
    });
    drop(tx);
    let deadline = Instant::now() + Duration::from_secs(900);
    let mut answer = Some(answer);
    let mut text = String::new();
    let outcome = loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(line) => {
                println!("    | {line}");
                let asked = line.contains(asks);
                text.push_str(&line);
                text.push('\n');
                if asked {
                    if let Some(answer) = answer.take() {
                        if let Err(e) = answer() {
                            break Err(e.context(format!("answering skiff migrate: {text}")));
                        }
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break Ok(()),
            Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() > deadline => {
                break Err(anyhow::anyhow!("skiff migrate did not finish: {text}"))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    };
    if outcome.is_err() {
        let _ = child.kill();
    }
    let status = child.wait()?;
    for reader in readers {
        let _ = reader.join();
    }
    outcome?;
    println!("  skiff migrate {}: {status}", args.join(" "));
    anyhow::ensure!(
        answer.is_none() || !status.success(),
        "skiff migrate never asked \"{asks}\": {text}"
    );
    Ok((status.success(), text))
}

/// `conf` (Java properties) with each of `keys` set: its line replaced, or added.
fn set_keys(conf: &str, keys: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for line in conf.lines() {
        let key = line.split(['=', ':']).next().unwrap_or("").trim();
        if !keys.iter().any(|(k, _)| *k == key) {
            out.push_str(line);
            out.push('\n');
        }
    }
    for (k, v) in keys {
        out.push_str(&format!("{k}={v}\n"));
    }
    out
}

/// Runs `skiff migrate <args>`; returns its exit status and output.
fn skiff_migrate(pair: &HaPair, args: &[&str]) -> Result<(bool, String)> {
    let out = std::process::Command::new(skiff_compat_tests::target::skiff_bin()?)
        .arg("migrate")
        .arg("-n")
        .arg(pair.namesrv())
        .args(args)
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("  skiff migrate {}: {}", args.join(" "), out.status);
    Ok((out.status.success(), text))
}

fn migrate_story() -> Result<()> {
    let version = versions().1;
    let pair = HaPair::start(
        "ha-migrate",
        PairOptions {
            master: TargetKind::Apache,
            slave: TargetKind::Skiff,
            master_role: "ASYNC_MASTER",
            settings: Vec::new(),
        },
    )?;
    let result = (|| -> Result<()> {
        let client = Client::get(&version)?;
        let id = unique_id(&version);
        let namesrv = pair.namesrv();
        let path = |name: &str| pair.dir().join(name).to_string_lossy().to_string();
        let args = |extra: &[(&'static str, String)]| {
            let mut a = vec![("namesrv", namesrv.clone()), ("id", id.clone())];
            a.extend(extra.iter().cloned());
            a
        };
        let run = |scenario: &str, extra: &[(&'static str, String)], dir: &str| -> Result<()> {
            let a = args(extra);
            let a: Vec<(&str, &str)> = a.iter().map(|(k, v)| (*k, v.as_str())).collect();
            client.run(
                scenario,
                &a,
                &pair.dir().join("runs").join(dir),
                SCENARIO_TIMEOUT,
            )?;
            Ok(())
        };
        run(
            "restart-produce",
            &[
                ("count", "300".into()),
                ("prefix", "before".into()),
                ("out", path("before.txt")),
            ],
            "produce-before",
        )?;
        run("ha-consume", &[("in", path("before.txt"))], "consume")?;

        let (ok, text) = skiff_migrate(&pair, &["verify"])?;
        anyhow::ensure!(
            !ok && text.contains("no broker group has a slave"),
            "verify without a slave: {text}"
        );
        let port = pair.slave_port().to_string();
        let (out, data) = (path("plan"), path("plan-data"));
        let plan = [
            "plan",
            "--out",
            &out,
            "--data-root",
            &data,
            "--listen-port",
            &port,
            "--broker-ip",
            "127.0.0.1",
        ];
        let (ok, text) = skiff_migrate(&pair, &plan)?;
        anyhow::ensure!(ok, "plan failed: {text}");
        anyhow::ensure!(
            text.contains(&pair.master()) && text.contains("Apache RocketMQ"),
            "plan does not describe the master: {text}"
        );
        let conf = fs::read_to_string(pair.dir().join("plan/broker-a-skiff-slave.conf"))?;
        anyhow::ensure!(
            conf.contains("brokerRole=SLAVE") && conf.contains("brokerId=1"),
            "{conf}"
        );
        let (ok, again) = skiff_migrate(&pair, &plan)?;
        anyhow::ensure!(
            ok && again.contains("config unchanged"),
            "plan again: {again}"
        );

        // The slave starts from the plan's config while a producer keeps sending.
        let a = args(&[
            ("count", "2000".into()),
            ("prefix", "during".into()),
            ("out", path("during.txt")),
        ]);
        let a: Vec<(&str, &str)> = a.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut producer = client.spawn(
            "restart-produce",
            &a,
            &pair.dir().join("runs").join("produce-during"),
        )?;
        pair.start_slave_with(&conf, 1, &pair.slave())?;
        // Larger frames from the Java master while the slave catches up, its own setting put
        // back after.
        let (ok, text) = skiff_migrate(
            &pair,
            &[
                "replicate",
                "--wait-slave",
                "60s",
                "--master-batch-size",
                "262144",
            ],
        )?;
        anyhow::ensure!(
            ok && text.contains("holds the master's CommitLog")
                && text.contains("sends up to 262144 bytes per frame")
                && text.contains("haTransferBatchSize is 32768 again"),
            "{text}"
        );
        let out = std::process::Command::new(skiff_compat_tests::target::skiff_bin()?)
            .args(["admin", "broker", "config", "get", "--json", "-n"])
            .arg(pair.namesrv())
            .arg("-b")
            .arg(pair.master())
            .args(["--key", "haTransferBatchSize"])
            .output()?;
        let config = String::from_utf8_lossy(&out.stdout);
        anyhow::ensure!(
            out.status.success() && config.contains("\"32768\""),
            "the master's haTransferBatchSize after replicate: {config}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let status = producer
            .wait_for(SCENARIO_TIMEOUT)?
            .context("the producer did not finish")?;
        anyhow::ensure!(status.success(), "producer: {}", producer.output_tail(30));

        let (ok, text) = skiff_migrate(&pair, &["replicate", "--interval", "200ms"])?;
        anyhow::ensure!(ok, "{text}");
        let (ok, text) = skiff_migrate(&pair, &["verify"])?;
        println!("{text}");
        anyhow::ensure!(ok, "verify after the producer stopped: {text}");
        for check in [
            "CommitLog end",
            "queue max offsets",
            "last records",
            "consumer offsets",
        ] {
            anyhow::ensure!(
                text.lines()
                    .any(|l| l.contains(check) && l.contains("equal")),
                "{check} not equal: {text}"
            );
        }

        // The cutover, with a producer sending every 100 ms throughout: its sends fail while
        // the group has no writable master, and go to the Skiff broker once it is the master.
        let a = args(&[
            ("count", "600".into()),
            ("prefix", "across".into()),
            ("out", path("across.txt")),
            ("pause-ms", "100".into()),
            ("stop-after-failures", "1000000".into()),
        ]);
        let a: Vec<(&str, &str)> = a.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut producer = client.spawn(
            "restart-produce",
            &a,
            &pair.dir().join("runs").join("produce-across"),
        )?;
        std::thread::sleep(Duration::from_secs(3));
        let cutover = ["cutover", "-b", "broker-a", "--interval", "200ms"];
        let (ok, text) = skiff_migrate_asking(&pair, &cutover, "Stop the Java master", || {
            pair.stop_master()
        })?;
        anyhow::ensure!(ok && text.contains("is now the master"), "cutover: {text}");
        let (ok, again) = skiff_migrate(&pair, &cutover)?;
        anyhow::ensure!(ok && again.contains("already the master"), "{again}");
        println!("  cut over: the Skiff broker is broker-a's master");
        let status = producer
            .wait_for(SCENARIO_TIMEOUT)?
            .context("the producer did not finish")?;
        anyhow::ensure!(status.success(), "producer: {}", producer.output_tail(30));
        // Acknowledged by both: an offset msgId names the broker that stored it (IP, then port).
        let across = fs::read_to_string(path("across.txt"))?;
        for (broker, port) in [("Java", pair.master()), ("Skiff", pair.slave())] {
            let port: u16 = port.rsplit(':').next().unwrap_or_default().parse()?;
            let hex = format!("{port:08X}");
            anyhow::ensure!(
                across.lines().any(|l| l
                    .split(' ')
                    .nth(4)
                    .is_some_and(|id| id.get(8..16) == Some(&hex))),
                "no send across the cutover was acknowledged by the {broker} broker: {across}"
            );
        }
        fs::write(
            path("all.txt"),
            fs::read_to_string(path("before.txt"))?
                + &fs::read_to_string(path("during.txt"))?
                + &across,
        )?;
        // Every acknowledged message is at its queue offset, and new sends follow them.
        run("restart-verify", &[("in", path("all.txt"))], "verify")?;
        // The group resumes from the offsets it committed on the Java master.
        run(
            "ha-consume",
            &[
                ("consumed", path("before.txt")),
                ("instance", "after-cutover".into()),
                ("in", path("during.txt")),
            ],
            "consume-after",
        )?;

        // The rollback: the old Java master comes back as a slave of the Skiff master (Java
        // rewrote its broker.conf, with brokerPermission=4, at the cutover).
        let java = pair.master_conf()?;
        pair.start_master_with(
            &set_keys(
                &java,
                &[
                    ("brokerId", "1"),
                    ("brokerRole", "SLAVE"),
                    ("brokerPermission", "6"),
                ],
            ),
            1,
        )?;
        let rollback = ["rollback", "-b", "broker-a", "--interval", "200ms"];
        let (ok, text) = skiff_migrate_asking(&pair, &rollback, "restart the Java slave", || {
            pair.stop_master()?;
            pair.start_master_with(
                &set_keys(
                    &java,
                    &[
                        ("brokerId", "0"),
                        ("brokerRole", "ASYNC_MASTER"),
                        ("brokerPermission", "6"),
                    ],
                ),
                0,
            )
        })?;
        anyhow::ensure!(ok && text.contains("the master again"), "rollback: {text}");
        let (ok, again) = skiff_migrate(&pair, &rollback)?;
        anyhow::ensure!(ok && again.contains("already the master"), "{again}");
        pair.wait_listed(2, &pair.slave())?;
        println!("  rolled back: the Java broker is broker-a's master, the Skiff broker its slave");
        run(
            "restart-verify",
            &[("in", path("all.txt")), ("prefix", "after-rollback".into())],
            "verify-rolled-back",
        )?;
        // The Skiff broker, now a slave of the Java master, copies what it wrote since.
        pair.wait_slave_synced(&format!("compat_restart_{id}"), QUEUES, None, SYNC_TIMEOUT)?;
        pair.check_alive()
    })();
    if result.is_err() {
        pair.keep_as_failed();
    }
    result.with_context(|| pair.logs())
}

/// A Skiff slave whose CommitLog a Java master does not continue is refused, and its files stay
/// as they were: first the master lost its store (started again empty, it holds less than the
/// slave: refused as ahead), then that master writes past the slave's end with other records at
/// the same offsets (refused as diverged).
#[test]
fn a_skiff_slave_refuses_a_java_master_that_does_not_continue_it() {
    if settings::target_kind().expect("SKIFF_COMPAT_TARGET") != TargetKind::Skiff {
        println!("skipped: a Skiff slave is a Skiff target's test");
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pair = HaPair::start(
        "ha-diverged",
        PairOptions {
            master: TargetKind::Apache,
            slave: TargetKind::Skiff,
            master_role: "ASYNC_MASTER",
            settings: Vec::new(),
        },
    )
    .unwrap();
    let result = diverged_story(&pair);
    if result.is_err() {
        pair.keep_as_failed();
    }
    if let Err(e) = result.with_context(|| pair.logs()) {
        panic!("{e:#}");
    }
}

fn diverged_story(pair: &HaPair) -> Result<()> {
    let version = versions().1;
    let client = Client::get(&version)?;
    let id = unique_id(&version);
    let namesrv = pair.namesrv();
    let produce = |prefix: &str, first: u32, count: u32| -> Result<()> {
        let (first, count) = (first.to_string(), count.to_string());
        let out = pair.dir().join(format!("{prefix}.txt"));
        let out = out.to_string_lossy();
        let args = [
            ("namesrv", namesrv.as_str()),
            ("id", id.as_str()),
            ("prefix", prefix),
            ("first", first.as_str()),
            ("count", count.as_str()),
            ("out", &*out),
        ];
        let dir = pair.dir().join("runs").join(format!("{prefix}-{first}"));
        client.run("restart-produce", &args, &dir, SCENARIO_TIMEOUT)?;
        Ok(())
    };
    let topic = format!("compat_restart_{id}");
    // The slave copies 200 records of the first master.
    produce("first", 0, 200)?;
    pair.start_slave()?;
    pair.wait_slave_synced(&topic, QUEUES, None, SYNC_TIMEOUT)?;
    pair.stop_slave()?;
    let commit_log = pair.dir().join("store-slave").join("commitlog");
    let held = segments(&commit_log)?;

    // The master loses its store and starts again: 20 records, fewer than the slave holds.
    pair.stop_master()?;
    fs::remove_dir_all(pair.dir().join("store-master"))?;
    pair.start_master_with(&pair.master_conf()?, 0)?;
    produce("again", 0, 20)?;
    pair.start_slave()?;
    let line = wait_logged(
        pair,
        &["replication refused", "the master holds no record at"],
    )?;
    println!("  refused as ahead: {line}");
    // Records of the same sizes (same sequence numbers, same-length prefixes) reach past the
    // slave's last one: at its offset the master now holds another record.
    produce("again", 20, 380)?;
    let line = wait_logged(pair, &["replication refused", "the CommitLogs diverged"])?;
    println!("  refused as diverged: {line}");
    pair.stop_slave()?;
    for (name, bytes) in segments(&commit_log)? {
        match held.get(&name) {
            Some(was) => anyhow::ensure!(bytes == *was, "{name} was changed"),
            None => anyhow::ensure!(bytes.iter().all(|b| *b == 0), "{name} was written"),
        }
    }
    Ok(())
}

/// Every CommitLog segment in `dir`, by name.
fn segments(dir: &std::path::Path) -> Result<std::collections::BTreeMap<String, Vec<u8>>> {
    let mut files = std::collections::BTreeMap::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        files.insert(name, fs::read(&path)?);
    }
    Ok(files)
}

/// Waits (60 s at most) until a line of the slave's log has every one of `parts`.
fn wait_logged(pair: &HaPair, parts: &[&str]) -> Result<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for file in ["slave.out", "slave.err"] {
            let log = fs::read_to_string(pair.dir().join(file)).unwrap_or_default();
            if let Some(line) = log.lines().find(|l| parts.iter().all(|p| l.contains(p))) {
                return Ok(line.to_string());
            }
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the slave never logged {parts:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
