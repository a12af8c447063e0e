//! `skiff migrate replicate`: waits for each group's slave to register, then shows it catching up
//! with its master (bytes of CommitLog behind, and how long that takes at the current rate) until
//! it holds everything the master has. It reads only; the slave does the copying. The one
//! exception is asked for: `--master-batch-size` raises the master's `haTransferBatchSize` for
//! the catch-up and sets it back after.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use skiff_server::config::MAX_HA_FRAME_BODY;

use super::cluster::{self, bytes, Group, Runtime};
use crate::admin::broker::update_broker_config;
use crate::admin::client::Admin;
use crate::admin::output::Shown;
use crate::bench::parse_duration;

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  After starting the slaves from the configs `skiff migrate plan --out` wrote:
    skiff migrate replicate -n 10.0.0.5:9876
  One group, giving its slave 30 minutes to register:
    skiff migrate replicate -n 10.0.0.5:9876 -b broker-a --wait-slave 30m
  A large backlog, copied in 1 MiB frames instead of Java's 32 KiB ones:
    skiff migrate replicate -n 10.0.0.5:9876 --master-batch-size 1048576

Exit status 0 once every slave holds its master's whole CommitLog (as far as the master had \
written when it was last asked); 1 if a slave does not register in time, or is ahead of its \
master (run skiff migrate verify). Interrupting it changes nothing: run it again. With \
--master-batch-size, Ctrl-C sets the master's setting back before it exits; if the process is \
killed, the message it printed says how to set it back.")]
pub struct ReplicateArgs {
    /// Only this broker group (repeatable) [default: every group]
    #[arg(short = 'b', long = "broker", value_name = "NAME")]
    pub brokers: Vec<String>,

    /// How long to wait for a slave to register with the name server
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "10m")]
    pub wait_slave: Duration,

    /// How often to ask master and slave how far they are
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "1s")]
    pub interval: Duration,

    /// Raise each master's haTransferBatchSize, the most it sends per frame (32768 bytes by
    /// default), to BYTES while its slave catches up, and set it back once the slave holds
    /// everything. A Java master pays a select and two writes per frame: with 1048576 one used
    /// a third less CPU on a 4 GiB backlog, copied 1.35x as fast. At most 4194292, the largest
    /// frame a Java slave reads.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..=MAX_HA_FRAME_BODY as i64))]
    pub master_batch_size: Option<u32>,
}

/// Java's key for the most a master sends per HA frame.
const BATCH_SIZE_KEY: &str = "haTransferBatchSize";

pub async fn run(admin: &Admin, args: ReplicateArgs) -> Result<Shown> {
    let groups = cluster::groups(admin, &args.brokers).await?;
    let mut text = String::new();
    let mut out = Vec::new();
    for group in groups {
        let (line, json) = match args.master_batch_size {
            Some(size) => follow_with_batch_size(admin, group, &args, size).await?,
            None => follow(admin, group, &args).await?,
        };
        text.push_str(&line);
        text.push('\n');
        out.push(json);
    }
    Ok(Shown::new(json!({ "groups": out }), text))
}

/// [`follow`] with the group's Java master sending frames of up to `size` bytes meanwhile; its
/// own setting is put back afterwards, whatever the outcome, Ctrl-C included.
async fn follow_with_batch_size(
    admin: &Admin,
    group: Group,
    args: &ReplicateArgs,
    size: u32,
) -> Result<(String, serde_json::Value)> {
    let raised = match group.master().cloned() {
        Some(master) => raise_batch_size(admin, &group, &master, size)
            .await?
            .map(|was| (master, was)),
        None => None,
    };
    let name = group.name.clone();
    // Ctrl-C is caught for every group once it is for one (tokio's handler replaces the
    // default one for the process), so also where nothing needs setting back.
    let outcome = tokio::select! {
        outcome = follow(admin, group, args) => outcome,
        _ = tokio::signal::ctrl_c() => Err(anyhow!("interrupted (Ctrl-C)")),
    };
    let Some((master, was)) = raised else {
        return outcome;
    };
    let restored = update_broker_config(admin, &master, &format!("{BATCH_SIZE_KEY}={was}")).await;
    match restored {
        Ok(()) => {
            eprintln!("{name}: the master's {BATCH_SIZE_KEY} is {was} again");
            outcome
        }
        Err(err) => Err(err.context(format!(
            "{name}: the master at {master} still has {BATCH_SIZE_KEY}={size} ({}); set it back \
             with: skiff admin broker config set -b {master} {BATCH_SIZE_KEY}={was}",
            match outcome {
                Ok(_) => "its slave caught up".to_string(),
                Err(err) => format!("the catch-up ended: {err:#}"),
            }
        ))),
    }
}

/// Sets a master's `haTransferBatchSize` to `size` if it is lower; returns what it was then, or
/// `None` when nothing changed (a master already sending that much). Java and Skiff masters
/// both read it before each frame.
async fn raise_batch_size(
    admin: &Admin,
    group: &Group,
    master: &str,
    size: u32,
) -> Result<Option<String>> {
    let settings = cluster::settings(admin, group, master).await?;
    let Some(was) = settings.get(BATCH_SIZE_KEY) else {
        bail!("the master at {master} reports no {BATCH_SIZE_KEY} among its settings");
    };
    if was
        .trim()
        .parse::<u64>()
        .is_ok_and(|was| was >= u64::from(size))
    {
        eprintln!(
            "{}: the master's {BATCH_SIZE_KEY} is already {was}: left as it is",
            group.name
        );
        return Ok(None);
    }
    update_broker_config(admin, master, &format!("{BATCH_SIZE_KEY}={size}")).await?;
    eprintln!(
        "{}: the master at {master} sends up to {size} bytes per frame until its slave holds \
         everything ({BATCH_SIZE_KEY} was {was}; if this run is killed, set it back with: skiff \
         admin broker config set -b {master} {BATCH_SIZE_KEY}={was})",
        group.name
    );
    Ok(Some(was.clone()))
}

/// Follows one group until its slave has caught up.
async fn follow(
    admin: &Admin,
    group: Group,
    args: &ReplicateArgs,
) -> Result<(String, serde_json::Value)> {
    let name = group.name.clone();
    let Some(master) = group.master().cloned() else {
        bail!("{name} has no master registered: nothing to replicate from");
    };
    let slave = wait_for_slave(admin, group, args).await?;
    let started = Instant::now();
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {bytes}/{total_bytes} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(name.clone());
    let first = Runtime::read(admin, &slave.addr).await?.commit_log_max()?;
    let mut rate = Rate::new(first);
    // The master's end when last asked, and when that was. The slave is asked every round, the
    // master at most every MASTER_POLL: a Java master answers runtime info with a walk of its
    // statistics, which at 10 requests/s took an eighth of the core its replication needed. The
    // slave is asked first: asked after the master, a slave of a master that is still taking
    // writes could seem ahead of it.
    let mut target: Option<(i64, Instant)> = None;
    let master_poll = args.interval.max(MASTER_POLL);
    loop {
        let slave_max = Runtime::read(admin, &slave.addr).await?.commit_log_max()?;
        let (master_max, fresh) = match target {
            Some((end, asked)) if slave_max < end && asked.elapsed() < master_poll => (end, false),
            _ => (Runtime::read(admin, &master).await?.commit_log_max()?, true),
        };
        if slave_max > master_max {
            bar.abandon();
            bail!(
                "the slave of {name} at {} holds more CommitLog ({slave_max}) than its master at \
                 {master} ({master_max}): it copied another master, or the master lost data; run \
                 skiff migrate verify -b {name}",
                slave.addr
            );
        }
        bar.set_length(master_max.max(0) as u64);
        bar.set_position(slave_max.max(0) as u64);
        let lag = master_max - slave_max;
        let per_second = rate.update(slave_max, Instant::now());
        bar.set_message(match per_second {
            Some(r) if r > 0.0 && lag > 0 => format!(
                "lag {}, ~{:.0} s at {}/s",
                bytes(lag),
                lag as f64 / r,
                bytes(r as i64)
            ),
            _ => format!("lag {}", bytes(lag)),
        });
        // Caught up: the slave holds what the master had at the last round, or all it has now
        // (a master still taking writes is always a little ahead).
        let held = match target {
            Some((end, _)) if slave_max >= end => Some(end),
            _ if lag == 0 => Some(master_max),
            _ => None,
        };
        if let Some(end) = held {
            bar.finish_and_clear();
            let took = started.elapsed();
            let line = format!(
                "{name}: the {} slave at {} holds the master's CommitLog up to {end} ({}), \
                 {} copied in {:.1} s",
                slave.kind(),
                slave.addr,
                bytes(end),
                bytes(slave_max - first),
                took.as_secs_f64()
            );
            let json = json!({
                "brokerName": name,
                "master": master,
                "slave": slave.addr,
                "slaveKind": slave.kind(),
                "commitLogMaxOffset": end,
                "copiedBytes": slave_max - first,
                "seconds": took.as_secs_f64(),
            });
            return Ok((line, json));
        }
        if fresh {
            target = Some((master_max, Instant::now()));
        }
        tokio::time::sleep(args.interval).await;
    }
}

/// How often, at most, a master is asked how far it is while its slave is behind.
const MASTER_POLL: Duration = Duration::from_secs(1);

/// The group's slave once one is registered: a Skiff one if there are several.
async fn wait_for_slave(admin: &Admin, mut group: Group, args: &ReplicateArgs) -> Result<Runtime> {
    let deadline = Instant::now() + args.wait_slave;
    let mut said = false;
    loop {
        let mut found = None;
        for (_, addr) in group.slaves() {
            if let Ok(runtime) = Runtime::read(admin, addr).await {
                if runtime.is_skiff() || found.is_none() {
                    found = Some(runtime);
                }
            }
        }
        if let Some(slave) = found {
            return Ok(slave);
        }
        if Instant::now() >= deadline {
            bail!(
                "no slave of {} registered within {:?}: start it with the config skiff migrate \
                 plan --out wrote (skiff broker -c <brokerName>-skiff-slave.conf)",
                group.name,
                args.wait_slave
            );
        }
        if !said {
            eprintln!("{}: waiting for a slave to register...", group.name);
            said = true;
        }
        tokio::time::sleep(args.interval).await;
        let name = group.name.clone();
        if let Some(fresh) = cluster::groups(admin, &[name]).await?.pop() {
            group = fresh;
        }
    }
}

/// Bytes copied per second, smoothed over the last polls.
struct Rate {
    last: Option<(i64, Instant)>,
    per_second: Option<f64>,
}

impl Rate {
    fn new(offset: i64) -> Rate {
        Rate {
            last: Some((offset, Instant::now())),
            per_second: None,
        }
    }

    fn update(&mut self, offset: i64, now: Instant) -> Option<f64> {
        if let Some((before, at)) = self.last {
            let secs = now.duration_since(at).as_secs_f64();
            if secs > 0.0 {
                let sample = (offset - before) as f64 / secs;
                self.per_second = Some(match self.per_second {
                    Some(r) => 0.7 * r + 0.3 * sample,
                    None => sample,
                });
            }
        }
        self.last = Some((offset, now));
        self.per_second
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_smoothed() {
        let t0 = Instant::now();
        let mut rate = Rate {
            last: Some((0, t0)),
            per_second: None,
        };
        assert_eq!(rate.update(100, t0 + Duration::from_secs(1)), Some(100.0));
        let r = rate.update(300, t0 + Duration::from_secs(2)).unwrap();
        assert!((r - 130.0).abs() < 1e-9, "{r}");
    }
}
