//! A master/slave pair of one broker group (`broker-a`) on RocketMQ's classic HA protocol: a name
//! server, a master (`brokerId=0`) and a slave (`brokerId=1`, `brokerRole=SLAVE`), each a process
//! of its own and each either Skiff or Apache RocketMQ, so that every pairing can be proven with the
//! official clients: Apache + Apache (the reference), Skiff + Skiff, an Apache master with a Skiff
//! slave, a Skiff master with an Apache slave.
//!
//! Both brokers read one Java `broker.conf` each, written the same way for either kind. The name
//! server is the master's kind. The slave finds its master through the name server (no
//! `haMasterAddress`), as a default deployment does. The master can be killed (`kill -9`) while
//! the slave and the name server stay up.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::broker_files;
use crate::java;
use crate::process::Proc;
use crate::remoting::{code, Conn};
use crate::runtime::Server;
use crate::settings::{self, TargetKind};
use crate::target::{self, BROKER_A};

const READY_TIMEOUT: Duration = Duration::from_secs(90);
const WAIT: Duration = Duration::from_secs(3);

const QUERY_CONSUMER_OFFSET: i32 = 14;
const SUCCESS: i64 = 0;
/// Java's QUERY_NOT_FOUND: the group has no committed offset for the queue.
const QUERY_NOT_FOUND: i64 = 22;

/// How the pair is set up.
#[derive(Debug, Clone)]
pub struct PairOptions {
    pub master: TargetKind,
    pub slave: TargetKind,
    /// `brokerRole` of the master: `SYNC_MASTER` or `ASYNC_MASTER`.
    pub master_role: &'static str,
    /// More settings for both brokers, in Java's names.
    pub settings: Vec<(&'static str, String)>,
}

pub struct HaPair {
    dir: PathBuf,
    namesrv_port: u16,
    master_port: u16,
    slave_port: u16,
    opts: PairOptions,
    procs: Mutex<Procs>,
    /// Keep the directory (marked FAILED) when dropped: a story failed.
    failed: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Procs {
    namesrv: Option<Server>,
    master: Option<Server>,
    slave: Option<Server>,
}

impl HaPair {
    /// Starts the name server and the master, and waits until the master is registered.
    pub fn start(label: &str, opts: PairOptions) -> Result<HaPair> {
        let pair = HaPair {
            dir: target::new_dir(label)?,
            namesrv_port: target::free_port(&[])?,
            // Java also binds listenPort - 2 and listenPort + 1 (the HA port).
            master_port: target::free_port(&[-2, 1])?,
            slave_port: target::free_port(&[-2, 1])?,
            opts,
            procs: Mutex::new(Procs::default()),
            failed: std::sync::atomic::AtomicBool::new(false),
        };
        pair.write_configs()?;
        let namesrv = pair.spawn_namesrv()?;
        pair.procs().namesrv = Some(namesrv);
        let master = pair.spawn_broker("master", pair.opts.master)?;
        pair.procs().master = Some(master);
        pair.wait_listed(0, &pair.master())?;
        Ok(pair)
    }

    fn procs(&self) -> std::sync::MutexGuard<'_, Procs> {
        self.procs.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn namesrv(&self) -> String {
        format!("127.0.0.1:{}", self.namesrv_port)
    }

    pub fn master(&self) -> String {
        format!("127.0.0.1:{}", self.master_port)
    }

    pub fn slave(&self) -> String {
        format!("127.0.0.1:{}", self.slave_port)
    }

    /// "Apache master + Skiff slave", for messages.
    pub fn describe(&self) -> String {
        format!(
            "{:?} {} + {:?} slave",
            self.opts.master, self.opts.master_role, self.opts.slave
        )
    }

    /// Starts the slave and waits until the name server lists it as `broker-a`'s broker 1.
    pub fn start_slave(&self) -> Result<()> {
        let slave = self.spawn_broker("slave", self.opts.slave)?;
        self.procs().slave = Some(slave);
        self.wait_listed(1, &self.slave())
    }

    /// Starts the slave from `conf` (a Java `broker.conf`) instead of the one the pair wrote, and
    /// waits until the name server lists it at `addr` as broker `id`.
    pub fn start_slave_with(&self, conf: &str, id: u64, addr: &str) -> Result<()> {
        fs::write(self.dir.join("slave.conf"), conf)?;
        let slave = self.spawn_broker("slave", self.opts.slave)?;
        self.procs().slave = Some(slave);
        self.wait_listed(id, addr)
    }

    /// Starts the master's broker (of the master's kind, on the master's port) from `conf`, and
    /// waits until the name server lists it as broker `id`: the old master back as a slave, or
    /// as master again.
    pub fn start_master_with(&self, conf: &str, id: u64) -> Result<()> {
        fs::write(self.dir.join("master.conf"), conf)?;
        let master = self.spawn_broker("master", self.opts.master)?;
        self.procs().master = Some(master);
        self.wait_listed(id, &self.master())
    }

    /// The master's `broker.conf` as it is now (a Java broker rewrites it with every setting at
    /// an UPDATE_BROKER_CONFIG).
    pub fn master_conf(&self) -> Result<String> {
        Ok(fs::read_to_string(self.dir.join("master.conf"))?)
    }

    /// Stops the master (SIGTERM, as an operator stops a broker) and waits for it to exit.
    pub fn stop_master(&self) -> Result<()> {
        let master = self.procs().master.take();
        stop(master.context("the master is not running")?)
    }

    /// Stops the slave (SIGTERM) and waits for it to exit.
    pub fn stop_slave(&self) -> Result<()> {
        let slave = self.procs().slave.take();
        stop(slave.context("the slave is not running")?)
    }

    /// The port the pair set aside for its slave.
    pub fn slave_port(&self) -> u16 {
        self.slave_port
    }

    /// `kill -9` of the master; the slave and the name server stay up.
    pub fn kill_master(&self) -> Result<()> {
        let mut master = self
            .procs()
            .master
            .take()
            .context("the master is not running")?;
        master.kill()?;
        Ok(())
    }

    fn write_configs(&self) -> Result<()> {
        target::write_apache_home(&self.dir)?;
        fs::write(
            self.dir.join("namesrv.conf"),
            format!("listenPort={}\n", self.namesrv_port),
        )?;
        for (name, id, role, port) in [
            ("master", 0, self.opts.master_role, self.master_port),
            ("slave", 1, "SLAVE", self.slave_port),
        ] {
            let store = self.dir.join(format!("store-{name}"));
            let mut conf = format!(
                "brokerClusterName=DefaultCluster\n\
                 brokerName={BROKER_A}\n\
                 brokerId={id}\n\
                 brokerRole={role}\n\
                 brokerIP1=127.0.0.1\n\
                 listenPort={port}\n\
                 namesrvAddr={}\n\
                 storePathRootDir={}\n\
                 storePathCommitLog={}\n\
                 autoCreateTopicEnable=true\n\
                 flushDiskType=ASYNC_FLUSH\n\
                 mappedFileSizeCommitLog={}\n\
                 flushConsumerOffsetInterval=1000\n",
                self.namesrv(),
                store.display(),
                store.join("commitlog").display(),
                10 * 1024 * 1024,
            );
            for (k, v) in &self.opts.settings {
                conf.push_str(&format!("{k}={v}\n"));
            }
            fs::write(self.dir.join(format!("{name}.conf")), conf)?;
        }
        Ok(())
    }

    fn apache_classpath() -> Result<String> {
        java::classpath(
            &java::java_dir().join("broker"),
            "apache-broker",
            &settings::apache_version(),
        )
    }

    fn apache(&self, main: &str, conf: &str) -> Result<Command> {
        Ok(target::apache_command(
            &self.dir,
            target::apache_heap(main),
            &[],
            &Self::apache_classpath()?,
            main,
            &self.dir.join(conf),
        ))
    }

    fn spawn_namesrv(&self) -> Result<Server> {
        let cmd = match self.opts.master {
            TargetKind::Skiff => {
                let mut cmd = Command::new(target::skiff_bin()?);
                cmd.current_dir(&self.dir)
                    .arg("namesrv")
                    .arg("--listen")
                    .arg(self.namesrv());
                cmd
            }
            TargetKind::Apache => {
                self.apache("org.apache.rocketmq.namesrv.NamesrvStartup", "namesrv.conf")?
            }
        };
        Ok(Server::Proc(Proc::spawn("namesrv", cmd, &self.dir)?))
    }

    fn spawn_broker(&self, name: &str, kind: TargetKind) -> Result<Server> {
        let conf = format!("{name}.conf");
        let cmd = match kind {
            TargetKind::Skiff => {
                let mut cmd = Command::new(target::skiff_bin()?);
                cmd.current_dir(&self.dir)
                    .arg("broker")
                    .arg("-c")
                    .arg(self.dir.join(&conf));
                cmd
            }
            TargetKind::Apache => self.apache("org.apache.rocketmq.broker.BrokerStartup", &conf)?,
        };
        Ok(Server::Proc(Proc::spawn(name, cmd, &self.dir)?))
    }

    /// Fails with the processes' output if one of them has exited.
    pub fn check_alive(&self) -> Result<()> {
        let mut procs = self.procs();
        let Procs {
            namesrv,
            master,
            slave,
        } = &mut *procs;
        for p in [namesrv.as_mut(), master.as_mut(), slave.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Some(st) = p.exited()? {
                bail!("{} exited ({st})\n{}", p.name(), p.output_tail(60));
            }
        }
        Ok(())
    }

    /// Waits until the name server's cluster info lists `addr` as broker `id` of `broker-a`.
    pub fn wait_listed(&self, id: u64, addr: &str) -> Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut last = String::new();
        while Instant::now() < deadline {
            self.check_alive()?;
            match self.listed_addrs() {
                Ok(addrs) if addrs.iter().any(|(i, a)| *i == id && a == addr) => return Ok(()),
                Ok(addrs) => last = format!("{BROKER_A} has {addrs:?}"),
                Err(e) => last = format!("{e:#}"),
            }
            thread::sleep(Duration::from_millis(50));
        }
        bail!(
            "the name server did not list {addr} as broker {id} within {READY_TIMEOUT:?}: {last}\n{}",
            self.logs()
        )
    }

    /// `broker-a`'s `brokerAddrs` in the name server's cluster info.
    fn listed_addrs(&self) -> Result<Vec<(u64, String)>> {
        let mut ns = Conn::connect(&self.namesrv(), WAIT)?;
        let info = ns.call(code::GET_BROKER_CLUSTER_INFO, 1, &[], &[], WAIT)?;
        if info.code() != SUCCESS {
            bail!("cluster info: {}", info.code());
        }
        let text = String::from_utf8_lossy(&info.body);
        let quoted = broker_files::quote_int_keys(&text);
        let v: serde_json::Value =
            serde_json::from_str(&quoted).with_context(|| format!("cluster info body: {text}"))?;
        let mut addrs = Vec::new();
        if let Some(map) = v["brokerAddrTable"][BROKER_A]["brokerAddrs"].as_object() {
            for (id, addr) in map {
                if let (Ok(id), Some(addr)) = (id.parse(), addr.as_str()) {
                    addrs.push((id, addr.to_string()));
                }
            }
        }
        Ok(addrs)
    }

    /// Waits until the slave holds what the master holds for `topic` (the max offset of each of
    /// its `queues`) and, if `group` is given, the group's committed offsets of them too.
    pub fn wait_slave_synced(
        &self,
        topic: &str,
        queues: i32,
        group: Option<&str>,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        while Instant::now() < deadline {
            self.check_alive()?;
            match self.slave_behind(topic, queues, group) {
                Ok(None) => return Ok(()),
                Ok(Some(what)) => last = what,
                Err(e) => last = format!("{e:#}"),
            }
            thread::sleep(Duration::from_millis(200));
        }
        bail!(
            "the slave did not catch up within {timeout:?}: {last}\n{}",
            self.logs()
        )
    }

    /// What the slave still lacks, or `None`.
    fn slave_behind(
        &self,
        topic: &str,
        queues: i32,
        group: Option<&str>,
    ) -> Result<Option<String>> {
        let mut m = Conn::connect(&self.master(), WAIT)?;
        let mut s = Conn::connect(&self.slave(), WAIT)?;
        for q in 0..queues {
            let (want, have) = (m.max_offset(topic, q, WAIT)?, s.max_offset(topic, q, WAIT)?);
            if want != have {
                return Ok(Some(format!(
                    "queue {q} of {topic}: max offset {have} on the slave, {want} on the master"
                )));
            }
            if let Some(group) = group {
                let want = consumer_offset(&mut m, topic, group, q)?;
                let have = consumer_offset(&mut s, topic, group, q)?;
                if want != have {
                    return Ok(Some(format!(
                        "queue {q} of {topic}: {group}'s offset {have:?} on the slave, {want:?} on the master"
                    )));
                }
            }
        }
        Ok(None)
    }

    /// Marks the pair failed: its directory stays for inspection when it is dropped, as it does
    /// when a test panics while the pair is alive.
    pub fn keep_as_failed(&self) {
        self.failed
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The tail of every process's output, for failure messages.
    pub fn logs(&self) -> String {
        let procs = self.procs();
        let mut s = String::new();
        for p in [&procs.namesrv, &procs.master, &procs.slave]
            .into_iter()
            .flatten()
        {
            s.push_str(&p.output_tail(40));
            s.push('\n');
        }
        s.push_str(&format!("(pair dir: {})", self.dir.display()));
        s
    }
}

impl Drop for HaPair {
    fn drop(&mut self) {
        let procs = self.procs.get_mut().unwrap_or_else(|e| e.into_inner());
        procs.slave.take();
        procs.master.take();
        procs.namesrv.take();
        if thread::panicking() || *self.failed.get_mut() {
            let _ = fs::write(self.dir.join(target::FAILED_MARK), b"");
            eprintln!("kept the pair dir {} for inspection", self.dir.display());
        } else if !settings::keep_dirs() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

fn stop(mut p: Server) -> Result<()> {
    p.signal(libc::SIGTERM)?;
    match p.wait_for(Duration::from_secs(60))? {
        // Java exits with 143 after its shutdown hooks ran on SIGTERM.
        Some(st) if st.success() || st.code() == Some(143) => Ok(()),
        Some(st) => bail!(
            "{} exited with {st} on SIGTERM\n{}",
            p.name(),
            p.output_tail(40)
        ),
        None => bail!("{} did not stop within 60 s of SIGTERM", p.name()),
    }
}

/// The committed offset of `group` on `queue`, `None` when there is none.
fn consumer_offset(conn: &mut Conn, topic: &str, group: &str, queue: i32) -> Result<Option<i64>> {
    let q = queue.to_string();
    let r = conn.call(
        QUERY_CONSUMER_OFFSET,
        4,
        &[
            ("topic", topic),
            ("consumerGroup", group),
            ("queueId", q.as_str()),
        ],
        b"",
        WAIT,
    )?;
    match r.code() {
        SUCCESS => Ok(Some(
            r.header["extFields"]["offset"]
                .as_str()
                .context("no offset")?
                .parse()?,
        )),
        QUERY_NOT_FOUND => Ok(None),
        _ => bail!(
            "consumer offset of {group} on {topic}/{queue}: {}",
            r.header
        ),
    }
}
