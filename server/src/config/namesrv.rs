//! The name server's settings: Java's `NamesrvConfig` and `NettyServerConfig` keys that Skiff
//! implements, plus `brokerChannelExpiredTime` and `frameMaxLength`, which Java hard-codes.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use super::value::positive;
use super::{set_one, settings, source, ConfigError, TlsConfig};

#[derive(Debug, Clone)]
pub struct NamesrvConfig {
    pub bind_address: IpAddr,
    /// 0 picks a free port (tests).
    pub listen_port: u16,
    /// Milliseconds between scans for brokers that stopped registering.
    pub scan_not_active_broker_interval: u64,
    /// Milliseconds without a registration after which a broker leaves the routes (Java's
    /// `RouteInfoManager` constant).
    pub broker_channel_expired_time: u64,
    /// Largest remoting frame accepted.
    pub frame_max_length: usize,
    /// The `tls.*` settings of the listener.
    pub tls: TlsConfig,
    /// ACL 1.0 on the name server (a Skiff extension: Java's name server checks no ACL). Route
    /// queries need a signed request of any account, route changes an admin account.
    pub acl_enable: bool,
    /// The ACL file, as the broker's `rocketmq.acl.plain.file`.
    pub acl_plain_file: PathBuf,
    /// The config file read last ([`NamesrvConfig::apply_file`]): UPDATE_NAMESRV_CONFIG writes
    /// its settings back into it.
    pub config_file: Option<PathBuf>,
}

impl Default for NamesrvConfig {
    fn default() -> Self {
        NamesrvConfig {
            bind_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            listen_port: 9876,
            scan_not_active_broker_interval: 5000,
            broker_channel_expired_time: 120_000,
            frame_max_length: 16 * 1024 * 1024,
            tls: TlsConfig::default(),
            acl_enable: false,
            acl_plain_file: PathBuf::from("conf/plain_acl.yml"),
            config_file: None,
        }
    }
}

settings!(NamesrvConfig {
    "bindAddress" => bind_address,
    "listenPort" => listen_port,
    "scanNotActiveBrokerInterval" => scan_not_active_broker_interval vet positive,
    "brokerChannelExpiredTime" => broker_channel_expired_time vet positive,
    "frameMaxLength" => frame_max_length vet positive,
    "aclEnable" => acl_enable,
    "rocketmq.acl.plain.file" => acl_plain_file,
} .. tls);

impl NamesrvConfig {
    /// Every key Skiff reads with its value in force, as GET_NAMESRV_CONFIG prints them.
    pub fn java_properties(&self) -> Vec<(&'static str, String)> {
        super::Settings::values(self)
    }

    /// The defaults, then the file at `path`, then [`NamesrvConfig::validate`].
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let mut config = NamesrvConfig::default();
        config.apply_file(path)?;
        config.validate()?;
        Ok(config)
    }

    /// Applies the settings of a `.toml` or Java properties file on top of the current ones.
    pub fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        source::apply_file(self, path)?;
        self.config_file = Some(path.to_owned());
        Ok(())
    }

    /// Sets one setting by its Java name.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        set_one(self, key, value.trim(), None)
    }

    /// Checks how the settings fit together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.scan_not_active_broker_interval >= self.broker_channel_expired_time {
            return Err(ConfigError::Invalid {
                key: "scanNotActiveBrokerInterval",
                message: format!(
                    "{} ms must be shorter than brokerChannelExpiredTime ({} ms)",
                    self.scan_not_active_broker_interval, self.broker_channel_expired_time
                ),
            });
        }
        Ok(())
    }
}
