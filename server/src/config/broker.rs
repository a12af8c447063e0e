//! The broker's settings: Java's `BrokerConfig`, `MessageStoreConfig` and `NettyServerConfig` keys
//! that Skiff implements, with Java's defaults.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};

use super::value::{positive, FromSetting, Rejection, ToSetting};
use super::{set_one, settings, source, ConfigError, TlsConfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDiskType {
    AsyncFlush,
    SyncFlush,
}

/// `brokerRole`: a master takes sends; a SYNC_MASTER also waits for its slaves (see
/// `inSyncReplicas`); a SLAVE replicates its master's CommitLog over the HA port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerRole {
    AsyncMaster,
    SyncMaster,
    Slave,
}

#[derive(Debug, Clone)]
pub struct BrokerConfig {
    pub broker_cluster_name: String,
    /// Java defaults to the host name; a fixed name keeps a restarted broker's identity stable.
    pub broker_name: String,
    /// As configured; [`BrokerConfig::effective_broker_id`] is the id the broker uses.
    pub broker_id: i64,
    /// The IP published to name servers and clients; `None` = [`BrokerConfig::advertised_ip`]'s rule.
    pub broker_ip1: Option<String>,
    /// Skiff's (and Java 5.x's) `bindAddress`: the interface to listen on.
    pub bind_address: IpAddr,
    /// 0 picks a free port (tests).
    pub listen_port: u16,
    /// `host:port;host:port`.
    pub namesrv_addr: Option<String>,
    pub store_path_root_dir: PathBuf,
    pub mapped_file_size_commit_log: u64,
    /// Rounded up to a whole number of 20-byte entries, as Java does.
    pub mapped_file_size_consume_queue: u64,
    pub flush_disk_type: FlushDiskType,
    /// Milliseconds between async flushes of the CommitLog.
    pub flush_interval_commit_log: u64,
    pub flush_commit_log_least_pages: u32,
    /// Async flush once per interval (true, Java's default) or as pages get dirty.
    pub flush_commit_log_timed: bool,
    pub flush_commit_log_thorough_interval: u64,
    pub flush_interval_consume_queue: u64,
    pub flush_consume_queue_least_pages: u32,
    /// Milliseconds a SYNC_FLUSH send waits for its flush.
    pub sync_flush_timeout: u64,
    pub max_message_size: usize,
    /// Hours of the day (`"04"`, or `"04;16"`) when expired files are deleted.
    pub delete_when: String,
    /// Hours a CommitLog file is kept.
    pub file_reserved_time: u64,
    pub disk_max_used_space_ratio: u32,
    /// Above this disk usage (percent) the oldest files go whatever their age.
    pub disk_space_clean_forcibly_ratio: u32,
    /// Above this disk usage (percent) sends are refused until space frees.
    pub disk_space_warning_level_ratio: u32,
    pub clean_file_forcibly_enable: bool,
    /// Milliseconds between retention and disk checks.
    pub clean_resource_interval: u64,
    pub delete_file_batch_max: usize,
    pub max_hash_slot_num: u32,
    pub max_index_num: u32,
    pub message_index_enable: bool,
    pub max_msgs_num_batch: usize,
    pub default_query_max_num: usize,
    /// Touch every page of a new CommitLog segment before it is used.
    pub warm_maped_file_enable: bool,
    /// Skiff's: CommitLog bytes behind the write position kept mapped in the broker's memory
    /// (older pages are unmapped once a second; ConsumeQueues, the TimerLog and the IndexFile's
    /// entries keep 1/64 of it).
    pub commit_log_resident_tail: u64,
    pub check_crc_on_recover: bool,
    /// Percent of RAM behind the CommitLog head that counts as "in memory".
    pub access_message_in_memory_max_ratio: u32,
    /// Percent of RAM behind the CommitLog head outside which data is cold (for the cold-read
    /// flow control).
    pub access_message_in_memory_hot_ratio: u32,
    /// Readahead on CommitLog pages read back from disk (`SET_COMMITLOG_READ_MODE` changes it at
    /// runtime).
    pub data_read_ahead_enable: bool,
    /// Throttle consumer groups that read too much cold data (`ColdDataCgCtrService`).
    pub cold_data_flow_control_enable: bool,
    /// Cold bytes a group may read per 5-second period before it is throttled, unless an
    /// operator set its own (`updateColdDataFlowCtrGroupConfig`).
    pub cg_cold_read_threshold: i64,
    /// Cold bytes all groups may read per period before every cold reader is throttled.
    pub global_cold_read_threshold: i64,
    pub flush_consume_queue_thorough_interval: u64,
    pub auto_create_topic_enable: bool,
    pub auto_create_subscription_group: bool,
    pub default_topic_queue_nums: i32,
    pub broker_permission: i32,
    pub cluster_topic_enable: bool,
    pub broker_topic_enable: bool,
    pub trace_topic_enable: bool,
    pub msg_trace_topic_name: String,
    pub region_id: String,
    pub trace_on: bool,
    /// Milliseconds between registrations with the name servers.
    pub register_name_server_period: u64,
    /// `enableSplitRegistration`: register the topic table in parts of `splitRegistrationSize`
    /// topics instead of one request (a table too big for one frame is split anyway).
    pub enable_split_registration: bool,
    /// `splitRegistrationSize`: topics per registration request when split.
    pub split_registration_size: usize,
    pub long_polling_enable: bool,
    pub short_polling_time_mills: u64,
    pub flush_consumer_offset_interval: u64,
    /// `messageDelayLevel`: the delay of each level, `"1s 5s … 2h"` (checked when set).
    pub message_delay_level: String,
    /// Milliseconds between writes of `delayOffset.json`.
    pub flush_delay_offset_interval: u64,
    /// Milliseconds without a heartbeat after which a client connection is dropped.
    pub channel_expired_timeout: u64,
    /// Largest remoting frame accepted (Java: `-Dcom.rocketmq.remoting.frameMaxLength`).
    pub frame_max_length: usize,
    /// Skiff's limit on a topic's read and write queue counts (Java has none).
    pub max_topic_queue_nums: i32,
    /// Pulls reading cold data (far behind the CommitLog's end) at once, each on a blocking
    /// thread; more wait their turn (Java: the pull thread pool's size).
    pub pull_message_thread_pool_nums: usize,
    /// The longest a pull may be held, whatever the client asks (Java takes the client's
    /// number; the key is the client-side name of that number).
    pub broker_suspend_max_time_millis: u64,
    /// How long a request passed on to another broker group may take (a static topic's older
    /// stretch of a logical queue lives there).
    pub forward_timeout: u64,
    /// Connections with no traffic either way for this long are closed (Netty's
    /// `IdleStateHandler` in Java's `NettyRemotingServer`).
    pub server_channel_max_idle_time_seconds: u64,
    /// Connections accepted at once; further ones are closed at accept.
    pub server_max_connections: usize,
    /// Requests one connection may have in progress (held pulls, sends waiting for a flush);
    /// more are answered SYSTEM_BUSY, as Java's flow control answers.
    pub server_max_in_flight_requests: usize,
    /// `useTLS` (Java's `NettyClientConfig`): the broker's connections to name servers use TLS;
    /// unset = see [`TlsConfig::client_uses_tls`].
    pub use_tls: Option<bool>,
    /// The `tls.*` settings of the broker's listener.
    pub tls: TlsConfig,
    /// The config file read last ([`BrokerConfig::apply_file`], Java's `brokerConfigPath`):
    /// UPDATE_BROKER_CONFIG writes its settings back into it.
    pub config_file: Option<PathBuf>,
    pub broker_role: BrokerRole,
    /// `None` = `listenPort + 1`, as Java's `BrokerStartup` sets it.
    pub ha_listen_port: Option<u16>,
    /// `haMasterAddress`: the master's HA address (`host:port`) a slave connects to; unset = the
    /// `haServerAddr` the name server answers to the slave's registration.
    pub ha_master_address: Option<String>,
    /// `brokerIP2`: the IP in the `haServerAddr` this broker announces; unset = the advertised IP.
    pub broker_ip2: Option<String>,
    /// Milliseconds without a write after which an HA peer sends a heartbeat (report or empty
    /// transfer).
    pub ha_send_heartbeat_interval: u64,
    /// Milliseconds without a read after which an HA connection is closed.
    pub ha_housekeeping_interval: u64,
    /// Most CommitLog bytes in one HA transfer frame.
    pub ha_transfer_batch_size: usize,
    /// A slave more than this many bytes behind the master is not in sync.
    pub ha_max_gap_not_in_sync: i64,
    /// Copies (the master's included) a SYNC_MASTER send waits for: 1, Java's default, waits for
    /// none.
    pub in_sync_replicas: usize,
    /// Milliseconds a SYNC_MASTER send waits for its slaves before FLUSH_SLAVE_TIMEOUT.
    pub slave_timeout: u64,
    /// Pulls are served by a slave (and suggested to go to one when a consumer lags).
    pub slave_read_enable: bool,
    /// Skiff's: a master streams an empty slave its whole CommitLog instead of Java's last
    /// segment only; a slave with an empty store asks any master (Java's too) for its whole
    /// CommitLog.
    pub ha_transfer_from_min_offset: bool,
    /// 5.x timer messages (`TIMER_DELIVER_MS`, ...) through `rmq_sys_wheel_timer`; refused when off.
    pub timer_wheel_enable: bool,
    /// Milliseconds per wheel tick, rounded down to Java's 100, 200, 500 or 1000.
    pub timer_precision_ms: i64,
    /// Longest delay a timer message may ask for, in seconds.
    pub timer_max_delay_sec: i64,
    /// Milliseconds between flushes of the timer files and their checkpoint.
    pub timer_flush_interval_ms: u64,
    pub mapped_file_size_timer_log: u64,
    /// Ticks the wheel schedules ahead; later messages are rolled (put back) until in reach.
    pub timer_roll_window_slot: i64,
    /// Refuse prepared (transactional) sends with NO_PERMISSION.
    pub reject_transaction_message: bool,
    /// `useServerSideResetOffset` (Java 5's default, true): INVOKE_BROKER_TO_RESET_OFFSET commits
    /// the offsets and tells each consumer at its next pull; false, the broker instead pushes the
    /// offsets to the group's live consumers (RESET_CONSUMER_CLIENT_OFFSET), as Java 4 did.
    pub use_server_side_reset_offset: bool,
    /// Milliseconds an unresolved half message waits before the broker asks its producer.
    pub transaction_time_out: u64,
    /// Checks of one half message before it goes to `TRANS_CHECK_MAX_TIME_TOPIC`.
    pub transaction_check_max: i32,
    /// Milliseconds between two rounds of the transaction check.
    pub transaction_check_interval: u64,
    /// Queues of the POP revive log `rmq_sys_REVIVE_LOG_<cluster>`.
    pub revive_queue_num: i32,
    /// How often (ms) expired POP checkpoints are revived and the revive progress saved.
    pub revive_interval: u64,
    /// Percent of pops that read the POP retry topic before the topic itself.
    pub pop_from_retry_probability: u32,
    /// Milliseconds an orderly consumer's queue lock lives after its last renewal (Java's system
    /// property `rocketmq.broker.rebalance.lockMaxLiveTime`).
    pub rebalance_lock_max_live_time: u64,
    /// Whether SQL92 subscriptions are served (Java's `enablePropertyFilter`, off by default).
    pub enable_property_filter: bool,
    /// ACL 1.0: every request must be signed by an account of the ACL file (Java's `aclEnable`).
    pub acl_enable: bool,
    /// The ACL file (Java's system property `rocketmq.acl.plain.file`), relative to
    /// `$ROCKETMQ_HOME` unless absolute.
    pub acl_plain_file: PathBuf,
    /// `{"accessKey":"…","secretKey":"…"}`: the account this broker signs its own requests to
    /// name servers with (Java 5.x's `innerClientAuthenticationCredentials`).
    pub inner_client_authentication_credentials: Option<String>,
    /// ACL 2.0 (Java 5.3's `authenticationEnabled`): every request must be signed by a known,
    /// enabled user of the users store.
    pub authentication_enabled: bool,
    /// `authenticationProvider`: Java's `DefaultAuthenticationProvider`, the only one there is.
    pub authentication_provider: Option<String>,
    /// `authenticationMetadataProvider`: Java's `LocalAuthenticationMetadataProvider` gives the
    /// broker a users store (`config/users.json`); without it every user request fails, as in Java.
    pub authentication_metadata_provider: Option<String>,
    /// `authenticationStrategy`: stateless (the default) or stateful; Skiff checks every request
    /// either way.
    pub authentication_strategy: Option<String>,
    /// `authenticationWhitelist`: request codes answered without authentication, `"34,38"`.
    pub authentication_whitelist: Option<String>,
    /// `{"username":"…","password":"…"}`: a super user created at start if missing.
    pub init_authentication_user: Option<String>,
    /// ACL 2.0 authorization; not implemented, so only `false` is accepted.
    pub authorization_enabled: bool,
    /// `authorizationMetadataProvider`: Java's `LocalAuthorizationMetadataProvider` (its presence
    /// decides how a user deletion is answered, as in Java).
    pub authorization_metadata_provider: Option<String>,
    /// `PROM` serves Prometheus text at `/metrics` (Java's `metricsExporterType`).
    pub metrics_exporter_type: MetricsExporterType,
    /// Where `/metrics` listens; unset = the advertised IP (`brokerIP1`'s rule), as in Java.
    pub metrics_prom_exporter_host: Option<IpAddr>,
    pub metrics_prom_exporter_port: u16,
    /// `kafkaListen` (Skiff's own key): where Kafka clients connect, `IP:PORT`; unset = no
    /// Kafka listener (`skiff standalone` opens one on 9092 unless told otherwise).
    pub kafka_listen: Option<SocketAddr>,
    /// Not a key: `kafka_listen` is `skiff standalone`'s default, so a port already taken is
    /// logged and the broker starts without a Kafka listener.
    pub kafka_listen_optional: bool,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            broker_cluster_name: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            broker_id: 0,
            broker_ip1: None,
            bind_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            listen_port: 10911,
            namesrv_addr: None,
            store_path_root_dir: home_dir().join("store"),
            mapped_file_size_commit_log: 1024 * 1024 * 1024,
            mapped_file_size_consume_queue: 300_000 * 20,
            flush_disk_type: FlushDiskType::AsyncFlush,
            flush_interval_commit_log: 500,
            flush_commit_log_least_pages: 4,
            flush_commit_log_timed: true,
            flush_commit_log_thorough_interval: 10_000,
            flush_interval_consume_queue: 1000,
            flush_consume_queue_least_pages: 2,
            sync_flush_timeout: 5000,
            max_message_size: 4 * 1024 * 1024,
            delete_when: "04".into(),
            file_reserved_time: 72,
            disk_max_used_space_ratio: 75,
            disk_space_clean_forcibly_ratio: 85,
            disk_space_warning_level_ratio: 90,
            clean_file_forcibly_enable: true,
            clean_resource_interval: 10_000,
            delete_file_batch_max: 10,
            max_hash_slot_num: 5_000_000,
            max_index_num: 20_000_000,
            message_index_enable: true,
            max_msgs_num_batch: 64,
            default_query_max_num: 32,
            warm_maped_file_enable: false,
            access_message_in_memory_hot_ratio: 26,
            data_read_ahead_enable: true,
            cold_data_flow_control_enable: false,
            cg_cold_read_threshold: 3 * 1024 * 1024,
            global_cold_read_threshold: 100 * 1024 * 1024,
            commit_log_resident_tail: 64 * 1024 * 1024,
            check_crc_on_recover: true,
            access_message_in_memory_max_ratio: 40,
            flush_consume_queue_thorough_interval: 60_000,
            auto_create_topic_enable: true,
            auto_create_subscription_group: true,
            default_topic_queue_nums: 8,
            broker_permission: 6,
            cluster_topic_enable: true,
            broker_topic_enable: true,
            trace_topic_enable: false,
            msg_trace_topic_name: "RMQ_SYS_TRACE_TOPIC".into(),
            region_id: "DefaultRegion".into(),
            trace_on: true,
            register_name_server_period: 30_000,
            enable_split_registration: false,
            split_registration_size: 800,
            long_polling_enable: true,
            short_polling_time_mills: 1000,
            flush_consumer_offset_interval: 5000,
            message_delay_level: skiff_model::delay::DEFAULT_DELAY_LEVELS.into(),
            flush_delay_offset_interval: 10_000,
            channel_expired_timeout: 120_000,
            frame_max_length: 16 * 1024 * 1024,
            max_topic_queue_nums: 1024,
            broker_suspend_max_time_millis: 30_000,
            forward_timeout: 3_000,
            pull_message_thread_pool_nums: 16
                + 2 * std::thread::available_parallelism().map_or(1, |n| n.get()),
            server_channel_max_idle_time_seconds: 120,
            server_max_connections: 10_000,
            server_max_in_flight_requests: 4096,
            use_tls: None,
            tls: TlsConfig::default(),
            config_file: None,
            broker_role: BrokerRole::AsyncMaster,
            ha_listen_port: None,
            ha_master_address: None,
            broker_ip2: None,
            ha_send_heartbeat_interval: 5000,
            ha_housekeeping_interval: 20_000,
            ha_transfer_batch_size: 32 * 1024,
            ha_max_gap_not_in_sync: 256 * 1024 * 1024,
            in_sync_replicas: 1,
            slave_timeout: 3000,
            slave_read_enable: false,
            ha_transfer_from_min_offset: false,
            timer_wheel_enable: true,
            timer_precision_ms: 1000,
            timer_max_delay_sec: 3600 * 24 * 3,
            timer_flush_interval_ms: 1000,
            mapped_file_size_timer_log: 100 * 1024 * 1024,
            timer_roll_window_slot: 3600 * 24 * 2,
            reject_transaction_message: false,
            use_server_side_reset_offset: true,
            transaction_time_out: 6_000,
            transaction_check_max: 15,
            transaction_check_interval: 30_000,
            revive_queue_num: 8,
            revive_interval: 1000,
            pop_from_retry_probability: 20,
            rebalance_lock_max_live_time: 60_000,
            enable_property_filter: false,
            acl_enable: false,
            acl_plain_file: PathBuf::from("conf/plain_acl.yml"),
            inner_client_authentication_credentials: None,
            authentication_enabled: false,
            authentication_provider: None,
            authentication_metadata_provider: None,
            authentication_strategy: None,
            authentication_whitelist: None,
            init_authentication_user: None,
            authorization_enabled: false,
            authorization_metadata_provider: None,
            metrics_exporter_type: MetricsExporterType::Disable,
            metrics_prom_exporter_host: None,
            kafka_listen: None,
            kafka_listen_optional: false,
            metrics_prom_exporter_port: 5557,
        }
    }
}

settings!(BrokerConfig {
    "brokerClusterName" => broker_cluster_name,
    "brokerName" => broker_name,
    "brokerId" => broker_id vet no_controller,
    "brokerIP1" => broker_ip1,
    "bindAddress" => bind_address,
    "listenPort" => listen_port,
    "namesrvAddr" => namesrv_addr vet address_list,
    "storePathRootDir" => store_path_root_dir,
    "mappedFileSizeCommitLog" => mapped_file_size_commit_log vet positive,
    "mappedFileSizeConsumeQueue" => mapped_file_size_consume_queue vet whole_cq_entries,
    "flushDiskType" => flush_disk_type,
    "flushIntervalCommitLog" => flush_interval_commit_log,
    "flushCommitLogLeastPages" => flush_commit_log_least_pages,
    "flushCommitLogTimed" => flush_commit_log_timed,
    "flushCommitLogThoroughInterval" => flush_commit_log_thorough_interval,
    "flushIntervalConsumeQueue" => flush_interval_consume_queue,
    "flushConsumeQueueLeastPages" => flush_consume_queue_least_pages,
    "syncFlushTimeout" => sync_flush_timeout,
    "maxMessageSize" => max_message_size vet positive,
    "deleteWhen" => delete_when vet hours_of_day,
    "fileReservedTime" => file_reserved_time,
    "diskMaxUsedSpaceRatio" => disk_max_used_space_ratio vet disk_ratio,
    "diskSpaceCleanForciblyRatio" => disk_space_clean_forcibly_ratio vet disk_ratio,
    "diskSpaceWarningLevelRatio" => disk_space_warning_level_ratio vet disk_ratio,
    "cleanFileForciblyEnable" => clean_file_forcibly_enable,
    "cleanResourceInterval" => clean_resource_interval vet positive,
    "deleteFileBatchMax" => delete_file_batch_max vet positive,
    "maxHashSlotNum" => max_hash_slot_num vet positive,
    "maxIndexNum" => max_index_num vet positive,
    "messageIndexEnable" => message_index_enable,
    "maxMsgsNumBatch" => max_msgs_num_batch vet positive,
    "defaultQueryMaxNum" => default_query_max_num vet positive,
    "warmMapedFileEnable" => warm_maped_file_enable,
    "commitLogResidentTail" => commit_log_resident_tail vet resident_tail,
    "checkCRCOnRecover" => check_crc_on_recover,
    "accessMessageInMemoryMaxRatio" => access_message_in_memory_max_ratio vet percent,
    "accessMessageInMemoryHotRatio" => access_message_in_memory_hot_ratio vet percent,
    "dataReadAheadEnable" => data_read_ahead_enable,
    "coldDataFlowControlEnable" => cold_data_flow_control_enable,
    "cgColdReadThreshold" => cg_cold_read_threshold vet positive,
    "globalColdReadThreshold" => global_cold_read_threshold vet positive,
    "flushConsumeQueueThoroughInterval" => flush_consume_queue_thorough_interval,
    "autoCreateTopicEnable" => auto_create_topic_enable,
    "autoCreateSubscriptionGroup" => auto_create_subscription_group,
    "defaultTopicQueueNums" => default_topic_queue_nums vet positive,
    "brokerPermission" => broker_permission vet permission,
    "clusterTopicEnable" => cluster_topic_enable,
    "brokerTopicEnable" => broker_topic_enable,
    "traceTopicEnable" => trace_topic_enable,
    "msgTraceTopicName" => msg_trace_topic_name,
    "regionId" => region_id,
    "traceOn" => trace_on,
    "registerNameServerPeriod" => register_name_server_period vet positive,
    "enableSplitRegistration" => enable_split_registration,
    "splitRegistrationSize" => split_registration_size vet positive,
    "longPollingEnable" => long_polling_enable,
    "shortPollingTimeMills" => short_polling_time_mills,
    "flushConsumerOffsetInterval" => flush_consumer_offset_interval vet positive,
    "messageDelayLevel" => message_delay_level vet delay_levels,
    "flushDelayOffsetInterval" => flush_delay_offset_interval vet positive,
    "channelExpiredTimeout" => channel_expired_timeout vet positive,
    "frameMaxLength" => frame_max_length vet positive,
    "maxTopicQueueNums" => max_topic_queue_nums vet positive,
    "brokerSuspendMaxTimeMillis" => broker_suspend_max_time_millis,
    "forwardTimeout" => forward_timeout vet positive,
    "pullMessageThreadPoolNums" => pull_message_thread_pool_nums vet positive,
    "serverChannelMaxIdleTimeSeconds" => server_channel_max_idle_time_seconds vet positive,
    "serverMaxConnections" => server_max_connections vet positive,
    "serverMaxInFlightRequests" => server_max_in_flight_requests vet positive,
    "useTLS" => use_tls,
    "brokerRole" => broker_role,
    "haListenPort" => ha_listen_port,
    "haMasterAddress" => ha_master_address vet ha_address,
    "brokerIP2" => broker_ip2,
    "haSendHeartbeatInterval" => ha_send_heartbeat_interval vet positive,
    "haHousekeepingInterval" => ha_housekeeping_interval vet positive,
    "haTransferBatchSize" => ha_transfer_batch_size vet ha_frame_body,
    "haMaxGapNotInSync" => ha_max_gap_not_in_sync vet positive,
    "inSyncReplicas" => in_sync_replicas vet positive,
    "slaveTimeout" => slave_timeout vet positive,
    "slaveReadEnable" => slave_read_enable,
    "haTransferFromMinOffset" => ha_transfer_from_min_offset,
    "timerWheelEnable" => timer_wheel_enable,
    "timerPrecisionMs" => timer_precision_ms vet timer_precision,
    "timerMaxDelaySec" => timer_max_delay_sec vet positive,
    "timerFlushIntervalMs" => timer_flush_interval_ms vet positive,
    "mappedFileSizeTimerLog" => mapped_file_size_timer_log vet timer_log_size,
    "timerRollWindowSlot" => timer_roll_window_slot,
    "rejectTransactionMessage" => reject_transaction_message,
    "useServerSideResetOffset" => use_server_side_reset_offset,
    "transactionTimeOut" => transaction_time_out,
    "transactionCheckMax" => transaction_check_max vet positive,
    "transactionCheckInterval" => transaction_check_interval vet positive,
    "reviveQueueNum" => revive_queue_num vet positive,
    "reviveInterval" => revive_interval vet positive,
    "popFromRetryProbability" => pop_from_retry_probability vet percent,
    "rebalanceLockMaxLiveTime" => rebalance_lock_max_live_time vet positive,
    "enablePropertyFilter" => enable_property_filter,
    "aclEnable" => acl_enable,
    "rocketmq.acl.plain.file" => acl_plain_file,
    "innerClientAuthenticationCredentials" => inner_client_authentication_credentials vet inner_credentials,
    "authenticationEnabled" => authentication_enabled,
    "authenticationProvider" => authentication_provider vet authentication_provider_class,
    "authenticationMetadataProvider" => authentication_metadata_provider vet authentication_metadata_class,
    "authenticationStrategy" => authentication_strategy vet authentication_strategy_class,
    "authenticationWhitelist" => authentication_whitelist vet request_code_list,
    "initAuthenticationUser" => init_authentication_user vet init_user,
    "authorizationEnabled" => authorization_enabled vet authorization_not_implemented,
    "authorizationMetadataProvider" => authorization_metadata_provider vet authorization_metadata_class,
    "metricsExporterType" => metrics_exporter_type,
    "metricsPromExporterHost" => metrics_prom_exporter_host,
    "metricsPromExporterPort" => metrics_prom_exporter_port,
    "kafkaListen" => kafka_listen,
} .. tls);

/// `innerClientAuthenticationCredentials` must be the JSON object Java reads.
fn inner_credentials(value: Option<String>) -> Result<Option<String>, Rejection> {
    if let Some(text) = &value {
        crate::acl::Credentials::parse(text).map_err(|why| {
            Rejection::Expected(format!(
                "a JSON object {{\"accessKey\":\"...\",\"secretKey\":\"...\"}} ({why})"
            ))
        })?;
    }
    Ok(value)
}

/// One of Java's class names for a setting, or nothing (blank is Java's default).
fn one_of(value: Option<String>, classes: &[&str]) -> Result<Option<String>, Rejection> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(class) if classes.contains(&class) => Ok(Some(class.to_string())),
        Some(_) => Err(Rejection::Expected(format!(
            "{} (the implementation Skiff has)",
            classes.join(" or ")
        ))),
    }
}

fn authentication_provider_class(value: Option<String>) -> Result<Option<String>, Rejection> {
    one_of(
        value,
        &["org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider"],
    )
}

fn authentication_metadata_class(value: Option<String>) -> Result<Option<String>, Rejection> {
    one_of(
        value,
        &[crate::broker::LOCAL_AUTHENTICATION_METADATA_PROVIDER],
    )
}

fn authorization_metadata_class(value: Option<String>) -> Result<Option<String>, Rejection> {
    one_of(
        value,
        &[crate::broker::LOCAL_AUTHORIZATION_METADATA_PROVIDER],
    )
}

fn authentication_strategy_class(value: Option<String>) -> Result<Option<String>, Rejection> {
    one_of(
        value,
        &[
            "org.apache.rocketmq.auth.authentication.strategy.StatelessAuthenticationStrategy",
            "org.apache.rocketmq.auth.authentication.strategy.StatefulAuthenticationStrategy",
        ],
    )
}

/// `authenticationWhitelist`: request codes separated by commas.
fn request_code_list(value: Option<String>) -> Result<Option<String>, Rejection> {
    if let Some(list) = &value {
        for code in list.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if code.parse::<i32>().is_err() {
                return Err(Rejection::Expected(format!(
                    "request codes separated by commas, e.g. 34,38 ({code:?} is not one)"
                )));
            }
        }
    }
    Ok(value)
}

/// `initAuthenticationUser` must be the JSON object Java reads.
fn init_user(value: Option<String>) -> Result<Option<String>, Rejection> {
    if let Some(text) = &value {
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(text);
        let ok = parsed.as_ref().is_ok_and(|v| {
            v.get("username").and_then(|u| u.as_str()).is_some()
                && v.get("password").and_then(|p| p.as_str()).is_some()
        });
        if !ok {
            return Err(Rejection::Expected(
                "a JSON object {\"username\":\"...\",\"password\":\"...\"}".into(),
            ));
        }
    }
    Ok(value)
}

fn authorization_not_implemented(enabled: bool) -> Result<bool, Rejection> {
    if enabled {
        return Err(Rejection::Expected(
            "false: ACL 2.0 authorization (ACLs per user) is not implemented yet, and Skiff does not \
             start open while the configuration promises it; use authenticationEnabled alone, or \
             ACL 1.0 (aclEnable with plain_acl.yml)"
                .into(),
        ));
    }
    Ok(enabled)
}

impl BrokerConfig {
    /// The request codes of `authenticationWhitelist`.
    pub fn authentication_whitelist_codes(&self) -> Vec<i32> {
        self.authentication_whitelist
            .iter()
            .flat_map(|list| list.split(','))
            .filter_map(|code| code.trim().parse().ok())
            .collect()
    }

    /// Every key Skiff reads with its value in force, as GET_BROKER_CONFIG prints them; the
    /// inner client's credentials are left out (Java prints them to any caller).
    pub fn java_properties(&self) -> Vec<(&'static str, String)> {
        let mut values = super::Settings::values(self);
        values.retain(|(key, _)| {
            *key != "innerClientAuthenticationCredentials" && *key != "initAuthenticationUser"
        });
        values
    }

    /// The defaults plus what Java reads from the environment: `NAMESRV_ADDR`.
    pub fn from_env() -> Self {
        BrokerConfig {
            namesrv_addr: std::env::var("NAMESRV_ADDR").ok().filter(|a| !a.is_empty()),
            ..BrokerConfig::default()
        }
    }

    /// [`BrokerConfig::from_env`], then the file at `path`, then [`BrokerConfig::validate`].
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let mut config = BrokerConfig::from_env();
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

    /// Sets one setting by its Java name (file loading and `--set key=value` both come here).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        set_one(self, key, value.trim(), None)
    }

    /// Checks what single settings cannot: how they fit together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, message: String| Err(ConfigError::Invalid { key, message });
        if self.max_message_size as u64 >= self.mapped_file_size_commit_log {
            return invalid(
                "maxMessageSize",
                format!(
                    "{} must be smaller than mappedFileSizeCommitLog ({})",
                    self.max_message_size, self.mapped_file_size_commit_log
                ),
            );
        }
        if self.max_message_size >= self.frame_max_length {
            return invalid(
                "maxMessageSize",
                format!(
                    "{} must be smaller than frameMaxLength ({}), or such messages cannot arrive",
                    self.max_message_size, self.frame_max_length
                ),
            );
        }
        if self.acl_enable && self.authentication_enabled {
            return invalid(
                "authenticationEnabled",
                "ACL 1.0 (aclEnable) and ACL 2.0 (authenticationEnabled) cannot both be on: \
                 choose one (Apache 5.3 has only ACL 2.0)"
                    .into(),
            );
        }
        if self.broker_role == BrokerRole::Slave && self.broker_id <= 0 {
            return invalid(
                "brokerId",
                format!(
                    "Slave's brokerId must be > 0 (it is {}); give each slave of a broker group \
                     its own id, 1 or more",
                    self.broker_id
                ),
            );
        }
        if self.listen_port != 0 && self.ha_listen_port == Some(self.listen_port) {
            return invalid(
                "haListenPort",
                format!("{} is also listenPort", self.listen_port),
            );
        }
        Ok(())
    }

    /// The id this broker registers with: a master's is 0 whatever `brokerId` says, as Java's
    /// `BrokerStartup` forces it; a slave's is its `brokerId` (≥ 1, checked by `validate`).
    pub fn effective_broker_id(&self) -> i64 {
        match self.broker_role {
            BrokerRole::Slave => self.broker_id,
            BrokerRole::AsyncMaster | BrokerRole::SyncMaster => 0,
        }
    }

    /// The IP published to name servers (and so to clients): `brokerIP1` if set; else the bind
    /// address if it is a specific one; else this host's primary IPv4 address.
    pub fn advertised_ip(&self) -> String {
        if let Some(ip) = &self.broker_ip1 {
            return ip.clone();
        }
        if !self.bind_address.is_unspecified() {
            return self.bind_address.to_string();
        }
        primary_ipv4().to_string()
    }
}

/// The source address of the default route: Java's `NetworkUtil.getLocalAddress` walks the
/// interfaces for a non-loopback IPv4 address, and on a typical host this is the one it finds.
/// Connecting a UDP socket only selects a route; nothing is sent. Loopback when there is no route.
fn primary_ipv4() -> Ipv4Addr {
    let probe = || -> std::io::Result<IpAddr> {
        let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
        socket.connect((Ipv4Addr::new(198, 51, 100, 1), 9))?;
        Ok(socket.local_addr()?.ip())
    };
    match probe() {
        Ok(IpAddr::V4(ip)) if !ip.is_loopback() && !ip.is_unspecified() => ip,
        _ => Ipv4Addr::LOCALHOST,
    }
}

fn home_dir() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

impl FlushDiskType {
    /// Java's name.
    pub fn as_str(self) -> &'static str {
        match self {
            FlushDiskType::AsyncFlush => "ASYNC_FLUSH",
            FlushDiskType::SyncFlush => "SYNC_FLUSH",
        }
    }
}

impl fmt::Display for FlushDiskType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Java's `MetricsExporterType`; Skiff serves Prometheus only (no OTLP push, no metrics log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsExporterType {
    Disable,
    Prom,
}

impl FromSetting for MetricsExporterType {
    /// Java's names or numbers (`DISABLE`/0, `PROM`/2); Java's other exporters are refused by
    /// name rather than silently exporting nothing.
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        match text {
            "DISABLE" | "0" => Ok(MetricsExporterType::Disable),
            "PROM" | "2" => Ok(MetricsExporterType::Prom),
            "OTLP_GRPC" | "1" | "LOG" | "3" => Err(Rejection::Expected(
                "DISABLE or PROM (Skiff has no OTLP_GRPC or LOG exporter; scrape /metrics)".into(),
            )),
            _ => Err(Rejection::Expected("DISABLE or PROM".into())),
        }
    }
}

impl ToSetting for MetricsExporterType {
    fn to_setting(&self) -> String {
        match self {
            MetricsExporterType::Disable => "DISABLE",
            MetricsExporterType::Prom => "PROM",
        }
        .to_string()
    }
}

impl ToSetting for FlushDiskType {
    fn to_setting(&self) -> String {
        self.as_str().to_string()
    }
}

impl ToSetting for BrokerRole {
    fn to_setting(&self) -> String {
        self.as_str().to_string()
    }
}

impl FromSetting for FlushDiskType {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        match text {
            "ASYNC_FLUSH" => Ok(FlushDiskType::AsyncFlush),
            "SYNC_FLUSH" => Ok(FlushDiskType::SyncFlush),
            _ => Err(Rejection::Expected("ASYNC_FLUSH or SYNC_FLUSH".into())),
        }
    }
}

impl BrokerRole {
    /// Java's name.
    pub fn as_str(self) -> &'static str {
        match self {
            BrokerRole::AsyncMaster => "ASYNC_MASTER",
            BrokerRole::SyncMaster => "SYNC_MASTER",
            BrokerRole::Slave => "SLAVE",
        }
    }
}

impl fmt::Display for BrokerRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromSetting for BrokerRole {
    fn from_setting(text: &str) -> Result<Self, Rejection> {
        match text {
            "ASYNC_MASTER" => Ok(BrokerRole::AsyncMaster),
            "SYNC_MASTER" => Ok(BrokerRole::SyncMaster),
            "SLAVE" => Ok(BrokerRole::Slave),
            _ => Err(Rejection::Expected(
                "ASYNC_MASTER, SYNC_MASTER or SLAVE".into(),
            )),
        }
    }
}

fn no_controller(id: i64) -> Result<i64, Rejection> {
    match id {
        -1 => Err(Rejection::Unsupported(
            "controller mode (brokerId=-1) is not supported yet; use brokerRole and a fixed \
             brokerId (0 for the master, 1 or more for a slave)"
                .into(),
        )),
        id if id < 0 => Err(Rejection::Expected(
            "0 (master) or a positive id (slave)".into(),
        )),
        id => Ok(id),
    }
}

/// Java ignores an `haMasterAddress` shorter than 6 characters; Skiff wants `host:port`.
fn ha_address(address: Option<String>) -> Result<Option<String>, Rejection> {
    match address.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(a)
            if a.rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
        {
            Ok(Some(a.to_string()))
        }
        Some(_) => Err(Rejection::Expected(
            "the master's HA address as host:port, such as 127.0.0.1:10912".into(),
        )),
    }
}

fn address_list(list: Option<String>) -> Result<Option<String>, Rejection> {
    let well_formed = |addr: &str| {
        addr.rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
    };
    match &list {
        Some(list) if !list.split(';').all(well_formed) => Err(Rejection::Expected(
            "host:port addresses separated by ';', such as 127.0.0.1:9876;127.0.0.2:9876".into(),
        )),
        _ => Ok(list),
    }
}

/// Java's `getMappedFileSizeConsumeQueue` rounds up to whole 20-byte entries.
fn whole_cq_entries(size: u64) -> Result<u64, Rejection> {
    positive(size.div_ceil(20) * 20)
}

/// Java's `setTimerPrecisionMs` rounds down to one of 100, 200, 500, 1000.
fn timer_precision(ms: i64) -> Result<i64, Rejection> {
    const CANDIDATES: [i64; 4] = [100, 200, 500, 1000];
    Ok(CANDIDATES
        .iter()
        .rev()
        .copied()
        .find(|c| ms >= *c)
        .unwrap_or(CANDIDATES[0]))
}

/// A TimerLog file must hold at least one unit and its end-of-file marker.
fn resident_tail(bytes: u64) -> Result<u64, Rejection> {
    if bytes <= 1 << 40 {
        Ok(bytes)
    } else {
        Err(Rejection::Expected("a size from 0 to 1 TiB".into()))
    }
}

fn timer_log_size(size: u64) -> Result<u64, Rejection> {
    if size >= 128 && size <= i32::MAX as u64 {
        Ok(size)
    } else {
        Err(Rejection::Expected("a size from 128 bytes to 2 GiB".into()))
    }
}

fn hours_of_day(when: String) -> Result<String, Rejection> {
    let hour = |h: &str| h.len() <= 2 && h.parse::<u8>().is_ok_and(|h| h < 24);
    if when.split(';').all(hour) {
        Ok(when)
    } else {
        Err(Rejection::Expected(
            "hours of the day (00 to 23) separated by ';', such as 04 or 04;16".into(),
        ))
    }
}

fn delay_levels(levels: String) -> Result<String, Rejection> {
    skiff_model::delay::DelayLevels::parse(&levels)
        .map(|_| levels)
        .map_err(Rejection::Expected)
}

/// The largest frame body a slave reads: Java's slave reads frames of at most 4 MiB, its 12-byte
/// header included (`DefaultHAClient.READ_MAX_BUFFER_SIZE`); a master sending more stalls it.
pub const MAX_HA_FRAME_BODY: usize = 4 * 1024 * 1024 - 12;

fn ha_frame_body(bytes: usize) -> Result<usize, Rejection> {
    if (1..=MAX_HA_FRAME_BODY).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(Rejection::Expected(format!(
            "a size from 1 to {MAX_HA_FRAME_BODY} bytes (a slave reads frames of at most 4 MiB, \
             header included)"
        )))
    }
}

fn percent(value: u32) -> Result<u32, Rejection> {
    if value <= 100 {
        Ok(value)
    } else {
        Err(Rejection::Expected("a percentage from 0 to 100".into()))
    }
}

fn disk_ratio(percent: u32) -> Result<u32, Rejection> {
    if (10..=95).contains(&percent) {
        Ok(percent)
    } else {
        Err(Rejection::Expected("a percentage from 10 to 95".into()))
    }
}

fn permission(perm: i32) -> Result<i32, Rejection> {
    if (0..=15).contains(&perm) {
        Ok(perm)
    } else {
        Err(Rejection::Expected(
            "permission bits from 0 to 15 (4 = read, 2 = write, 6 = both)".into(),
        ))
    }
}
