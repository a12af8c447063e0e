//! `skiff migrate cutover` and `skiff migrate rollback`: a broker group's master role moves to
//! its slave, from the Java master to the Skiff slave or back. Both are one procedure, in four
//! steps that each look before they act, so an interrupted run can be run again:
//!
//! 1. writes stop on the master (`brokerPermission` loses its write bit; the master re-registers
//!    read-only, and producers move on at their next route refresh);
//! 2. the slave comes to hold everything: the `verify` checks are repeated until all are equal,
//!    the master's committed offsets copied onto the slave meanwhile (a slave syncs them only
//!    every 60 s);
//! 3. the master steps down: a Java master is stopped by its operator (the step says how and
//!    waits); a Skiff master turns itself into a slave (UPDATE_BROKER_CONFIG `brokerRole=SLAVE`,
//!    restarting in place), ready to copy from the new master;
//! 4. the slave takes over: a Skiff slave is promoted (UPDATE_BROKER_CONFIG `brokerId=0`, in
//!    place); a Java slave, which has no promotion at runtime, is restarted as master by its
//!    operator (the step says which lines of its `broker.conf` change, and waits). The step ends
//!    once the name servers list the new master.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use skiff_model::command::{QueueRef, Request};
use skiff_model::route::MASTER_ID;

use super::cluster::{self, Group, Runtime};
use super::verify::{consumer_offsets, verify_pair, Check, Outcome};
use crate::admin::broker::{broker_config, update_broker_config};
use crate::admin::client::{Admin, Master};
use crate::admin::output::Shown;
use crate::bench::parse_duration;

/// Java's `PermName.PERM_WRITE`.
const PERM_WRITE: i32 = 1 << 1;
/// Read and write: what a broker that takes over is given.
const PERM_READ_WRITE: i32 = 6;

#[derive(Debug, Args)]
#[command(after_long_help = "\
What happens, step by step (each is skipped when already done, so run it again after an \
interruption):
  1. writes stop on the Java master (brokerPermission=4: routes turn read-only; producers' sends \
fail until step 4, consumers keep reading);
  2. wait until the Skiff slave holds everything (the verify checks all equal; committed offsets \
are copied from the master meanwhile);
  3. you stop the Java master (sh bin/mqshutdown broker); the command waits for it;
  4. the Skiff slave becomes the master in place (same address, brokerId 0) and the name servers \
route to it; clients follow at their next route refresh (30 s by default), without a restart.

Examples:
  skiff migrate cutover -n 10.0.0.5:9876 -b broker-a
  The master was SYNC_MASTER with another slave to come:
    skiff migrate cutover -n 10.0.0.5:9876 -b broker-a --role SYNC_MASTER
  An earlier run was interrupted after it saw the slave hold everything and the master stopped:
    skiff migrate cutover -n 10.0.0.5:9876 -b broker-a --master-stopped

Exit status 0 once the Skiff broker is the group's master (or already was); 1 when a check \
fails or a wait times out: the reason goes to stderr and the cluster stays as the last step left \
it (writes stay stopped until you run it again or give them back with skiff admin broker config \
set brokerPermission=6).")]
pub struct CutoverArgs {
    #[command(flatten)]
    pub handover: HandoverArgs,

    /// The role the Skiff broker takes
    #[arg(long, value_enum, default_value = "async-master")]
    pub role: MasterRole,

    /// The master is gone already, stopped after an earlier cutover saw the slave hold
    /// everything: promote the Skiff slave without comparing it with the master
    #[arg(long)]
    pub master_stopped: bool,
}

#[derive(Debug, Args)]
#[command(after_long_help = "\
Before: a Java slave of the Skiff master, started with the Java broker's own broker.conf \
(brokerId=1, brokerRole=SLAVE) and caught up (skiff migrate replicate, skiff migrate verify).

What happens, step by step (each is skipped when already done, so run it again after an \
interruption):
  1. writes stop on the Skiff master (brokerPermission=4);
  2. wait until the Java slave holds everything (the verify checks all equal; committed offsets \
are copied from the master meanwhile);
  3. the Skiff master becomes a slave in place (a free brokerId, brokerRole=SLAVE): it will copy \
from the Java broker once that is master, so a later cutover starts caught up;
  4. you restart the Java slave as master (in its broker.conf brokerId=0, \
brokerRole=ASYNC_MASTER and brokerPermission=6; the command prints the lines) and the command \
waits until the name servers route to it.

Examples:
  skiff migrate rollback -n 10.0.0.5:9876 -b broker-a
  skiff migrate rollback -n 10.0.0.5:9876 -b broker-a --slave 10.0.0.6:10911

Exit status 0 once the Java broker is the group's master (or already was); 1 when a check fails \
or a wait times out.")]
pub struct RollbackArgs {
    #[command(flatten)]
    pub handover: HandoverArgs,
}

#[derive(Debug, Args)]
pub struct HandoverArgs {
    /// The broker group [default: the only one]
    #[arg(short = 'b', long = "broker", value_name = "NAME")]
    pub broker: Option<String>,

    /// The slave that takes over, when the group has several [default: the only Skiff slave
    /// (cutover) or Java slave (rollback)]
    #[arg(long, value_name = "ADDR")]
    pub slave: Option<String>,

    /// How long the slave may take to hold everything once writes stopped
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "5m")]
    pub timeout: Duration,

    /// How long to wait for what you are asked to do (stop or restart a Java broker)
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "10m")]
    pub wait_operator: Duration,

    /// How often to ask the brokers how far they are
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "1s")]
    pub interval: Duration,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MasterRole {
    AsyncMaster,
    SyncMaster,
}

impl MasterRole {
    fn java(self) -> &'static str {
        match self {
            MasterRole::AsyncMaster => "ASYNC_MASTER",
            MasterRole::SyncMaster => "SYNC_MASTER",
        }
    }
}

/// One broker of the group, as asked.
#[derive(Debug)]
struct Member {
    id: i64,
    addr: String,
    skiff: bool,
}

/// The group's registered brokers that answer, by id; those that do not are said on stderr.
async fn members(admin: &Admin, group: &Group) -> Vec<Member> {
    let mut found = Vec::new();
    for (id, addr) in &group.brokers {
        match Runtime::read(admin, addr).await {
            Ok(runtime) => found.push(Member {
                id: *id,
                addr: addr.clone(),
                skiff: runtime.is_skiff(),
            }),
            Err(err) => eprintln!(
                "{}: broker {id} at {addr} is registered but does not answer: {}",
                group.name,
                crate::health::describe(&err)
            ),
        }
    }
    found
}

async fn the_group(admin: &Admin, name: Option<&String>) -> Result<Group> {
    let only: Vec<String> = name.into_iter().cloned().collect();
    let mut groups = cluster::groups(admin, &only).await?;
    if groups.len() > 1 {
        bail!(
            "the cluster has {} broker groups ({}): name one with -b (a cutover moves one group \
             at a time)",
            groups.len(),
            groups
                .iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(groups.remove(0))
}

/// The slave that takes over: `--slave`, or the only one of the wanted kind.
fn pick_slave<'a>(
    members: &'a [Member],
    wanted: Option<&String>,
    skiff: bool,
    group: &str,
) -> Result<&'a Member> {
    let kind = if skiff { "Skiff" } else { "Java" };
    let mut candidates = members
        .iter()
        .filter(|m| m.id != MASTER_ID && m.skiff == skiff);
    if let Some(addr) = wanted {
        return members
            .iter()
            .find(|m| m.id != MASTER_ID && m.skiff == skiff && &m.addr == addr)
            .with_context(|| format!("{addr} is not a {kind} slave of {group} that answers"));
    }
    match (candidates.next(), candidates.next()) {
        (Some(one), None) => Ok(one),
        (None, _) if skiff => bail!(
            "{group} has no Skiff slave that answers: start one (skiff migrate plan writes its \
             config) and let it catch up (skiff migrate replicate)"
        ),
        (None, _) => bail!(
            "{group} has no Java slave that answers: start one of the Skiff master (the Java \
             broker's broker.conf with brokerId=1 and brokerRole=SLAVE) and let it catch up \
             (skiff migrate replicate)"
        ),
        (Some(_), Some(_)) => bail!("{group} has several {kind} slaves: name one with --slave"),
    }
}

pub async fn cutover(admin: &Admin, args: CutoverArgs) -> Result<Shown> {
    let group = the_group(admin, args.handover.broker.as_ref()).await?;
    let name = group.name.clone();
    let members = members(admin, &group).await;
    let master = members.iter().find(|m| m.id == MASTER_ID);
    if let Some(master) = master.filter(|m| m.skiff) {
        return Ok(done(
            &name,
            &master.addr,
            "Skiff",
            "already the master: nothing to do",
        ));
    }
    let slave = pick_slave(&members, args.handover.slave.as_ref(), true, &name)?;
    match master {
        Some(master) => {
            hold_everything(admin, &name, &master.addr, &slave.addr, &args.handover).await?;
            wait_operator(
                admin,
                &master.addr,
                &format!(
                    "{name}: the Skiff slave at {} holds everything. Stop the Java master at {} now \
                     (on its host: sh bin/mqshutdown broker); waiting for it to go. If this run is \
                     interrupted from here on, run it again with --master-stopped.",
                    slave.addr, master.addr
                ),
                Gone,
                args.handover.wait_operator,
            )
            .await?;
        }
        None if args.master_stopped => eprintln!(
            "{name}: no master registered; promoting the Skiff slave at {} as --master-stopped \
             says it holds everything",
            slave.addr
        ),
        None => bail!(
            "{name} has no master registered, and its Skiff slave at {} cannot be compared with \
             it: if an earlier cutover saw the slave hold everything before the master stopped, \
             run again with --master-stopped; otherwise start the master again and run cutover",
            slave.addr
        ),
    }
    let role = args.role.java();
    update_broker_config(
        admin,
        &slave.addr,
        &format!("brokerId={MASTER_ID}\nbrokerRole={role}\nbrokerPermission={PERM_READ_WRITE}\n"),
    )
    .await
    .with_context(|| format!("promoting the Skiff slave at {}", slave.addr))?;
    wait_registered(
        admin,
        &name,
        &slave.addr,
        MASTER_ID,
        args.handover.wait_operator,
    )
    .await?;
    Ok(done(
        &name,
        &slave.addr,
        "Skiff",
        &format!(
            "now the master ({role}); clients follow at their next route refresh (30 s by \
             default). To go back: start a Java slave of it, then skiff migrate rollback"
        ),
    ))
}

pub async fn rollback(admin: &Admin, args: RollbackArgs) -> Result<Shown> {
    let args = args.handover;
    let group = the_group(admin, args.broker.as_ref()).await?;
    let name = group.name.clone();
    let members = members(admin, &group).await;
    let master = members.iter().find(|m| m.id == MASTER_ID);
    if let Some(master) = master.filter(|m| !m.skiff) {
        return Ok(done(
            &name,
            &master.addr,
            "Java",
            "already the master: nothing to do",
        ));
    }
    let slave = pick_slave(&members, args.slave.as_ref(), false, &name)?;
    match master {
        Some(master) => {
            hold_everything(admin, &name, &master.addr, &slave.addr, &args).await?;
            let id = group.free_slave_id();
            update_broker_config(
                admin,
                &master.addr,
                &format!("brokerId={id}\nbrokerRole=SLAVE\nbrokerPermission={PERM_READ_WRITE}\n"),
            )
            .await
            .with_context(|| format!("turning the Skiff master at {} into a slave", master.addr))?;
            wait_registered(admin, &name, &master.addr, id, args.wait_operator).await?;
            eprintln!(
                "{name}: the Skiff broker at {} is now a slave (brokerId {id})",
                master.addr
            );
        }
        None if members.iter().any(|m| m.skiff) => eprintln!(
            "{name}: the Skiff broker is a slave already; waiting for the Java slave at {} to \
             come back as master",
            slave.addr
        ),
        None => bail!("{name} has no master registered and no Skiff broker: nothing to roll back"),
    }
    wait_operator(
        admin,
        &slave.addr,
        &format!(
            "{name}: restart the Java slave at {} as the master now: in its broker.conf set\n  \
             brokerId=0\n  brokerRole=ASYNC_MASTER\n  brokerPermission=6   (a Java broker \
             writes brokerPermission=4 into it when a cutover stops its writes)\nthen sh \
             bin/mqshutdown broker; sh bin/mqbroker -c broker.conf. Waiting for it to register \
             as master.",
            slave.addr
        ),
        RegisteredAsMaster(name.clone()),
        args.wait_operator,
    )
    .await?;
    Ok(done(
        &name,
        &slave.addr,
        "Java",
        "the master again; the Skiff broker copies from it as a slave",
    ))
}

fn done(group: &str, addr: &str, kind: &str, what: &str) -> Shown {
    Shown::new(
        json!({ "brokerName": group, "master": addr, "masterKind": kind }),
        format!("{group}: the {kind} broker at {addr} is {what}\n"),
    )
}

/// Steps 1 and 2: writes stop on `master`, then wait until `slave` holds all it has.
async fn hold_everything(
    admin: &Admin,
    group: &str,
    master: &str,
    slave: &str,
    args: &HandoverArgs,
) -> Result<()> {
    let who = Master {
        name: group.to_string(),
        addr: master.to_string(),
    };
    let settings = broker_config(admin, &who).await?;
    let permission: i32 = settings
        .get("brokerPermission")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(PERM_READ_WRITE);
    if permission & PERM_WRITE != 0 {
        update_broker_config(
            admin,
            master,
            &format!("brokerPermission={}\n", permission & !PERM_WRITE),
        )
        .await
        .with_context(|| format!("stopping writes on {master}"))?;
        eprintln!(
            "{group}: writes stopped on the master at {master} (brokerPermission={}); producers \
             fail over at their next route refresh",
            permission & !PERM_WRITE
        );
    }
    let bar = spinner(group);
    let deadline = Instant::now() + args.timeout;
    loop {
        let checks = verify_pair(admin, master, slave).await?;
        if let Some(diverged) = checks.iter().find(|c| c.outcome == Outcome::Diverged) {
            bar.abandon();
            bail!(
                "{group}: the slave at {slave} disagrees with its master ({}: {}); it must never \
                 take over. Writes stay stopped on {master}: give them back with skiff admin \
                 broker config set brokerPermission=6",
                diverged.name,
                diverged.detail
            );
        }
        let Some(lagging) = checks.iter().find(|c| c.outcome != Outcome::Equal) else {
            bar.finish_and_clear();
            eprintln!("{group}: the slave at {slave} holds everything the master at {master} has");
            return Ok(());
        };
        bar.set_message(format!("waiting for {}: {}", lagging.name, lagging.detail));
        if only_offsets_differ(&checks) {
            copy_offsets(admin, master, slave).await?;
        }
        if Instant::now() >= deadline {
            bar.abandon();
            bail!(
                "{group}: the slave at {slave} still lags after {:?} ({}: {}); writes stay \
                 stopped on {master}: run again to keep waiting",
                args.timeout,
                lagging.name,
                lagging.detail
            );
        }
        tokio::time::sleep(args.interval).await;
    }
}

fn only_offsets_differ(checks: &[Check]) -> bool {
    checks
        .iter()
        .all(|c| c.outcome == Outcome::Equal || c.name == "consumer offsets")
}

/// Commits the master's offsets on the slave (which takes them as from a consumer), so that the
/// slave need not wait for its next metadata sync. A refusal (a Java slave that does not know
/// the group yet) is left to that sync.
async fn copy_offsets(admin: &Admin, master: &str, slave: &str) -> Result<()> {
    let on_master = consumer_offsets(admin, master).await?;
    let on_slave = consumer_offsets(admin, slave).await?;
    for (key, queues) in &on_master {
        let Some((topic, group)) = key.split_once('@') else {
            continue;
        };
        for (queue_id, offset) in queues {
            if on_slave.get(key).and_then(|q| q.get(queue_id)) == Some(offset) {
                continue;
            }
            let request = Request::UpdateConsumerOffset {
                group: group.to_string(),
                queue: QueueRef {
                    topic: topic.to_string(),
                    queue_id: *queue_id,
                    physical: true,
                },
                offset: *offset,
            };
            // Checked by the next round of `verify_pair`.
            let _ = admin.call(slave, &request).await;
        }
    }
    Ok(())
}

/// What [`wait_operator`] waits for.
trait Awaited {
    async fn reached(&self, admin: &Admin, addr: &str) -> bool;
}

/// The broker no longer answers.
struct Gone;

impl Awaited for Gone {
    async fn reached(&self, admin: &Admin, addr: &str) -> bool {
        Runtime::read(admin, addr).await.is_err()
    }
}

/// The name servers list the broker as its group's master.
struct RegisteredAsMaster(String);

impl Awaited for RegisteredAsMaster {
    async fn reached(&self, admin: &Admin, addr: &str) -> bool {
        registered_as(admin, &self.0, addr, MASTER_ID).await
    }
}

/// Says what the operator must do (unless it is done already) and waits until it is.
async fn wait_operator(
    admin: &Admin,
    addr: &str,
    instruction: &str,
    until: impl Awaited,
    limit: Duration,
) -> Result<()> {
    if until.reached(admin, addr).await {
        return Ok(());
    }
    eprintln!("{instruction}");
    let deadline = Instant::now() + limit;
    while !until.reached(admin, addr).await {
        if Instant::now() >= deadline {
            bail!("not done within {limit:?}: {instruction}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(())
}

async fn registered_as(admin: &Admin, group: &str, addr: &str, id: i64) -> bool {
    match cluster::groups(admin, &[group.to_string()]).await {
        Ok(groups) => groups
            .first()
            .is_some_and(|g| g.brokers.get(&id).map(String::as_str) == Some(addr)),
        Err(_) => false,
    }
}

/// Waits until the broker that restarts in place with a new role registers at `id` and answers.
async fn wait_registered(
    admin: &Admin,
    group: &str,
    addr: &str,
    id: i64,
    limit: Duration,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        if registered_as(admin, group, addr, id).await && Runtime::read(admin, addr).await.is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "the broker at {addr} did not register as brokerId {id} of {group} within \
                 {limit:?}: look at its log"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn spinner(group: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} {prefix} {msg} ({elapsed})")
            .expect("a valid template"),
    );
    bar.set_prefix(group.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: i64, addr: &str, skiff: bool) -> Member {
        Member {
            id,
            addr: addr.into(),
            skiff,
        }
    }

    #[test]
    fn the_slave_that_takes_over_is_the_only_one_of_its_kind_or_named() {
        let members = [
            member(0, "java-master", false),
            member(1, "skiff", true),
            member(2, "java-slave", false),
        ];
        assert_eq!(pick_slave(&members, None, true, "g").unwrap().addr, "skiff");
        assert_eq!(
            pick_slave(&members, None, false, "g").unwrap().addr,
            "java-slave"
        );
        let named = "java-slave".to_string();
        assert_eq!(
            pick_slave(&members, Some(&named), false, "g").unwrap().id,
            2
        );
        let err = pick_slave(&members, Some(&named), true, "g").unwrap_err();
        assert!(err.to_string().contains("not a Skiff slave"), "{err}");
        let master = "java-master".to_string();
        assert!(pick_slave(&members, Some(&master), true, "g").is_err());
        let two = [member(1, "a", true), member(2, "b", true)];
        let err = pick_slave(&two, None, true, "g").unwrap_err().to_string();
        assert!(err.contains("--slave"), "{err}");
        let err = pick_slave(&two, None, false, "g").unwrap_err().to_string();
        assert!(err.contains("no Java slave"), "{err}");
    }

    #[test]
    fn offsets_are_copied_only_when_nothing_else_differs() {
        let check = |name, outcome| Check {
            name,
            outcome,
            detail: String::new(),
        };
        assert!(only_offsets_differ(&[
            check("CommitLog end", Outcome::Equal),
            check("consumer offsets", Outcome::Lagging),
        ]));
        assert!(!only_offsets_differ(&[
            check("CommitLog end", Outcome::Lagging),
            check("consumer offsets", Outcome::Lagging),
        ]));
    }
}
