//! Crash test (issue #3): `kill -9` of the broker under load, many times in a row, at random
//! moments, restarting it on the same ports and data each time.
//!
//! One long-running Java producer (the official client) sends synchronously from several threads
//! to the 8 queues of a topic, bodies of 1 B to 128 KiB, and records every SEND_OK. The harness
//! kills and restarts the broker on a random schedule (the seed is printed; set
//! `SKIFF_COMPAT_CRASH_SEED` to replay it); about one kill in six is followed by another kill
//! while the broker is starting up and recovering. At the end a verifier JVM reads every queue from 0 to
//! its max offset and checks:
//!
//! - SYNC_FLUSH: no acknowledged message is missing (each is at the queue offset it was
//!   acknowledged with, under its uniq id), queue offsets are dense (no gap, no duplicate), no
//!   message is stored twice and every body is intact; and every restart served within a bound.
//! - ASYNC_FLUSH (unflushed data may be lost): the store reopens every time, queues are dense,
//!   nothing is stored twice, every body is intact. Missing acknowledged messages are counted.
//!
//! Small CommitLog segments (2 MiB) and ConsumeQueue files (300 entries) make the kills land
//! around segment rolls too.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use skiff_compat_tests::java::Client;
use skiff_compat_tests::process::Proc;
use skiff_compat_tests::settings::{self, TargetKind};
use skiff_compat_tests::suite::{unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{FlushDisk, Options, Stop, Target};

/// The two tests restart brokers hundreds of times; together they would thrash 2 cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Upper bound for a restart after kill -9 until the broker serves again (Skiff needs
/// milliseconds; the Java broker several seconds).
fn restart_bound(kind: TargetKind) -> Duration {
    match kind {
        TargetKind::Skiff => Duration::from_secs(15),
        TargetKind::Apache => Duration::from_secs(60),
    }
}

/// How long the producer may take to get new acknowledgements after a restart.
const RESUME_TIMEOUT: Duration = Duration::from_secs(60);
/// Acknowledgements after a restart that count as "the producer is sending again".
const RESUMED_AFTER: u64 = 5;
const QUEUES: &str = "8";

/// splitmix64: a reproducible schedule without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Counts the complete lines of the producer's record file as it grows, reading only what is new.
struct AckCounter {
    path: PathBuf,
    pos: u64,
    lines: u64,
}

impl AckCounter {
    fn count(&mut self) -> Result<u64> {
        let Ok(mut f) = File::open(&self.path) else {
            return Ok(0);
        };
        f.seek(SeekFrom::Start(self.pos))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        // Only whole lines: the producer may be halfway through writing one.
        if let Some(last) = buf.iter().rposition(|&b| b == b'\n') {
            self.lines += buf[..=last].iter().filter(|&&b| b == b'\n').count() as u64;
            self.pos += last as u64 + 1;
        }
        Ok(self.lines)
    }
}

/// Waits until `acks` reaches `at_least`, failing if the producer exits or RESUME_TIMEOUT passes.
fn wait_acks(acks: &mut AckCounter, at_least: u64, producer: &mut Proc, what: &str) -> Result<()> {
    let deadline = Instant::now() + RESUME_TIMEOUT;
    while acks.count()? < at_least {
        if let Some(st) = producer.exited()? {
            bail!(
                "the producer exited ({st}) {what}\n{}",
                producer.output_tail(40)
            );
        }
        if Instant::now() > deadline {
            bail!(
                "no {at_least} acknowledgements within {RESUME_TIMEOUT:?} {what} (have {})\n{}",
                acks.lines,
                producer.output_tail(40)
            );
        }
        thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

struct Summary {
    kills: u64,
    /// Extra kills of a broker that was still starting (recovering the store).
    recovery_kills: u64,
    restart_max: Duration,
    restart_total: Duration,
}

/// Kills and restarts the broker `kills` times while `producer` sends, on `rng`'s schedule.
fn kill_loop(
    target: &Target,
    producer: &mut Proc,
    acks: &mut AckCounter,
    rng: &mut Rng,
    kills: u64,
) -> Result<Summary> {
    let bound = restart_bound(target.kind());
    let mut s = Summary {
        kills: 0,
        recovery_kills: 0,
        restart_max: Duration::ZERO,
        restart_total: Duration::ZERO,
    };
    let have = acks.count()?;
    wait_acks(acks, have + 50, producer, "before the first kill")?;
    for i in 1..=kills {
        // Mostly a kill in the middle of steady sending; sometimes one right after the restart,
        // while the broker is recovering or the clients are reconnecting.
        if rng.below(10) == 0 {
            thread::sleep(Duration::from_millis(rng.below(50)));
        } else {
            let have = acks.count()?;
            wait_acks(
                acks,
                have + RESUMED_AFTER,
                producer,
                &format!("after restart {}", i - 1),
            )?;
            thread::sleep(Duration::from_millis(20 + rng.below(600)));
        }
        if let Some(st) = producer.exited()? {
            bail!("the producer exited ({st})\n{}", producer.output_tail(40));
        }
        target.stop(Stop::Kill)?;
        if rng.below(6) == 0 {
            // Kill it again while it is starting and recovering the store.
            target.spawn_broker()?;
            let last = s.restart_max.as_millis() as u64;
            thread::sleep(Duration::from_millis(rng.below(last.max(5) + 1)));
            target
                .check_alive()
                .with_context(|| format!("the broker died by itself starting after kill {i}"))?;
            target.stop(Stop::Kill)?;
            s.recovery_kills += 1;
        }
        let took = target
            .restart()
            .with_context(|| format!("the broker did not come back after kill {i}"))?;
        if took > bound {
            bail!("restart {i} after kill -9 took {took:.1?}, over the bound of {bound:?}");
        }
        s.kills = i;
        s.restart_max = s.restart_max.max(took);
        s.restart_total += took;
        if i % 10 == 0 {
            println!(
                "  {i} kills, {} acknowledged so far, last restart {took:.1?}",
                acks.count()?
            );
        }
    }
    let have = acks.count()?;
    wait_acks(
        acks,
        have + RESUMED_AFTER,
        producer,
        "after the last restart",
    )?;
    Ok(s)
}

fn seed() -> Result<u64> {
    let clock = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    settings::number("SKIFF_COMPAT_CRASH_SEED", clock)
}

fn run_crash(label: &str, flush: FlushDisk, kills: u64) -> Result<()> {
    let seed = seed()?;
    println!("{label}: seed {seed} (SKIFF_COMPAT_CRASH_SEED={seed} replays this schedule)");
    let mut rng = Rng(seed);
    let opts = Options {
        commit_log_size: 2 * 1024 * 1024,
        consume_queue_size: 300 * 20,
        max_message_size: 512 * 1024,
        ..Options::new(flush)?
    };
    let target = Target::start_with(label, opts)?;
    let result = crash_cycles(&target, label, flush, kills, seed, &mut rng);
    if let Err(e) = result {
        panic!(
            "{label} (seed {seed}): {e:#}\n{}\n(the data directory is kept: {})",
            target.logs(),
            target.store_dir().display()
        );
    }
    Ok(())
}

fn crash_cycles(
    target: &Target,
    label: &str,
    flush: FlushDisk,
    kills: u64,
    seed: u64,
    rng: &mut Rng,
) -> Result<()> {
    let started = Instant::now();
    let client = Client::get(&settings::store_client())?;
    let id = unique_id(&client.version);
    let acked = target.dir().join("acked.txt");
    let stop = target.dir().join("stop-producing");
    let (namesrv, broker) = (target.namesrv(), target.broker());
    let (acked_s, stop_s) = (path_arg(&acked), path_arg(&stop));
    let seed_s = (seed % 1_000_000_007).to_string();
    let common = [
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id.as_str()),
        ("queues", QUEUES),
    ];
    let mut args = common.to_vec();
    args.extend([
        ("out", acked_s.as_str()),
        ("stop", stop_s.as_str()),
        ("seed", seed_s.as_str()),
        ("threads", "4"),
    ]);
    let runs = target.dir().join("runs");
    let mut producer = client.spawn("crash-produce", &args, &runs.join("produce"))?;
    let mut acks = AckCounter {
        path: acked.clone(),
        pos: 0,
        lines: 0,
    };
    let summary = kill_loop(target, &mut producer, &mut acks, rng, kills)?;

    fs::write(&stop, b"")?;
    match producer.wait_for(Duration::from_secs(60))? {
        Some(st) if st.success() => {}
        Some(st) => bail!("the producer failed ({st})\n{}", producer.output_tail(40)),
        None => bail!(
            "the producer did not stop within 60 s\n{}",
            producer.output_tail(40)
        ),
    }
    let mut args = common.to_vec();
    let lossy = if flush == FlushDisk::Async {
        "true"
    } else {
        "false"
    };
    args.extend([("in", acked_s.as_str()), ("lossy", lossy)]);
    let out = client
        .run(
            "crash-verify",
            &args,
            &runs.join("verify"),
            SCENARIO_TIMEOUT,
        )
        .context("verify the store after the kills")?;
    target.check_alive()?;
    let (present, acked_n, stored) = checked_counts(&out)?;
    println!(
        "{label}: {} kills under load and {} during recovery (seed {seed}), restarts {:.0?} on \
         average, {:.0?} at most; {present} of {acked_n} acknowledged messages checked present, \
         {stored} stored in all; {:.0?} in all",
        summary.kills,
        summary.recovery_kills,
        summary.restart_total / summary.kills.max(1) as u32,
        summary.restart_max,
        started.elapsed()
    );
    Ok(())
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The verifier's `CHECKED <present> <acknowledged> <stored>` line.
fn checked_counts(out: &str) -> Result<(u64, u64, u64)> {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("CHECKED "))
        .with_context(|| format!("the verifier printed no CHECKED line:\n{out}"))?;
    let n: Vec<u64> = line
        .split(' ')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("bad CHECKED line {line}"))?;
    match n[..] {
        [present, acked, stored] => Ok((present, acked, stored)),
        _ => bail!("bad CHECKED line {line}"),
    }
}

/// SYNC_FLUSH: every acknowledged message survives every kill -9.
#[test]
fn kill9_under_load_with_sync_flush_loses_no_acknowledged_message() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let kills = settings::number("SKIFF_COMPAT_CRASH_KILLS", 50).expect("settings");
    run_crash("crash-sync", FlushDisk::Sync, kills).expect("set up the crash test");
}

/// ASYNC_FLUSH: whatever was not flushed may be lost, but the store always reopens dense and
/// uncorrupted.
#[test]
fn kill9_under_load_with_async_flush_reopens_dense() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let kills = settings::number("SKIFF_COMPAT_CRASH_ASYNC_KILLS", 25).expect("settings");
    run_crash("crash-async", FlushDisk::Async, kills).expect("set up the crash test");
}
