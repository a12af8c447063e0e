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

/// `skiff migrate` on a running Apache master: `plan` writes the Skiff slave's config, the slave
/// started from it catches up while a producer keeps sending (`replicate`), and `verify` finds
/// the CommitLog, every queue's max offset, the last records and the committed offsets equal.
/// Then the cutover by hand: the Java master stops, the Skiff broker restarts as the master on
/// the copied data, every acknowledged message is at its queue offset, and the consumer group
/// resumes where it committed on the Java master, with nothing consumed twice.
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
        let (ok, text) = skiff_migrate(&pair, &["replicate", "--wait-slave", "60s"])?;
        anyhow::ensure!(
            ok && text.contains("holds the master's CommitLog"),
            "{text}"
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

        // The cutover, by hand until `skiff migrate cutover` exists: the Java master stops, the
        // Skiff slave restarts on its data as the group's master.
        pair.stop_master()?;
        pair.stop_slave()?;
        let promoted = conf.replace(
            "brokerId=1\nbrokerRole=SLAVE\n",
            "brokerId=0\nbrokerRole=ASYNC_MASTER\n",
        );
        anyhow::ensure!(promoted != conf, "the slave config changed shape: {conf}");
        pair.start_slave_with(&promoted, 0, &pair.slave())?;
        println!("  cut over: the Skiff broker is broker-a's master");
        fs::write(
            path("all.txt"),
            fs::read_to_string(path("before.txt"))? + &fs::read_to_string(path("during.txt"))?,
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
        pair.check_alive()
    })();
    if result.is_err() {
        pair.keep_as_failed();
    }
    result.with_context(|| pair.logs())
}
