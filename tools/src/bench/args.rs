//! `skiff bench` options, with `--help` that teaches by example.

use std::time::Duration;

use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  Produce and consume for 10 s against a local broker, then check every message came back:
    skiff bench
  Producer load like Apache RocketMQ's benchmark (1 KiB, 16 senders), 10 s warm-up, 60 s measured:
    skiff bench produce --producers 16 --size 1024 --warmup 10s --duration 60s
  Transactional sends as a TransactionMQProducer makes them (half message, then a commit):
    skiff bench produce --transaction --producers 16
  Asynchronous sends, 8 in flight per producer, with tags and keys:
    skiff bench produce --async --inflight 8 --tags --keys
  A fixed load of 30000 sends per second, to compare latencies of two brokers at the same rate:
    skiff bench produce --rate 30000 --warmup 5s --duration 30s
  Exactly 100000 messages, then consume them all and compare:
    skiff bench both --messages 100000
  Drain what a topic already holds and report how fast it was read:
    skiff bench consume --backlog

The topic is created on every master broker (with --queues queues) if the name server does not know \
it. Reports go to stdout every --interval; the last lines, starting with SUMMARY, are key=value pairs \
for scripts. Latencies are from just before a send is written to when its answer is read. In `both` \
mode consumers start at the end of each queue before the producers start and, once the producers \
stop, read until they have caught up (or --drain-timeout passes). Exit status: 0 when the run \
worked (and, in `both` mode, every acknowledged message was consumed exactly once), 1 otherwise, \
2 for a bad command line.")]
pub struct BenchArgs {
    /// What to run: producers, consumers, or both with a consumed == produced check
    #[arg(value_enum, default_value_t = Mode::Both)]
    pub mode: Mode,

    /// Name server address, IP:PORT
    #[arg(
        short = 'n',
        long,
        value_name = "ADDR",
        env = "NAMESRV_ADDR",
        default_value = "127.0.0.1:9876"
    )]
    pub namesrv: String,

    /// Topic to use; created if the name server does not know it
    #[arg(short, long, default_value = "SkiffBench")]
    pub topic: String,

    /// Queues per broker when the topic has to be created
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(i32).range(1..=1024))]
    pub queues: i32,

    /// Concurrent producers (tasks), each sending one message at a time unless --async
    #[arg(short, long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub producers: u32,

    /// Message body size in bytes
    #[arg(short, long, value_name = "BYTES", default_value_t = 1024)]
    pub size: usize,

    /// Give every message a tag (tag0..tag3, round robin)
    #[arg(long)]
    pub tags: bool,

    /// Give every message a key (its sequence number)
    #[arg(long)]
    pub keys: bool,

    /// Send each message as a transaction: a half message, then END_TRANSACTION (oneway) committing
    /// it, as the Java TransactionMQProducer does when its local transaction commits; the latency
    /// covers both
    #[arg(long, conflicts_with = "async_send")]
    pub transaction: bool,

    /// Send asynchronously: each producer keeps --inflight sends outstanding
    #[arg(long = "async")]
    pub async_send: bool,

    /// Sends each producer keeps in flight with --async
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub inflight: u32,

    /// Sends per second in all, spread over every lane; without it each lane sends again as
    /// soon as its answer is read (as fast as the broker goes). A lane that falls behind the
    /// schedule sends at once, so the summary's TPS shows when the rate was not reached
    #[arg(long, value_name = "TPS", value_parser = clap::value_parser!(u32).range(1..))]
    pub rate: Option<u32>,

    /// How long to measure, after --warmup (e.g. 500ms, 10s, 2m) [default: 10s unless --messages]
    #[arg(short, long, value_name = "TIME", value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Stop after this many messages: sent in all (warm-up included), or received in `consume` mode
    #[arg(short, long, value_name = "N")]
    pub messages: Option<u64>,

    /// Load applied before measuring; not counted in the summary
    #[arg(short, long, value_name = "TIME", value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,

    /// Time between report lines
    #[arg(short, long, value_name = "TIME", value_parser = parse_duration, default_value = "5s")]
    pub interval: Duration,

    /// Consumer group used for pulling
    #[arg(short, long, default_value = "skiff_bench_consumer")]
    pub group: String,

    /// Where `consume` starts in each queue
    #[arg(long, value_enum, default_value_t = StartAt::Latest)]
    pub from: StartAt,

    /// `consume`: read each queue from its first to its last message at start, then stop
    #[arg(long)]
    pub backlog: bool,

    /// Messages asked for per pull
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(i32).range(1..=1024))]
    pub pull_batch: i32,

    /// `both`: how long consumers may take to catch up once producers stop
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "30s")]
    pub drain_timeout: Duration,

    /// TCP connections per broker, shared round robin by producers and consumers
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub connections: u32,

    /// How long to wait for each answer
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "3s")]
    pub timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Send only.
    Produce,
    /// Pull only.
    Consume,
    /// Send and pull at once, then check consumed == produced.
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StartAt {
    /// The oldest message still stored.
    Earliest,
    /// Only messages sent after the start.
    Latest,
}

impl BenchArgs {
    /// Measured time: --duration, or 10 s unless a message count bounds the run.
    pub fn measure_for(&self) -> Option<Duration> {
        match (self.duration, self.messages) {
            (Some(duration), _) => Some(duration),
            (None, Some(_)) => None,
            (None, None) => Some(Duration::from_secs(10)),
        }
    }
}

/// `500ms`, `10s`, `2m`, or a bare number of seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("expected a time such as 500ms, 10s or 2m, not {text:?}"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        _ => return Err(format!("unknown time unit {unit:?}: use ms, s or m")),
    };
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_common_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("10h").is_err());
        assert!(parse_duration("fast").is_err());
    }
}
