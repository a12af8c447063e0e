//! A Kafka listener under test, against which the Kafka clients' scenarios run
//! ([`crate::kafka_clients`]: the Java client, librdkafka and franz-go).
//!
//! The target is Skiff (`skiff standalone … --kafka-listen`) or, as the reference, a real Apache
//! Kafka broker: one KRaft JVM that is both broker and controller, from Maven Central
//! (`java/kafka-broker/pom.xml`), its storage formatted by Kafka's own tool. Either listens on
//! free loopback ports with a temporary directory, is ready once its Kafka port accepts a
//! connection, can be restarted on the same ports and directory ([`KafkaTarget::restart`]), and is
//! killed when dropped.

use std::fs;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::java;
use crate::kafka_clients::{self, KafkaClient};
use crate::process::{self, Proc};
use crate::settings::{self, TargetKind};
use crate::target::skiff_bin;

/// The Kafka version of the Java client and of the Apache broker; both poms pin it as
/// `kafka.version`.
pub const KAFKA_VERSION: &str = "4.1.1";

/// How long a target may take until its Kafka port accepts (Apache Kafka needs 2-5 s).
const READY_TIMEOUT: Duration = Duration::from_secs(90);
/// Formatting a fresh log directory takes about a second.
const FORMAT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a graceful stop may take (Skiff: well under a second; Apache Kafka: a few seconds of
/// controlled shutdown).
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// The Apache target's cluster id, any 16 bytes in base64url (here "skiff-compat-kfk"): every
/// target formats a directory of its own.
const CLUSTER_ID: &str = "c2tpZmYtY29tcGF0LWtmaw";

/// The broker logs at INFO to stdout, which the harness keeps in `kafka.out`.
const LOG4J2: &str = "appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{HH:mm:ss.SSS} %-5level %c{1} - %msg%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
";

/// `N` distinct free loopback ports, from below Linux's ephemeral range (as `target.rs` picks its
/// own, for the same reason: a port the kernel may hand out to an outgoing connection can be taken
/// before the broker binds it), from a start that differs between test processes.
fn free_ports<const N: usize>() -> Result<[u16; N]> {
    const LOW: u32 = 12_000;
    const SPAN: u32 = 20_000;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let start = (std::process::id().wrapping_mul(7919) ^ nanos) % SPAN;
    let mut ports = [0; N];
    // Held until all are found, so that none is picked twice.
    let mut held = Vec::new();
    for step in 0..500 {
        let port = (LOW + (start + step * 7_919) % SPAN) as u16;
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            ports[held.len()] = port;
            held.push(listener);
            if held.len() == N {
                return Ok(ports);
            }
        }
    }
    bail!("no {N} free loopback ports found below the ephemeral range")
}

/// `$TMPDIR/skiff-compat/<pid>-<label>-<n>`: the layout `target.rs` uses, so that its clean-up of
/// directories left by dead test processes covers these too.
fn new_dir(label: &str) -> Result<PathBuf> {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir()
        .join("skiff-compat")
        .join(format!("{}-{label}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    Ok(dir)
}

/// The Apache broker's `server.properties`: KRaft, one node as broker and controller on loopback
/// ports, topics created on first use with 4 partitions, internal topics with one replica.
fn server_properties(dir: &Path, kafka_port: u16, controller_port: u16) -> String {
    format!(
        "process.roles=broker,controller\n\
         node.id=1\n\
         listeners=PLAINTEXT://127.0.0.1:{kafka_port},CONTROLLER://127.0.0.1:{controller_port}\n\
         advertised.listeners=PLAINTEXT://127.0.0.1:{kafka_port}\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
         inter.broker.listener.name=PLAINTEXT\n\
         controller.listener.names=CONTROLLER\n\
         controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}\n\
         log.dirs={}\n\
         auto.create.topics.enable=true\n\
         num.partitions=4\n\
         offsets.topic.replication.factor=1\n\
         transaction.state.log.replication.factor=1\n\
         transaction.state.log.min.isr=1\n",
        dir.join("kafka-logs").display()
    )
}

/// A running Kafka listener: Skiff or Apache Kafka, chosen by `SKIFF_COMPAT_TARGET`.
pub struct KafkaTarget {
    kind: TargetKind,
    dir: PathBuf,
    /// The Kafka port, then two more: Skiff's name server and broker ports, or Apache Kafka's
    /// controller port (the third unused).
    ports: [u16; 3],
    server: Option<Proc>,
    /// How often the server was started: the first keeps `skiff.out` or `kafka.out`, a restart
    /// writes `skiff-2.out` and so on, so that no earlier log is overwritten.
    launches: u32,
    runs: u32,
    /// Keep the directory: the target did not start.
    failed: bool,
}

impl KafkaTarget {
    /// Starts the target chosen by `SKIFF_COMPAT_TARGET` and waits until its Kafka port accepts.
    /// A target that does not start keeps its directory, as a failed test does.
    pub fn start(label: &str) -> Result<KafkaTarget> {
        let mut target = KafkaTarget {
            kind: settings::target_kind()?,
            dir: new_dir(label)?,
            ports: free_ports()?,
            server: None,
            launches: 0,
            runs: 0,
            failed: false,
        };
        let [kafka, controller, _] = target.ports;
        let started = match target.kind {
            TargetKind::Apache => format_apache(&target.dir, kafka, controller),
            TargetKind::Skiff => Ok(()),
        }
        .and_then(|()| target.launch());
        if let Err(e) = started {
            target.failed = true;
            return Err(e);
        }
        Ok(target)
    }

    /// Starts the server on the target's ports and directory and waits until it is ready.
    fn launch(&mut self) -> Result<()> {
        let [kafka, second, third] = self.ports;
        self.launches += 1;
        let name = |base: &str| match self.launches {
            1 => base.to_string(),
            n => format!("{base}-{n}"),
        };
        let server = match self.kind {
            TargetKind::Skiff => {
                let mut cmd = Command::new(skiff_bin()?);
                cmd.current_dir(&self.dir)
                    .arg("standalone")
                    .arg("--data")
                    .arg(self.dir.join("store"))
                    .arg("--namesrv-listen")
                    .arg(format!("127.0.0.1:{second}"))
                    .arg("--broker-listen")
                    .arg(format!("127.0.0.1:{third}"))
                    .arg("--kafka-listen")
                    .arg(format!("127.0.0.1:{kafka}"));
                Proc::spawn(&name("skiff"), cmd, &self.dir)?
            }
            TargetKind::Apache => {
                let mut cmd = apache_jvm(&self.dir, "kafka.Kafka")?;
                cmd.arg(self.dir.join("server.properties"));
                Proc::spawn(&name("kafka"), cmd, &self.dir)?
            }
        };
        self.server = Some(server);
        self.wait_ready()
    }

    /// Stops the server gracefully (SIGTERM: Skiff must exit 0, the Apache JVM 0 or 143 after its
    /// shutdown hooks) and starts it again on the same ports and directory: Skiff on the same
    /// store, Apache Kafka the same KRaft node on the same log directory, not formatted again.
    /// Returns how long the stop and the start took. A failed restart keeps the directory.
    pub fn restart(&mut self) -> Result<(Duration, Duration)> {
        let result = self.stop_and_launch();
        if result.is_err() {
            self.failed = true;
        }
        result.with_context(|| format!("restart the Kafka target\n{}", self.logs()))
    }

    fn stop_and_launch(&mut self) -> Result<(Duration, Duration)> {
        let started = Instant::now();
        {
            let Some(server) = self.server.as_mut() else {
                bail!("the Kafka target is stopped");
            };
            server.signal(libc::SIGTERM)?;
            match server.wait_for(STOP_TIMEOUT)? {
                Some(st) if st.success() || st.code() == Some(143) => {}
                Some(st) => bail!("{} exited with {st} on SIGTERM", server.name),
                None => bail!(
                    "{} did not stop within {STOP_TIMEOUT:?} of SIGTERM",
                    server.name
                ),
            }
        }
        let stopped = started.elapsed();
        let started = Instant::now();
        self.launch()?;
        Ok((stopped, started.elapsed()))
    }

    /// The `bootstrap.servers` of a client.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.ports[0])
    }

    /// Fails with the server's output if it has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        let Some(server) = self.server.as_mut() else {
            bail!("the Kafka target is stopped");
        };
        if let Some(st) = server.exited()? {
            bail!("{} exited ({st})\n{}", server.name, server.output_tail(60));
        }
        Ok(())
    }

    /// Polls a TCP connect to the Kafka port every 50 ms until READY_TIMEOUT. Apache Kafka opens
    /// its client listener only once the broker is unfenced and serving.
    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let addr = ([127, 0, 0, 1], self.ports[0]).into();
        loop {
            self.check_alive()?;
            let last = match TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                bail!(
                    "Kafka port {} not accepting within {READY_TIMEOUT:?}: {last}\n{}",
                    self.ports[0],
                    self.logs()
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// The tail of the server's output and where the directory is, for failure messages.
    pub fn logs(&self) -> String {
        let tail = self
            .server
            .as_ref()
            .map(|p| p.output_tail(40))
            .unwrap_or_default();
        format!("{tail}\n(target dir: {})", self.dir.display())
    }

    /// Runs a scenario of `client` against this target (`--bootstrap` is added to `args`) in
    /// `runs/<client>-<scenario>-<n>/` and returns its result line. Fails with the scenario's
    /// output and the target's logs unless it exits 0 with a line ending in `result=ok`, or if
    /// the target died.
    pub fn run(
        &mut self,
        client: KafkaClient,
        scenario: &str,
        args: &[(&str, &str)],
    ) -> Result<String> {
        self.runs += 1;
        let run_dir = self
            .dir
            .join(format!("runs/{}-{scenario}-{}", client.name(), self.runs));
        // A dead target fails at once, not after the client's timeouts.
        let result = self
            .check_alive()
            .and_then(|()| kafka_clients::run(client, &self.bootstrap(), scenario, args, &run_dir))
            .and_then(|line| self.check_alive().map(|()| line));
        result.with_context(|| {
            format!(
                "{} {scenario} against {:?}\n{}",
                client.pinned(),
                self.kind,
                self.logs()
            )
        })
    }
}

/// The Apache broker's JVM running `main` (the broker or its storage tool) in `dir`, with the
/// broker's classpath, logging and temporary directory.
fn apache_jvm(dir: &Path, main: &str) -> Result<Command> {
    let cp = java::classpath(
        &java::java_dir().join("kafka-broker"),
        "kafka-broker",
        KAFKA_VERSION,
    )?;
    let mut cmd = Command::new(java::java_bin());
    cmd.current_dir(dir)
        .args(settings::APACHE_DEFAULT_JVM.split_whitespace())
        .arg("-Xshare:auto")
        .arg(format!(
            "-Dlog4j2.configurationFile={}",
            dir.join("log4j2.properties").display()
        ))
        .arg(format!("-Djava.io.tmpdir={}", dir.join("tmp").display()))
        .arg("-cp")
        .arg(&cp)
        .arg(main);
    Ok(cmd)
}

/// Writes the Apache broker's configuration into `dir` and formats a fresh log directory with
/// Kafka's storage tool, once per target: a restart runs the same node on the same directory.
fn format_apache(dir: &Path, kafka_port: u16, controller_port: u16) -> Result<()> {
    let props = dir.join("server.properties");
    fs::write(&props, server_properties(dir, kafka_port, controller_port))?;
    fs::write(dir.join("log4j2.properties"), LOG4J2)?;
    // Native compression libraries unpack themselves into java.io.tmpdir and are deleted only on
    // a clean exit; a killed broker leaves them here, removed with the directory.
    fs::create_dir_all(dir.join("tmp"))?;
    // `--standalone`: a dynamic quorum whose only voter is this node
    // (`controller.quorum.bootstrap.servers`), as Kafka 4's quickstart formats it.
    let mut format = apache_jvm(dir, "kafka.tools.StorageTool")?;
    format
        .args([
            "format",
            "--standalone",
            "--cluster-id",
            CLUSTER_ID,
            "--config",
        ])
        .arg(&props);
    process::run("kafka-format", format, dir, FORMAT_TIMEOUT)
        .context("format the Apache Kafka log directory")?;
    Ok(())
}

/// Marks a directory kept for inspection after a failure (the name `target.rs` uses).
const FAILED_MARK: &str = "FAILED";

impl Drop for KafkaTarget {
    fn drop(&mut self) {
        // Killed, not stopped: the directory goes with it unless a failure keeps it.
        self.server.take();
        if self.failed || thread::panicking() {
            let _ = fs::write(self.dir.join(FAILED_MARK), b"");
            eprintln!(
                "kept the Kafka target dir {} for inspection",
                self.dir.display()
            );
        } else if !settings::keep_dirs() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poms_pin_the_kafka_version() {
        let pin = format!("<kafka.version>{KAFKA_VERSION}</kafka.version>");
        for pom in ["kafka/pom.xml", "kafka-broker/pom.xml"] {
            let text = fs::read_to_string(java::java_dir().join(pom)).unwrap();
            assert!(text.contains(&pin), "{pom} does not pin {pin}");
        }
    }

    #[test]
    fn free_ports_are_distinct() {
        let mut ports = free_ports::<3>().unwrap().to_vec();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 3);
    }
}
