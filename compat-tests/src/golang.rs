//! The Go side: the official Go client (`github.com/apache/rocketmq-client-go/v2`, pinned in
//! `compat-tests/go/go.mod` and `go.sum`, fetched through the Go module proxy into the usual module
//! cache) and the scenario program in `compat-tests/go/`, built once into
//! `<target>/<profile>/compat-go/` (rebuilt only when its sources or the Go version change) and run
//! per scenario with a timeout.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::java::fnv;
use crate::process;

/// The client version `go.mod` pins (reported with every run).
pub const GO_CLIENT_VERSION: &str = "2.1.2";

/// The first build downloads the client and its dependencies; later ones are local and cached.
const GO_BUILD_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// `compat-tests/go`: the Go module of the scenarios.
pub fn go_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("go")
}

/// `<target>/<profile>/compat-go`, next to the Java side's `compat-java`.
pub fn work_dir() -> PathBuf {
    crate::java::work_dir().with_file_name("compat-go")
}

/// The `go` tool: `$GOROOT/bin/go` if set, else from PATH, else where the official Go archive
/// installs it (`/usr/local/go/bin/go`, often not on the PATH of non-login shells).
pub fn go_bin() -> PathBuf {
    if let Some(root) = std::env::var_os("GOROOT") {
        let go = Path::new(&root).join("bin/go");
        if go.exists() {
            return go;
        }
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("go").is_file()));
    let usual = Path::new("/usr/local/go/bin/go");
    if !on_path && usual.exists() {
        return usual.to_path_buf();
    }
    PathBuf::from("go")
}

/// go.mod, go.sum and the `.go` files of the module in `dir`, sorted: what a build depends on.
pub(crate) fn module_sources(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "go")
                || p.file_name()
                    .is_some_and(|n| n == "go.mod" || n == "go.sum")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The built scenario program.
pub struct GoClient {
    bin: PathBuf,
}

impl GoClient {
    /// Builds once per process (and only when the sources changed since the last build); later
    /// calls share the result.
    pub fn get() -> Result<Arc<GoClient>> {
        static CLIENT: OnceLock<Mutex<Option<Arc<GoClient>>>> = OnceLock::new();
        let mut slot = CLIENT
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let client = Arc::new(GoClient { bin: build()? });
        *slot = Some(client.clone());
        Ok(client)
    }

    fn command(&self, scenario: &str, args: &[(&str, &str)], run_dir: &Path) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.current_dir(run_dir)
            // Local state of the client (broadcasting offsets) goes under $HOME: keep it here.
            .env("HOME", run_dir)
            .arg(scenario);
        for (k, v) in args {
            cmd.arg(format!("--{k}")).arg(v);
        }
        cmd
    }

    /// Runs a scenario to completion; fails with its output unless it exits 0 having printed PASS.
    /// The client's logs go to `run_dir/logs/rocketmq-go.log`.
    pub fn run(
        &self,
        scenario: &str,
        args: &[(&str, &str)],
        run_dir: &Path,
        timeout: Duration,
    ) -> Result<String> {
        fs::create_dir_all(run_dir)?;
        let name = format!("go-{scenario}");
        let out = process::run(
            &name,
            self.command(scenario, args, run_dir),
            run_dir,
            timeout,
        )?;
        if !out.lines().any(|l| l == "PASS") {
            bail!("{name} exited 0 without printing PASS:\n{out}");
        }
        Ok(out)
    }
}

/// `go build` of the scenario module into `<work>/compat-go-<stamp>` unless that exists.
fn build() -> Result<PathBuf> {
    build_module(&go_dir(), &work_dir(), "compat-go")
}

/// `go build` of the Go module in `dir` into `<work>/<name>-<stamp>` unless that exists. The
/// stamp covers the sources and `go version`; module downloads go through the normal proxy
/// (GOPROXY) into the shared module cache and are checked against the committed go.sum.
pub(crate) fn build_module(dir: &Path, work: &Path, name: &str) -> Result<PathBuf> {
    fs::create_dir_all(work)?;
    let version = Command::new(go_bin())
        .arg("version")
        .output()
        .context("run `go version` (is Go installed and on PATH?)")?;
    if !version.status.success() {
        bail!(
            "`go version` failed: {}",
            String::from_utf8_lossy(&version.stderr)
        );
    }
    let mut parts: Vec<Vec<u8>> = vec![version.stdout];
    for s in module_sources(dir)? {
        parts.push(
            s.file_name()
                .unwrap_or_default()
                .as_encoded_bytes()
                .to_vec(),
        );
        parts.push(fs::read(&s)?);
    }
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let bin = work.join(format!("{name}-{}", fnv(&refs)));
    if bin.exists() {
        return Ok(bin);
    }
    let tmp = work.join(format!("{name}.new{}", std::process::id()));
    let mut cmd = Command::new(go_bin());
    cmd.current_dir(dir)
        // Never switch toolchains (that would download one).
        .env("GOTOOLCHAIN", "local")
        // go.sum is the pin: never rewrite it. No VCS stamp (a fresh clone may not allow git).
        .env("GOFLAGS", "-mod=readonly -buildvcs=false")
        .args(["build", "-o"])
        .arg(&tmp)
        .arg(".");
    process::run("go-build", cmd, &work.join("logs"), GO_BUILD_TIMEOUT).with_context(|| {
        format!(
            "build the Go scenarios (`go build` in {}; a recent enough Go, and the Go module \
             proxy reachable?)",
            dir.display()
        )
    })?;
    // Stale binaries of earlier sources are of no use.
    let stale = format!("{name}-");
    if let Ok(entries) = fs::read_dir(work) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&stale) && e.path() != bin {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    fs::rename(&tmp, &bin)?;
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_stamp_covers_the_module_files() {
        let names: Vec<String> = module_sources(&go_dir())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for f in ["go.mod", "go.sum", "main.go", "common.go"] {
            assert!(names.iter().any(|n| n == f), "{f} missing from {names:?}");
        }
    }

    #[test]
    fn go_mod_pins_the_reported_client_version() {
        let go_mod = fs::read_to_string(go_dir().join("go.mod")).unwrap();
        let pin = format!("github.com/apache/rocketmq-client-go/v2 v{GO_CLIENT_VERSION}");
        assert!(go_mod.contains(&pin), "go.mod does not pin {pin}");
    }
}
