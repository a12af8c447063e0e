//! A `skiff standalone` on free ports with a scratch directory, for the binary's tests.

#![allow(dead_code)] // each test file uses part of it

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `skiff standalone`, killed if the test fails before it stops.
pub struct Standalone {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
    _data: tempfile::TempDir,
}

impl Standalone {
    pub fn start(extra: &[&str]) -> Standalone {
        let data = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_skiff"))
            .args(["standalone", "--data"])
            .arg(data.path())
            .args(["--namesrv-listen", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn skiff standalone");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Logs are kept for assertions and echoed for failing tests' output.
        let stderr = Arc::new(Mutex::new(String::new()));
        let logs = BufReader::new(child.stderr.take().unwrap());
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in logs.lines().map_while(Result::ok) {
                eprintln!("{line}");
                let mut sink = sink.lock().unwrap();
                sink.push_str(&line);
                sink.push('\n');
            }
        });
        Standalone {
            child,
            lines,
            stderr,
            _data: data,
        }
    }

    /// The stdout lines up to the "Stop with" line, or `None` if the process ended first.
    pub fn banner(&self, within: Duration) -> Option<Vec<String>> {
        let deadline = Instant::now() + within;
        let mut banner = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).ok()?;
            let done = line.starts_with("Stop with");
            banner.push(line);
            if done {
                return Some(banner);
            }
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    pub fn wait(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Standalone {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address at the end of the banner line that starts with `label`.
pub fn address(banner: &[String], label: &str) -> SocketAddr {
    let line = banner
        .iter()
        .find(|line| line.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} line in {banner:#?}"));
    let word = line
        .split_whitespace()
        .find_map(|word| word.parse::<SocketAddr>().ok());
    word.unwrap_or_else(|| panic!("no address in {line:?}"))
}
