//! Skiff as a container (`SKIFF_COMPAT_RUNTIME=container`): the image `scripts/image.sh` builds,
//! started through the `testcontainers` crate on the host network, so it listens on the same
//! loopback ports a process would and the scenarios cannot tell the difference.
//!
//! It is configured the way a user configures the image: `SKIFF_NAMESRV_LISTEN`,
//! `SKIFF_BROKER_LISTEN` and one `SKIFF_<key>` variable per setting, with the data directory
//! bind-mounted on the image's volume, `/data`. A [`Container`] offers what the harness needs of a
//! [`crate::process::Proc`]: exit status, signals, bounded waits, output.
//!
//! testcontainers 0.15 is the newest release that drives the `docker` CLI; later ones speak the
//! Engine API at a fixed version (1.44 and up), which Debian bookworm's `docker.io` 20.10 (API
//! 1.41) refuses. The CLI negotiates the version itself.
//!
//! Containers die with the test process as children do: [`Drop`] removes one, an `atexit` hook
//! removes those a static shared target never drops, and every start first removes the
//! containers of earlier test processes that are gone (after a crash or a kill).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Output};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use testcontainers::clients::Cli;
use testcontainers::core::WaitFor;
use testcontainers::{Container as TcContainer, GenericImage, RunnableImage};

use crate::process;

/// The image to start, as `scripts/image.sh` tags it.
pub fn image() -> String {
    std::env::var("SKIFF_COMPAT_IMAGE")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "skiff:latest".into())
}

/// Every container this process starts is named `skiff-compat-<pid>-...`.
const NAME_PREFIX: &str = "skiff-compat-";

fn cli() -> &'static Cli {
    static CLI: OnceLock<Cli> = OnceLock::new();
    CLI.get_or_init(Cli::default)
}

/// Containers still running, removed at exit (a static shared target is never dropped).
fn live() -> &'static Mutex<Vec<String>> {
    static LIVE: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    LIVE.get_or_init(|| {
        extern "C" fn remove_live() {
            let ids = live()
                .lock()
                .map(|ids| ids.clone())
                .unwrap_or_else(|e| e.into_inner().clone());
            if !ids.is_empty() {
                let _ = Command::new("docker").args(["rm", "-f"]).args(ids).output();
            }
        }
        // SAFETY: registers a plain function to run at normal process exit.
        unsafe { libc::atexit(remove_live) };
        Mutex::new(Vec::new())
    })
}

fn docker(args: &[&str]) -> Result<Output> {
    Command::new("docker").args(args).output().with_context(|| {
        format!(
            "run docker {}: is the docker CLI installed?",
            args.join(" ")
        )
    })
}

/// Fails, saying what to do, unless an engine answers and the image is there: the container
/// tests must fail loudly rather than be skipped.
fn preflight(image: &str) -> Result<()> {
    let info = docker(&["info", "--format", "{{.ServerVersion}}"])?;
    if !info.status.success() {
        bail!(
            "no Docker engine answers ({}): start one with scripts/docker-engine.sh (as root)",
            String::from_utf8_lossy(&info.stderr).trim()
        );
    }
    let inspect = docker(&["image", "inspect", "--format", "{{.Id}}", image])?;
    if !inspect.status.success() {
        bail!("image {image} not found: build it with scripts/image.sh");
    }
    Ok(())
}

/// Removes containers left by earlier test processes that are gone.
fn remove_stale() {
    let Ok(out) = docker(&[
        "ps",
        "-a",
        "--filter",
        &format!("name=^{NAME_PREFIX}"),
        "--format",
        "{{.Names}}",
    ]) else {
        return;
    };
    for name in String::from_utf8_lossy(&out.stdout).lines() {
        let pid = name
            .strip_prefix(NAME_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = docker(&["rm", "-f", name]);
            }
        }
    }
}

/// A running Skiff container.
pub struct Container {
    pub name: String,
    inner: Option<TcContainer<'static, GenericImage>>,
    id: String,
    exit: Option<ExitStatus>,
}

/// How to start one: the addresses to listen on (on the host network) and settings in Java's
/// key names.
pub struct Launch<'a> {
    pub name: &'a str,
    pub data_dir: &'a Path,
    pub namesrv: &'a str,
    pub broker: &'a str,
    pub settings: &'a [(&'static str, String)],
}

impl Container {
    pub fn start(launch: Launch<'_>) -> Result<Container> {
        let image = image();
        preflight(&image)?;
        remove_stale();
        let (repo, tag) = image.rsplit_once(':').unwrap_or((image.as_str(), "latest"));
        let mut generic = GenericImage::new(repo, tag)
            // The harness probes readiness itself (registration and a heartbeat).
            .with_wait_for(WaitFor::Nothing)
            .with_env_var("SKIFF_NAMESRV_LISTEN", launch.namesrv)
            .with_env_var("SKIFF_BROKER_LISTEN", launch.broker)
            .with_env_var("RUST_LOG", "info");
        for (key, value) in launch.settings {
            generic = generic.with_env_var(format!("SKIFF_{key}"), value.clone());
        }
        let data = launch.data_dir.to_string_lossy().into_owned();
        let name = format!("{NAME_PREFIX}{}-{}", std::process::id(), launch.name);
        let runnable = RunnableImage::from(generic)
            .with_network("host")
            .with_container_name(name.clone())
            .with_volume((data, "/data".to_string()));
        // testcontainers panics when `docker run` fails; turn that into an error with a reason.
        let inner = std::panic::catch_unwind(|| cli().run(runnable)).map_err(|_| {
            anyhow!("docker run {image} failed (name {name}); see `docker logs {name}`")
        })?;
        let id = inner.id().to_string();
        live()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(id.clone());
        Ok(Container {
            name,
            inner: Some(inner),
            id,
            exit: None,
        })
    }

    /// The exit status once the container has stopped.
    pub fn exited(&mut self) -> Result<Option<ExitStatus>> {
        if self.exit.is_none() {
            let out = docker(&[
                "inspect",
                "--format",
                "{{.State.Running}} {{.State.ExitCode}}",
                &self.id,
            ])?;
            if !out.status.success() {
                bail!(
                    "docker inspect {}: {}",
                    self.name,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let mut words = text.split_whitespace();
            if words.next() == Some("false") {
                let code: i32 = words.next().and_then(|c| c.parse().ok()).unwrap_or(-1);
                self.exit = Some(ExitStatus::from_raw((code & 0xff) << 8));
            }
        }
        Ok(self.exit)
    }

    /// Sends `sig` to the container's PID 1, which is `skiff` itself.
    pub fn signal(&mut self, sig: i32) -> Result<()> {
        if self.exited()?.is_some() {
            return Ok(());
        }
        let out = docker(&["kill", "--signal", &sig.to_string(), &self.id])?;
        if !out.status.success() && self.exited()?.is_none() {
            bail!(
                "docker kill --signal {sig} {}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// Waits up to `timeout` for the exit; `None` if still running.
    pub fn wait_for(&mut self, timeout: Duration) -> Result<Option<ExitStatus>> {
        // Each poll is a `docker inspect`, hence the longer interval than a child process's.
        process::wait_for_exit(timeout, Duration::from_millis(50), || self.exited())
    }

    /// SIGKILL and wait for the exit.
    pub fn kill(&mut self) -> Result<ExitStatus> {
        self.signal(libc::SIGKILL)?;
        self.wait_for(Duration::from_secs(30))?
            .ok_or_else(|| anyhow!("{} survived SIGKILL for 30 s", self.name))
    }

    /// The last `lines` lines of the container's stdout and stderr.
    pub fn output_tail(&self, lines: usize) -> String {
        match docker(&["logs", "--tail", &lines.to_string(), &self.id]) {
            Ok(out) => format!(
                "--- {} stdout (docker logs {}) ---\n{}\n--- {} stderr ---\n{}",
                self.name,
                self.name,
                String::from_utf8_lossy(&out.stdout).trim_end(),
                self.name,
                String::from_utf8_lossy(&out.stderr).trim_end()
            ),
            Err(e) => format!("--- {}: no logs: {e:#} ---", self.name),
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        // testcontainers removes the container (docker rm -f -v) when its handle drops.
        drop(self.inner.take());
        live()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|id| id != &self.id);
    }
}
