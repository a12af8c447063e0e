//! Child processes (brokers, scenario JVMs, Maven) with output in files and bounded waits.
//!
//! Every child is spawned from one long-lived thread with `PR_SET_PDEATHSIG = SIGKILL`: the kernel
//! delivers that signal when the *spawning thread* ends, so spawning from short-lived test threads
//! would kill a shared broker as soon as the first test finished. With the dedicated thread, the
//! children die exactly when the test process does, even if it is killed or a static broker is
//! never dropped.

use std::fs::{self, File};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        thread::Builder::new()
            .name("compat-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("spawn the process spawner thread");
        Mutex::new(tx)
    })
}

/// Spawns `cmd` so that it is SIGKILLed when this process exits.
fn spawn_tied(mut cmd: Command) -> io::Result<Child> {
    // SAFETY: the closure runs between fork and exec and only calls async-signal-safe functions.
    unsafe {
        let parent = libc::getpid();
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (tx, rx) = mpsc::channel();
    spawner()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, tx))
        .map_err(|_| io::Error::other("spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| io::Error::other("spawner thread is gone"))?
}

/// A running child whose stdout and stderr go to `<dir>/<name>.out` and `<dir>/<name>.err`.
pub struct Proc {
    pub name: String,
    child: Child,
    out: PathBuf,
    err: PathBuf,
    exit: Option<ExitStatus>,
}

impl Proc {
    pub fn spawn(name: &str, mut cmd: Command, dir: &Path) -> Result<Proc> {
        fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let out = dir.join(format!("{name}.out"));
        let err = dir.join(format!("{name}.err"));
        cmd.stdin(Stdio::null())
            .stdout(File::create(&out)?)
            .stderr(File::create(&err)?);
        let program = format!("{:?}", cmd.get_program());
        let child = spawn_tied(cmd).with_context(|| format!("start {name} ({program})"))?;
        Ok(Proc {
            name: name.to_string(),
            child,
            out,
            err,
            exit: None,
        })
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The exit status if it has exited.
    pub fn exited(&mut self) -> Result<Option<ExitStatus>> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait()?;
        }
        Ok(self.exit)
    }

    pub fn signal(&mut self, sig: i32) -> Result<()> {
        if self.exited()?.is_some() {
            return Ok(());
        }
        // SAFETY: plain kill(2) on our own child, which has not been reaped yet.
        if unsafe { libc::kill(self.pid(), sig) } != 0 {
            bail!(
                "kill({}, {sig}): {}",
                self.pid(),
                io::Error::last_os_error()
            );
        }
        Ok(())
    }

    /// Waits up to `timeout` for the exit; `None` if still running.
    pub fn wait_for(&mut self, timeout: Duration) -> Result<Option<ExitStatus>> {
        wait_for_exit(timeout, Duration::from_millis(20), || self.exited())
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) -> Result<ExitStatus> {
        self.signal(libc::SIGKILL)?;
        match self.wait_for(Duration::from_secs(30))? {
            Some(st) => Ok(st),
            None => bail!(
                "{} (pid {}) survived SIGKILL for 30 s",
                self.name,
                self.pid()
            ),
        }
    }

    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// The last `lines` lines of stdout and stderr, for failure messages. Logback's own status
    /// lines (the Java broker prints dozens at start) are left out.
    pub fn output_tail(&self, lines: usize) -> String {
        let tail = |p: &Path| {
            let text = fs::read_to_string(p).unwrap_or_default();
            let all: Vec<&str> = text.lines().filter(|l| !l.contains("|-INFO in ")).collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        };
        format!(
            "--- {} stdout ({}) ---\n{}\n--- {} stderr ({}) ---\n{}",
            self.name,
            self.out.display(),
            tail(&self.out),
            self.name,
            self.err.display(),
            tail(&self.err)
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// Polls `exited` every `poll` until it reports an exit or `timeout` passes (`None`): the one
/// bounded wait behind [`Proc::wait_for`] and `Container::wait_for`.
pub(crate) fn wait_for_exit(
    timeout: Duration,
    poll: Duration,
    mut exited: impl FnMut() -> Result<Option<ExitStatus>>,
) -> Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(st) = exited()? {
            return Ok(Some(st));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        thread::sleep(poll);
    }
}

/// Runs `cmd` to completion within `timeout`; fails with its output on timeout or non-zero exit.
/// Returns stdout.
pub fn run(name: &str, cmd: Command, dir: &Path, timeout: Duration) -> Result<String> {
    let mut p = Proc::spawn(name, cmd, dir)?;
    match p.wait_for(timeout)? {
        Some(st) if st.success() => Ok(p.stdout()),
        Some(st) => bail!("{name} failed ({st})\n{}", p.output_tail(80)),
        None => {
            p.kill()?;
            bail!(
                "{name} did not finish within {timeout:?}; killed\n{}",
                p.output_tail(80)
            )
        }
    }
}
