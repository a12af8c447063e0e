//! Helpers for the integration tests: one broker shared by the tests of a test binary, unique
//! names, and running a scenario with every configured client version.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::java::Client;
use crate::settings;
use crate::target::{FlushDisk, Target};

/// Upper bound for one scenario JVM; the scenarios' own waits are at most 60 s each.
pub const SCENARIO_TIMEOUT: Duration = Duration::from_secs(240);

/// The target shared by all tests of this test binary (started on first use, with ASYNC_FLUSH).
/// Its processes die with the test process (see [`crate::process`]).
pub fn shared_target() -> &'static Target {
    static SHARED: OnceLock<std::result::Result<Target, String>> = OnceLock::new();
    match SHARED
        .get_or_init(|| Target::start("shared", FlushDisk::Async).map_err(|e| format!("{e:#}")))
    {
        Ok(t) => t,
        Err(e) => panic!("could not start the target: {e}"),
    }
}

/// A name suffix unique in this run, e.g. `v498_1234_7`: topics and groups of concurrent
/// scenarios never collide.
pub fn unique_id(version: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "v{}_{}_{}",
        version.replace('.', ""),
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs `scenario` once per configured client version against `target`; afterwards the target
/// must still be running. Prints one line per run; panics listing every failure.
pub fn run_for_all_clients(target: &Target, scenario: &str, extra: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for version in settings::client_versions() {
        let started = Instant::now();
        let result = run_one(target, scenario, &version, extra);
        let took = started.elapsed();
        match result {
            Ok(()) => println!("{scenario} with client {version}: PASS in {took:.1?}"),
            Err(e) => {
                println!("{scenario} with client {version}: FAIL in {took:.1?}");
                failures.push(format!("{scenario} with client {version}: {e:#}"));
            }
        }
    }
    if !failures.is_empty() {
        panic!("{}", failures.join("\n\n"));
    }
}

fn run_one(target: &Target, scenario: &str, version: &str, extra: &[(&str, &str)]) -> Result<()> {
    let client = Client::get(version)?;
    let id = unique_id(version);
    let namesrv = target.namesrv();
    let broker = target.broker();
    let mut args = vec![
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id.as_str()),
    ];
    args.extend_from_slice(extra);
    let run_dir = target.dir().join("runs").join(format!("{scenario}-{id}"));
    client.run_with_jvm(
        scenario,
        &args,
        &target.client_jvm_args(),
        &run_dir,
        SCENARIO_TIMEOUT,
    )?;
    target.check_alive()
}

/// Runs the Go client's `scenario` (see `compat-tests/go/`) against `target`, reported like
/// [`run_for_all_clients`]: one line per run, a panic with the output on failure, and the target
/// must still be running afterwards.
pub fn run_go_client(target: &Target, scenario: &str) {
    let version = format!("go {}", crate::golang::GO_CLIENT_VERSION);
    let started = Instant::now();
    let result = run_go_one(target, scenario);
    let took = started.elapsed();
    match result {
        Ok(()) => println!("{scenario} with client {version}: PASS in {took:.1?}"),
        Err(e) => {
            println!("{scenario} with client {version}: FAIL in {took:.1?}");
            panic!("{scenario} with client {version}: {e:#}");
        }
    }
}

fn run_go_one(target: &Target, scenario: &str) -> Result<()> {
    let client = crate::golang::GoClient::get()?;
    let id = unique_id("go");
    let (namesrv, broker) = (target.namesrv(), target.broker());
    let args = [
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id.as_str()),
    ];
    let run_dir = target
        .dir()
        .join("runs")
        .join(format!("go-{scenario}-{id}"));
    client.run(scenario, &args, &run_dir, SCENARIO_TIMEOUT)?;
    target.check_alive()
}
