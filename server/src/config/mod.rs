//! Configuration of the broker ([`BrokerConfig`]) and the name server ([`NamesrvConfig`]).
//!
//! Keys are Apache RocketMQ's own camelCase names (`listenPort`, `flushDiskType`, ...), so a Java
//! deployment's `broker.conf` loads as it is. A file is read as TOML when its name ends in `.toml`
//! and as a Java properties file otherwise. A key that Apache RocketMQ knows but Skiff does not
//! implement is ignored with a warning; any other unknown key is an error with a "did you mean"
//! suggestion, since it is most likely a typo.
//!
//! Each struct lists its keys in one `settings!` table: one line maps a Java key to a field, so
//! adding a setting is adding a field, its default and one line.

mod broker;
mod error;
mod java_keys;
mod namesrv;
pub(crate) mod properties;
mod source;
mod tls;
mod value;
pub(crate) mod write_back;

pub use broker::{BrokerConfig, BrokerRole, FlushDiskType, MetricsExporterType, MAX_HA_FRAME_BODY};
pub use error::{ConfigError, Location};
pub use namesrv::NamesrvConfig;
pub use tls::{ClientAuth, Secret, TlsConfig, TlsMode};

use std::collections::BTreeSet;
use std::sync::Mutex;

/// A config struct whose fields are set from `key = value` text (implemented by `settings!`).
pub(crate) trait Settings {
    /// The keys this struct reads.
    const KEYS: &'static [&'static str];

    /// Applies one setting; `None` when `key` is not one of [`Self::KEYS`].
    fn apply(&mut self, key: &str, value: &str) -> Option<Result<(), ConfigError>>;

    /// Every key of [`Self::KEYS`] with its current value as Java would print it (nested tables
    /// not included).
    fn values(&self) -> Vec<(&'static str, String)>;
}

/// Maps each Java key to a field: `"listenPort" => listen_port,`. A `vet f` suffix passes the
/// parsed value through `f: fn(T) -> Result<T, Rejection>` to refuse or adjust it. A trailing
/// `.. field` hands keys the table does not know to that field's own table (the `tls.*` keys).
macro_rules! settings {
    (@vet) => { $crate::config::value::any };
    (@vet $vet:path) => { $vet };
    (@rest $self:ident $key:ident $value:ident) => { None };
    (@rest $self:ident $key:ident $value:ident $nested:ident) => {
        $crate::config::Settings::apply(&mut $self.$nested, $key, $value)
    };
    ($ty:ty { $($key:literal => $field:ident $(vet $vet:path)?,)* } $(.. $nested:ident)?) => {
        impl $crate::config::Settings for $ty {
            const KEYS: &'static [&'static str] = &[$($key),*];

            fn apply(
                &mut self,
                key: &str,
                value: &str,
            ) -> Option<Result<(), $crate::config::ConfigError>> {
                Some(match key {
                    $($key => $crate::config::value::parse(
                        key,
                        value,
                        $crate::config::settings!(@vet $($vet)?),
                    )
                    .map(|v| self.$field = v),)*
                    _ => return $crate::config::settings!(@rest self key value $($nested)?),
                })
            }

            fn values(&self) -> Vec<(&'static str, String)> {
                vec![$(($key, $crate::config::value::ToSetting::to_setting(&self.$field)),)*]
            }
        }
    };
}
pub(crate) use settings;

/// Why an UPDATE_BROKER_CONFIG or UPDATE_NAMESRV_CONFIG settings text was refused.
#[derive(Debug)]
pub(crate) enum UpdateRefused {
    /// Not Java properties text: the 1-based line and what is wrong.
    Syntax(usize, String),
    /// It names a key of the black list (Java's `configBlackList`).
    BlackListed,
    /// A value, or how the values fit together, is wrong.
    Invalid(ConfigError),
}

impl From<UpdateRefused> for skiff_model::command::Reply {
    /// Java's codes and remarks (a bad value is Skiff's own: Java skips it silently).
    fn from(refused: UpdateRefused) -> Self {
        use skiff_model::command::{ErrorKind, Reply};
        match refused {
            UpdateRefused::Syntax(line, message) => Reply::error(
                ErrorKind::SystemError,
                format!("string2Properties error: line {line}: {message}"),
            ),
            UpdateRefused::BlackListed => Reply::error(
                ErrorKind::NoPermission,
                "Can not update config in black list.",
            ),
            UpdateRefused::Invalid(err) => Reply::error(ErrorKind::SystemError, err.to_string()),
        }
    }
}

/// `current` with every setting of the properties `text` applied, checked by `validate`, and
/// the settings it made (key and value, in text order): all or nothing.
pub(crate) fn with_updates<S: Settings + Clone>(
    current: &S,
    text: &str,
    black_list: &[&str],
    validate: impl Fn(&S) -> Result<(), ConfigError>,
) -> Result<(S, Vec<(String, String)>), UpdateRefused> {
    let entries =
        properties::parse(text).map_err(|(line, message)| UpdateRefused::Syntax(line, message))?;
    if entries.iter().any(|e| black_list.contains(&e.key.as_str())) {
        return Err(UpdateRefused::BlackListed);
    }
    let mut updated = current.clone();
    for entry in &entries {
        set_one(&mut updated, &entry.key, &entry.value, None).map_err(UpdateRefused::Invalid)?;
    }
    validate(&updated).map_err(UpdateRefused::Invalid)?;
    Ok((
        updated,
        entries.into_iter().map(|e| (e.key, e.value)).collect(),
    ))
}

/// Sets one key: ours, a Java key Skiff ignores (warned about once), or an error.
pub(crate) fn set_one<S: Settings>(
    settings: &mut S,
    key: &str,
    value: &str,
    at: Option<Location>,
) -> Result<(), ConfigError> {
    let result = match settings.apply(key, value) {
        Some(result) => result,
        None if java_keys::is_java_key(key) => {
            warn_ignored(key, at.as_ref());
            Ok(())
        }
        None => Err(ConfigError::UnknownKey {
            at: None,
            key: key.to_owned(),
            suggestion: suggest(key, S::KEYS),
        }),
    };
    match at {
        Some(at) => result.map_err(|e| e.at(at)),
        None => result,
    }
}

/// Logs that `key` is ignored, the first time only; returns whether it did.
fn warn_ignored(key: &str, at: Option<&Location>) -> bool {
    static WARNED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let first_time = WARNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert(key.to_owned());
    if first_time {
        match at {
            Some(at) => tracing::warn!("{at}: ignored: Skiff does not implement {key}"),
            None => tracing::warn!("ignored: Skiff does not implement {key}"),
        }
    }
    first_time
}

/// The closest known key, ours first, if it is close enough to be the intended one.
fn suggest(key: &str, ours: &[&'static str]) -> Option<&'static str> {
    let wanted = key.to_ascii_lowercase();
    let limit = (key.len() / 3).max(1);
    ours.iter()
        .chain(<TlsConfig as Settings>::KEYS)
        .chain(java_keys::JAVA_KEYS)
        .map(|&known| (edit_distance(&wanted, &known.to_ascii_lowercase()), known))
        .filter(|&(distance, _)| distance <= limit)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, known)| known)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;
