//! 5.x timer messages (`TIMER_DELAY_SEC`, `TIMER_DELAY_MS`, `TIMER_DELIVER_MS`) with both client
//! versions: delivered never early and within a bound, Java's refusal of a delay over
//! `timerMaxDelaySec`, and pending timer messages surviving a SIGTERM restart and a `kill -9`, and
//! a store the Java broker wrote with pending timer messages opened by Skiff.
//! See `java/src/skiff/compat/Timers.java`.

use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use skiff_compat_tests::java::Client;
use skiff_compat_tests::settings::{self, TargetKind};
use skiff_compat_tests::suite::{run_for_all_clients, unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{FlushDisk, Options, Stop, Target};

/// Each test runs its own broker; one at a time keeps 2 cores from thrashing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How late a delivery may be. Skiff delivers each message at its own time; Java delivers a
/// whole tick (`timerPrecisionMs`, 1 s) at its end and polls, so it may be up to ~2 s late.
fn max_late_ms(target: &Target) -> &'static str {
    match target.kind() {
        TargetKind::Skiff => "1000",
        TargetKind::Apache => "2500",
    }
}

fn report(result: Result<()>, target: &Target) {
    if let Err(e) = result {
        panic!("{e:#}\n{}", target.logs());
    }
}

#[test]
fn timer_messages_are_delivered_on_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = Target::start("timers", FlushDisk::Async).expect("start the target");
    run_for_all_clients(
        &target,
        "timer-delays",
        &[("max-late-ms", max_late_ms(&target))],
    );
}

/// Sends timer messages due 4-12 s later with every client, stops the broker as `how`, restarts
/// it (as `handover`'s second kind, after the first wrote the store) and checks that each
/// arrives, none stored before its time.
fn pending_timers_survive(
    label: &str,
    flush: FlushDisk,
    how: Stop,
    handover: Option<(TargetKind, TargetKind)>,
) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut opts = Options::new(flush).expect("settings");
    if let Some((writer, _)) = handover {
        opts.kind = writer;
    }
    let target = Target::start_with(label, opts).expect("start the target");
    let result = (|| {
        let namesrv = target.namesrv();
        let broker = target.broker();
        let mut runs = Vec::new();
        for version in settings::client_versions() {
            let client = Client::get(&version)?;
            let id = unique_id(&version);
            let file = target.dir().join(format!("timers-{id}.txt"));
            let file_arg = file.to_string_lossy().to_string();
            let args = [
                ("namesrv", namesrv.as_str()),
                ("broker", broker.as_str()),
                ("id", id.as_str()),
                ("out", file_arg.as_str()),
                ("count", "40"),
            ];
            let dir = target
                .dir()
                .join("runs")
                .join(format!("timer-produce-{id}"));
            client
                .run("timer-produce", &args, &dir, SCENARIO_TIMEOUT)
                .with_context(|| format!("timer-produce with client {version}"))?;
            runs.push((client, id, file_arg));
        }
        let t = Instant::now();
        match handover {
            Some((_, reader)) => {
                target.stop_all(how)?;
                target.restart_as(reader)?;
            }
            None => {
                target.stop(how)?;
                target.restart()?;
            }
        }
        println!("{how:?} and restart took {:.1?}", t.elapsed());
        let no_duplicates = if how == Stop::Graceful {
            "true"
        } else {
            "false"
        };
        for (client, id, file) in &runs {
            let args = [
                ("namesrv", namesrv.as_str()),
                ("broker", broker.as_str()),
                ("id", id.as_str()),
                ("in", file.as_str()),
                ("no-duplicates", no_duplicates),
            ];
            let dir = target.dir().join("runs").join(format!("timer-verify-{id}"));
            let started = Instant::now();
            client
                .run("timer-verify", &args, &dir, SCENARIO_TIMEOUT)
                .with_context(|| format!("timer-verify with client {}", client.version))?;
            println!(
                "timer-verify with client {}: PASS in {:.1?}",
                client.version,
                started.elapsed()
            );
        }
        target.check_alive()
    })();
    report(result, &target);
}

#[test]
fn pending_timers_survive_a_sigterm_restart() {
    pending_timers_survive("timers-sigterm", FlushDisk::Async, Stop::Graceful, None);
}

#[test]
fn pending_timers_survive_kill9() {
    pending_timers_survive("timers-kill9", FlushDisk::Sync, Stop::Kill, None);
}

/// The Java broker (5.3.3) writes pending timer messages into its `timerwheel`, `timerlog/` and
/// `config/timercheck`, stops (SIGTERM, or `kill -9`), and Skiff opens the directory: every one
/// is delivered, none early. Against `SKIFF_COMPAT_TARGET=apache` the Java broker reads too.
fn java_writes_pending_timers(label: &str, how: Stop) {
    let reader = settings::target_kind().expect("settings");
    pending_timers_survive(
        label,
        FlushDisk::Async,
        how,
        Some((TargetKind::Apache, reader)),
    );
}

#[test]
fn pending_timers_of_a_java_store_are_delivered_after_a_clean_stop() {
    java_writes_pending_timers("timers-java-sigterm", Stop::Graceful);
}

#[test]
fn pending_timers_of_a_java_store_are_delivered_after_kill9() {
    java_writes_pending_timers("timers-java-kill9", Stop::Kill);
}
