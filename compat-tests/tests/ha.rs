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
