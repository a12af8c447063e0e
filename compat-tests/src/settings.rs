//! Settings from the environment.
//!
//! - `SKIFF_COMPAT_TARGET=skiff|apache` (default `skiff`): the broker under test.
//! - `SKIFF_COMPAT_CLIENTS=4.9.8,5.3.3` (default both): official Java client versions. Against an
//!   Apache 4.9 broker the default is 4.9.8 only: the 5.x lite pull consumer (LITE_PULL_MESSAGE)
//!   and admin calls use request codes a 4.9 broker does not have.
//! - `SKIFF_COMPAT_APACHE_VERSION=5.3.3` (default): Apache RocketMQ broker version for the
//!   `apache` target (4.9.8 is not on Maven Central; 4.9.7 is the newest 4.9 broker there).
//! - `SKIFF_BIN`: the skiff binary (default: next to the test executable).

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
    fn versions_are_a_comma_list_defaulting_to_both() {
        assert_eq!(parse_versions(None, "4.9.8,5.3.3"), ["4.9.8", "5.3.3"]);
        assert_eq!(parse_versions(Some(" 5.3.3 , "), "4.9.8"), ["5.3.3"]);
    }
}
