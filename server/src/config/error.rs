//! Configuration errors: each names where the setting came from, the key, the value and what was
//! expected, so that the message alone is enough to fix the file.

use std::fmt;
use std::path::PathBuf;

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A line of a config file (1-based).
    File { path: PathBuf, line: usize },
    /// A `--set key=value` argument.
    CommandLine,
    /// An environment variable standing for a `--set` (`SKIFF_<key>`, see the `skiff` CLI).
    Environment(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File { path, line } => write!(f, "{}:{line}", path.display()),
            Location::CommandLine => f.write_str("--set"),
            Location::Environment(name) => write!(f, "environment variable {name}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not valid TOML or properties syntax.
    #[error("{at}: {message}")]
    Syntax { at: Location, message: String },
    /// A known key with a value of the wrong form.
    #[error("{}{key} = {value:?}: expected {expected}", prefix(at))]
    Value {
        at: Option<Location>,
        key: String,
        value: String,
        expected: String,
    },
    /// A well-formed value for a feature Skiff does not have yet (slaves, for instance).
    #[error("{}{key} = {value:?}: {reason}", prefix(at))]
    Unsupported {
        at: Option<Location>,
        key: String,
        value: String,
        reason: String,
    },
    /// Neither a Skiff nor an Apache RocketMQ setting: most likely a typo.
    #[error("{}unknown setting {key:?}{}", prefix(at), hint(suggestion))]
    UnknownKey {
        at: Option<Location>,
        key: String,
        suggestion: Option<&'static str>,
    },
    /// Settings that are each well-formed but do not make sense (together).
    #[error("{key}: {message}")]
    Invalid { key: &'static str, message: String },
}

impl ConfigError {
    /// Records where the offending setting came from, if not known yet.
    pub fn at(mut self, location: Location) -> Self {
        match &mut self {
            ConfigError::Value { at, .. }
            | ConfigError::Unsupported { at, .. }
            | ConfigError::UnknownKey { at, .. } => {
                at.get_or_insert(location);
            }
            ConfigError::Read { .. } | ConfigError::Syntax { .. } | ConfigError::Invalid { .. } => {
            }
        }
        self
    }
}

fn prefix(at: &Option<Location>) -> String {
    at.as_ref().map(|at| format!("{at}: ")).unwrap_or_default()
}

fn hint(suggestion: &Option<&'static str>) -> String {
    match suggestion {
        Some(key) => format!(" (did you mean {key}?)"),
        None => ": not a Skiff or Apache RocketMQ setting".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_error_names_file_line_key_and_expectation() {
        let err = ConfigError::Value {
            at: None,
            key: "flushDiskType".into(),
            value: "SYNC".into(),
            expected: "ASYNC_FLUSH or SYNC_FLUSH".into(),
        }
        .at(Location::File {
            path: "broker.conf".into(),
            line: 7,
        });
        assert_eq!(
            err.to_string(),
            r#"broker.conf:7: flushDiskType = "SYNC": expected ASYNC_FLUSH or SYNC_FLUSH"#
        );
    }

    #[test]
    fn first_location_wins() {
        let err = ConfigError::UnknownKey {
            at: Some(Location::CommandLine),
            key: "x".into(),
            suggestion: None,
        }
        .at(Location::File {
            path: "a.conf".into(),
            line: 1,
        });
        assert_eq!(
            err.to_string(),
            r#"--set: unknown setting "x": not a Skiff or Apache RocketMQ setting"#
        );
    }
}
