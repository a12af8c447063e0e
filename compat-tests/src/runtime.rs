//! How Skiff runs under test (`SKIFF_COMPAT_RUNTIME`): as a process started from the built binary
//! (`process`, the default) or as the container image (`container`, see [`crate::container`]).
//! A [`Server`] is either, behind the few operations the harness needs.

use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::container::Container;
use crate::process::Proc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Process,
    Container,
}

pub fn runtime() -> Result<Runtime> {
    parse_runtime(std::env::var("SKIFF_COMPAT_RUNTIME").ok().as_deref())
}

fn parse_runtime(v: Option<&str>) -> Result<Runtime> {
    match v.map(str::trim) {
        None | Some("") | Some("process") => Ok(Runtime::Process),
        Some("container") => Ok(Runtime::Container),
        Some(other) => bail!("SKIFF_COMPAT_RUNTIME={other}: expected process or container"),
    }
}

/// A running name server or broker: a child process or a container.
pub enum Server {
    Proc(Proc),
    Container(Box<Container>),
}

impl Server {
    pub fn name(&self) -> &str {
        match self {
            Server::Proc(p) => &p.name,
            Server::Container(c) => &c.name,
        }
    }

    /// The process id on this host, for measurements such as resident memory; `None` for a
    /// container, whose process belongs to the engine.
    pub fn pid(&self) -> Option<i32> {
        match self {
            Server::Proc(p) => Some(p.pid()),
            Server::Container(_) => None,
        }
    }

    pub fn exited(&mut self) -> Result<Option<ExitStatus>> {
        match self {
            Server::Proc(p) => p.exited(),
            Server::Container(c) => c.exited(),
        }
    }

    pub fn signal(&mut self, sig: i32) -> Result<()> {
        match self {
            Server::Proc(p) => p.signal(sig),
            Server::Container(c) => c.signal(sig),
        }
    }

    pub fn wait_for(&mut self, timeout: Duration) -> Result<Option<ExitStatus>> {
        match self {
            Server::Proc(p) => p.wait_for(timeout),
            Server::Container(c) => c.wait_for(timeout),
        }
    }

    pub fn kill(&mut self) -> Result<ExitStatus> {
        match self {
            Server::Proc(p) => p.kill(),
            Server::Container(c) => c.kill(),
        }
    }

    pub fn output_tail(&self, lines: usize) -> String {
        match self {
            Server::Proc(p) => p.output_tail(lines),
            Server::Container(c) => c.output_tail(lines),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_defaults_to_process_and_rejects_typos() {
        assert_eq!(parse_runtime(None).unwrap(), Runtime::Process);
        assert_eq!(
            parse_runtime(Some("container")).unwrap(),
            Runtime::Container
        );
        assert!(parse_runtime(Some("docker")).is_err());
    }
}
