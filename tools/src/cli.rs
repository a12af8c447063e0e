//! The command line: what each subcommand accepts, with examples in `--help`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "skiff",
    version,
    about = "Skiff: a message broker that speaks Apache RocketMQ's protocol",
    long_about = "Skiff is a message broker that speaks Apache RocketMQ's remoting protocol, so the \
official RocketMQ clients work against it unchanged. It runs a name server and a broker, together \
(standalone) or apart.",
    after_long_help = "\
Examples:
  Try it out (name server on 127.0.0.1:9876, broker on 127.0.0.1:10911, data in ~/skiff-data):
    skiff standalone
  Run a deployment from Apache RocketMQ's config files:
    skiff namesrv
    skiff broker -c conf/broker.conf --set namesrvAddr=10.0.0.5:9876
  Measure it (16 producers, 1 KiB messages, 60 s) and check every message comes back:
    skiff bench --duration 60s
  Administer it (or an Apache RocketMQ cluster): see skiff admin --help
    skiff admin topic create -t orders --queues 8
    skiff admin group progress -g billing --json
  Move a running Apache RocketMQ cluster onto Skiff: see skiff migrate --help
    skiff migrate plan -n 10.0.0.5:9876 --out migration

Logging goes to stderr; set RUST_LOG (for example RUST_LOG=debug or RUST_LOG=skiff_server=debug) \
to change what is logged. Exit status: 0 after a clean stop (Ctrl-C or SIGTERM), 2 for a bad \
command line or config, 1 when the server cannot start or stop."
)]
pub struct Cli {
    /// How log lines are written to stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true, display_order = 100)]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a name server and a broker in one process: the quickest way to a working broker.
    Standalone(StandaloneArgs),
    /// Run a name server.
    Namesrv(NamesrvArgs),
    /// Run a broker from a config file.
    Broker(BrokerArgs),
    /// Load a broker with producers and/or consumers and report throughput and latency.
    Bench(crate::bench::BenchArgs),
    /// Check that a standalone Skiff serves: its broker is registered and answers (exit 0 or 1).
    Health(crate::health::HealthArgs),
    /// Administer a Skiff or Apache RocketMQ cluster: topics, groups, offsets, messages, config.
    Admin(crate::admin::AdminArgs),
    /// Move an Apache RocketMQ cluster onto Skiff by replication: plan, replicate, verify.
    Migrate(crate::migrate::MigrateArgs),
    /// Print a shell completion script for skiff (bash, zsh, fish, elvish, powershell).
    #[command(after_long_help = "\
Examples:
  bash:  skiff completions bash > /etc/bash_completion.d/skiff
  zsh:   skiff completions zsh > \"${fpath[1]}/_skiff\"
  fish:  skiff completions fish > ~/.config/fish/completions/skiff.fish")]
    Completions {
        /// The shell to write the script for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  Start with the defaults and point a client at the name server:
    skiff standalone
    # then, in a RocketMQ client: namesrvAddr=127.0.0.1:9876
  Keep data elsewhere and use synchronous flushing:
    skiff standalone --data /var/lib/skiff --set flushDiskType=SYNC_FLUSH
  Reuse an Apache RocketMQ broker.conf, accepting connections from other hosts:
    skiff standalone -c conf/broker.conf --broker-listen 0.0.0.0:10911 --namesrv-listen 0.0.0.0:9876
  Free ports and a scratch directory (tests):
    skiff standalone --data /tmp/skiff-test --namesrv-listen 127.0.0.1:0 --broker-listen 127.0.0.1:0

Settings are applied in this order, later ones winning: Skiff's defaults, the -c file, then \
--data, --broker-listen, SKIFF_<key> environment variables and --set. The broker always registers \
with the name server of this process. Once both listen, the addresses (with the real ports) are \
printed on stdout.

Kafka clients connect to the Kafka listener (--kafka-listen, 127.0.0.1:9092 by default): \
bootstrap.servers=127.0.0.1:9092. A Kafka topic is a RocketMQ topic, a partition a queue.

Environment (for containers): SKIFF_DATA, SKIFF_NAMESRV_LISTEN, SKIFF_BROKER_LISTEN and \
SKIFF_KAFKA_LISTEN stand for the flags of the same name. Every SKIFF_<key> whose key starts with a lower-case letter, such as \
SKIFF_brokerIP1=10.0.0.5 or SKIFF_flushDiskType=SYNC_FLUSH, is a --set <key>=<value>.")]
pub struct StandaloneArgs {
    /// Data directory (the broker's storePathRootDir) [default: $HOME/skiff-data]
    #[arg(long, value_name = "DIR", env = "SKIFF_DATA")]
    pub data: Option<PathBuf>,

    /// Name server address, IP:PORT (port 0 picks a free port)
    #[arg(
        long,
        value_name = "ADDR",
        env = "SKIFF_NAMESRV_LISTEN",
        default_value = "127.0.0.1:9876"
    )]
    pub namesrv_listen: SocketAddr,

    /// Broker address, IP:PORT; the IP is also the one published to clients unless brokerIP1 is set
    /// [default: 127.0.0.1:10911]
    #[arg(long, value_name = "ADDR", env = "SKIFF_BROKER_LISTEN")]
    pub broker_listen: Option<SocketAddr>,

    /// Where Kafka clients connect (bootstrap.servers), IP:PORT; the kafkaListen key also sets it
    /// [default: the broker's IP, port 9092 (a free port when the broker's is 0); if that port is
    /// taken, or ACL or TLS is required, the broker starts without it]
    #[arg(long, value_name = "ADDR", env = "SKIFF_KAFKA_LISTEN")]
    pub kafka_listen: Option<SocketAddr>,

    /// Broker config: .toml, or Java properties (broker.conf); keys are Apache RocketMQ's
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Override one broker setting, e.g. --set brokerName=broker-b (repeatable; wins over -c)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub set: Vec<(String, String)>,
}

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  Listen on all interfaces, port 9876 (Apache RocketMQ's default):
    skiff namesrv
  Use a namesrv.conf / namesrv.properties (or a .toml file with the same keys):
    skiff namesrv -c conf/namesrv.conf --listen 127.0.0.1:9876")]
pub struct NamesrvArgs {
    /// Name server config: .toml, or Java properties (namesrv.conf); keys are Apache RocketMQ's
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Address to listen on, IP:PORT [default: 0.0.0.0:9876, or bindAddress/listenPort from -c]
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,

    /// Override one setting, e.g. --set scanNotActiveBrokerInterval=10000 (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub set: Vec<(String, String)>,
}

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  Start from an Apache RocketMQ broker.conf (brokerName, namesrvAddr, storePathRootDir, ...):
    skiff broker -c conf/broker.conf
  The same settings in TOML, with the same (Java) key names:
    skiff broker -c broker.toml --set listenPort=10921

Settings Skiff does not implement are ignored with a warning; misspelled keys are errors. \
namesrvAddr defaults to the NAMESRV_ADDR environment variable, as in Apache RocketMQ.")]
pub struct BrokerArgs {
    /// Broker config: .toml, or Java properties (broker.conf); keys are Apache RocketMQ's
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: PathBuf,

    /// Override one setting, e.g. --set brokerName=broker-b (repeatable; wins over -c)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = key_value)]
    pub set: Vec<(String, String)>,
}

fn key_value(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err(format!(
            "expected KEY=VALUE with a Java setting name, such as listenPort=10911, not {arg:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn broker_requires_a_config_file() {
        let parsed = Cli::try_parse_from(["skiff", "broker", "--set", "a=b"]);
        assert!(parsed.is_err(), "{parsed:?}");
    }

    #[test]
    fn set_splits_at_the_first_equals_sign() {
        assert_eq!(
            key_value("namesrvAddr=a:1;b:2").unwrap(),
            ("namesrvAddr".into(), "a:1;b:2".into())
        );
        assert_eq!(key_value("k=a=b").unwrap(), ("k".into(), "a=b".into()));
        assert!(key_value("novalue").is_err());
        assert!(key_value("=x").is_err());
    }
}
