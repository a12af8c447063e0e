//! `skiff bench`: producer and consumer load over the RocketMQ remoting protocol against any
//! broker found through a name server (Skiff's or Apache RocketMQ's), reporting throughput,
//! latency percentiles and errors, and in `both` mode checking consumed == produced.
//!
//! It is a client only: it speaks through `skiff_server::remoting_client` and the protocol
//! codec, and knows nothing of the broker's internals.

mod args;
mod consume;
mod ids;
mod pool;
mod produce;
mod report;
mod route;
mod stats;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use bytes::Bytes;
use tokio::sync::watch;

pub(crate) use args::parse_duration;
pub use args::BenchArgs;
use args::{Mode, StartAt};
use consume::Consuming;
use ids::Ledger;
use pool::Pool;
use produce::Producing;
use stats::Stats;

/// How often the run's clock checks its deadlines.
const TICK: Duration = Duration::from_millis(20);

/// A one-way "stop now" flag that tasks can poll or wait on.
#[derive(Clone)]
pub struct Stop {
    tx: Arc<watch::Sender<bool>>,
    rx: watch::Receiver<bool>,
}

impl Stop {
    fn new() -> Self {
        let (tx, rx) = watch::channel(false);
        Stop {
            tx: Arc::new(tx),
            rx,
        }
    }

    fn set(&self) {
        self.tx.send_replace(true);
    }

    pub fn is_set(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once the flag is set.
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        // An error means the sender is gone, which only happens at the end of the run.
        let _ = rx.wait_for(|stopped| *stopped).await;
    }
}

/// Runs the benchmark; the exit status says whether it worked.
pub async fn run(args: BenchArgs) -> ExitCode {
    match execute(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("skiff bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Everything the run's clock looks at.
struct Run {
    args: BenchArgs,
    started: Instant,
    producers: Option<(Arc<Producing>, tokio::task::JoinHandle<Ledger>)>,
    consumers: Option<(Arc<Consuming>, tokio::task::JoinHandle<consume::Outcome>)>,
    producer_stats: Arc<Stats>,
    consumer_stats: Arc<Stats>,
}

/// When measuring started and when each side stopped.
struct Times {
    measured_from: Instant,
    produced_until: Option<Instant>,
    consumed_until: Option<Instant>,
}

async fn execute(args: BenchArgs) -> Result<bool> {
    let producing = args.mode != Mode::Consume;
    let consuming = args.mode != Mode::Produce;
    let queues = route::prepare(&args.namesrv, &args.topic, args.queues, args.timeout).await?;
    if producing && queues.write.is_empty() {
        bail!("topic {} has no writable queue", args.topic);
    }
    if consuming && queues.read.is_empty() {
        bail!("topic {} has no readable queue", args.topic);
    }
    let pool = Arc::new(Pool::connect(&queues.brokers(), args.connections, args.timeout).await?);
    let run_id = ids::new_run_id();
    let per_producer = if args.async_send { args.inflight } else { 1 };
    let lanes = (args.producers * per_producer) as usize;
    print_header(&args, &queues, lanes);

    let producer_stats = Arc::new(Stats::new());
    let consumer_stats = Arc::new(Stats::new());
    // Consumers first, so that in `both` mode they start at the queues' ends before any send.
    let consumers = if consuming {
        let ctx = Arc::new(Consuming {
            pool: pool.clone(),
            stats: consumer_stats.clone(),
            stop: Stop::new(),
            group: args.group.clone(),
            batch: args.pull_batch,
            timeout: args.timeout,
            track: (args.mode == Mode::Both).then_some(run_id),
            tracked: AtomicU64::new(0),
            errors_shown: AtomicU64::new(0),
        });
        let earliest = args.mode == Mode::Consume && args.from == StartAt::Earliest;
        let backlog = args.mode == Mode::Consume && args.backlog;
        let spans = consume::spans(&pool, &queues.read, earliest, backlog, args.timeout).await?;
        let handle = consume::start(ctx.clone(), queues.read.clone(), spans);
        Some((ctx, handle))
    } else {
        None
    };
    let started = Instant::now();
    let producers = if producing {
        let ctx = Arc::new(Producing {
            pool: pool.clone(),
            targets: queues.write.clone(),
            stats: producer_stats.clone(),
            stop: Stop::new(),
            run_id,
            body: body(args.size),
            tags: args.tags,
            keys: args.keys,
            transaction: args.transaction,
            limit: args.messages,
            pace: args
                .rate
                .map(|rate| (started, Duration::from_secs(1) / rate)),
            timeout: args.timeout,
            track: args.mode == Mode::Both,
            next_seq: AtomicU64::new(0),
            acked: AtomicU64::new(0),
            errors_shown: AtomicU64::new(0),
        });
        let handle = produce::start(ctx.clone(), lanes);
        Some((ctx, handle))
    } else {
        None
    };
    let mut shown = Vec::new();
    if producing {
        shown.push(("produce", producer_stats.clone()));
    }
    if consuming {
        shown.push(("consume", consumer_stats.clone()));
    }
    let reporter = tokio::spawn(report::every(args.interval, shown, started, args.warmup));
    let mut run = Run {
        args,
        started,
        producers,
        consumers,
        producer_stats,
        consumer_stats,
    };
    let times = drive(&run).await;
    reporter.abort();
    summarise(&mut run, &times).await
}

/// Prints the summary; whether the run worked.
async fn summarise(run: &mut Run, times: &Times) -> Result<bool> {
    let ledger = match run.producers.take() {
        Some((_, handle)) => handle.await?,
        None => Ledger::default(),
    };
    let consumed = match run.consumers.take() {
        Some((_, handle)) => handle.await?,
        None => consume::Outcome::default(),
    };
    println!("---");
    let mut worked = true;
    let side = |label: &str, stats: &Stats, until: Option<Instant>| {
        let elapsed = until
            .unwrap_or_else(Instant::now)
            .saturating_duration_since(times.measured_from);
        let total = stats.total();
        for line in report::summary(label, &total, elapsed) {
            println!("{line}");
        }
        total.messages
    };
    if run.args.mode != Mode::Consume
        && side("produce", &run.producer_stats, times.produced_until) == 0
    {
        eprintln!("skiff bench: no message was acknowledged");
        worked = false;
    }
    if run.args.mode != Mode::Produce {
        side("consume", &run.consumer_stats, times.consumed_until);
    }
    if run.args.mode == Mode::Both {
        if consumed.foreign > 0 {
            println!(
                "({} messages of other runs were read and ignored)",
                consumed.foreign
            );
        }
        let verdict = Ledger {
            consumed: consumed.seqs,
            ..ledger
        }
        .verdict();
        println!("SUMMARY verify {verdict}");
        if !verdict.ok() {
            eprintln!("skiff bench: consumed != produced ({verdict})");
            worked = false;
        }
    }
    Ok(worked)
}

/// The run's clock: ends the warm-up, stops producers at the deadline (they stop by themselves
/// at a message count), and stops consumers when their work is done. Returns once both sides
/// have stopped.
async fn drive(run: &Run) -> Times {
    let args = &run.args;
    let warmup_end = run.started + args.warmup;
    let deadline = args.measure_for().map(|d| warmup_end + d);
    let mut times = Times {
        measured_from: run.started,
        produced_until: None,
        consumed_until: None,
    };
    let mut warming = !args.warmup.is_zero();
    let mut interrupted = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = &mut ctrl_c, if !interrupted => {
                eprintln!("interrupted: stopping and summarising");
                interrupted = true;
            }
        }
        let now = Instant::now();
        if warming && now >= warmup_end {
            run.producer_stats.reset_total();
            run.consumer_stats.reset_total();
            times.measured_from = now;
            warming = false;
        }
        let past_deadline = deadline.is_some_and(|d| now >= d);
        let mut producers_done = true;
        let mut acked = 0;
        if let Some((ctx, handle)) = &run.producers {
            if interrupted || past_deadline {
                ctx.stop.set();
            }
            if handle.is_finished() {
                times.produced_until.get_or_insert(now);
            } else {
                producers_done = false;
            }
            acked = ctx.acked.load(Ordering::Relaxed);
        }
        let Some((ctx, handle)) = &run.consumers else {
            if producers_done {
                return times;
            }
            continue;
        };
        let caught_up = match args.mode {
            Mode::Produce => true,
            Mode::Consume => {
                past_deadline
                    || args
                        .messages
                        .is_some_and(|n| run.consumer_stats.total().messages >= n)
            }
            Mode::Both => {
                producers_done
                    && (ctx.tracked.load(Ordering::Relaxed) >= acked
                        || times
                            .produced_until
                            .is_some_and(|t| now >= t + args.drain_timeout))
            }
        };
        if interrupted || caught_up {
            ctx.stop.set();
        }
        if handle.is_finished() {
            times.consumed_until.get_or_insert(now);
            if producers_done {
                return times;
            }
        }
    }
}

/// A body of `size` printable bytes, as Apache's benchmark producer sends.
fn body(size: usize) -> Bytes {
    Bytes::from(
        (0..size)
            .map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789"[i % 36])
            .collect::<Vec<u8>>(),
    )
}

fn print_header(args: &BenchArgs, queues: &route::Queues, lanes: usize) {
    let mode = match args.mode {
        Mode::Produce => "produce",
        Mode::Consume => "consume",
        Mode::Both => "produce + consume",
    };
    let send = if args.async_send {
        format!("async, {} in flight each", args.inflight)
    } else {
        "sync".to_string()
    };
    println!(
        "skiff bench {mode}: topic {} ({} write / {} read queues on {} broker(s)), {} producers ({send}, {lanes} sends in flight), {}-byte bodies, tags {}, keys {}",
        args.topic,
        queues.write.len(),
        queues.read.len(),
        queues.brokers().len(),
        args.producers,
        args.size,
        if args.tags { "on" } else { "off" },
        if args.keys { "on" } else { "off" },
    );
}
