//! The Kafka client families that `tests/kafka.rs` runs its scenarios with. Each is a program of
//! its own with the same scenarios and arguments (`SCENARIO --bootstrap HOST:PORT --topic T` and
//! the scenario's own: `--count`, `--compression`, `--group`, `--phase`, `--expect`) that makes
//! the checks of `java/kafka/KafkaScenarios.java` as far as its client allows, and prints one line
//! ending in `result=ok`, or `result=fail: reason` and exits 1:
//!
//! - [`KafkaClient::Java`]: kafka-clients (`java/kafka/pom.xml`, from Maven Central into `~/.m2`),
//!   the scenario launched as a single source file, one JVM per run. [`KafkaClient::Java39`] is
//!   the same source against the 3.9 client (`java/kafka/kafka-clients-3.9/pom.xml`).
//! - [`KafkaClient::Librdkafka`]: librdkafka through its Python binding confluent-kafka
//!   (`python/requirements.txt`), a binary wheel from PyPI (pip's cache: `~/.cache/pip`) in a venv
//!   cached as `~/.cache/skiff-compat/venv-confluent-kafka-<version>`, running
//!   `python/kafka_scenarios.py`.
//! - [`KafkaClient::FranzGo`]: franz-go (`go-kafka/go.mod` and `go.sum`, through the Go module
//!   proxy into the module cache), built once into `<target>/<profile>/compat-go-kafka/` as the
//!   RocketMQ Go client is ([`crate::golang`]).
//!
//! Each client is prepared (classpath resolved, venv installed, program built) once per test
//! process, and again only when what it was made from changes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::java;
use crate::kafka::KAFKA_VERSION;
use crate::{golang, process};

/// The older Java client line, still widespread: `java/kafka/kafka-clients-3.9/pom.xml` pins it.
pub const JAVA_CLIENT_3_VERSION: &str = "3.9.1";
/// The confluent-kafka release `python/requirements.txt` pins; it bundles librdkafka 2.16.0.
pub const CONFLUENT_KAFKA_VERSION: &str = "2.16.1";
/// The franz-go release `go-kafka/go.mod` pins (with kadm 1.20.0, its admin package).
pub const FRANZ_GO_VERSION: &str = "1.22.3";

/// Upper bound for one scenario run; its own waits are at most 30 s for the producer, 60 s for
/// a poll loop or a group to settle, and 30 s for each client call.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(240);
/// Creating the venv and installing the wheel (about 5 MB, or none from pip's cache).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Importing the binding from the venv, to check it.
const IMPORT_TIMEOUT: Duration = Duration::from_secs(60);

/// The Java scenarios' JVM flags, as the RocketMQ scenarios': a small heap and C1 only.
const SCENARIO_JVM: [&str; 5] = [
    "-Xms64m",
    "-Xmx256m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
];

/// A Kafka client family the scenarios run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KafkaClient {
    Java,
    /// The Java client of the 3.9 line ([`JAVA_CLIENT_3_VERSION`]), running the same source.
    Java39,
    Librdkafka,
    FranzGo,
}

impl KafkaClient {
    /// The three client families, each at its current version.
    pub const ALL: [KafkaClient; 3] = [
        KafkaClient::Java,
        KafkaClient::Librdkafka,
        KafkaClient::FranzGo,
    ];

    /// A short name for topics, groups, directories and reports (a topic name has no `.`).
    pub fn name(self) -> &'static str {
        match self {
            KafkaClient::Java => "java",
            KafkaClient::Java39 => "java39",
            KafkaClient::Librdkafka => "librdkafka",
            KafkaClient::FranzGo => "franz-go",
        }
    }

    /// The client as pinned, for reports.
    pub fn pinned(self) -> String {
        match self {
            KafkaClient::Java => format!("kafka-clients {KAFKA_VERSION}"),
            KafkaClient::Java39 => format!("kafka-clients {JAVA_CLIENT_3_VERSION}"),
            KafkaClient::Librdkafka => format!("confluent-kafka {CONFLUENT_KAFKA_VERSION}"),
            KafkaClient::FranzGo => format!("franz-go {FRANZ_GO_VERSION}"),
        }
    }

    /// The program of this client's scenarios, prepared first if this process has not yet.
    fn command(self, run_dir: &Path) -> Result<Command> {
        Ok(match self {
            KafkaClient::Java | KafkaClient::Java39 => {
                let cp = match self {
                    KafkaClient::Java39 => java::classpath(
                        &java_client_dir().join("kafka-clients-3.9"),
                        "kafka-client",
                        JAVA_CLIENT_3_VERSION,
                    )?,
                    _ => java::classpath(&java_client_dir(), "kafka-client", KAFKA_VERSION)?,
                };
                fs::create_dir_all(run_dir.join("tmp"))?;
                let mut cmd = Command::new(java::java_bin());
                cmd.args(SCENARIO_JVM)
                    // The compression codecs unpack native libraries there.
                    .arg(format!(
                        "-Djava.io.tmpdir={}",
                        run_dir.join("tmp").display()
                    ))
                    // The client's own log (slf4j-simple, on stderr): warnings and errors only.
                    .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
                    .arg("-cp")
                    .arg(&cp)
                    .arg(java_client_dir().join("KafkaScenarios.java"));
                cmd
            }
            KafkaClient::Librdkafka => {
                let mut cmd = Command::new(prepared(&VENV, install_venv)?.join("bin/python"));
                // Unbuffered: a run killed at its timeout still leaves what it printed. A crash
                // in the native library prints the Python stack of every thread.
                cmd.env("PYTHONUNBUFFERED", "1")
                    .env("PYTHONFAULTHANDLER", "1")
                    .arg(python_dir().join("kafka_scenarios.py"));
                cmd
            }
            KafkaClient::FranzGo => Command::new(prepared(&FRANZ_GO, build_franz_go)?),
        })
    }
}

/// Runs `scenario` of `client` against `bootstrap` in `run_dir` and returns its result line.
/// Fails with the run's output unless it exits 0 with a line ending in `result=ok`.
pub(crate) fn run(
    client: KafkaClient,
    bootstrap: &str,
    scenario: &str,
    args: &[(&str, &str)],
    run_dir: &Path,
) -> Result<String> {
    fs::create_dir_all(run_dir)?;
    let mut cmd = client.command(run_dir)?;
    cmd.current_dir(run_dir)
        .arg(scenario)
        .arg("--bootstrap")
        .arg(bootstrap);
    for (k, v) in args {
        cmd.arg(format!("--{k}")).arg(v);
    }
    let name = format!("{}-{scenario}", client.name());
    let out = process::run(&name, cmd, run_dir, SCENARIO_TIMEOUT)?;
    match out.lines().find(|l| l.ends_with("result=ok")) {
        Some(line) => Ok(line.to_string()),
        None => bail!("{name} exited 0 without a result=ok line:\n{out}"),
    }
}

static VENV: OnceLock<Mutex<Option<PathBuf>>> = OnceLock::new();
static FRANZ_GO: OnceLock<Mutex<Option<PathBuf>>> = OnceLock::new();

/// What `prepare` made, made once per process: the tests of one process run on several threads
/// and would otherwise all install or build at once. A failure is not kept, so the next test
/// tries again and reports its own error.
fn prepared(
    slot: &'static OnceLock<Mutex<Option<PathBuf>>>,
    prepare: fn() -> Result<PathBuf>,
) -> Result<PathBuf> {
    let mut slot = slot
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = slot.as_ref() {
        return Ok(p.clone());
    }
    let p = prepare()?;
    *slot = Some(p.clone());
    Ok(p)
}

/// `compat-tests/java/kafka`: the Java client's pom and the scenario source (the 3.9 client's pom
/// in `kafka-clients-3.9/`).
fn java_client_dir() -> PathBuf {
    java::java_dir().join("kafka")
}

/// `compat-tests/python`: the librdkafka scenarios and their requirements.
pub fn python_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python")
}

/// `compat-tests/go-kafka`: the franz-go scenarios, a Go module of their own.
pub fn franz_go_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("go-kafka")
}

/// `<target>/<profile>/compat-<name>`, next to the Java side's `compat-java`.
fn work_dir(name: &str) -> PathBuf {
    java::work_dir().with_file_name(format!("compat-{name}"))
}

/// `$XDG_CACHE_HOME/skiff-compat/venv-confluent-kafka-<version>` (`~/.cache` without it): kept
/// across clones and `cargo clean`, like the Maven and Go module caches. `scripts/compat-kafka.sh
/// fetch` makes the same venv the same way.
pub fn venv_dir() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache
        .join("skiff-compat")
        .join(format!("venv-confluent-kafka-{CONFLUENT_KAFKA_VERSION}"))
}

/// Fails unless the venv's Python imports confluent-kafka of the pinned version.
fn check_venv(venv: &Path, logs: &Path) -> Result<()> {
    let mut cmd = Command::new(venv.join("bin/python"));
    cmd.args([
        "-c",
        "import confluent_kafka; print(confluent_kafka.__version__)",
    ]);
    let out = process::run("venv-check", cmd, logs, IMPORT_TIMEOUT)?;
    if out.trim() != CONFLUENT_KAFKA_VERSION {
        bail!(
            "{} has confluent-kafka {}, not {CONFLUENT_KAFKA_VERSION}",
            venv.display(),
            out.trim()
        );
    }
    Ok(())
}

/// The venv of [`venv_dir`], installed unless it works already. A new one is made beside it and
/// renamed into place: a venv runs from wherever it is (its Python finds `pyvenv.cfg` next to
/// itself), and of test processes installing at once the first rename wins, the others use it.
fn install_venv() -> Result<PathBuf> {
    let venv = venv_dir();
    let logs = work_dir("python").join("logs");
    if check_venv(&venv, &logs).is_ok() {
        return Ok(venv);
    }
    let parent = venv.parent().context("the venv has a parent")?;
    fs::create_dir_all(parent).with_context(|| format!("create {}", parent.display()))?;
    let name = venv.file_name().unwrap_or_default().to_string_lossy();
    let new = parent.join(format!("{name}.new{}", std::process::id()));
    let _ = fs::remove_dir_all(&new);
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "venv"]).arg(&new);
    process::run("python-venv", cmd, &logs, INSTALL_TIMEOUT)
        .context("create a venv (is python3 with its venv module installed?)")?;
    let mut cmd = Command::new(new.join("bin/python"));
    // A wheel only: it bundles librdkafka and its codecs, where a source build would need them
    // installed.
    cmd.env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .args([
            "-m",
            "pip",
            "install",
            "--no-input",
            "--only-binary=:all:",
            "-r",
        ])
        .arg(python_dir().join("requirements.txt"));
    process::run("pip-install", cmd, &logs, INSTALL_TIMEOUT)
        .context("install confluent-kafka from PyPI (is PyPI reachable?)")?;
    check_venv(&new, &logs)?;
    if venv.exists() {
        // One that does not work (its base Python gone, say) makes way.
        let stale = parent.join(format!("{name}.stale{}", std::process::id()));
        if fs::rename(&venv, &stale).is_ok() {
            let _ = fs::remove_dir_all(&stale);
        }
    }
    if let Err(e) = fs::rename(&new, &venv) {
        let _ = fs::remove_dir_all(&new);
        // Another process moved its venv into place first.
        check_venv(&venv, &logs)
            .with_context(|| format!("move the new venv to {}: {e}", venv.display()))?;
    }
    Ok(venv)
}

/// `go build` of the franz-go module into `<work>/compat-go-kafka-<stamp>` unless that exists,
/// as the RocketMQ Go client is built ([`golang::build_module`]).
fn build_franz_go() -> Result<PathBuf> {
    golang::build_module(&franz_go_dir(), &work_dir("go-kafka"), "compat-go-kafka")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_pin_the_reported_confluent_kafka_version() {
        let text = fs::read_to_string(python_dir().join("requirements.txt")).unwrap();
        let pin = format!("confluent-kafka=={CONFLUENT_KAFKA_VERSION}");
        assert!(
            text.lines().any(|l| l.trim() == pin),
            "requirements.txt does not pin {pin}"
        );
    }

    #[test]
    fn the_3_9_pom_pins_the_reported_version() {
        let pom = java_client_dir().join("kafka-clients-3.9/pom.xml");
        let text = fs::read_to_string(&pom).unwrap();
        let pin = format!("<kafka.version>{JAVA_CLIENT_3_VERSION}</kafka.version>");
        assert!(text.contains(&pin), "{} does not pin {pin}", pom.display());
    }

    #[test]
    fn go_mod_pins_the_reported_franz_go_version() {
        let go_mod = fs::read_to_string(franz_go_dir().join("go.mod")).unwrap();
        let pin = format!("github.com/twmb/franz-go v{FRANZ_GO_VERSION}");
        assert!(go_mod.contains(&pin), "go.mod does not pin {pin}");
    }

    #[test]
    fn franz_go_build_stamp_covers_the_module_files() {
        let names: Vec<String> = golang::module_sources(&franz_go_dir())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for f in ["go.mod", "go.sum", "main.go"] {
            assert!(names.iter().any(|n| n == f), "{f} missing from {names:?}");
        }
    }

    /// `scripts/compat-kafka.sh fetch` must make the venv the harness looks for.
    #[test]
    fn fetch_script_makes_the_same_venv() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/compat-kafka.sh");
        let text = fs::read_to_string(script).unwrap();
        for line in [
            r#"cache="${XDG_CACHE_HOME:-$HOME/.cache}/skiff-compat""#,
            r#"venv="$cache/venv-confluent-kafka-$version""#,
        ] {
            assert!(text.contains(line), "compat-kafka.sh lacks {line}");
        }
        assert!(venv_dir().ends_with(format!(
            "skiff-compat/venv-confluent-kafka-{CONFLUENT_KAFKA_VERSION}"
        )));
    }
}
