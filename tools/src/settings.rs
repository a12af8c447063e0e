//! From command-line arguments to server configs. Later sources win: defaults, then the `-c`
//! file, then flags, then `SKIFF_<key>` environment variables (brokers only), then `--set`.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use skiff_server::config::{BrokerConfig, ConfigError, Location, NamesrvConfig};

use crate::cli::{BrokerArgs, NamesrvArgs, StandaloneArgs};

/// `standalone`'s broker address when neither `--broker-listen` nor the file says otherwise:
/// loopback, so that trying Skiff out exposes nothing to the network.
pub const STANDALONE_BROKER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 10911);

/// `standalone`'s Kafka port when neither `--kafka-listen` nor `kafkaListen` says otherwise:
/// Kafka's own default.
pub const STANDALONE_KAFKA_PORT: u16 = 9092;

/// `standalone`'s data directory: fixed, so a restart from any working directory finds the same
/// data, and apart from `~/store`, which an Apache RocketMQ broker on the same host would use.
pub fn default_data_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map_or_else(|| PathBuf::from("."), PathBuf::from)
        .join("skiff-data")
}

/// Environment variables that stand for `--set`: `SKIFF_flushDiskType=SYNC_FLUSH` is
/// `--set flushDiskType=SYNC_FLUSH`. A container is configured this way, having no shell to build
/// a command line. Only names whose key starts with a lower-case letter count (Java's keys are
/// camelCase), so that SKIFF_DATA, SKIFF_BIN and the like are never taken for settings.
pub const ENV_SET_PREFIX: &str = "SKIFF_";

/// One `SKIFF_<key>=<value>` variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSet {
    pub name: String,
    pub key: String,
    pub value: String,
}

/// The `SKIFF_<key>` variables among `vars`, sorted by name so the order never depends on the
/// environment's.
pub fn env_sets(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<EnvSet> {
    let mut sets: Vec<EnvSet> = vars
        .into_iter()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            let key = name.strip_prefix(ENV_SET_PREFIX)?;
            if !key.starts_with(|c: char| c.is_ascii_lowercase()) {
                return None;
            }
            Some(EnvSet {
                key: key.to_owned(),
                value: value.into_string().ok()?.trim().to_owned(),
                name,
            })
        })
        .collect();
    sets.sort_by(|a, b| a.name.cmp(&b.name));
    sets
}

/// The name server's and the broker's configs; the broker's `namesrvAddr` is filled in once the
/// name server listens.
pub fn standalone(args: &StandaloneArgs) -> Result<(NamesrvConfig, BrokerConfig), ConfigError> {
    standalone_with_env(args, &env_sets(std::env::vars_os()))
}

fn standalone_with_env(
    args: &StandaloneArgs,
    env: &[EnvSet],
) -> Result<(NamesrvConfig, BrokerConfig), ConfigError> {
    let namesrv = NamesrvConfig {
        bind_address: args.namesrv_listen.ip(),
        listen_port: args.namesrv_listen.port(),
        ..NamesrvConfig::default()
    };
    let mut broker = BrokerConfig {
        bind_address: STANDALONE_BROKER.ip(),
        listen_port: STANDALONE_BROKER.port(),
        store_path_root_dir: default_data_dir(),
        ..BrokerConfig::default()
    };
    if let Some(file) = &args.config {
        broker.apply_file(file)?;
    }
    if let Some(dir) = &args.data {
        broker.store_path_root_dir = dir.clone();
    }
    if let Some(addr) = args.broker_listen {
        broker.bind_address = addr.ip();
        broker.listen_port = addr.port();
    }
    apply_env(env, |key, value| broker.set(key, value))?;
    apply_sets(&args.set, |key, value| broker.set(key, value))?;
    if let Some(addr) = args.kafka_listen {
        broker.kafka_listen = Some(addr);
    } else if broker.kafka_listen.is_none() {
        // On by default, on the broker's IP; a free port when the broker takes one (tests).
        let port = if broker.listen_port == 0 {
            0
        } else {
            STANDALONE_KAFKA_PORT
        };
        broker.kafka_listen = Some(SocketAddr::new(broker.bind_address, port));
        broker.kafka_listen_optional = true;
    }
    // One process, one set of `tls.*` settings for both listeners, and one ACL file: the name
    // server checks the broker's accounts.
    let namesrv = NamesrvConfig {
        tls: broker.tls.clone(),
        acl_enable: broker.acl_enable,
        acl_plain_file: broker.acl_plain_file.clone(),
        ..namesrv
    };
    namesrv.validate()?;
    broker.validate()?;
    Ok((namesrv, broker))
}

pub fn namesrv(args: &NamesrvArgs) -> Result<NamesrvConfig, ConfigError> {
    let mut config = NamesrvConfig::default();
    if let Some(file) = &args.config {
        config.apply_file(file)?;
    }
    if let Some(addr) = args.listen {
        config.bind_address = addr.ip();
        config.listen_port = addr.port();
    }
    apply_sets(&args.set, |key, value| config.set(key, value))?;
    config.validate()?;
    Ok(config)
}

pub fn broker(args: &BrokerArgs) -> Result<BrokerConfig, ConfigError> {
    let mut config = BrokerConfig::from_env();
    config.apply_file(&args.config)?;
    apply_env(&env_sets(std::env::vars_os()), |key, value| {
        config.set(key, value)
    })?;
    apply_sets(&args.set, |key, value| config.set(key, value))?;
    config.validate()?;
    Ok(config)
}

fn apply_sets(
    sets: &[(String, String)],
    mut set: impl FnMut(&str, &str) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    for (key, value) in sets {
        set(key, value).map_err(|e| e.at(Location::CommandLine))?;
    }
    Ok(())
}

fn apply_env(
    env: &[EnvSet],
    mut set: impl FnMut(&str, &str) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    for var in env {
        set(&var.key, &var.value).map_err(|e| e.at(Location::Environment(var.name.clone())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use skiff_server::config::FlushDiskType;

    fn standalone_from(args: &[&str]) -> Result<(NamesrvConfig, BrokerConfig), ConfigError> {
        standalone_from_env(args, &[])
    }

    fn standalone_from_env(
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<(NamesrvConfig, BrokerConfig), ConfigError> {
        let argv = ["skiff", "standalone"].iter().chain(args);
        let env = env_sets(env.iter().map(|(k, v)| (k.into(), v.into())));
        match Cli::parse_from(argv).command {
            Command::Standalone(args) => standalone_with_env(&args, &env),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_skiff_variables_with_a_java_key_are_settings() {
        let env = env_sets(
            [
                ("SKIFF_flushDiskType", " SYNC_FLUSH "),
                ("SKIFF_DATA", "/data"),
                ("SKIFF_BIN", "/bin/skiff"),
                ("SKIFF_", "x"),
                ("HOME", "/root"),
                ("SKIFF_brokerIP1", "10.0.0.5"),
            ]
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let pairs: Vec<(&str, &str)> = env
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [("brokerIP1", "10.0.0.5"), ("flushDiskType", "SYNC_FLUSH")]
        );
    }

    #[test]
    fn environment_wins_over_flags_and_set_wins_over_environment() {
        let env = [
            ("SKIFF_listenPort", "20911"),
            ("SKIFF_brokerName", "from-env"),
        ];
        let (_, broker) = standalone_from_env(&["--broker-listen", "0.0.0.0:10911"], &env).unwrap();
        assert_eq!(broker.listen_port, 20911);
        assert_eq!(broker.broker_name, "from-env");
        assert!(broker.bind_address.is_unspecified());
        let (_, broker) = standalone_from_env(&["--set", "brokerName=from-set"], &env).unwrap();
        assert_eq!(broker.broker_name, "from-set");
    }

    #[test]
    fn bad_environment_setting_names_the_variable() {
        let err = standalone_from_env(&[], &[("SKIFF_flushDiskType", "SYNC")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"environment variable SKIFF_flushDiskType: flushDiskType = "SYNC": expected ASYNC_FLUSH or SYNC_FLUSH"#
        );
    }

    #[test]
    fn standalone_defaults_stay_on_loopback() {
        let (namesrv, broker) = standalone_from(&[]).unwrap();
        assert_eq!(
            SocketAddr::new(namesrv.bind_address, namesrv.listen_port),
            "127.0.0.1:9876".parse().unwrap()
        );
        assert_eq!(
            SocketAddr::new(broker.bind_address, broker.listen_port),
            STANDALONE_BROKER
        );
        assert_eq!(broker.advertised_ip(), "127.0.0.1");
        assert_eq!(broker.store_path_root_dir, default_data_dir());
    }

    #[test]
    fn flags_win_over_the_file_and_set_wins_over_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("broker.conf");
        std::fs::write(
            &file,
            "storePathRootDir=/from/file\nlistenPort=20911\nbrokerName=from-file\n",
        )
        .unwrap();
        let file = file.to_str().unwrap();

        let (_, broker) = standalone_from(&["-c", file]).unwrap();
        assert_eq!(broker.store_path_root_dir, PathBuf::from("/from/file"));
        assert_eq!(broker.listen_port, 20911);
        assert_eq!(broker.broker_name, "from-file");

        let (_, broker) = standalone_from(&[
            "-c",
            file,
            "--data",
            "/from/flag",
            "--broker-listen",
            "127.0.0.2:0",
            "--set",
            "listenPort=30911",
            "--set",
            "flushDiskType=SYNC_FLUSH",
        ])
        .unwrap();
        assert_eq!(broker.store_path_root_dir, PathBuf::from("/from/flag"));
        assert_eq!(broker.bind_address, "127.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(broker.listen_port, 30911);
        assert_eq!(broker.flush_disk_type, FlushDiskType::SyncFlush);
    }

    #[test]
    fn bad_set_names_the_flag_and_key() {
        let err = standalone_from(&["--set", "flushDiskType=SYNC"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"--set: flushDiskType = "SYNC": expected ASYNC_FLUSH or SYNC_FLUSH"#
        );
    }
}
