//! Master/slave replication in process: a Skiff master and a Skiff slave registered with one name
//! server, spoken to through the neutral model. The slave finds its master through the name
//! server (`haServerAddr`), copies its CommitLog byte for byte, serves reads
//! (`slaveReadEnable`), refuses writes, and syncs topics, groups and consumer offsets. A slave
//! whose CommitLog the master does not continue (ahead, diverged, other segment size) refuses to
//! stream and keeps its files. GET_BROKER_HA_STATUS shows both sides.

mod common;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_model::admin::AdminCommand;
use skiff_model::command::{
    ErrorKind, PullRequest, PullStatus, QueueRef, Reply, Request, SendStatus,
    SubscriptionExpression,
};
use skiff_model::message::{Message, Properties};
use skiff_model::record::Record;
use skiff_model::route::TopicConfig;
use skiff_protocol::remoting::RemotingCommand;
use skiff_server::broker::Broker;
use skiff_server::config::{BrokerConfig, BrokerRole};
use skiff_server::remoting_client::RemotingClient;

use common::{auto_creating_send, Cluster, TIMEOUT};

const TOPIC: &str = "Replicated";

fn master_config(config: &mut BrokerConfig) {
    config.broker_role = BrokerRole::SyncMaster;
    config.in_sync_replicas = 2;
    config.slave_timeout = 1500;
    // Small segments: the stream crosses segment ends (blanks).
    config.mapped_file_size_commit_log = 256 * 1024;
}

fn slave_config(cluster: &Cluster, dir: &Path) -> BrokerConfig {
    BrokerConfig {
        bind_address: "127.0.0.1".parse().unwrap(),
        broker_ip1: Some("127.0.0.1".into()),
        listen_port: 0,
        broker_role: BrokerRole::Slave,
        broker_id: 1,
        slave_read_enable: true,
        mapped_file_size_commit_log: 256 * 1024,
        namesrv_addr: Some(cluster.namesrv.local_addr().to_string()),
        store_path_root_dir: dir.to_path_buf(),
        ..BrokerConfig::default()
    }
}

async fn client(broker: &Broker) -> RemotingClient {
    RemotingClient::connect(&broker.local_addr().to_string(), TIMEOUT)
        .await
        .unwrap()
}

fn send_request(queue_id: i32, body: Vec<u8>) -> Request {
    let mut request = auto_creating_send("producer", TOPIC);
    if let Request::Send(send) = &mut request {
        send.queue_id = queue_id;
        send.messages = vec![Message {
            flag: 0,
            body: Bytes::from(body),
            properties: Properties::new(),
        }];
    }
    request
}

async fn send(client: &RemotingClient, queue_id: i32, body: Vec<u8>) -> (SendStatus, i64) {
    match client.invoke(&send_request(queue_id, body), TIMEOUT).await {
        Ok(Reply::Sent(sent)) => (sent.status, sent.queue_offset),
        other => panic!("send failed: {other:?}"),
    }
}

async fn commit_log_max_offset(client: &RemotingClient) -> i64 {
    match client.invoke(&Request::GetBrokerRuntimeInfo, TIMEOUT).await {
        Ok(Reply::KeyValues(table)) => table["commitLogMaxOffset"].parse().unwrap(),
        other => panic!("no runtime info: {other:?}"),
    }
}

/// GET_BROKER_HA_STATUS's body, the JSON `mqadmin haStatus` reads.
async fn ha_status(client: &RemotingClient) -> serde_json::Value {
    let response = client
        .invoke_frame(RemotingCommand::request(907, 0), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(response.code, 0);
    serde_json::from_slice(&response.body.to_bytes()).unwrap()
}

/// Waits until the slave holds as much CommitLog as the master.
async fn caught_up(master: &RemotingClient, slave: &RemotingClient) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (m, s) = (
            commit_log_max_offset(master).await,
            commit_log_max_offset(slave).await,
        );
        if m == s {
            return m;
        }
        assert!(Instant::now() < deadline, "slave at {s}, master at {m}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn pull(client: &RemotingClient, queue_id: i32, offset: i64) -> (PullStatus, Vec<Bytes>) {
    let reply = client
        .invoke(
            &Request::Pull(PullRequest {
                consumer_group: "reader".into(),
                queue: QueueRef {
                    topic: TOPIC.into(),
                    queue_id,
                    physical: false,
                },
                queue_offset: offset,
                max_msg_nums: 32,
                subscription: Some(SubscriptionExpression {
                    expression_type: "TAG".into(),
                    expression: "*".into(),
                    version: 0,
                }),
                lite: true,
                ..PullRequest::default()
            }),
            TIMEOUT,
        )
        .await
        .unwrap();
    match reply {
        Reply::Pulled(pulled) => {
            let bodies = pulled
                .messages
                .iter()
                .map(|m| Bytes::copy_from_slice(Record::decode(m, true).unwrap().body))
                .collect();
            (pulled.status, bodies)
        }
        other => panic!("pull failed: {other:?}"),
    }
}

/// The CommitLog bytes of a store, segment by segment, up to `end`.
fn commit_log(dir: &Path, end: i64) -> Vec<u8> {
    let mut names: Vec<_> = std::fs::read_dir(dir.join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut bytes = Vec::new();
    for name in names {
        bytes.extend(std::fs::read(name).unwrap());
    }
    bytes.truncate(end as usize);
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skiff_slave_copies_its_master_and_serves_reads() {
    let cluster = Cluster::start(master_config).await;
    let master = cluster.broker_client().await;
    // Metadata the slave must sync: a committed offset and a subscription group.
    assert!(matches!(
        master
            .invoke(&Request::CreateTopic(TopicConfig::new(TOPIC, 4)), TIMEOUT)
            .await,
        Ok(Reply::Success)
    ));
    assert!(matches!(
        master
            .invoke(
                &Request::UpdateConsumerOffset {
                    group: "reader".into(),
                    queue: QueueRef {
                        topic: TOPIC.into(),
                        queue_id: 1,
                        physical: false,
                    },
                    offset: 3,
                },
                TIMEOUT,
            )
            .await,
        Ok(Reply::Success)
    ));
    // Before any slave: a SYNC_MASTER send is stored but answered FLUSH_SLAVE_TIMEOUT.
    assert_eq!(
        send(&master, 0, b"lonely".to_vec()).await.0,
        SendStatus::FlushSlaveTimeout
    );

    let slave_dir = tempfile::tempdir().unwrap();
    let slave = Broker::start(slave_config(&cluster, slave_dir.path()))
        .await
        .unwrap();
    let to_slave = client(&slave).await;

    // Sends are acknowledged once the slave holds them; 300 of 2 KiB cross several segments.
    let deadline = Instant::now() + Duration::from_secs(10);
    while send(&master, 0, b"probe".to_vec()).await.0 != SendStatus::Ok {
        assert!(Instant::now() < deadline, "the slave never acknowledged");
    }
    for i in 0..300 {
        let body = vec![b'a' + (i % 26) as u8; 2048];
        assert_eq!(send(&master, 1 + i % 3, body).await.0, SendStatus::Ok);
    }
    let end = caught_up(&master, &to_slave).await;
    assert_eq!(
        commit_log(slave_dir.path(), end),
        commit_log(cluster.store_dir(), end),
        "the slave's CommitLog is the master's, byte for byte"
    );

    // GET_BROKER_HA_STATUS: the master lists the slave with its acknowledged offset; the slave
    // shows its client.
    let deadline = Instant::now() + Duration::from_secs(10);
    let connection = loop {
        let status = ha_status(&master).await;
        assert_eq!(status["master"], true, "{status}");
        assert_eq!(status["masterCommitLogMaxOffset"], end, "{status}");
        let connections = status["haConnectionInfo"].as_array().unwrap().clone();
        assert_eq!(connections.len(), 1, "{status}");
        if connections[0]["slaveAckOffset"] == end {
            assert_eq!(status["inSyncSlaveNums"], 1, "{status}");
            break connections[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the slave never acknowledged {end}: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(connection["diff"], 0, "{connection}");
    assert_eq!(connection["inSync"], true, "{connection}");
    assert_eq!(connection["transferFromWhere"], end, "{connection}");
    assert!(connection["addr"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    let status = ha_status(&to_slave).await;
    assert_eq!(status["master"], false, "{status}");
    assert_eq!(
        status["haConnectionInfo"],
        serde_json::json!([]),
        "{status}"
    );
    let ha_client = &status["haClientRuntimeInfo"];
    assert_eq!(ha_client["maxOffset"], end, "{status}");
    assert!(ha_client["masterAddr"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    assert!(
        ha_client["lastReadTimestamp"].as_i64().unwrap() > 0,
        "{status}"
    );

    // Reads from the slave: same queue offsets, same bodies.
    let (status, bodies) = pull(&to_slave, 1, 0).await;
    assert_eq!(status, PullStatus::Found);
    assert_eq!(bodies[0], Bytes::from(vec![b'a'; 2048]));
    assert_eq!(pull(&master, 1, 0).await.1, bodies);

    // Writes are refused on the slave.
    match to_slave
        .invoke(&send_request(0, b"no".to_vec()), TIMEOUT)
        .await
    {
        Ok(Reply::Error(err)) => {
            assert_eq!(err.kind, ErrorKind::SystemBusy);
            assert!(
                err.message.starts_with("[REJECTREQUEST]"),
                "{}",
                err.message
            );
        }
        other => panic!("a slave took a send: {other:?}"),
    }

    // Metadata synced from the master at the slave's start.
    let offset = to_slave
        .invoke(
            &Request::QueryConsumerOffset {
                group: "reader".into(),
                queue: QueueRef {
                    topic: TOPIC.into(),
                    queue_id: 1,
                    physical: false,
                },
                set_zero_if_not_found: false,
            },
            TIMEOUT,
        )
        .await
        .unwrap();
    assert!(matches!(offset, Reply::Offset(3)), "{offset:?}");

    // The slave restarts; what the master wrote meanwhile comes after it reconnects.
    slave.shutdown().await;
    assert_eq!(
        send(&master, 0, b"alone".to_vec()).await.0,
        SendStatus::FlushSlaveTimeout
    );
    let slave = Broker::start(slave_config(&cluster, slave_dir.path()))
        .await
        .unwrap();
    let to_slave = client(&slave).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while send(&master, 0, b"again".to_vec()).await.0 != SendStatus::Ok {
        assert!(
            Instant::now() < deadline,
            "the restarted slave never acknowledged"
        );
    }
    let end = caught_up(&master, &to_slave).await;
    assert_eq!(
        commit_log(slave_dir.path(), end),
        commit_log(cluster.store_dir(), end)
    );

    slave.shutdown().await;
    cluster.stop().await;
}

/// The warnings and errors logged in this test process, each as its fields' `name=value`s.
struct Logged(Mutex<Vec<String>>);

static LOGGED: OnceLock<&'static Logged> = OnceLock::new();

/// Starts capturing (once per process) and returns the capture.
fn logged() -> &'static Logged {
    LOGGED.get_or_init(|| {
        let logged: &'static Logged = Box::leak(Box::new(Logged(Mutex::new(Vec::new()))));
        tracing::subscriber::set_global_default(logged).expect("no other subscriber");
        logged
    })
}

impl Logged {
    /// Waits until a line containing every one of `parts` was logged; returns it.
    async fn wait_for(&self, parts: &[&str], within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let lines = self.0.lock().unwrap().clone();
            if let Some(line) = lines
                .iter()
                .find(|line| parts.iter().all(|part| line.contains(part)))
            {
                return line.clone();
            }
            assert!(
                Instant::now() < deadline,
                "nothing logged with {parts:?} in {lines:#?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl tracing::Subscriber for &'static Logged {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Line(String);
        impl tracing::field::Visit for Line {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
                self.0.push_str(&format!("{}={:?} ", field.name(), value));
            }
        }
        let mut line = Line(format!("{} ", event.metadata().level()));
        event.record(&mut line);
        self.0.lock().unwrap().push(line.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn async_master_config(config: &mut BrokerConfig) {
    config.broker_role = BrokerRole::AsyncMaster;
    config.mapped_file_size_commit_log = 256 * 1024;
}

/// Every CommitLog segment of a store, by name.
fn commit_log_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir.join("commitlog"))
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(path).unwrap())
        })
        .collect()
}

/// `count` records of 2 KiB bodies made of `fill`: the same sequence on two masters puts records
/// of the same sizes at the same offsets.
async fn send_many(master: &RemotingClient, count: usize, fill: u8) {
    for i in 0..count {
        let (status, _) = send(master, (i % 4) as i32, vec![fill; 2048]).await;
        assert_eq!(status, SendStatus::Ok);
    }
}

/// A slave whose CommitLog came from another master is refused, first as ahead of its new
/// master (which holds no record where the slave's last one starts), then, once that master has
/// written past it, as diverged (different bytes there); its CommitLog files stay as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_refuses_a_master_it_is_ahead_of_or_diverged_from() {
    let logged = logged();
    // The slave's store: a copy of master A's CommitLog.
    let a = Cluster::start(async_master_config).await;
    send_many(&a.broker_client().await, 40, b'a').await;
    let slave_dir = tempfile::tempdir().unwrap();
    let slave = Broker::start(slave_config(&a, slave_dir.path()))
        .await
        .unwrap();
    let held = caught_up(&a.broker_client().await, &client(&slave).await).await;
    slave.shutdown().await;
    a.stop().await;
    let before = commit_log_files(slave_dir.path());

    // Master B has written less than the slave holds.
    let b = Cluster::start(async_master_config).await;
    let to_b = b.broker_client().await;
    send_many(&to_b, 2, b'b').await;
    let slave = Broker::start(slave_config(&b, slave_dir.path()))
        .await
        .unwrap();
    let to_slave = client(&slave).await;
    let line = logged
        .wait_for(
            &["replication refused", "the master holds no record at"],
            Duration::from_secs(10),
        )
        .await;
    assert!(line.contains(&format!("ends at {held}")), "{line}");
    assert!(line.contains(&b.broker.local_addr().to_string()), "{line}");

    // B writes past the slave's last record: the next check (every 5 s) finds different bytes.
    send_many(&to_b, 60, b'b').await;
    let line = logged
        .wait_for(
            &["replication refused", "the CommitLogs diverged"],
            Duration::from_secs(15),
        )
        .await;
    assert!(line.contains(&format!("ends at {held}")), "{line}");
    assert_eq!(commit_log_max_offset(&to_slave).await, held);
    // Every segment is as it was; the store's allocator may have made the next one (zeros).
    for (name, bytes) in commit_log_files(slave_dir.path()) {
        match before.get(&name) {
            Some(was) => assert!(bytes == *was, "{name} was changed (held {held})"),
            None => assert!(bytes.iter().all(|b| *b == 0), "{name} was written"),
        }
    }

    slave.shutdown().await;
    b.stop().await;
}

/// An empty slave with segments of another size than its master's does not start streaming.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_refuses_a_master_with_another_segment_size() {
    let logged = logged();
    let cluster = Cluster::start(async_master_config).await;
    send_many(&cluster.broker_client().await, 2, b'm').await;
    let slave_dir = tempfile::tempdir().unwrap();
    let mut config = slave_config(&cluster, slave_dir.path());
    config.mapped_file_size_commit_log = 128 * 1024;
    let slave = Broker::start(config).await.unwrap();
    logged
        .wait_for(
            &[
                "replication refused",
                "mappedFileSizeCommitLog is 262144, this slave's is 131072",
            ],
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(commit_log_max_offset(&client(&slave).await).await, 0);

    slave.shutdown().await;
    cluster.stop().await;
}

/// With `haTransferFromMinOffset` an empty slave copies its master's whole CommitLog, not only
/// the last segment a master sends a slave that reports 0 (Java's rule).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_slave_with_ha_transfer_from_min_offset_copies_the_whole_log() {
    let cluster = Cluster::start(async_master_config).await;
    let master = cluster.broker_client().await;
    // About 660 KB: three segments of 256 KiB.
    send_many(&master, 300, b'h').await;
    let slave_dir = tempfile::tempdir().unwrap();
    let mut config = slave_config(&cluster, slave_dir.path());
    config.ha_transfer_from_min_offset = true;
    let slave = Broker::start(config).await.unwrap();
    let to_slave = client(&slave).await;
    let end = caught_up(&master, &to_slave).await;
    assert!(end > 2 * 256 * 1024);
    match to_slave
        .invoke(&Request::GetBrokerRuntimeInfo, TIMEOUT)
        .await
    {
        Ok(Reply::KeyValues(table)) => assert_eq!(table["commitLogMinOffset"], "0"),
        other => panic!("no runtime info: {other:?}"),
    }
    assert!(
        commit_log(slave_dir.path(), end) == commit_log(cluster.store_dir(), end),
        "the slave's CommitLog is the master's from 0"
    );

    slave.shutdown().await;
    cluster.stop().await;
}

/// A slave promoted with UPDATE_BROKER_CONFIG (`brokerId=0`, `brokerRole=ASYNC_MASTER`, what
/// `skiff migrate cutover` sends) asks to be started again in place; started with the settings
/// it gives, it is the group's master on the same port, continues every queue where the old
/// master left it and keeps the committed offsets it synced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_slave_restarts_as_master_on_its_port() {
    let cluster = Cluster::start(async_master_config).await;
    let master = cluster.broker_client().await;
    send_many(&master, 20, b'p').await;
    assert!(matches!(
        master
            .invoke(
                &Request::UpdateConsumerOffset {
                    group: "reader".into(),
                    queue: QueueRef {
                        topic: TOPIC.into(),
                        queue_id: 2,
                        physical: false,
                    },
                    offset: 4,
                },
                TIMEOUT,
            )
            .await,
        Ok(Reply::Success)
    ));
    let slave_dir = tempfile::tempdir().unwrap();
    let mut config = slave_config(&cluster, slave_dir.path());
    // What UPDATE_BROKER_CONFIG checks: a message fits a segment.
    config.max_message_size = 128 * 1024;
    let slave = Broker::start(config).await.unwrap();
    let slave_addr = slave.local_addr();
    caught_up(&master, &client(&slave).await).await;
    drop(master);
    let (namesrv, _master_dir) = cluster.stop_broker().await;

    let promote = AdminCommand::UpdateBrokerConfig {
        properties: "brokerId=0\nbrokerRole=ASYNC_MASTER\n".into(),
    };
    let answer = client(&slave)
        .await
        .invoke(&Request::Admin(promote), TIMEOUT)
        .await;
    assert!(matches!(answer, Ok(Reply::Success)), "{answer:?}");
    let config = tokio::time::timeout(TIMEOUT, slave.restart_requested())
        .await
        .expect("no restart requested");
    assert_eq!(
        (config.broker_role, config.broker_id),
        (BrokerRole::AsyncMaster, 0)
    );
    slave.shutdown().await;
    let promoted = Broker::start(config).await.unwrap();
    assert_eq!(promoted.local_addr(), slave_addr);

    let to_promoted = client(&promoted).await;
    assert_eq!(
        send(&to_promoted, 2, b"after".to_vec()).await,
        (SendStatus::Ok, 5),
        "queue 2 held 5 records"
    );
    let offset = to_promoted
        .invoke(
            &Request::QueryConsumerOffset {
                group: "reader".into(),
                queue: QueueRef {
                    topic: TOPIC.into(),
                    queue_id: 2,
                    physical: false,
                },
                set_zero_if_not_found: false,
            },
            TIMEOUT,
        )
        .await;
    assert!(matches!(offset, Ok(Reply::Offset(4))), "{offset:?}");
    let route = RemotingClient::connect(&namesrv.local_addr().to_string(), TIMEOUT)
        .await
        .unwrap()
        .invoke(
            &Request::GetRouteInfo {
                topic: TOPIC.into(),
            },
            TIMEOUT,
        )
        .await;
    match route {
        Ok(Reply::Route(route)) => {
            let addrs = &route.broker_datas[0].broker_addrs;
            assert_eq!(addrs.len(), 1, "{addrs:?}");
            assert_eq!(addrs[&0], slave_addr.to_string());
        }
        other => panic!("no route: {other:?}"),
    }

    promoted.shutdown().await;
    namesrv.shutdown().await;
}

/// What the fault proxy does to the first data frame of a connection.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Half the frame, then the connection closes.
    Truncate,
    /// The frame's CommitLog offset is off by one.
    WrongOffset,
    /// One byte of the first record's body flipped (its CRC no longer matches).
    FlipBody,
    /// Two seconds late, then everything as sent.
    Delay,
}

/// A proxy between a slave and its master's HA port that spoils the first data frame (a transfer
/// header and at least one record) of each connection with the next of `faults`; connections
/// after those pass everything through.
async fn fault_proxy(master_ha: std::net::SocketAddr, faults: Vec<Fault>) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut faults = faults.into_iter();
        while let Ok((slave, _)) = listener.accept().await {
            let Ok(master) = tokio::net::TcpStream::connect(master_ha).await else {
                continue;
            };
            let fault = faults.next();
            tokio::spawn(async move {
                let (mut from_slave, mut to_slave) = slave.into_split();
                let (mut from_master, mut to_master) = master.into_split();
                let reports =
                    tokio::spawn(
                        async move { tokio::io::copy(&mut from_slave, &mut to_master).await },
                    );
                let mut fault = fault;
                loop {
                    let mut header = [0u8; 12];
                    if from_master.read_exact(&mut header).await.is_err() {
                        break;
                    }
                    let size = i32::from_be_bytes(header[8..12].try_into().unwrap()) as usize;
                    let mut body = vec![0u8; size];
                    if from_master.read_exact(&mut body).await.is_err() {
                        break;
                    }
                    match fault.filter(|_| size > 0) {
                        Some(Fault::Truncate) => {
                            let _ = to_slave.write_all(&header).await;
                            let _ = to_slave.write_all(&body[..size / 2]).await;
                            break;
                        }
                        Some(Fault::WrongOffset) => {
                            let offset = i64::from_be_bytes(header[..8].try_into().unwrap());
                            header[..8].copy_from_slice(&(offset + 1).to_be_bytes());
                        }
                        // A record's body starts 88 bytes in (IPv4 hosts); the bodies are 2 KiB.
                        Some(Fault::FlipBody) => body[90] ^= 0xff,
                        Some(Fault::Delay) => tokio::time::sleep(Duration::from_secs(2)).await,
                        None => {}
                    }
                    if size > 0 {
                        fault = None;
                    }
                    if to_slave.write_all(&header).await.is_err()
                        || to_slave.write_all(&body).await.is_err()
                    {
                        break;
                    }
                }
                reports.abort();
            });
        }
    });
    addr
}

/// Truncated, misplaced and corrupted HA frames (through a proxy that spoils them) close the
/// link with nothing of them appended; the slave reconnects each time, says where it stopped,
/// and in the end holds the master's CommitLog byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spoiled_frames_close_the_link_and_append_nothing() {
    let logged = logged();
    let cluster = Cluster::start(async_master_config).await;
    let master = cluster.broker_client().await;
    send_many(&master, 40, b'f').await;
    let faults = vec![
        Fault::Truncate,
        Fault::WrongOffset,
        Fault::FlipBody,
        Fault::Delay,
    ];
    let proxy = fault_proxy(cluster.broker.ha_addr().unwrap(), faults).await;
    let slave_dir = tempfile::tempdir().unwrap();
    let mut config = slave_config(&cluster, slave_dir.path());
    config.ha_master_address = Some(proxy.to_string());
    let slave = Broker::start(config).await.unwrap();
    let to_slave = client(&slave).await;
    // Each spoiled frame closes the link, saying where the slave stopped and why.
    for reason in [
        "the peer closed the HA connection",
        "not at a CommitLog segment start",
        "body CRC",
    ] {
        let via = format!("master={proxy}");
        let line = logged
            .wait_for(
                &["replication link closed", reason, &via],
                Duration::from_secs(20),
            )
            .await;
        assert!(line.contains("replicated_up_to=0"), "{line}");
    }
    // Whatever the slave holds is a prefix of the master's CommitLog.
    let held = commit_log_max_offset(&to_slave).await;
    assert_eq!(
        commit_log(slave_dir.path(), held),
        commit_log(cluster.store_dir(), held)
    );
    send_many(&master, 40, b'g').await;
    let end = tokio::time::timeout(Duration::from_secs(40), async {
        loop {
            let (m, s) = (
                commit_log_max_offset(&master).await,
                commit_log_max_offset(&to_slave).await,
            );
            if m == s {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the slave never caught up through the proxy");
    assert!(
        commit_log(slave_dir.path(), end) == commit_log(cluster.store_dir(), end),
        "the slave's CommitLog is the master's, byte for byte"
    );

    slave.shutdown().await;
    cluster.stop().await;
}

/// Reads HA frames from `stream` until one ends at `end`; returns each frame's body size
/// (heartbeats left out).
async fn frame_sizes_until(stream: &mut tokio::net::TcpStream, end: i64) -> Vec<usize> {
    use tokio::io::AsyncReadExt;
    let mut sizes = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let mut header = [0u8; 12];
            stream.read_exact(&mut header).await.unwrap();
            let offset = i64::from_be_bytes(header[..8].try_into().unwrap());
            let size = i32::from_be_bytes(header[8..].try_into().unwrap()) as usize;
            let mut body = vec![0u8; size];
            stream.read_exact(&mut body).await.unwrap();
            if size > 0 {
                sizes.push(size);
            }
            if offset + size as i64 >= end {
                return;
            }
        }
    })
    .await
    .expect("the master stopped streaming before the end");
    sizes
}

/// `haTransferBatchSize` set with UPDATE_BROKER_CONFIG applies to a running master's next frame,
/// as Java's `HAConnection` reads it per transfer (what `skiff migrate replicate
/// --master-batch-size` relies on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ha_transfer_batch_size_applies_to_the_next_frame() {
    use tokio::io::AsyncWriteExt;
    let cluster = Cluster::start(|config| {
        async_master_config(config);
        // What UPDATE_BROKER_CONFIG checks: a message fits a segment.
        config.max_message_size = 128 * 1024;
    })
    .await;
    let master = cluster.broker_client().await;
    send_many(&master, 40, b'a').await;
    let mut slave = tokio::net::TcpStream::connect(cluster.broker.ha_addr().unwrap())
        .await
        .unwrap();
    // An empty slave's first report.
    slave.write_all(&0i64.to_be_bytes()).await.unwrap();
    let end = commit_log_max_offset(&master).await;
    let sizes = frame_sizes_until(&mut slave, end).await;
    assert_eq!(sizes.iter().max(), Some(&(32 * 1024)), "{sizes:?}");

    let properties = "haTransferBatchSize=4096".to_string();
    let reply = master
        .invoke(
            &Request::Admin(AdminCommand::UpdateBrokerConfig { properties }),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    // Records larger than the new size on the same connection: each is cut into frames of it.
    for _ in 0..3 {
        assert_eq!(send(&master, 0, vec![b'b'; 10_000]).await.0, SendStatus::Ok);
    }
    let end = commit_log_max_offset(&master).await;
    let sizes = frame_sizes_until(&mut slave, end).await;
    assert!(sizes.iter().all(|&size| size <= 4096), "{sizes:?}");
    assert!(sizes.contains(&4096), "{sizes:?}");
    cluster.stop().await;
}
