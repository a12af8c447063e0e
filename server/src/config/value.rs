//! Turning a setting's text into a typed value. Both file formats and `--set` hand values over as
//! text (TOML scalars are rendered back to text first), so one parser per type serves them all.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use super::ConfigError;

/// Why a value was refused.
pub(crate) enum Rejection {
    /// Malformed: what a good value looks like.
    Expected(String),
    /// Well-formed but not supported by Skiff (yet): why.
    Unsupported(String),
}

pub(crate) trait FromSetting: Sized {
    fn from_setting(text: &str) -> Result<Self, Rejection>;
}

/// A value as text that [`FromSetting`] reads back (what GET_BROKER_CONFIG prints).
pub(crate) trait ToSetting {
    fn to_setting(&self) -> String;
}

macro_rules! display_settings {
    ($($ty:ty),*) => {$(
        impl ToSetting for $ty {
            fn to_setting(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

display_settings!(u16, u32, u64, usize, i32, i64, bool, String, IpAddr, SocketAddr);

impl ToSetting for PathBuf {
    fn to_setting(&self) -> String {
        self.display().to_string()
    }
}

/// Unset is the empty text, which reads back as unset.
impl<T: ToSetting> ToSetting for Option<T> {
    fn to_setting(&self) -> String {
        self.as_ref().map(T::to_setting).unwrap_or_default()
    }
}

/// Parses `value` for `key`, then lets `vet` check or adjust it (see the `settings!` tables).
pub(crate) fn parse<T: FromSetting>(
    key: &str,
    value: &str,
    vet: fn(T) -> Result<T, Rejection>,
) -> Result<T, ConfigError> {
    T::from_setting(value)
        .and_then(vet)
        .map_err(|rejection| match rejection {
            Rejection::Expected(expected) => ConfigError::Value {
                at: None,
                key: key.to_owned(),
                value: value.to_owned(),
                expected,
            },
            Rejection::Unsupported(reason) => ConfigError::Unsupported {
                at: None,
                key: key.to_owned(),
                value: value.to_owned(),
                reason,
            },
        })
}

/// The `vet` for settings that need no check beyond their type.
pub(crate) fn any<T>(value: T) -> Result<T, Rejection> {
    Ok(value)
}

/// A `vet` for counts, sizes and intervals that must not be zero.
pub(crate) fn positive<T: Default + PartialOrd>(n: T) -> Result<T, Rejection> {
    if n > T::default() {
        Ok(n)
    } else {
        Err(Rejection::Expected("a positive integer".into()))
    }
}

macro_rules! integers {
    ($($ty:ty => $expected:expr,)*) => {$(
        impl FromSetting for $ty {
            fn from_setting(text: &str) -> Result<Self, Rejection> {
                text.parse().map_err(|_| Rejection::Expected($expected.into()))
            }
        }
    )*};
}

integers! {
    u16 => "an integer from 0 to 65535",
    u32 => "an integer from 0 to 4294967295",
    u64 => "a non-negative integer",
    usize => "a non-negative integer",
    i32 => "an integer from -2147483648 to 2147483647",
    i64 => "an integer",
}

impl FromSetting for bool {
    /// Strict where Java's `Boolean.parseBoolean` silently reads anything but "true" as false.
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        if text.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if text.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err(Rejection::Expected("true or false".into()))
        }
    }
}

impl FromSetting for String {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        if text.is_empty() {
            return Err(Rejection::Expected("a non-empty value".into()));
        }
        Ok(text.to_owned())
    }
}

impl FromSetting for PathBuf {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        if text.is_empty() {
            return Err(Rejection::Expected("a directory path".into()));
        }
        Ok(PathBuf::from(text))
    }
}

impl FromSetting for IpAddr {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        text.parse()
            .map_err(|_| Rejection::Expected("an IP address such as 0.0.0.0 or 127.0.0.1".into()))
    }
}

impl FromSetting for SocketAddr {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        text.parse().map_err(|_| {
            Rejection::Expected("an address IP:PORT such as 0.0.0.0:9092 or 127.0.0.1:9092".into())
        })
    }
}

/// An empty value means "unset", i.e. the default applies.
impl<T: FromSetting> FromSetting for Option<T> {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        if text.is_empty() {
            Ok(None)
        } else {
            T::from_setting(text).map(Some)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected<T: FromSetting + std::fmt::Debug>(text: &str) -> String {
        match T::from_setting(text) {
            Err(Rejection::Expected(e)) => e,
            Err(Rejection::Unsupported(e)) => panic!("unsupported: {e}"),
            Ok(v) => panic!("accepted {v:?}"),
        }
    }

    #[test]
    fn integers_follow_their_range() {
        assert_eq!(u16::from_setting("10911").ok(), Some(10911));
        assert_eq!(i32::from_setting("+8").ok(), Some(8));
        assert_eq!(expected::<u16>("65536"), "an integer from 0 to 65535");
        assert_eq!(expected::<u64>("-1"), "a non-negative integer");
        assert_eq!(expected::<u64>("1g"), "a non-negative integer");
    }

    #[test]
    fn booleans_are_strict() {
        assert_eq!(bool::from_setting("TRUE").ok(), Some(true));
        assert_eq!(bool::from_setting("false").ok(), Some(false));
        assert_eq!(expected::<bool>("yes"), "true or false");
    }

    #[test]
    fn values_print_as_they_parse() {
        assert_eq!(Some(7u16).to_setting(), "7");
        assert_eq!(Option::<String>::None.to_setting(), "");
        assert_eq!(PathBuf::from("/data/store").to_setting(), "/data/store");
        assert_eq!(
            u64::from_setting(&u64::MAX.to_setting()).ok(),
            Some(u64::MAX)
        );
    }

    #[test]
    fn empty_means_unset_for_options() {
        assert_eq!(Option::<String>::from_setting("").ok(), Some(None));
        assert_eq!(Option::<u16>::from_setting("7").ok(), Some(Some(7)));
        assert_eq!(expected::<String>(""), "a non-empty value");
    }
}
