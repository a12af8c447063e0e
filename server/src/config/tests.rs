//! Loading whole files: both formats, Java's own distribution files, and the errors a user sees.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use super::*;

/// Writes `text` to `name` in a fresh temporary directory.
fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn load(name: &str, text: &str) -> Result<BrokerConfig, ConfigError> {
    let (_dir, path) = file(name, text);
    let mut config = BrokerConfig::default();
    config.apply_file(&path)?;
    config.validate()?;
    Ok(config)
}

/// The error message with the temporary directory taken out.
fn load_err(name: &str, text: &str) -> String {
    let (dir, path) = file(name, text);
    let mut config = BrokerConfig::default();
    let err = config
        .apply_file(&path)
        .and_then(|()| config.validate())
        .unwrap_err();
    let prefix = format!("{}/", dir.path().display());
    err.to_string().replace(&prefix, "")
}

#[test]
fn defaults_are_javas() {
    let c = BrokerConfig::default();
    assert_eq!(c.broker_cluster_name, "DefaultCluster");
    assert_eq!(c.broker_name, "broker-a");
    assert_eq!(c.broker_id, 0);
    assert_eq!(c.listen_port, 10911);
    assert_eq!(c.bind_address, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    assert!(c.store_path_root_dir.ends_with("store"));
    assert_eq!(c.mapped_file_size_commit_log, 1 << 30);
    assert_eq!(c.mapped_file_size_consume_queue, 6_000_000);
    assert_eq!(c.flush_disk_type, FlushDiskType::AsyncFlush);
    assert_eq!(c.max_message_size, 4 << 20);
    assert_eq!(c.frame_max_length, 16 << 20);
    assert_eq!(c.delete_when, "04");
    assert_eq!(c.file_reserved_time, 72);
    assert_eq!(c.broker_permission, 6);
    assert_eq!(c.msg_trace_topic_name, "RMQ_SYS_TRACE_TOPIC");
    assert_eq!(c.broker_role, BrokerRole::AsyncMaster);
    assert_eq!(c.ha_listen_port, None);
    c.validate().unwrap();

    let n = NamesrvConfig::default();
    assert_eq!(n.listen_port, 9876);
    assert_eq!(n.scan_not_active_broker_interval, 5000);
    assert_eq!(n.broker_channel_expired_time, 120_000);
    n.validate().unwrap();
}

const PROPERTIES: &str = "\
# the same settings as TOML below
brokerClusterName = TestCluster
brokerName=broker-x
brokerIP1: 10.0.0.7
bindAddress 127.0.0.1
listenPort=20911
namesrvAddr=127.0.0.1:9876;127.0.0.2:9876
storePathRootDir=/var/skiff/store
flushDiskType=SYNC_FLUSH
autoCreateTopicEnable=false
defaultTopicQueueNums=4
mappedFileSizeConsumeQueue=1001
brokerRole=SYNC_MASTER
haListenPort=20912
";

const TOML: &str = r#"
# the same settings as the properties above
brokerClusterName = "TestCluster"
brokerName = "broker-x"
brokerIP1 = "10.0.0.7"
bindAddress = "127.0.0.1"
listenPort = 20911
namesrvAddr = "127.0.0.1:9876;127.0.0.2:9876"
storePathRootDir = "/var/skiff/store"
flushDiskType = "SYNC_FLUSH"
autoCreateTopicEnable = false
defaultTopicQueueNums = 4
mappedFileSizeConsumeQueue = 1001
brokerRole = "SYNC_MASTER"
haListenPort = 20912
"#;

#[test]
fn toml_and_properties_read_the_same() {
    for config in [
        load("broker.conf", PROPERTIES).unwrap(),
        load("broker.toml", TOML).unwrap(),
    ] {
        assert_eq!(config.broker_cluster_name, "TestCluster");
        assert_eq!(config.broker_name, "broker-x");
        assert_eq!(config.broker_ip1.as_deref(), Some("10.0.0.7"));
        assert_eq!(config.bind_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(config.listen_port, 20911);
        assert_eq!(
            config.namesrv_addr.as_deref(),
            Some("127.0.0.1:9876;127.0.0.2:9876")
        );
        assert_eq!(config.store_path_root_dir, Path::new("/var/skiff/store"));
        assert_eq!(config.flush_disk_type, FlushDiskType::SyncFlush);
        assert!(!config.auto_create_topic_enable);
        assert_eq!(config.default_topic_queue_nums, 4);
        assert_eq!(config.mapped_file_size_consume_queue, 1020, "whole entries");
        assert_eq!(config.broker_role, BrokerRole::SyncMaster);
        assert_eq!(config.ha_listen_port, Some(20912));
    }
}

#[test]
fn bad_value_names_file_line_key_and_expectation() {
    let text = "brokerName=a\n\n\n\n\n\nflushDiskType = SYNC\n";
    assert_eq!(
        load_err("broker.conf", text),
        r#"broker.conf:7: flushDiskType = "SYNC": expected ASYNC_FLUSH or SYNC_FLUSH"#
    );
    assert_eq!(
        load_err(
            "broker.toml",
            "listenPort = 10911\nlongPollingEnable = \"yes\"\n"
        ),
        r#"broker.toml:2: longPollingEnable = "yes": expected true or false"#
    );
    assert_eq!(
        load_err("broker.conf", "listenPort=70000"),
        r#"broker.conf:1: listenPort = "70000": expected an integer from 0 to 65535"#
    );
    assert_eq!(
        load_err("broker.conf", "haTransferBatchSize=4194293"),
        "broker.conf:1: haTransferBatchSize = \"4194293\": expected a size from 1 to 4194292 \
         bytes (a slave reads frames of at most 4 MiB, header included)"
    );
    assert_eq!(
        load_err("broker.conf", "namesrvAddr=127.0.0.1"),
        "broker.conf:1: namesrvAddr = \"127.0.0.1\": expected host:port addresses separated \
         by ';', such as 127.0.0.1:9876;127.0.0.2:9876"
    );
}

#[test]
fn unknown_key_names_line_and_suggests() {
    assert_eq!(
        load_err("broker.conf", "brokerName=a\nbrokerNmae=b\n"),
        r#"broker.conf:2: unknown setting "brokerNmae" (did you mean brokerName?)"#
    );
    assert_eq!(
        load_err("broker.toml", "wibble = 1\n"),
        r#"broker.toml:1: unknown setting "wibble": not a Skiff or Apache RocketMQ setting"#
    );
}

#[test]
fn java_settings_skiff_lacks_are_ignored() {
    let config = load(
        "broker.conf",
        "sendMessageThreadPoolNums=16\nstorePathCommitLog=/x\nlistenPort=1234\n",
    )
    .unwrap();
    assert_eq!(config.listen_port, 1234);
    // A name-server-only key in a broker file is still a real RocketMQ key.
    let mut config = BrokerConfig::default();
    config.set("scanNotActiveBrokerInterval", "1000").unwrap();
}

#[test]
fn slaves_load_and_need_a_positive_id() {
    let slave = load(
        "broker-a-s.properties",
        "brokerName=a\nbrokerId=1\nbrokerRole=SLAVE\nhaMasterAddress=127.0.0.1:10912\n",
    )
    .unwrap();
    assert_eq!(slave.broker_role, BrokerRole::Slave);
    assert_eq!(slave.effective_broker_id(), 1);
    assert_eq!(slave.ha_master_address.as_deref(), Some("127.0.0.1:10912"));
    let err = load_err("b.conf", "brokerRole=SLAVE");
    assert!(err.contains("Slave's brokerId must be > 0"), "{err}");
    let err = load_err("b.conf", "haMasterAddress=nowhere");
    assert!(
        err.starts_with("b.conf:1: haMasterAddress = \"nowhere\""),
        "{err}"
    );
    // A master's id is 0 whatever the file says, as Java's BrokerStartup forces it.
    let master = load("b.conf", "brokerId=3\nbrokerRole=SYNC_MASTER\n").unwrap();
    assert_eq!(master.effective_broker_id(), 0);
    let err = load_err("b.conf", "brokerId=-1");
    assert!(
        err.contains("controller mode (brokerId=-1) is not supported yet"),
        "{err}"
    );
}

/// The settings of Apache RocketMQ's `distribution/conf/broker.conf`, formatted as it is.
const APACHE_BROKER_CONF: &str = "\
#  Licensed to the Apache Software Foundation (ASF) ...

brokerClusterName = DefaultCluster
brokerName = broker-a
brokerId = 0
deleteWhen = 04
fileReservedTime = 48
brokerRole = ASYNC_MASTER
flushDiskType = ASYNC_FLUSH
";

#[test]
fn apache_broker_conf_loads() {
    let config = load("broker.conf", APACHE_BROKER_CONF).unwrap();
    assert_eq!(config.broker_name, "broker-a");
    assert_eq!(config.file_reserved_time, 48);
    assert_eq!(config.delete_when, "04");
}

/// Every broker file shipped with Apache RocketMQ, when its source is at hand: masters load
/// (with warnings for DLedger and container settings), slaves too; controller-mode brokers are
/// refused with the reason.
#[test]
fn apache_distribution_files_load_when_present() {
    let roots = [
        "/work/.mirror/rocketmq-src/distribution/conf",
        "/work/.mirror/rocketmq-4.9.8/distribution/conf",
    ];
    let mut seen = 0;
    for root in roots.iter().map(Path::new).filter(|root| root.is_dir()) {
        for path in conf_files(root) {
            let text = std::fs::read_to_string(&path).unwrap();
            if !text.contains("brokerName") {
                continue; // namesrv, controller and proxy files
            }
            seen += 1;
            if let Err(err) = BrokerConfig::load(&path) {
                assert!(
                    err.to_string().contains("is not supported yet")
                        || err.to_string().contains("are not supported yet"),
                    "{}: {err}",
                    path.display()
                );
            }
        }
    }
    eprintln!("checked {seen} Apache RocketMQ broker config files");
}

fn conf_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(conf_files(&path));
        } else if path
            .extension()
            .is_some_and(|ext| ext == "conf" || ext == "properties")
        {
            files.push(path);
        }
    }
    files
}

#[test]
fn set_takes_command_line_values() {
    let mut config = BrokerConfig::default();
    config.set("listenPort", " 0 ").unwrap();
    config.set("brokerIP1", "").unwrap();
    assert_eq!(config.listen_port, 0);
    assert_eq!(config.broker_ip1, None);
    let err = config
        .set("flushDiskType", "sync")
        .unwrap_err()
        .at(Location::CommandLine);
    assert_eq!(
        err.to_string(),
        r#"--set: flushDiskType = "sync": expected ASYNC_FLUSH or SYNC_FLUSH"#
    );
}

#[test]
fn validate_checks_settings_together() {
    let err = load_err("b.conf", "maxMessageSize=17000000\n");
    assert!(err.starts_with("maxMessageSize: 17000000 must be smaller than frameMaxLength"));
    let err = load_err("b.conf", "listenPort=20000\nhaListenPort=20000\n");
    assert_eq!(err, "haListenPort: 20000 is also listenPort");
}

#[test]
fn advertised_ip_prefers_broker_ip1_then_bind_address() {
    let mut config = BrokerConfig {
        broker_ip1: Some("10.1.2.3".into()),
        bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        ..BrokerConfig::default()
    };
    assert_eq!(config.advertised_ip(), "10.1.2.3");
    config.broker_ip1 = None;
    assert_eq!(config.advertised_ip(), "127.0.0.1");
    config.bind_address = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    let ip: Ipv4Addr = config.advertised_ip().parse().unwrap();
    assert!(!ip.is_unspecified());
}

#[test]
fn namesrv_loads_both_formats() {
    let (_d, conf) = file(
        "namesrv.properties",
        "listenPort=19876\nrocketmqHome=/opt/rocketmq\n",
    );
    assert_eq!(NamesrvConfig::load(&conf).unwrap().listen_port, 19876);
    let (_d, toml) = file(
        "namesrv.toml",
        "listenPort = 19877\nbindAddress = \"127.0.0.1\"\n",
    );
    let config = NamesrvConfig::load(&toml).unwrap();
    assert_eq!(config.listen_port, 19877);
    assert_eq!(config.bind_address, IpAddr::V4(Ipv4Addr::LOCALHOST));
    let (_d, bad) = file("namesrv.toml", "listenPort = 1\nlistenPot = 2\n");
    let err = NamesrvConfig::load(&bad).unwrap_err().to_string();
    assert!(err.ends_with(r#":2: unknown setting "listenPot" (did you mean listenPort?)"#));
}

#[test]
fn missing_file_is_named() {
    let err = BrokerConfig::load(Path::new("/nonexistent/broker.conf")).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("cannot read /nonexistent/broker.conf: "));
}

#[test]
fn edit_distances() {
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("same", "same"), 0);
}

#[test]
fn suggestions_prefer_our_keys_and_ignore_case() {
    let ours = &["brokerName", "listenPort"];
    assert_eq!(suggest("brokerNmae", ours), Some("brokerName"));
    assert_eq!(suggest("lisenPort", ours), Some("listenPort"));
    assert_eq!(suggest("brokerip1", ours), Some("brokerIP1"));
    assert_eq!(suggest("completelyUnrelated", ours), None);
}

#[test]
fn ignored_keys_are_warned_about_once() {
    assert!(warn_ignored("someJavaOnlyKey", None));
    assert!(!warn_ignored("someJavaOnlyKey", None));
}

#[test]
fn timer_settings_load_as_java_reads_them() {
    let config = load(
        "broker.conf",
        "timerWheelEnable=false\ntimerPrecisionMs=300\ntimerMaxDelaySec=60\ntimerFlushIntervalMs=500\nmappedFileSizeTimerLog=1048576\n",
    )
    .unwrap();
    assert!(!config.timer_wheel_enable);
    // Rounded down to one of 100, 200, 500, 1000, as Java's setter does.
    assert_eq!(config.timer_precision_ms, 200);
    assert_eq!(config.timer_max_delay_sec, 60);
    assert_eq!(config.timer_flush_interval_ms, 500);
    assert_eq!(config.mapped_file_size_timer_log, 1_048_576);
    assert_eq!(
        load("b.conf", "timerPrecisionMs=5000\n")
            .unwrap()
            .timer_precision_ms,
        1000
    );
    assert_eq!(
        load("b.conf", "timerPrecisionMs=7\n")
            .unwrap()
            .timer_precision_ms,
        100
    );
    assert!(load_err("b.conf", "timerMaxDelaySec=0\n").contains("timerMaxDelaySec"));
    assert!(load_err("b.conf", "mappedFileSizeTimerLog=10\n").contains("mappedFileSizeTimerLog"));
}

#[test]
fn transaction_settings_have_javas_names_and_defaults() {
    let c = BrokerConfig::default();
    assert!(!c.reject_transaction_message);
    assert_eq!(
        (
            c.transaction_time_out,
            c.transaction_check_max,
            c.transaction_check_interval
        ),
        (6_000, 15, 30_000)
    );
    let c = load(
        "broker.conf",
        "rejectTransactionMessage=true\ntransactionTimeOut=4000\ntransactionCheckMax=3\ntransactionCheckInterval=1000\ntransactionOpBatchInterval=200\n",
    )
    .unwrap();
    assert!(c.reject_transaction_message);
    assert_eq!(
        (
            c.transaction_time_out,
            c.transaction_check_max,
            c.transaction_check_interval
        ),
        (4000, 3, 1000)
    );
    assert!(load_err("broker.conf", "transactionCheckMax=0\n").contains("transactionCheckMax"));
}

#[test]
fn acl_settings_have_javas_names() {
    let c = BrokerConfig::default();
    assert!(!c.acl_enable);
    assert_eq!(c.acl_plain_file, Path::new("conf/plain_acl.yml"));
    let c = load(
        "broker.conf",
        "aclEnable=true\nrocketmq.acl.plain.file=/etc/skiff/acl.yml\ninnerClientAuthenticationCredentials={\"accessKey\":\"adminKey1\",\"secretKey\":\"adminSecret1\"}\n",
    )
    .unwrap();
    assert!(c.acl_enable);
    assert_eq!(c.acl_plain_file, Path::new("/etc/skiff/acl.yml"));
    assert!(c.inner_client_authentication_credentials.is_some());
    let c = load(
        "broker.toml",
        "aclEnable = true\n\"rocketmq.acl.plain.file\" = \"acl.yml\"\n",
    )
    .unwrap();
    assert_eq!(c.acl_plain_file, Path::new("acl.yml"));
    let e = load_err(
        "broker.conf",
        "innerClientAuthenticationCredentials=admin:secret\n",
    );
    assert!(e.contains("innerClientAuthenticationCredentials"), "{e}");
    let mut n = NamesrvConfig::default();
    n.set("aclEnable", "true").unwrap();
    assert!(n.acl_enable);
}

#[test]
fn acl_2_authentication_keys_as_apache_5_3_writes_them() {
    let c = load(
        "broker.conf",
        "authenticationEnabled=true\n\
         authenticationProvider=org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider\n\
         authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider\n\
         authenticationWhitelist=34, 38\n\
         initAuthenticationUser={\"username\":\"rocketmq\",\"password\":\"12345678\"}\n",
    )
    .unwrap();
    assert!(c.authentication_enabled);
    assert_eq!(c.authentication_whitelist_codes(), vec![34, 38]);
    assert!(c.init_authentication_user.is_some());
    assert!(
        !c.java_properties()
            .iter()
            .any(|(k, _)| *k == "initAuthenticationUser"),
        "the start-up user's password is not shown"
    );
    for (text, key) in [
        (
            "authenticationMetadataProvider=com.example.Ldap\n",
            "authenticationMetadataProvider",
        ),
        (
            "authenticationWhitelist=34,heartbeat\n",
            "authenticationWhitelist",
        ),
        (
            "initAuthenticationUser=rocketmq:12345678\n",
            "initAuthenticationUser",
        ),
        // Not implemented: refused rather than started open.
        ("authorizationEnabled=true\n", "authorizationEnabled"),
        (
            "aclEnable=true\nauthenticationEnabled=true\n",
            "authenticationEnabled",
        ),
    ] {
        let e = load_err("broker.conf", text);
        assert!(e.contains(key), "{text}: {e}");
    }
}

#[test]
fn metrics_keys_as_java_names_them() {
    let c = BrokerConfig::default();
    assert_eq!(c.metrics_exporter_type, MetricsExporterType::Disable);
    assert_eq!(c.metrics_prom_exporter_port, 5557);
    assert_eq!(c.metrics_prom_exporter_host, None);
    let c = load(
        "broker.conf",
        "metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\nmetricsPromExporterPort=15557\n",
    )
    .unwrap();
    assert_eq!(c.metrics_exporter_type, MetricsExporterType::Prom);
    assert_eq!(
        c.metrics_prom_exporter_host,
        Some("127.0.0.1".parse().unwrap())
    );
    assert_eq!(c.metrics_prom_exporter_port, 15557);
    // Java's numbers too; an empty host is Java's default (the advertised IP).
    let c = load(
        "broker.conf",
        "metricsExporterType=2\nmetricsPromExporterHost=\n",
    )
    .unwrap();
    assert_eq!(c.metrics_exporter_type, MetricsExporterType::Prom);
    assert_eq!(c.metrics_prom_exporter_host, None);
    let err = load_err("broker.conf", "metricsExporterType=OTLP_GRPC\n");
    assert!(err.contains("metricsExporterType"), "{err}");
    assert!(err.contains("no OTLP_GRPC or LOG exporter"), "{err}");
    let err = load_err("broker.conf", "metricsPromExporterPort=70000\n");
    assert!(err.contains("metricsPromExporterPort"), "{err}");
}

/// GET_BROKER_CONFIG prints every key with its value in force, in text the loader reads back.
#[test]
fn java_properties_print_values_in_force_and_read_back() {
    let config = load(
        "broker.conf",
        "brokerName=broker-x\nlistenPort=10921\nflushDiskType=SYNC_FLUSH\nnamesrvAddr=127.0.0.1:9876\n",
    )
    .unwrap();
    let printed = config.java_properties();
    let get = |key: &str| {
        printed
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("brokerName"), Some("broker-x"));
    assert_eq!(get("listenPort"), Some("10921"));
    assert_eq!(get("flushDiskType"), Some("SYNC_FLUSH"));
    assert_eq!(get("brokerRole"), Some("ASYNC_MASTER"));
    assert_eq!(get("brokerPermission"), Some("6"));
    assert_eq!(get("innerClientAuthenticationCredentials"), None);
    let mut reread = BrokerConfig::default();
    for (key, value) in &printed {
        set_one(&mut reread, key, value, None).unwrap_or_else(|e| panic!("{key}={value}: {e}"));
    }
    assert_eq!(reread.java_properties(), printed);
}
