//! Scenario 7: acknowledged messages survive a broker restart, after SIGTERM (graceful, with
//! ASYNC_FLUSH, so the shutdown must flush) and after `kill -9` with SYNC_FLUSH (a SEND_OK means
//! the message was on disk), including messages acknowledged while the broker was being killed.
//!
//! The Java side runs in phases around the stop: `restart-produce` records every SEND_OK in a
//! file, the harness stops and restarts the broker, `restart-verify` checks that every recorded
//! message is stored at the queue offset it was acknowledged with and that new sends follow.

use std::fs;
use std::path::Path;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use skiff_compat_tests::java::Client;
use skiff_compat_tests::settings;
use skiff_compat_tests::suite::{unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{FlushDisk, Stop, Target};

/// Each test restarts its own broker; running them one at a time keeps 2 cores from thrashing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// One client version's topic and record file.
struct Run {
    client: std::sync::Arc<Client>,
    id: String,
    acked: std::path::PathBuf,
}

impl Run {
    fn new(target: &Target, version: &str) -> Result<Run> {
        let id = unique_id(version);
        Ok(Run {
            client: Client::get(version)?,
            acked: target.dir().join(format!("acked-{id}.txt")),
            id,
        })
    }

    fn args<'a>(
        &'a self,
        target_addrs: &'a [String; 2],
        extra: &[(&'a str, &'a str)],
    ) -> Vec<(&'a str, &'a str)> {
        let mut a = vec![
            ("namesrv", target_addrs[0].as_str()),
            ("broker", target_addrs[1].as_str()),
            ("id", self.id.as_str()),
        ];
        a.extend_from_slice(extra);
        a
    }

    fn run(&self, target: &Target, scenario: &str, extra: &[(&str, &str)]) -> Result<()> {
        let addrs = [target.namesrv(), target.broker()];
        let file = self.acked.to_string_lossy().to_string();
        let mut extra = extra.to_vec();
        extra.push((
            if scenario == "restart-produce" {
                "out"
            } else {
                "in"
            },
            &file,
        ));
        let dir = target.dir().join("runs").join(format!(
            "{scenario}-{}-{}",
            self.id,
            lines(&self.acked)
        ));
        let started = Instant::now();
        self.client
            .run(scenario, &self.args(&addrs, &extra), &dir, SCENARIO_TIMEOUT)
            .with_context(|| format!("{scenario} with client {}", self.client.version))?;
        println!(
            "{scenario} with client {}: PASS in {:.1?} ({} acknowledged so far)",
            self.client.version,
            started.elapsed(),
            lines(&self.acked)
        );
        Ok(())
    }
}

fn lines(path: &Path) -> usize {
    fs::read_to_string(path)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn report(result: Result<()>, target: &Target) {
    if let Err(e) = result {
        panic!("{e:#}\n{}", target.logs());
    }
}

#[test]
fn sigterm_restart_keeps_acknowledged_messages() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = Target::start("sigterm", FlushDisk::Async).expect("start the target");
    let result = (|| {
        let runs: Vec<Run> = settings::client_versions()
            .iter()
            .map(|v| Run::new(&target, v))
            .collect::<Result<_>>()?;
        for r in &runs {
            r.run(
                &target,
                "restart-produce",
                &[("count", "200"), ("prefix", "before")],
            )?;
        }
        let t = Instant::now();
        target.stop(Stop::Graceful)?;
        target.restart()?;
        println!("SIGTERM and restart took {:.1?}", t.elapsed());
        for r in &runs {
            r.run(&target, "restart-verify", &[])?;
        }
        target.check_alive()
    })();
    report(result, &target);
}

#[test]
fn kill9_with_sync_flush_keeps_acknowledged_messages() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let target = Target::start("kill9", FlushDisk::Sync).expect("start the target");
    let result = (|| {
        for version in settings::client_versions() {
            let r = Run::new(&target, &version)?;
            r.run(
                &target,
                "restart-produce",
                &[("count", "100"), ("prefix", "before")],
            )?;
            kill_while_producing(&target, &r)?;
            r.run(&target, "restart-verify", &[("prefix", "after")])?;
        }
        target.check_alive()
    })();
    report(result, &target);
}

/// Starts a producer that runs until sends fail, kills the broker with SIGKILL once the producer
/// has had another 100 messages acknowledged, lets the producer notice, and restarts the broker.
fn kill_while_producing(target: &Target, r: &Run) -> Result<()> {
    let addrs = [target.namesrv(), target.broker()];
    let file = r.acked.to_string_lossy().to_string();
    let extra = [
        ("count", "1000000"),
        ("stop-after-failures", "3"),
        ("prefix", "during"),
        ("out", file.as_str()),
    ];
    let before = lines(&r.acked);
    let mut producer = r.client.spawn(
        "restart-produce",
        &r.args(&addrs, &extra),
        &target.dir().join("runs").join(format!("during-{}", r.id)),
    )?;
    let deadline = Instant::now() + Duration::from_secs(90);
    while lines(&r.acked) < before + 100 {
        if let Some(st) = producer.exited()? {
            bail!(
                "the producer exited ({st}) before the kill\n{}",
                producer.output_tail(40)
            );
        }
        if Instant::now() > deadline {
            bail!(
                "the producer had no 100 acknowledgements in 90 s\n{}",
                producer.output_tail(40)
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
    target.stop(Stop::Kill)?;
    let at_kill = lines(&r.acked);
    match producer.wait_for(Duration::from_secs(90))? {
        Some(st) if st.success() => {}
        Some(st) => bail!("the producer failed ({st})\n{}", producer.output_tail(40)),
        None => bail!(
            "the producer did not stop within 90 s of the kill\n{}",
            producer.output_tail(40)
        ),
    }
    println!(
        "killed the broker with {} messages acknowledged ({} by the end of the producer)",
        at_kill,
        lines(&r.acked)
    );
    let t = Instant::now();
    target.restart()?;
    println!("restart after kill -9 took {:.1?}", t.elapsed());
    Ok(())
}
