//! The broker under test: Skiff (`skiff standalone`) or Apache RocketMQ (name server and broker
//! JVMs from Maven Central), on free loopback ports with a temporary data directory, started,
//! probed until ready, stopped gracefully or killed, and restarted on the same ports and data,
//! possibly as the other kind of broker (the store compatibility tests hand one data directory
//! from Java to Skiff and back).

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::container::{self, Container};
use crate::java;
use crate::process::Proc;
use crate::remoting::{self, code, Conn};
use crate::runtime::{self, Runtime, Server};
use crate::settings::{self, TargetKind};
use crate::tls::TlsOptions;

/// How long a target may take to answer after start (the Java broker needs several seconds).
const READY_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a graceful stop may take.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// The name of the first broker group.
pub const BROKER_A: &str = "broker-a";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDisk {
    Async,
    Sync,
}

impl FlushDisk {
    fn java_name(self) -> &'static str {
        match self {
            FlushDisk::Async => "ASYNC_FLUSH",
            FlushDisk::Sync => "SYNC_FLUSH",
        }
    }
}

/// How a target is configured. The store settings are written in the same way for either kind,
/// so that both brokers agree on the layout of a shared data directory.
#[derive(Debug, Clone)]
pub struct Options {
    pub kind: TargetKind,
    pub flush: FlushDisk,
    /// `mappedFileSizeCommitLog`.
    pub commit_log_size: u64,
    /// `mappedFileSizeConsumeQueue`: a multiple of the 20-byte entry.
    pub consume_queue_size: u64,
    /// `maxMessageSize`: smaller than a CommitLog segment (Skiff insists; Java would fail puts).
    pub max_message_size: u64,
    /// More broker settings in Java's names, given to either kind (e.g. short transaction check
    /// periods so that a test takes seconds).
    pub broker_settings: Vec<(&'static str, String)>,
    /// `enablePropertyFilter` (Java's default is off; the SQL92 scenarios need it on).
    pub enable_property_filter: bool,
    /// TLS on both listeners (Java's `tls.server.*`); the Java clients then connect with
    /// `-Dtls.enable=true` ([`Target::client_jvm_args`]).
    pub tls: Option<TlsOptions>,
    /// The Apache broker's heap and GC flags; `None` for the harness's small heap (benchmarks
    /// give runbroker.sh's production flags here).
    pub apache_broker_jvm: Option<Vec<String>>,
    /// ACL 1.0 on (`aclEnable=true`) with this `plain_acl.yml`; Apache reads it from
    /// `$ROCKETMQ_HOME/conf/`, Skiff from `rocketmq.acl.plain.file`. Apache 5.3 has no ACL 1.0
    /// (its `aclEnable` does nothing): run these against `SKIFF_COMPAT_APACHE_VERSION=4.9.7`.
    pub acl: Option<AclOptions>,
    /// ACL 2.0 authentication on (Apache 5.3's `authenticationEnabled`, users in the broker's
    /// store) with this super user, which the harness's probes and mqadmin sign as.
    pub auth: Option<AuthOptions>,
    /// The names of more broker groups in the cluster (one master each, registered with the
    /// same name server), each a process of its own: `skiff broker`, or another Java broker.
    /// The first group is always `broker-a`, in the standalone process for Skiff.
    pub more_broker_groups: Vec<&'static str>,
    /// Skiff only: the standalone process also serves Kafka clients, on a free loopback port of
    /// its own (`--kafka-listen`, or `kafkaListen` for the container), over the same topics and
    /// store ([`Target::kafka_bootstrap`]). Apache RocketMQ has no Kafka listener: starting an
    /// Apache target with this set fails.
    pub kafka_listen: bool,
}

/// The super user of a target with ACL 2.0 authentication (`initAuthenticationUser`).
#[derive(Debug, Clone)]
pub struct AuthOptions {
    pub username: String,
    pub password: String,
}

/// The ACL file of a target, and the admin account of it that the harness signs its own probes
/// with.
#[derive(Debug, Clone)]
pub struct AclOptions {
    pub plain_acl_yml: String,
    pub probe_access_key: String,
    pub probe_secret_key: String,
}

impl Options {
    /// The target chosen by `SKIFF_COMPAT_TARGET`, with 10 MiB CommitLog segments and Java's
    /// other defaults.
    pub fn new(flush: FlushDisk) -> Result<Options> {
        Ok(Options {
            kind: settings::target_kind()?,
            flush,
            commit_log_size: 10 * 1024 * 1024,
            consume_queue_size: 300_000 * 20,
            max_message_size: 4 * 1024 * 1024,
            broker_settings: Vec::new(),
            enable_property_filter: true,
            tls: None,
            apache_broker_jvm: None,
            acl: None,
            auth: None,
            more_broker_groups: Vec::new(),
            kafka_listen: false,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM, then wait for the exit.
    Graceful,
    /// SIGKILL (`kill -9`).
    Kill,
}

struct Running {
    /// The kind started last (a restart may switch it).
    kind: TargetKind,
    /// Skiff: the standalone process or container. Apache: the broker (the name server is in
    /// `namesrv`).
    broker: Option<Server>,
    namesrv: Option<Server>,
    /// The brokers of [`Options::more_broker_groups`], in that order.
    more_brokers: Vec<Server>,
    starts: u32,
}

pub struct Target {
    dir: PathBuf,
    namesrv_port: u16,
    broker_port: u16,
    /// The ports of [`Options::more_broker_groups`], in that order.
    more_broker_ports: Vec<u16>,
    /// The Kafka port of [`Options::kafka_listen`].
    kafka_port: Option<u16>,
    opts: Options,
    running: Mutex<Running>,
}

/// A free loopback port `p` for which `p + offsets` are free too (the Java broker also listens on
/// listenPort - 2 and listenPort + 1).
///
/// Ports come from below Linux's ephemeral range (32768-60999): a port the kernel hands out for
/// `bind(0)` or as the local end of an outgoing connection is free now but may be taken by the time
/// a broker restarts on it (a Java broker's HA port once lost that race in CI). Probing from a
/// per-process pseudo-random start keeps parallel test processes apart.
pub(crate) fn free_port(offsets: &[i32]) -> Result<u16> {
    const LOW: u32 = 12_000;
    const SPAN: u32 = 20_000; // up to 32000, below the ephemeral range
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    // Successive calls in one process continue where the last stopped, so two picks made before
    // either broker binds never return the same port.
    static CURSOR: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(u32::MAX);
    let seed = (std::process::id().wrapping_mul(7919) ^ nanos) % SPAN;
    let _ = CURSOR.compare_exchange(u32::MAX, seed, Ordering::Relaxed, Ordering::Relaxed);
    for _ in 0..500 {
        let next = CURSOR.fetch_add(7_919, Ordering::Relaxed) % SPAN;
        let p = (LOW + next) as i32;
        let Ok(probe) = TcpListener::bind(("127.0.0.1", p as u16)) else {
            continue;
        };
        let mut held = vec![probe];
        let all_free = offsets.iter().all(|off| {
            let q = p + off;
            (1024..65536).contains(&q)
                && TcpListener::bind(("127.0.0.1", q as u16))
                    .map(|l| held.push(l))
                    .is_ok()
        });
        if all_free {
            return Ok(p as u16);
        }
    }
    bail!("no free loopback port group found below the ephemeral range")
}

/// Marks a directory kept for inspection after a failure.
pub(crate) const FAILED_MARK: &str = "FAILED";
const KEEP_FAILED: Duration = Duration::from_secs(24 * 3600);

/// Removes data dirs left by earlier test processes that are gone (a shared target lives in a
/// static and is never dropped); those of failed tests stay for a day.
fn remove_stale_dirs(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let pid = name.split('-').next().and_then(|p| p.parse::<u32>().ok());
        let Some(pid) = pid else { continue };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let failed_age = fs::metadata(e.path().join(FAILED_MARK))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        if failed_age.is_none_or(|age| age > KEEP_FAILED) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

pub(crate) fn new_dir(label: &str) -> Result<PathBuf> {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let base = std::env::temp_dir().join("skiff-compat");
    fs::create_dir_all(&base)?;
    remove_stale_dirs(&base);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = base.join(format!("{}-{label}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Broker settings as Skiff's TOML config.
fn skiff_toml(settings: impl Iterator<Item = (&'static str, String)>) -> String {
    let mut toml = String::new();
    for (k, v) in settings {
        // `tls.server.mode` must be quoted, or TOML reads a table `tls`.
        let k = if k.contains('.') {
            format!("\"{k}\"")
        } else {
            k.to_string()
        };
        if v.parse::<u64>().is_ok() || v == "true" || v == "false" {
            toml.push_str(&format!("{k} = {v}\n"));
        } else {
            // JSON values (`initAuthenticationUser`) hold quotes.
            let v = v.replace('\\', "\\\\").replace('"', "\\\"");
            toml.push_str(&format!("{k} = \"{v}\"\n"));
        }
    }
    toml
}

fn logback_file(log: &Path) -> String {
    format!(
        r#"<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>{}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level %logger{{24}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="F"/></root>
</configuration>
"#,
        log.display()
    )
}

/// The skiff binary: `$SKIFF_BIN`, else next to the test executable's `deps/` directory.
pub fn skiff_bin() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("SKIFF_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        bail!("SKIFF_BIN={} does not exist", p.display());
    }
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| anyhow!("test executable {} has no profile dir", exe.display()))?;
    let p = profile_dir.join("skiff");
    if p.is_file() {
        Ok(p)
    } else {
        bail!(
            "skiff binary not found at {}: build it first: cargo build --bin skiff",
            p.display()
        )
    }
}

impl Target {
    /// Starts the target chosen by `SKIFF_COMPAT_TARGET` and waits until it serves.
    pub fn start(label: &str, flush: FlushDisk) -> Result<Target> {
        Target::start_with(label, Options::new(flush)?)
    }

    /// Starts a target configured by `opts` and waits until it serves.
    pub fn start_with(label: &str, opts: Options) -> Result<Target> {
        if opts.kafka_listen && opts.kind == TargetKind::Apache {
            bail!("kafka_listen: Apache RocketMQ has no Kafka listener (a Skiff-only option)");
        }
        // The Java broker also binds listenPort - 2 (fast) and listenPort + 1 (HA); keep those
        // free for either kind, since a restart may switch kinds on the same ports.
        let (namesrv_port, broker_port) = (free_port(&[])?, free_port(&[-2, 1])?);
        let more_broker_ports = opts
            .more_broker_groups
            .iter()
            .map(|_| free_port(&[-2, 1]))
            .collect::<Result<_>>()?;
        let kafka_port = if opts.kafka_listen {
            Some(free_port(&[])?)
        } else {
            None
        };
        let t = Target {
            dir: new_dir(label)?,
            namesrv_port,
            broker_port,
            more_broker_ports,
            kafka_port,
            running: Mutex::new(Running {
                kind: opts.kind,
                broker: None,
                namesrv: None,
                more_brokers: Vec::new(),
                starts: 0,
            }),
            opts,
        };
        t.launch()?;
        Ok(t)
    }

    /// The kind of broker started last.
    pub fn kind(&self) -> TargetKind {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).kind
    }

    pub fn namesrv(&self) -> String {
        format!("127.0.0.1:{}", self.namesrv_port)
    }

    pub fn broker(&self) -> String {
        format!("127.0.0.1:{}", self.broker_port)
    }

    /// The `bootstrap.servers` of the Kafka listener of [`Options::kafka_listen`] (`None`
    /// without it).
    pub fn kafka_bootstrap(&self) -> Option<String> {
        self.kafka_port.map(|port| format!("127.0.0.1:{port}"))
    }

    /// The address of the broker group `name` (`broker-a` or one of
    /// [`Options::more_broker_groups`]).
    pub fn broker_of(&self, name: &str) -> Option<String> {
        if name == BROKER_A {
            return Some(self.broker());
        }
        let i = self
            .opts
            .more_broker_groups
            .iter()
            .position(|g| *g == name)?;
        Some(format!("127.0.0.1:{}", self.more_broker_ports[i]))
    }

    /// JVM flags a Java client needs for this target (`-Dtls.enable=true` when it serves TLS).
    pub fn client_jvm_args(&self) -> Vec<String> {
        self.opts
            .tls
            .iter()
            .flat_map(|t| t.client_jvm_args(&self.dir))
            .collect()
    }

    /// Connects the way the target accepts: over TLS when it refuses plain connections.
    pub fn connect(&self, addr: &str, timeout: Duration) -> Result<Conn> {
        match &self.opts.tls {
            Some(tls) if tls.enforcing() => Conn::connect_tls(addr, timeout),
            _ => Conn::connect(addr, timeout),
        }
    }

    /// The target's own directory (data, configs, logs); scenario run dirs go under it too.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The broker's `storePathRootDir`.
    pub fn store_dir(&self) -> PathBuf {
        self.dir.join("store")
    }

    /// Settings both kinds are given, in Java's names: the store layout, the flush mode, and
    /// consumer offsets persisted every second (so that a kill -9 loses at most a second of them).
    fn common_settings(&self) -> Vec<(&'static str, String)> {
        let o = &self.opts;
        let mut settings = vec![
            ("brokerClusterName", "DefaultCluster".into()),
            ("brokerName", BROKER_A.into()),
            ("brokerIP1", "127.0.0.1".into()),
            ("autoCreateTopicEnable", "true".into()),
            ("flushDiskType", o.flush.java_name().into()),
            ("mappedFileSizeCommitLog", o.commit_log_size.to_string()),
            (
                "mappedFileSizeConsumeQueue",
                o.consume_queue_size.to_string(),
            ),
            ("maxMessageSize", o.max_message_size.to_string()),
            ("flushConsumerOffsetInterval", "1000".into()),
            ("enablePropertyFilter", o.enable_property_filter.to_string()),
        ];
        if o.acl.is_some() {
            settings.push(("aclEnable", "true".into()));
        }
        if let Some(auth) = &o.auth {
            let user = format!(
                r#"{{"username":"{}","password":"{}"}}"#,
                auth.username, auth.password
            );
            let inner = format!(
                r#"{{"accessKey":"{}","secretKey":"{}"}}"#,
                auth.username, auth.password
            );
            settings.extend([
                ("authenticationEnabled", "true".to_string()),
                (
                    "authenticationProvider",
                    "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider"
                        .into(),
                ),
                (
                    "authenticationMetadataProvider",
                    "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider"
                        .into(),
                ),
                (
                    "authorizationMetadataProvider",
                    "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider"
                        .into(),
                ),
                ("initAuthenticationUser", user),
                ("innerClientAuthenticationCredentials", inner),
            ]);
        }
        settings.extend(o.broker_settings.iter().cloned());
        settings
    }

    /// What the harness signs its own requests with: the ACL 1.0 probe account or the ACL 2.0
    /// super user (access key, secret key).
    pub fn credentials(&self) -> Option<(String, String)> {
        if let Some(acl) = &self.opts.acl {
            return Some((acl.probe_access_key.clone(), acl.probe_secret_key.clone()));
        }
        self.opts
            .auth
            .as_ref()
            .map(|a| (a.username.clone(), a.password.clone()))
    }

    /// Where the target reads its `plain_acl.yml`.
    pub fn acl_file(&self, kind: TargetKind) -> PathBuf {
        match kind {
            TargetKind::Skiff => self.dir.join("plain_acl.yml"),
            TargetKind::Apache => self.dir.join("home/conf/plain_acl.yml"),
        }
    }

    /// Replaces the target's `plain_acl.yml` (the brokers reload it by themselves).
    pub fn write_acl(&self, yml: &str) -> Result<()> {
        let path = self.acl_file(self.kind());
        fs::create_dir_all(path.parent().expect("a parent"))?;
        // Written aside and renamed, so a poll never reads half a file.
        let tmp = path.with_extension("yml.tmp");
        fs::write(&tmp, yml)?;
        fs::rename(&tmp, &path)?;
        Ok(())
    }

    fn write_config(&self, kind: TargetKind) -> Result<()> {
        if let Some(acl) = &self.opts.acl {
            let path = self.acl_file(kind);
            if !path.exists() {
                fs::create_dir_all(path.parent().expect("a parent"))?;
                fs::write(&path, &acl.plain_acl_yml)?;
            }
        }
        match kind {
            TargetKind::Skiff => {
                let mut toml = String::new();
                if self.opts.acl.is_some() {
                    // A dotted key must be quoted in TOML.
                    toml.push_str(&format!(
                        "\"rocketmq.acl.plain.file\" = \"{}\"\n",
                        self.acl_file(kind).display()
                    ));
                }
                let tls = self
                    .opts
                    .tls
                    .iter()
                    .flat_map(|t| t.server_settings(&self.dir));
                toml.push_str(&skiff_toml(self.common_settings().into_iter().chain(tls)));
                fs::write(self.dir.join("broker.toml"), toml)?;
                for (name, settings) in self.more_broker_settings() {
                    // Skiff keeps the CommitLog under the root dir, always.
                    let settings = settings
                        .into_iter()
                        .filter(|(k, _)| *k != "storePathCommitLog");
                    fs::write(self.dir.join(format!("{name}.toml")), skiff_toml(settings))?;
                }
            }
            TargetKind::Apache => {
                write_apache_home(&self.dir)?;
                fs::write(
                    self.dir.join("namesrv.conf"),
                    format!("listenPort={}\n", self.namesrv_port),
                )?;
                let store = self.store_dir();
                let mut conf = format!(
                    "brokerId=0\n\
                     listenPort={}\n\
                     namesrvAddr={}\n\
                     storePathRootDir={}\n\
                     storePathCommitLog={}\n",
                    self.broker_port,
                    self.namesrv(),
                    store.display(),
                    store.join("commitlog").display(),
                );
                for (k, v) in self.common_settings() {
                    conf.push_str(&format!("{k}={v}\n"));
                }
                fs::write(self.dir.join("broker.conf"), conf)?;
                for (name, settings) in self.more_broker_settings() {
                    let mut conf = "brokerId=0\n".to_string();
                    for (k, v) in settings {
                        conf.push_str(&format!("{k}={v}\n"));
                    }
                    fs::write(self.dir.join(format!("{name}.conf")), conf)?;
                }
            }
        }
        Ok(())
    }

    /// The settings of each of [`Options::more_broker_groups`]: the common ones under its own
    /// name, port and store directory.
    fn more_broker_settings(&self) -> Vec<(&'static str, Vec<(&'static str, String)>)> {
        self.opts
            .more_broker_groups
            .iter()
            .zip(&self.more_broker_ports)
            .map(|(name, port)| {
                let store = self.dir.join(format!("store-{name}"));
                let mut settings: Vec<(&'static str, String)> = self
                    .common_settings()
                    .into_iter()
                    .filter(|(k, _)| *k != "brokerName")
                    .collect();
                settings.extend([
                    ("brokerName", name.to_string()),
                    ("listenPort", port.to_string()),
                    ("namesrvAddr", self.namesrv()),
                    ("storePathRootDir", store.display().to_string()),
                    (
                        "storePathCommitLog",
                        store.join("commitlog").display().to_string(),
                    ),
                ]);
                (*name, settings)
            })
            .collect()
    }

    /// A JVM command for an Apache RocketMQ main class; logs go under `<dir>/home/logs`.
    fn apache_command(&self, classpath: &str, main: &str, conf: &str) -> Command {
        // The broker's heap, GC and JIT: a benchmark's own flags, else
        // `SKIFF_COMPAT_APACHE_BROKER_JVM`, else the harness's small heap (the name server's too).
        let heap = match &self.opts.apache_broker_jvm {
            Some(flags) if main.ends_with("BrokerStartup") => flags.clone(),
            _ => apache_heap(main),
        };
        let tls: Vec<String> = self
            .opts
            .tls
            .iter()
            .flat_map(|t| t.jvm_args(&self.dir))
            .collect();
        apache_command(&self.dir, heap, &tls, classpath, main, &self.dir.join(conf))
    }

    fn launch(&self) -> Result<()> {
        self.spawn_broker()?;
        self.wait_ready()
    }

    /// Starts the processes without waiting until they serve (a crash test may kill the broker
    /// while it is still recovering).
    pub fn spawn_broker(&self) -> Result<()> {
        let mut run = self.running.lock().unwrap_or_else(|e| e.into_inner());
        run.starts += 1;
        let n = run.starts;
        self.write_config(run.kind)?;
        match run.kind {
            TargetKind::Skiff if runtime::runtime()? == Runtime::Container => {
                // The image is configured by its environment, as users configure it.
                let store = self.store_dir();
                fs::create_dir_all(&store)?;
                let (namesrv, broker) = (self.namesrv(), self.broker());
                // The dir is `<pid>-<label>-<n>`; container names get the pid themselves.
                let dir_name = self.dir.file_name().unwrap_or_default().to_string_lossy();
                let label = dir_name.split_once('-').map_or(&*dir_name, |(_, l)| l);
                let mut settings = self.common_settings();
                settings.extend(self.kafka_bootstrap().map(|addr| ("kafkaListen", addr)));
                let c = Container::start(container::Launch {
                    name: &format!("{label}-{n}"),
                    data_dir: &store,
                    namesrv: &namesrv,
                    broker: &broker,
                    settings: &settings,
                })?;
                run.broker = Some(Server::Container(Box::new(c)));
            }
            TargetKind::Skiff => {
                let mut cmd = Command::new(skiff_bin()?);
                cmd.current_dir(&self.dir)
                    .arg("standalone")
                    .arg("--data")
                    .arg(self.store_dir())
                    .arg("--namesrv-listen")
                    .arg(self.namesrv())
                    .arg("--broker-listen")
                    .arg(self.broker())
                    .arg("-c")
                    .arg(self.dir.join("broker.toml"));
                if let Some(addr) = self.kafka_bootstrap() {
                    cmd.arg("--kafka-listen").arg(addr);
                }
                run.broker = Some(Server::Proc(Proc::spawn(
                    &format!("skiff-{n}"),
                    cmd,
                    &self.dir,
                )?));
            }
            TargetKind::Apache => {
                if runtime::runtime()? == Runtime::Container {
                    bail!("SKIFF_COMPAT_RUNTIME=container starts the Skiff image; the Apache target runs as processes only");
                }
                let version = settings::apache_version();
                let cp =
                    java::classpath(&java::java_dir().join("broker"), "apache-broker", &version)?;
                if run.namesrv.is_none() {
                    let cmd = self.apache_command(
                        &cp,
                        "org.apache.rocketmq.namesrv.NamesrvStartup",
                        "namesrv.conf",
                    );
                    run.namesrv = Some(Server::Proc(Proc::spawn("namesrv", cmd, &self.dir)?));
                }
                let cmd = self.apache_command(
                    &cp,
                    "org.apache.rocketmq.broker.BrokerStartup",
                    "broker.conf",
                );
                run.broker = Some(Server::Proc(Proc::spawn(
                    &format!("broker-{n}"),
                    cmd,
                    &self.dir,
                )?));
            }
        }
        if run.more_brokers.is_empty() {
            for name in &self.opts.more_broker_groups {
                let broker = self.spawn_more_broker(run.kind, name)?;
                run.more_brokers.push(broker);
            }
        }
        Ok(())
    }

    /// Starts the broker group `name` of [`Options::more_broker_groups`] from the config
    /// [`Target::write_config`] wrote for it.
    fn spawn_more_broker(&self, kind: TargetKind, name: &str) -> Result<Server> {
        let cmd = match kind {
            TargetKind::Skiff if runtime::runtime()? == Runtime::Container => {
                bail!("more broker groups run as processes only")
            }
            TargetKind::Skiff => {
                let mut cmd = Command::new(skiff_bin()?);
                cmd.current_dir(&self.dir)
                    .arg("broker")
                    .arg("-c")
                    .arg(self.dir.join(format!("{name}.toml")));
                cmd
            }
            TargetKind::Apache => {
                let version = settings::apache_version();
                let cp =
                    java::classpath(&java::java_dir().join("broker"), "apache-broker", &version)?;
                self.apache_command(
                    &cp,
                    "org.apache.rocketmq.broker.BrokerStartup",
                    &format!("{name}.conf"),
                )
            }
        };
        Ok(Server::Proc(Proc::spawn(name, cmd, &self.dir)?))
    }

    /// Fails with the processes' output if one of them has exited.
    pub fn check_alive(&self) -> Result<()> {
        let mut run = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let Running {
            broker,
            namesrv,
            more_brokers,
            ..
        } = &mut *run;
        let processes = [broker.as_mut(), namesrv.as_mut()]
            .into_iter()
            .flatten()
            .chain(more_brokers.iter_mut());
        for p in processes {
            if let Some(st) = p.exited()? {
                bail!("{} exited ({st})\n{}", p.name(), p.output_tail(60));
            }
        }
        if broker.is_none() {
            bail!("the broker is stopped");
        }
        Ok(())
    }

    /// Ready = the name server lists our broker address in its cluster info, and the broker
    /// answers a heartbeat. Polled every 25 ms (Skiff restarts in milliseconds) until
    /// READY_TIMEOUT.
    fn wait_ready(&self) -> Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            self.check_alive()?;
            let last = match self.probe() {
                Ok(()) => return Ok(()),
                Err(e) => format!("{e:#}"),
            };
            if Instant::now() >= deadline {
                bail!(
                    "target not ready within {READY_TIMEOUT:?}: {last}\n{}",
                    self.logs()
                );
            }
            thread::sleep(Duration::from_millis(25));
        }
    }

    fn probe(&self) -> Result<()> {
        let wait = Duration::from_secs(2);
        let mut ns = self.connect(&self.namesrv(), wait)?;
        let info = ns.call(code::GET_BROKER_CLUSTER_INFO, 1, &[], &[], wait)?;
        if info.code() != 0 {
            bail!("cluster info: {}", info.code());
        }
        let addr = self.broker();
        let listed = String::from_utf8_lossy(&info.body);
        for name in self.opts.more_broker_groups.iter().chain([&BROKER_A]) {
            let addr = self.broker_of(name).expect("a group of this target");
            if !listed.contains(&format!("\"{addr}\"")) {
                bail!("name server does not list {addr} ({name}) yet");
            }
        }
        let mut b = self.connect(&addr, wait)?;
        let body = remoting::empty_heartbeat();
        let signed = self
            .credentials()
            .map(|(key, secret)| remoting::signed_fields(&[], &body, &key, &secret));
        let fields: Vec<(&str, &str)> = signed
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let hb = b.call(code::HEART_BEAT, 2, &fields, &body, wait)?;
        if hb.code() != 0 {
            bail!("heartbeat answered {} {}", hb.code(), hb.remark());
        }
        Ok(())
    }

    /// Stops the broker (Skiff: the whole standalone process; Apache: the broker JVM, the name
    /// server stays up). Graceful stops must end within STOP_TIMEOUT.
    pub fn stop(&self, how: Stop) -> Result<()> {
        let mut run = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let mut p = run
            .broker
            .take()
            .ok_or_else(|| anyhow!("the broker is already stopped"))?;
        match how {
            Stop::Kill => {
                p.kill()?;
            }
            Stop::Graceful => {
                p.signal(libc::SIGTERM)?;
                match p.wait_for(STOP_TIMEOUT)? {
                    // Java exits with 143 after its shutdown hooks ran on SIGTERM.
                    Some(st) if st.success() || st.code() == Some(143) => {}
                    Some(st) => bail!(
                        "{} exited with {st} on SIGTERM\n{}",
                        p.name(),
                        p.output_tail(60)
                    ),
                    None => {
                        let tail = p.output_tail(60);
                        p.kill()?;
                        bail!(
                            "{} did not stop within {STOP_TIMEOUT:?} of SIGTERM\n{tail}",
                            p.name()
                        )
                    }
                }
            }
        }
        Ok(())
    }

    /// Stops the broker as [`Target::stop`] does, then a separate name server (Apache) with
    /// SIGTERM, so that the ports are free for either kind of target.
    pub fn stop_all(&self, how: Stop) -> Result<()> {
        self.stop(how)?;
        let mut run = self.running.lock().unwrap_or_else(|e| e.into_inner());
        for mut broker in run.more_brokers.drain(..) {
            broker.signal(libc::SIGTERM)?;
            if broker.wait_for(STOP_TIMEOUT)?.is_none() {
                broker.kill()?;
            }
        }
        if let Some(mut ns) = run.namesrv.take() {
            ns.signal(libc::SIGTERM)?;
            if ns.wait_for(STOP_TIMEOUT)?.is_none() {
                ns.kill()?;
            }
        }
        Ok(())
    }

    /// Starts the broker again on the same ports and data directory, and waits until ready.
    /// Returns how long that took.
    pub fn restart(&self) -> Result<Duration> {
        let started = Instant::now();
        self.launch().context("restart")?;
        Ok(started.elapsed())
    }

    /// After [`Target::stop_all`]: starts `kind` on the same ports and data directory, with the
    /// same store settings, and waits until ready.
    pub fn restart_as(&self, kind: TargetKind) -> Result<Duration> {
        {
            let mut run = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if run.broker.is_some() || run.namesrv.is_some() {
                bail!("restart_as({kind:?}): stop_all first");
            }
            run.kind = kind;
        }
        self.restart()
    }

    /// The broker process's id (Skiff's standalone process, or the Java broker's JVM), for
    /// measurements such as its resident memory.
    pub fn broker_pid(&self) -> Option<i32> {
        let run = self.running.lock().unwrap_or_else(|e| e.into_inner());
        run.broker.as_ref().and_then(Server::pid)
    }

    /// The tail of every process's output and log hints, for failure messages.
    pub fn logs(&self) -> String {
        let run = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = String::new();
        for p in [run.namesrv.as_ref(), run.broker.as_ref()]
            .into_iter()
            .flatten()
            .chain(&run.more_brokers)
        {
            s.push_str(&p.output_tail(40));
            s.push('\n');
        }
        s.push_str(&format!("(target dir: {})", self.dir.display()));
        s
    }
}

/// The heap, GC and JIT flags of an Apache RocketMQ JVM: `SKIFF_COMPAT_APACHE_BROKER_JVM` (or
/// the harness's small heap) for the broker, the small heap for the name server.
pub(crate) fn apache_heap(main: &str) -> Vec<String> {
    if main.ends_with("BrokerStartup") {
        settings::apache_broker_jvm()
    } else {
        settings::APACHE_DEFAULT_JVM
            .split_whitespace()
            .map(String::from)
            .collect()
    }
}

/// A JVM command for an Apache RocketMQ main class (`NamesrvStartup`, `BrokerStartup`) reading
/// `conf`, with `ROCKETMQ_HOME` at `<dir>/home` (logs go under `<dir>/home/logs`) and
/// `java.io.tmpdir` at `<dir>/home/tmp`: a 5.x broker and name server make a self-signed
/// certificate there at each start (Netty's `keyutil_localhost_*`, for `tls.server.mode`
/// permissive), which would otherwise pile up in `/tmp`.
pub(crate) fn apache_command(
    dir: &Path,
    heap: Vec<String>,
    extra_jvm: &[String],
    classpath: &str,
    main: &str,
    conf: &Path,
) -> Command {
    let home = dir.join("home");
    let tmp = home.join("tmp");
    // Should this fail, the JVM says so when it writes there.
    let _ = fs::create_dir_all(&tmp);
    let mut cmd = Command::new(java::java_bin());
    cmd.current_dir(dir)
        .env("ROCKETMQ_HOME", &home)
        .args(heap)
        .arg("-Xshare:auto");
    cmd.args([
        // The store unmaps files through JDK internals; on Java 17 the 4.9 broker
        // otherwise fails to recover a store ("Unable to make ... Cleaner.clean()
        // accessible").
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
        "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    ])
    .arg(format!("-Duser.home={}", home.display()))
    .arg(format!("-Drocketmq.home.dir={}", home.display()))
    .arg(format!("-Djava.io.tmpdir={}", tmp.display()))
    .args(extra_jvm)
    .arg("-cp")
    .arg(classpath)
    .arg(main)
    .arg("-c")
    .arg(conf);
    cmd
}

/// Writes the logback files the 4.9 JVMs need under `<dir>/home/conf` (they exit without them).
pub(crate) fn write_apache_home(dir: &Path) -> Result<()> {
    let home = dir.join("home");
    fs::create_dir_all(home.join("conf"))?;
    for role in ["namesrv", "broker"] {
        fs::write(
            home.join(format!("conf/logback_{role}.xml")),
            logback_file(&home.join(format!("logs/{role}.log"))),
        )?;
    }
    Ok(())
}

impl Drop for Target {
    fn drop(&mut self) {
        let run = self.running.get_mut().unwrap_or_else(|e| e.into_inner());
        run.broker.take();
        run.more_brokers.clear();
        run.namesrv.take();
        // Keep the data and logs of a failed test for inspection (or of every test, if asked).
        if thread::panicking() {
            let _ = fs::write(self.dir.join(FAILED_MARK), b"");
            eprintln!("kept the target dir {} for inspection", self.dir.display());
        } else {
            if !settings::keep_dirs() {
                let _ = fs::remove_dir_all(&self.dir);
            }
        }
    }
}
