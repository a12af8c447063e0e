//! Master/slave replication in process: a Skiff master and a Skiff slave registered with one name
//! server, spoken to through the neutral model. The slave finds its master through the name
//! server (`haServerAddr`), copies its CommitLog byte for byte, serves reads
//! (`slaveReadEnable`), refuses writes, and syncs topics, groups and consumer offsets.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use skiff_model::command::{
    ErrorKind, PullRequest, PullStatus, QueueRef, Reply, Request, SendStatus,
    SubscriptionExpression,
};
use skiff_model::message::{Message, Properties};
use skiff_model::record::Record;
use skiff_model::route::TopicConfig;
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
