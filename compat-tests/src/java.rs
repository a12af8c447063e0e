//! The Java side: dependency classpaths from Maven (cached in `~/.m2` and in the target dir),
//! the scenario sources compiled with javac per client version (skipped when unchanged), and
//! scenario JVMs run with a timeout.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::process::{self, Proc};

/// First resolution downloads a few hundred jars; later ones are local.
const MAVEN_TIMEOUT: Duration = Duration::from_secs(20 * 60);
const JAVAC_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// `compat-tests/java`: the pom of the client side and the scenario sources.
pub fn java_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("java")
}

/// Where classpaths, classes and run directories go: `<target>/<profile>/compat-java`, next to the
/// test executable (which runs from `<target>/<profile>/deps`).
pub fn work_dir() -> PathBuf {
    let profile_dir = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().and_then(Path::parent).map(Path::to_path_buf));
    match profile_dir {
        Some(d) => d.join("compat-java"),
        None => std::env::temp_dir().join("skiff-compat-java"),
    }
}

/// The scenarios' JVM flags: a small heap and C1 only, since they are short and many.
const SCENARIO_JVM: [&str; 5] = [
    "-Xms64m",
    "-Xmx256m",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
];

/// The `java` launcher: `$JAVA_HOME/bin/java` if set, else from PATH.
pub fn java_bin() -> PathBuf {
    match std::env::var_os("JAVA_HOME") {
        Some(home) if Path::new(&home).join("bin/java").exists() => {
            Path::new(&home).join("bin/java")
        }
        _ => PathBuf::from("java"),
    }
}

fn javac_bin() -> PathBuf {
    match std::env::var_os("JAVA_HOME") {
        Some(home) if Path::new(&home).join("bin/javac").exists() => {
            Path::new(&home).join("bin/javac")
        }
        _ => PathBuf::from("javac"),
    }
}

/// FNV-1a, for cache keys that must be stable across Rust versions.
pub(crate) fn fnv(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.iter().chain(&[0xff]) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// A name part no other writer uses: concurrent test processes share the cache, and the tests of
/// one process run on several threads.
fn unique_suffix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Writes `content` to `path` atomically (concurrent test processes may share the cache).
fn write_atomic(path: &Path, content: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp{}", unique_suffix()));
    fs::write(&tmp, content)?;
    fs::rename(&tmp, path)?;
    Ok(())
}

/// The dependency classpath of the pom in `pom_dir` for `rocketmq.version = version`, cached as
/// `<work>/<name>-<version>.classpath` with the pom's hash; re-resolved when the pom changes or
/// a listed jar is gone (a fresh `~/.m2`).
pub fn classpath(pom_dir: &Path, name: &str, version: &str) -> Result<String> {
    // One resolution at a time in this process: on a clean clone several tests ask for the same
    // classpath at once, and one Maven run is enough for all of them.
    static RESOLVING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = RESOLVING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let work = work_dir();
    fs::create_dir_all(&work)?;
    let pom = fs::read(pom_dir.join("pom.xml"))
        .with_context(|| format!("read {}/pom.xml", pom_dir.display()))?;
    let key = fnv(&[&pom, version.as_bytes()]);
    let cp_file = work.join(format!("{name}-{version}.classpath"));
    let key_file = work.join(format!("{name}-{version}.classpath.key"));
    if fs::read_to_string(&key_file).ok().as_deref() == Some(key.as_str()) {
        if let Ok(cp) = fs::read_to_string(&cp_file) {
            if !cp.trim().is_empty() && cp.trim().split(':').all(|jar| Path::new(jar).exists()) {
                return Ok(cp.trim().to_string());
            }
        }
    }
    let out = work.join(format!("{name}-{version}.classpath.new{}", unique_suffix()));
    let mut cmd = Command::new("mvn");
    cmd.current_dir(pom_dir).args([
        "-q",
        "-B",
        "dependency:build-classpath",
        &format!("-Drocketmq.version={version}"),
        &format!("-Dmdep.outputFile={}", out.display()),
    ]);
    process::run(
        &format!("mvn-{name}-{version}"),
        cmd,
        &work.join("logs"),
        MAVEN_TIMEOUT,
    )
    .with_context(|| {
        format!(
            "resolve {name} {version} with Maven (is `mvn` installed and Maven Central reachable?)"
        )
    })?;
    let cp = fs::read_to_string(&out)?.trim().to_string();
    fs::remove_file(&out)?;
    if cp.is_empty() {
        bail!("Maven produced an empty classpath for {name} {version}");
    }
    write_atomic(&cp_file, cp.as_bytes())?;
    write_atomic(&key_file, key.as_bytes())?;
    Ok(cp)
}

/// The 4.9 client logs through slf4j/logback, whose default is DEBUG on stdout; keep warnings
/// only, on stderr, so a scenario's stdout stays readable.
const LOGBACK: &str = r#"<configuration>
  <appender name="E" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{24} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="E"/></root>
</configuration>
"#;

/// One official Java client version with the scenarios compiled against it.
pub struct Client {
    pub version: String,
    /// classes dir + dependency jars
    classpath: String,
}

fn sources() -> Result<Vec<PathBuf>> {
    let dir = java_dir().join("src/skiff/compat");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    files.sort();
    Ok(files)
}

/// Compiles the scenarios against `deps` into `<work>/classes-<version>` unless the stamp there
/// says the same sources were compiled against the same classpath.
fn compile(version: &str, deps: &str) -> Result<PathBuf> {
    let work = work_dir();
    let classes = work.join(format!("classes-{version}"));
    let srcs = sources()?;
    let mut parts: Vec<Vec<u8>> = vec![deps.as_bytes().to_vec()];
    for s in &srcs {
        parts.push(
            s.file_name()
                .unwrap_or_default()
                .as_encoded_bytes()
                .to_vec(),
        );
        parts.push(fs::read(s)?);
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let stamp = fnv(&refs);
    let stamp_file = classes.join(".stamp");
    if fs::read_to_string(&stamp_file).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(classes);
    }
    let tmp = work.join(format!("classes-{version}.new{}", unique_suffix()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let mut cmd = Command::new(javac_bin());
    cmd.arg("-nowarn")
        .arg("-encoding")
        .arg("UTF-8")
        .arg("-d")
        .arg(&tmp)
        .arg("-cp")
        .arg(deps)
        .args(&srcs);
    process::run(
        &format!("javac-{version}"),
        cmd,
        &work.join("logs"),
        JAVAC_TIMEOUT,
    )
    .with_context(|| format!("compile the scenarios against client {version}"))?;
    fs::write(tmp.join(".stamp"), &stamp)?;
    let _ = fs::remove_dir_all(&classes);
    fs::rename(&tmp, &classes)?;
    Ok(classes)
}

impl Client {
    /// Resolves and compiles once per process and version; later calls share the result.
    pub fn get(version: &str) -> Result<Arc<Client>> {
        static CLIENTS: OnceLock<Mutex<HashMap<String, Arc<Client>>>> = OnceLock::new();
        let mut clients = CLIENTS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(version) {
            return Ok(c.clone());
        }
        let deps = classpath(&java_dir(), "client", version)?;
        let classes = compile(version, &deps)?;
        write_atomic(&work_dir().join("logback.xml"), LOGBACK.as_bytes())?;
        let client = Arc::new(Client {
            version: version.to_string(),
            classpath: format!("{}:{deps}", classes.display()),
        });
        clients.insert(version.to_string(), client.clone());
        Ok(client)
    }

    /// The scenario JVM command. Client periods are shortened with the clients' own settings (see
    /// Common.tune); logs and local offsets go under `run_dir` via `user.home`.
    /// `base_jvm` is the heap and JIT ([`SCENARIO_JVM`] unless a benchmark needs more), `jvm` any
    /// further flags (such as `-Dtls.enable=true`).
    fn command(
        &self,
        scenario: &str,
        args: &[(&str, &str)],
        base_jvm: &[&str],
        jvm: &[String],
        run_dir: &Path,
    ) -> Command {
        let mut cmd = Command::new(java_bin());
        cmd.current_dir(run_dir)
            .args(base_jvm)
            .arg(format!("-Duser.home={}", run_dir.display()))
            .arg("-Drocketmq.client.logUseSlf4j=false")
            .arg(format!(
                "-Drocketmq.client.logRoot={}",
                run_dir.join("logs").display()
            ))
            .arg("-Drocketmq.client.logLevel=WARN")
            .arg(format!(
                "-Dlogback.configurationFile={}",
                work_dir().join("logback.xml").display()
            ))
            .arg("-Drocketmq.client.rebalance.waitInterval=1000")
            .arg("-Dcom.rocketmq.sendMessageWithVIPChannel=false")
            .args(jvm)
            .arg("-cp")
            .arg(&self.classpath)
            .arg("skiff.compat.Main")
            .arg(scenario);
        for (k, v) in args {
            cmd.arg(format!("--{k}")).arg(v);
        }
        cmd
    }

    /// Runs a scenario to completion; fails with its output unless it exits 0 having printed PASS.
    pub fn run(
        &self,
        scenario: &str,
        args: &[(&str, &str)],
        run_dir: &Path,
        timeout: Duration,
    ) -> Result<String> {
        self.run_with_jvm(scenario, args, &[], run_dir, timeout)
    }

    /// [`Client::run`] with more JVM flags (such as `-Dtls.enable=true`).
    pub fn run_with_jvm(
        &self,
        scenario: &str,
        args: &[(&str, &str)],
        jvm: &[String],
        run_dir: &Path,
        timeout: Duration,
    ) -> Result<String> {
        fs::create_dir_all(run_dir)?;
        let name = format!("{scenario}-{}", self.version);
        let out = process::run(
            &name,
            self.command(scenario, args, &SCENARIO_JVM, jvm, run_dir),
            run_dir,
            timeout,
        )?;
        if !out.lines().any(|l| l == "PASS") {
            bail!("{name} exited 0 without printing PASS:\n{out}");
        }
        Ok(out)
    }

    /// Starts a scenario in the background with these JVM flags instead of the small, quick-to-start
    /// heap of the test scenarios (a benchmark's load generator must not be the bottleneck).
    pub fn spawn_with_jvm(
        &self,
        scenario: &str,
        args: &[(&str, &str)],
        run_dir: &Path,
        jvm: &[&str],
    ) -> Result<Proc> {
        fs::create_dir_all(run_dir)?;
        Proc::spawn(
            &format!("{scenario}-{}", self.version),
            self.command(scenario, args, jvm, &[], run_dir),
            run_dir,
        )
    }

    /// Starts a scenario in the background (for producing while the broker is killed).
    pub fn spawn(&self, scenario: &str, args: &[(&str, &str)], run_dir: &Path) -> Result<Proc> {
        fs::create_dir_all(run_dir)?;
        Proc::spawn(
            &format!("{scenario}-{}", self.version),
            self.command(scenario, args, &SCENARIO_JVM, &[], run_dir),
            run_dir,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_separates_parts() {
        assert_ne!(fnv(&[b"ab", b"c"]), fnv(&[b"a", b"bc"]));
        assert_eq!(fnv(&[b"x"]), fnv(&[b"x"]));
    }
}
