//! TLS settings, under Java's own `tls.*` names (`TlsSystemConfig`): Java reads them as system
//! properties (`-Dtls.server.mode=enforcing`) and from `tls.config.file`; Skiff reads them from the
//! broker or name server config, `--set`, and the same `tls.config.file`
//! (`/etc/rocketmq/tls.properties` unless set), which, as in Java, overrides the others except
//! for `tls.server.mode` and `tls.enable`. The TLS code itself is `crate::tls`.

use std::fmt;
use std::path::{Path, PathBuf};

use super::properties;
use super::value::{FromSetting, Rejection, ToSetting};
use super::{settings, ConfigError, Location, Settings};

/// `tls.server.mode`: what the listener accepts (Java's `TlsMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain remoting only; a TLS ClientHello is closed.
    Disabled,
    /// Both, told apart by the first byte of the connection (Java's default).
    Permissive,
    /// TLS only; a plain connection is closed.
    Enforcing,
}

impl FromSetting for TlsMode {
    /// Strict where Java's `TlsMode.parse` silently reads a typo as permissive.
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        match text {
            "disabled" => Ok(TlsMode::Disabled),
            "permissive" => Ok(TlsMode::Permissive),
            "enforcing" => Ok(TlsMode::Enforcing),
            _ => Err(Rejection::Expected(
                "disabled, permissive or enforcing".into(),
            )),
        }
    }
}

impl fmt::Display for TlsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsMode::Disabled => "disabled",
            TlsMode::Permissive => "permissive",
            TlsMode::Enforcing => "enforcing",
        })
    }
}

/// `tls.server.need.client.auth`: whether the server asks TLS clients for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Optional,
    Require,
}

impl FromSetting for ClientAuth {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        match text.to_ascii_lowercase().as_str() {
            "none" => Ok(ClientAuth::None),
            "optional" => Ok(ClientAuth::Optional),
            "require" => Ok(ClientAuth::Require),
            _ => Err(Rejection::Expected("none, optional or require".into())),
        }
    }
}

/// A password: kept out of `Debug` output (configs are logged).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

impl ToSetting for TlsMode {
    fn to_setting(&self) -> String {
        self.to_string()
    }
}

impl ToSetting for ClientAuth {
    fn to_setting(&self) -> String {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Optional => "optional",
            ClientAuth::Require => "require",
        }
        .to_string()
    }
}

/// Never printed.
impl ToSetting for Secret {
    fn to_setting(&self) -> String {
        "***".to_string()
    }
}

impl FromSetting for Secret {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        String::from_setting(text).map(Secret)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TlsConfig {
    pub server_mode: TlsMode,
    /// Java's server then serves a certificate it generates at start (and its clients trust any
    /// server). Skiff does the same when no `tls.server.certPath` is given.
    pub test_mode_enable: bool,
    /// A Java properties file with more `tls.*` settings; read at start if it exists.
    pub config_file: PathBuf,
    pub server_need_client_auth: ClientAuth,
    /// PEM: PKCS#8 (encrypted when `tls.server.keyPassword` is set), PKCS#1 or SEC1.
    pub server_key_path: Option<PathBuf>,
    pub server_key_password: Option<Secret>,
    /// PEM certificate chain, the server's own first.
    pub server_cert_path: Option<PathBuf>,
    /// Verify client certificates against `tls.server.trustCertPath`; off = accept any (Java).
    pub server_auth_client: bool,
    pub server_trust_cert_path: Option<PathBuf>,
    /// `tls.enable`: the broker's own connections (to name servers) use TLS; unset = only when
    /// `tls.server.mode` is enforcing, as in Java's `NettyClientConfig`.
    pub enable: Option<bool>,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            server_mode: TlsMode::Permissive,
            test_mode_enable: true,
            config_file: PathBuf::from("/etc/rocketmq/tls.properties"),
            server_need_client_auth: ClientAuth::None,
            server_key_path: None,
            server_key_password: None,
            server_cert_path: None,
            server_auth_client: false,
            server_trust_cert_path: None,
            enable: None,
        }
    }
}

settings!(TlsConfig {
    "tls.server.mode" => server_mode,
    "tls.test.mode.enable" => test_mode_enable,
    "tls.config.file" => config_file,
    "tls.server.need.client.auth" => server_need_client_auth,
    "tls.server.keyPath" => server_key_path,
    "tls.server.keyPassword" => server_key_password,
    "tls.server.certPath" => server_cert_path,
    "tls.server.authClient" => server_auth_client,
    "tls.server.trustCertPath" => server_trust_cert_path,
    "tls.enable" => enable,
});

impl TlsConfig {
    /// These settings with `tls.config.file` applied, if that file exists (as in Java, a missing
    /// file is no error). Client-side keys in it (`tls.client.*`) are for clients and skipped.
    pub fn with_config_file(&self) -> Result<TlsConfig, ConfigError> {
        let path = &self.config_file;
        if !path.is_file() {
            return Ok(self.clone());
        }
        let text = std::fs::read(path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let text = String::from_utf8_lossy(&text);
        let at = |line| Location::File {
            path: path.clone(),
            line,
        };
        let entries = properties::parse(&text).map_err(|(line, message)| ConfigError::Syntax {
            at: at(line),
            message,
        })?;
        let mut resolved = self.clone();
        for entry in entries {
            resolved.apply_file_entry(path, &entry.key, &entry.value, at(entry.line))?;
        }
        Ok(resolved)
    }

    fn apply_file_entry(
        &mut self,
        path: &Path,
        key: &str,
        value: &str,
        at: Location,
    ) -> Result<(), ConfigError> {
        match key {
            "tls.server.mode" | "tls.enable" | "tls.config.file" => {
                tracing::warn!(
                    "{at}: ignored: {key} is not read from {} (as in Java); set it in the \
                     broker or name server config",
                    path.display()
                );
                Ok(())
            }
            _ if key.starts_with("tls.client.") => Ok(()),
            _ => match self.apply(key, value) {
                Some(result) => result.map_err(|e| e.at(at)),
                None => {
                    tracing::warn!("{at}: ignored: unknown TLS setting {key}");
                    Ok(())
                }
            },
        }
    }

    /// Whether the broker's connections to name servers use TLS, given `useTLS` (which wins).
    pub fn client_uses_tls(&self, use_tls: Option<bool>) -> bool {
        use_tls
            .or(self.enable)
            .unwrap_or(self.server_mode == TlsMode::Enforcing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_java_names_and_typos_are_refused() {
        let mut tls = TlsConfig::default();
        assert_eq!(tls.server_mode, TlsMode::Permissive);
        tls.apply("tls.server.mode", "enforcing").unwrap().unwrap();
        assert_eq!(tls.server_mode, TlsMode::Enforcing);
        let err = tls.apply("tls.server.mode", "strict").unwrap().unwrap_err();
        assert!(err.to_string().contains("tls.server.mode"), "{err}");
        assert!(tls.apply("tls.server.nope", "x").is_none());
    }

    #[test]
    fn config_file_overrides_but_not_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tls.properties");
        std::fs::write(
            &file,
            "tls.test.mode.enable=false\ntls.server.certPath=/a/cert.pem\n\
             tls.server.mode=disabled\ntls.client.keyPath=/c/key.pem\n",
        )
        .unwrap();
        let tls = TlsConfig {
            config_file: file.clone(),
            server_mode: TlsMode::Enforcing,
            ..TlsConfig::default()
        };
        let resolved = tls.with_config_file().unwrap();
        assert!(!resolved.test_mode_enable);
        assert_eq!(
            resolved.server_cert_path.as_deref(),
            Some(Path::new("/a/cert.pem"))
        );
        assert_eq!(resolved.server_mode, TlsMode::Enforcing);

        std::fs::write(&file, "\n\ntls.server.need.client.auth=sometimes\n").unwrap();
        let err = tls.with_config_file().unwrap_err().to_string();
        assert!(
            err.contains("tls.properties:3") && err.contains("tls.server.need.client.auth"),
            "{err}"
        );
    }

    #[test]
    fn missing_config_file_is_no_error() {
        let tls = TlsConfig {
            config_file: PathBuf::from("/nonexistent/tls.properties"),
            ..TlsConfig::default()
        };
        assert_eq!(tls.with_config_file().unwrap(), tls);
    }

    #[test]
    fn password_is_not_logged() {
        let tls = TlsConfig {
            server_key_password: Some(Secret("hunter2".into())),
            ..TlsConfig::default()
        };
        assert!(!format!("{tls:?}").contains("hunter2"));
    }

    #[test]
    fn client_tls_follows_java() {
        let mut tls = TlsConfig::default();
        assert!(!tls.client_uses_tls(None));
        tls.server_mode = TlsMode::Enforcing;
        assert!(tls.client_uses_tls(None));
        assert!(!tls.client_uses_tls(Some(false)));
        tls.enable = Some(false);
        assert!(!tls.client_uses_tls(None));
    }

    #[test]
    fn broker_and_namesrv_take_tls_keys() {
        use crate::config::{BrokerConfig, NamesrvConfig};
        let mut broker = BrokerConfig::default();
        broker.set("tls.server.mode", "enforcing").unwrap();
        broker.set("useTLS", "false").unwrap();
        assert_eq!(broker.tls.server_mode, TlsMode::Enforcing);
        assert_eq!(broker.use_tls, Some(false));
        let err = broker
            .set("tls.server.mod", "enforcing")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("did you mean") && err.contains("tls.server.mode"),
            "{err}"
        );
        let mut namesrv = NamesrvConfig::default();
        namesrv.set("tls.server.certPath", "/etc/cert.pem").unwrap();
        assert_eq!(
            namesrv.tls.server_cert_path.as_deref(),
            Some(Path::new("/etc/cert.pem"))
        );
    }
}
