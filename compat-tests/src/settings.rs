//! Settings from the environment.
//!
//! - `SKIFF_COMPAT_TARGET=skiff|apache` (default `skiff`): the broker under test.
//! - `SKIFF_COMPAT_CLIENTS=4.9.8,5.3.3` (default both): official Java client versions. Against an
//!   Apache 4.9 broker the default is 4.9.8 only: the 5.x lite pull consumer (LITE_PULL_MESSAGE)
//!   and admin calls use request codes a 4.9 broker does not have.
//! - `SKIFF_COMPAT_APACHE_VERSION=5.3.3` (default): Apache RocketMQ broker version for the
//!   `apache` target (4.9.8 is not on Maven Central; 4.9.7 is the newest 4.9 broker there).
//! - `SKIFF_COMPAT_APACHE_BROKER_JVM`: the Apache broker's heap and GC flags, whitespace-separated
//!   (default `-Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1`; the name server keeps
//!   the default). Benchmarks set `runbroker.sh`'s production flags with it.
//! - `SKIFF_BIN`: the skiff binary (default: next to the test executable).
//! - `SKIFF_COMPAT_STORE_CLIENT=5.3.3` (default): the one client version the store tests (crash,
//!   store compatibility) run with.
//! - `SKIFF_COMPAT_CRASH_KILLS=50`, `SKIFF_COMPAT_CRASH_ASYNC_KILLS=25` (defaults): kill -9 cycles
//!   of the SYNC_FLUSH and ASYNC_FLUSH crash tests.
//! - `SKIFF_COMPAT_CRASH_SEED`: the crash tests' random seed (default: from the clock; printed).
//! - `SKIFF_COMPAT_KEEP=1`: keep the data directories of passing tests too (failed ones are
//!   always kept for a day).

use anyhow::{bail, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    Skiff,
    Apache,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

pub fn target_kind() -> Result<TargetKind> {
    parse_target(var("SKIFF_COMPAT_TARGET").as_deref())
}

fn parse_target(v: Option<&str>) -> Result<TargetKind> {
    match v {
        None | Some("skiff") => Ok(TargetKind::Skiff),
        Some("apache") => Ok(TargetKind::Apache),
        Some(other) => bail!("SKIFF_COMPAT_TARGET={other}: expected skiff or apache"),
    }
}

pub fn client_versions() -> Vec<String> {
    let apache4 =
        target_kind().ok() == Some(TargetKind::Apache) && apache_version().starts_with("4.");
    let default = if apache4 { "4.9.8" } else { "4.9.8,5.3.3" };
    parse_versions(var("SKIFF_COMPAT_CLIENTS").as_deref(), default)
}

fn parse_versions(v: Option<&str>, default: &str) -> Vec<String> {
    v.unwrap_or(default)
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

pub fn apache_version() -> String {
    var("SKIFF_COMPAT_APACHE_VERSION").unwrap_or_else(|| "5.3.3".into())
}

/// Heap, GC and JIT flags of the harness's JVMs, small for a machine running many.
pub const APACHE_DEFAULT_JVM: &str = "-Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1";

/// The Apache broker's heap, GC and JIT flags (`SKIFF_COMPAT_APACHE_BROKER_JVM`).
pub fn apache_broker_jvm() -> Vec<String> {
    var("SKIFF_COMPAT_APACHE_BROKER_JVM")
        .as_deref()
        .unwrap_or(APACHE_DEFAULT_JVM)
        .split_whitespace()
        .map(String::from)
        .collect()
}

pub fn keep_dirs() -> bool {
    var("SKIFF_COMPAT_KEEP").is_some_and(|v| v != "0")
}

pub fn store_client() -> String {
    var("SKIFF_COMPAT_STORE_CLIENT").unwrap_or_else(|| "5.3.3".into())
}

/// A whole number from the environment, or `default` when unset.
pub fn number(name: &str, default: u64) -> Result<u64> {
    parse_number(name, var(name).as_deref(), default)
}

fn parse_number(name: &str, v: Option<&str>, default: u64) -> Result<u64> {
    match v {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("{name}={v}: expected a whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_defaults_to_skiff_and_rejects_typos() {
        assert_eq!(parse_target(None).unwrap(), TargetKind::Skiff);
        assert_eq!(parse_target(Some("apache")).unwrap(), TargetKind::Apache);
        assert!(parse_target(Some("java")).is_err());
    }

    #[test]
    fn numbers_default_when_unset_and_reject_garbage() {
        assert_eq!(parse_number("X", None, 50).unwrap(), 50);
        assert_eq!(parse_number("X", Some("7"), 50).unwrap(), 7);
        assert!(parse_number("X", Some("-1"), 50).is_err());
    }

    #[test]
    fn versions_are_a_comma_list_defaulting_to_both() {
        assert_eq!(parse_versions(None, "4.9.8,5.3.3"), ["4.9.8", "5.3.3"]);
        assert_eq!(parse_versions(Some(" 5.3.3 , "), "4.9.8"), ["5.3.3"]);
    }
}
