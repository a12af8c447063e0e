//! The Kafka listener in process: a client built from `kafka-protocol`'s request schemas over a
//! socket, against a broker with `kafkaListen`. The official clients are in compat-tests; these
//! tests pin what a client cannot easily show: reply order behind a held fetch, no reply to
//! `acks=0`, hostile frames, and the cross-protocol mapping both ways.

mod common;

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, FetchRequest, FetchResponse, MetadataRequest, MetadataResponse,
    ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{encode_request_header_into_buffer, Decodable, Encodable, StrBytes};
use skiff_model::command::{
    PullRequest, PullResult, QueueRef, Reply, Request, SubscriptionExpression,
};
use skiff_model::keyed::{Header, KeyedRecord};
use skiff_model::message::{keys, Properties};
use skiff_model::record::Record;
use skiff_protocol::kafka::{frame_codec, records};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

use common::{Cluster, TIMEOUT};

async fn kafka_cluster() -> Cluster {
    Cluster::start(|config| config.kafka_listen = Some("127.0.0.1:0".parse().unwrap())).await
}

struct Client {
    framed: Framed<TcpStream, tokio_util::codec::LengthDelimitedCodec>,
    next_id: i32,
}

impl Client {
    async fn connect(cluster: &Cluster) -> Client {
        let addr = cluster.broker.kafka_addr().expect("a Kafka listener");
        Client {
            framed: Framed::new(
                TcpStream::connect(addr).await.unwrap(),
                frame_codec(1 << 24),
            ),
            next_id: 1,
        }
    }

    /// Sends a request without waiting; returns its correlation id.
    async fn send(&mut self, api: ApiKey, version: i16, body: &impl Encodable) -> i32 {
        let id = self.next_id;
        self.next_id += 1;
        let mut buf = BytesMut::new();
        let header = RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(id)
            .with_client_id(Some(StrBytes::from_static_str("in-process")));
        encode_request_header_into_buffer(&mut buf, &header).unwrap();
        body.encode(&mut buf, version).unwrap();
        self.framed.send(buf.freeze()).await.unwrap();
        id
    }

    /// The next response: its correlation id and body.
    async fn receive<T: Decodable>(&mut self, api: ApiKey, version: i16) -> (i32, T) {
        let frame = tokio::time::timeout(TIMEOUT, self.framed.next())
            .await
            .expect("a response in time")
            .expect("the connection is open")
            .unwrap();
        let mut buf = frame.freeze();
        let header =
            ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
        (header.correlation_id, T::decode(&mut buf, version).unwrap())
    }

    /// Produces `records` to a partition (acks=-1) and checks they were accepted.
    async fn produce_ok(&mut self, topic: &str, partition: i32, records: &[KeyedRecord]) {
        self.send(ApiKey::Produce, 9, &produce(topic, partition, -1, records))
            .await;
        let (_, produced): (_, ProduceResponse) = self.receive(ApiKey::Produce, 9).await;
        assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    }

    /// Whether the broker closed the connection (within the timeout).
    async fn closed(&mut self) -> bool {
        matches!(
            tokio::time::timeout(TIMEOUT, self.framed.next()).await,
            Ok(None | Some(Err(_)))
        )
    }
}

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

fn metadata(topic: &str) -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name(topic)))
        ]))
        .with_allow_auto_topic_creation(true)
}

fn produce(topic: &str, partition: i32, acks: i16, records: &[KeyedRecord]) -> ProduceRequest {
    let mut batch = BytesMut::new();
    records::encode_batch(&mut batch, 0, records);
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(batch.freeze()))])])
}

fn fetch(topic: &str, partition: i32, offset: i64, max_wait_ms: i32) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(1 << 20)])])
}

fn record(i: u8) -> KeyedRecord {
    KeyedRecord {
        timestamp: 1_600_000_000_000 + i64::from(i),
        key: Some(Bytes::from(format!("key-{i}"))),
        value: Some(Bytes::from(format!("value-{i}"))),
        headers: vec![
            Header {
                key: "bin".into(),
                value: Some(Bytes::from(vec![0, 1, 0xff, i])),
            },
            Header {
                key: "rep".into(),
                value: Some(Bytes::from_static(b"a")),
            },
            Header {
                key: "rep".into(),
                value: Some(Bytes::from_static(b"b")),
            },
        ],
    }
}

/// The records of a fetch response's only partition, read back with Skiff's batch parser.
fn fetched(response: &FetchResponse) -> (i16, Vec<KeyedRecord>) {
    let partition = &response.responses[0].partitions[0];
    (partition.error_code, partition_records(partition))
}

/// A fetched partition's records, read back with Skiff's batch parser.
fn partition_records(partition: &PartitionData) -> Vec<KeyedRecord> {
    match partition.records.clone().filter(|r| !r.is_empty()) {
        Some(bytes) => records::decode_batches(bytes, 1 << 20)
            .unwrap()
            .into_iter()
            .flat_map(|b| b.records)
            .collect(),
        None => Vec::new(),
    }
}

/// Up to 32 messages of a queue from its start, through RocketMQ's pull (every tag).
async fn pull_all(cluster: &Cluster, group: &str, topic: &str, queue_id: i32) -> PullResult {
    let pull = Request::Pull(PullRequest {
        consumer_group: group.into(),
        queue: QueueRef {
            topic: topic.into(),
            queue_id,
            physical: false,
        },
        max_msg_nums: 32,
        subscription: Some(SubscriptionExpression {
            expression_type: "TAG".into(),
            expression: "*".into(),
            version: 0,
        }),
        ..PullRequest::default()
    });
    let reply = cluster.broker_client().await.invoke(&pull, TIMEOUT).await;
    let Ok(Reply::Pulled(pulled)) = reply else {
        panic!("pull failed: {reply:?}");
    };
    pulled
}

#[tokio::test]
async fn produced_records_fetch_back_and_read_as_rocketmq_messages() {
    let cluster = kafka_cluster().await;
    let mut client = Client::connect(&cluster).await;
    client
        .send(ApiKey::Metadata, 12, &metadata("KafkaOrders"))
        .await;
    let (_, meta): (_, MetadataResponse) = client.receive(ApiKey::Metadata, 12).await;
    assert_eq!(meta.controller_id.0, 0);
    assert_eq!(meta.topics[0].error_code, 0);
    assert_eq!(meta.topics[0].partitions.len(), 8, "defaultTopicQueueNums");
    assert_eq!(
        meta.brokers[0].port,
        i32::from(cluster.broker.kafka_addr().unwrap().port())
    );

    let sent: Vec<_> = (0..5).map(record).collect();
    client
        .send(ApiKey::Produce, 9, &produce("KafkaOrders", 3, -1, &sent))
        .await;
    let (_, produced): (_, ProduceResponse) = client.receive(ApiKey::Produce, 9).await;
    let partition = &produced.responses[0].partition_responses[0];
    assert_eq!((partition.error_code, partition.base_offset), (0, 0));

    client
        .send(ApiKey::Fetch, 12, &fetch("KafkaOrders", 3, 2, 0))
        .await;
    let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    assert_eq!(response.responses[0].partitions[0].high_watermark, 5);
    assert_eq!(fetched(&response), (0, sent[2..].to_vec()));

    // The same records through RocketMQ's pull: key as KEYS, text headers as properties.
    let pulled = pull_all(&cluster, "rocketmq-reader", "KafkaOrders", 3).await;
    assert_eq!(pulled.messages.len(), 5);
    let first = Record::decode(&pulled.messages[0], true).unwrap();
    let properties = Properties::decode_bytes(first.properties);
    assert_eq!(first.body, b"value-0");
    assert_eq!(first.born_timestamp, sent[0].timestamp);
    assert_eq!(properties.get(keys::KEYS), Some("key-0"));
    assert_eq!(properties.get("rep"), Some("a"));
    assert!(properties.uniq_key().is_some());

    // A RocketMQ send reads as a record: KEYS as key, user properties as headers.
    let mut send = common::auto_creating_send("rocketmq-writer", "KafkaOrders");
    if let Request::Send(send) = &mut send {
        send.queue_id = 3;
        send.messages[0].properties.insert(keys::KEYS, "rocket-key");
        send.messages[0].properties.insert("color", "red");
    }
    let reply = cluster.broker_client().await.invoke(&send, TIMEOUT).await;
    assert!(matches!(reply, Ok(Reply::Sent(_))), "{reply:?}");
    client
        .send(ApiKey::Fetch, 12, &fetch("KafkaOrders", 3, 5, 0))
        .await;
    let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    let (_, records) = fetched(&response);
    assert_eq!(records[0].key.as_deref(), Some(&b"rocket-key"[..]));
    assert_eq!(records[0].value.as_deref(), Some(&b"x"[..]));
    assert!(records[0]
        .headers
        .iter()
        .any(|h| h.key == "color" && h.value.as_deref() == Some(&b"red"[..])));
    cluster.stop().await;
}

#[tokio::test]
async fn replies_keep_request_order_behind_a_held_fetch_and_acks_zero_gets_none() {
    let cluster = kafka_cluster().await;
    let mut client = Client::connect(&cluster).await;
    client
        .send(ApiKey::Metadata, 12, &metadata("Ordered"))
        .await;
    let _: (_, MetadataResponse) = client.receive(ApiKey::Metadata, 12).await;

    // Held: nothing at offset 0 yet. Then, pipelined: a produce with acks=0 (no answer) and an
    // ApiVersions, which is ready at once but must wait for the fetch's answer.
    let began = Instant::now();
    let held = client
        .send(ApiKey::Fetch, 12, &fetch("Ordered", 0, 0, 400))
        .await;
    client
        .send(ApiKey::Produce, 9, &produce("Ordered", 1, 0, &[record(1)]))
        .await;
    let versions = client
        .send(ApiKey::ApiVersions, 3, &ApiVersionsRequest::default())
        .await;
    let (first, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    assert_eq!(first, held);
    assert_eq!(fetched(&response), (0, Vec::new()));
    assert!(
        began.elapsed() >= Duration::from_millis(300),
        "the fetch was held"
    );
    let (second, _): (_, kafka_protocol::messages::ApiVersionsResponse) =
        client.receive(ApiKey::ApiVersions, 3).await;
    assert_eq!(second, versions, "the acks=0 produce took no slot");

    // The acks=0 records were stored; a held fetch is released by an arrival.
    client
        .send(ApiKey::Fetch, 12, &fetch("Ordered", 1, 0, 5000))
        .await;
    let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    assert_eq!(fetched(&response).1, vec![record(1)]);
    let began = Instant::now();
    client
        .send(ApiKey::Fetch, 12, &fetch("Ordered", 1, 1, 5000))
        .await;
    let mut producer = Client::connect(&cluster).await;
    producer
        .send(ApiKey::Produce, 9, &produce("Ordered", 1, 1, &[record(2)]))
        .await;
    let _: (_, ProduceResponse) = producer.receive(ApiKey::Produce, 9).await;
    let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    assert_eq!(fetched(&response).1, vec![record(2)]);
    assert!(
        began.elapsed() < Duration::from_secs(4),
        "released by the arrival"
    );
    cluster.stop().await;
}

/// `produce` with the batch stamped as an idempotent producer's.
fn idempotent(
    topic: &str,
    producer: (i64, i16),
    sequence: i32,
    records: &[KeyedRecord],
) -> ProduceRequest {
    let mut request = produce(topic, 0, -1, records);
    let data = &mut request.topic_data[0].partition_data[0];
    let mut batch = data.records.take().unwrap().to_vec();
    batch[43..51].copy_from_slice(&producer.0.to_be_bytes());
    batch[51..53].copy_from_slice(&producer.1.to_be_bytes());
    batch[53..57].copy_from_slice(&sequence.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    data.records = Some(Bytes::from(batch));
    request
}

#[tokio::test]
async fn idempotent_producers_get_fresh_ids_and_duplicates_their_first_offset() {
    use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse};
    let cluster = kafka_cluster().await;
    let mut client = Client::connect(&cluster).await;
    client
        .send(ApiKey::Metadata, 12, &metadata("Idempotent"))
        .await;
    let _: (_, MetadataResponse) = client.receive(ApiKey::Metadata, 12).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        client
            .send(
                ApiKey::InitProducerId,
                4,
                &InitProducerIdRequest::default().with_transactional_id(None),
            )
            .await;
        let (_, init): (_, InitProducerIdResponse) =
            client.receive(ApiKey::InitProducerId, 4).await;
        assert_eq!((init.error_code, init.producer_epoch), (0, 0));
        ids.push(init.producer_id.0);
    }
    assert_ne!(ids[0], ids[1]);
    let producer = (ids[0], 0);
    let mut base_offsets = Vec::new();
    // Sequence 0 (2 records), then the same batch again (a retry), then sequence 2.
    for sequence in [0, 0, 2] {
        let request = idempotent("Idempotent", producer, sequence, &[record(1), record(2)]);
        client.send(ApiKey::Produce, 9, &request).await;
        let (_, produced): (_, ProduceResponse) = client.receive(ApiKey::Produce, 9).await;
        let partition = &produced.responses[0].partition_responses[0];
        assert_eq!(partition.error_code, 0);
        base_offsets.push(partition.base_offset);
    }
    assert_eq!(
        base_offsets,
        vec![0, 0, 2],
        "the retry got its first offset"
    );
    // A gap is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch INVALID_PRODUCER_EPOCH.
    for (producer, sequence, code) in [((ids[0], 0), 9, 45), ((ids[0], -1), 4, 47)] {
        let request = idempotent("Idempotent", producer, sequence, &[record(3)]);
        client.send(ApiKey::Produce, 9, &request).await;
        let (_, produced): (_, ProduceResponse) = client.receive(ApiKey::Produce, 9).await;
        assert_eq!(
            produced.responses[0].partition_responses[0].error_code,
            code
        );
    }
    client
        .send(ApiKey::Fetch, 12, &fetch("Idempotent", 0, 0, 0))
        .await;
    let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    assert_eq!(
        response.responses[0].partitions[0].high_watermark, 4,
        "stored once"
    );
    // A transactional id is refused (transactions are not served).
    let transactional = InitProducerIdRequest::default()
        .with_transactional_id(Some(StrBytes::from_static_str("tx").into()));
    client.send(ApiKey::InitProducerId, 4, &transactional).await;
    let (_, init): (_, InitProducerIdResponse) = client.receive(ApiKey::InitProducerId, 4).await;
    assert_eq!(init.error_code, 53);
    cluster.stop().await;
}

#[tokio::test]
async fn out_of_range_offsets_unknown_partitions_and_bad_batches_get_kafka_errors() {
    let cluster = kafka_cluster().await;
    let mut client = Client::connect(&cluster).await;
    client.send(ApiKey::Metadata, 12, &metadata("Errors")).await;
    let _: (_, MetadataResponse) = client.receive(ApiKey::Metadata, 12).await;
    client
        .send(ApiKey::Fetch, 12, &fetch("Errors", 0, 1, 0))
        .await;
    let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    assert_eq!(fetched(&response).0, 1, "OFFSET_OUT_OF_RANGE past the end");
    client
        .send(ApiKey::Fetch, 12, &fetch("Errors", 99, 0, 0))
        .await;
    let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    assert_eq!(fetched(&response).0, 3, "UNKNOWN_TOPIC_OR_PARTITION");

    let mut damaged = produce("Errors", 0, 1, &[record(1)]);
    let records = damaged.topic_data[0].partition_data[0]
        .records
        .take()
        .unwrap();
    let mut bytes = records.to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    damaged.topic_data[0].partition_data[0].records = Some(Bytes::from(bytes));
    client.send(ApiKey::Produce, 9, &damaged).await;
    let (_, produced): (_, ProduceResponse) = client.receive(ApiKey::Produce, 9).await;
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 2);
    cluster.stop().await;
}

#[tokio::test]
async fn hostile_frames_close_the_connection_and_the_broker_serves_on() {
    let cluster = kafka_cluster().await;
    let addr = cluster.broker.kafka_addr().unwrap();
    let hostile: [&[u8]; 4] = [
        // Metadata v0 claiming two billion topics in a few bytes.
        &[
            0, 0, 0, 14, 0, 3, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff,
        ],
        // A size past the listener's limit.
        &[0x7f, 0xff, 0xff, 0xff, 0, 3],
        // An API Skiff does not serve (JoinGroup).
        &[0, 0, 0, 10, 0, 11, 0, 0, 0, 0, 0, 1, 0xff, 0xff],
        // A frame too short for a header.
        &[0, 0, 0, 2, 0, 3],
    ];
    for bytes in hostile {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut stream, bytes)
            .await
            .unwrap();
        let mut client = Client {
            framed: Framed::new(stream, frame_codec(1 << 24)),
            next_id: 1,
        };
        assert!(client.closed().await, "{bytes:?} closes the connection");
    }
    let mut client = Client::connect(&cluster).await;
    client
        .send(ApiKey::Metadata, 12, &metadata("StillServing"))
        .await;
    let (_, meta): (_, MetadataResponse) = client.receive(ApiKey::Metadata, 12).await;
    assert_eq!(meta.topics[0].error_code, 0);
    cluster.stop().await;
}

#[tokio::test]
async fn idle_kafka_connections_are_closed_and_working_ones_kept() {
    let cluster = Cluster::start(|config| {
        config.kafka_listen = Some("127.0.0.1:0".parse().unwrap());
        config.server_channel_max_idle_time_seconds = 1;
    })
    .await;
    let addr = cluster.broker.kafka_addr().unwrap();
    let idle = TcpStream::connect(addr).await.unwrap();
    let mut idle = Client {
        framed: Framed::new(idle, frame_codec(1 << 24)),
        next_id: 1,
    };
    let mut busy = Client::connect(&cluster).await;
    let started = Instant::now();
    // A request every 300 ms keeps a connection open past the idle time.
    for _ in 0..6 {
        busy.send(ApiKey::Metadata, 12, &metadata("KeptOpen")).await;
        let (_, meta): (_, MetadataResponse) = busy.receive(ApiKey::Metadata, 12).await;
        assert_eq!(meta.topics[0].error_code, 0);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(idle.closed().await, "an idle connection is closed");
    assert!(started.elapsed() < Duration::from_secs(5));
    cluster.stop().await;
}

#[tokio::test]
async fn a_consumer_group_joins_syncs_commits_and_leaves() {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopics,
    };
    use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
    use kafka_protocol::messages::*;
    let cluster = kafka_cluster().await;
    let mut client = Client::connect(&cluster).await;
    client
        .send(ApiKey::Metadata, 12, &metadata("Grouped"))
        .await;
    let _: (_, MetadataResponse) = client.receive(ApiKey::Metadata, 12).await;
    let group = || GroupId(StrBytes::from_static_str("kafka-group"));

    let find = FindCoordinatorRequest::default()
        .with_coordinator_keys(vec![StrBytes::from_static_str("kafka-group")]);
    client.send(ApiKey::FindCoordinator, 4, &find).await;
    let (_, found): (_, FindCoordinatorResponse) = client.receive(ApiKey::FindCoordinator, 4).await;
    assert_eq!(found.coordinators[0].error_code, 0);
    assert_eq!(found.coordinators[0].node_id.0, 0);

    let join = |member: StrBytes| {
        JoinGroupRequest::default()
            .with_group_id(group())
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(member)
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(Bytes::from_static(b"subscription"))])
    };
    client
        .send(ApiKey::JoinGroup, 9, &join(StrBytes::default()))
        .await;
    let (_, first): (_, JoinGroupResponse) = client.receive(ApiKey::JoinGroup, 9).await;
    assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
    let member = first.member_id.clone();
    let began = Instant::now();
    client
        .send(ApiKey::JoinGroup, 9, &join(member.clone()))
        .await;
    let (_, joined): (_, JoinGroupResponse) = client.receive(ApiKey::JoinGroup, 9).await;
    assert!(
        began.elapsed() >= Duration::from_millis(2500),
        "the initial rebalance delay"
    );
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader, member);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(joined.members.len(), 1);

    let sync = SyncGroupRequest::default()
        .with_group_id(group())
        .with_generation_id(1)
        .with_member_id(member.clone())
        .with_protocol_type(Some(StrBytes::from_static_str("consumer")))
        .with_protocol_name(Some(StrBytes::from_static_str("range")))
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(member.clone())
            .with_assignment(Bytes::from_static(b"all of it"))]);
    client.send(ApiKey::SyncGroup, 5, &sync).await;
    let (_, synced): (_, SyncGroupResponse) = client.receive(ApiKey::SyncGroup, 5).await;
    assert_eq!(synced.error_code, 0);
    assert_eq!(synced.assignment, Bytes::from_static(b"all of it"));

    let heartbeat = HeartbeatRequest::default()
        .with_group_id(group())
        .with_generation_id(1)
        .with_member_id(member.clone());
    client.send(ApiKey::Heartbeat, 4, &heartbeat).await;
    let (_, beat): (_, HeartbeatResponse) = client.receive(ApiKey::Heartbeat, 4).await;
    assert_eq!(beat.error_code, 0);

    let commit = OffsetCommitRequest::default()
        .with_group_id(group())
        .with_generation_id_or_member_epoch(1)
        .with_member_id(member.clone())
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name("Grouped"))
            .with_partitions(vec![
                OffsetCommitRequestPartition::default()
                    .with_partition_index(2)
                    .with_committed_offset(17)
                    .with_committed_metadata(Some(StrBytes::from_static_str("note"))),
                OffsetCommitRequestPartition::default()
                    .with_partition_index(99)
                    .with_committed_offset(1),
            ])]);
    client.send(ApiKey::OffsetCommit, 8, &commit).await;
    let (_, committed): (_, OffsetCommitResponse) = client.receive(ApiKey::OffsetCommit, 8).await;
    let codes: Vec<i16> = committed.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![0, 3]);

    let fetch_offsets =
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(group())
            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                .with_name(name("Grouped"))
                .with_partition_indexes(vec![2, 3])]))]);
    client.send(ApiKey::OffsetFetch, 8, &fetch_offsets).await;
    let (_, fetched): (_, OffsetFetchResponse) = client.receive(ApiKey::OffsetFetch, 8).await;
    let partitions = &fetched.groups[0].topics[0].partitions;
    assert_eq!(partitions[0].committed_offset, 17);
    assert_eq!(partitions[0].metadata.as_deref(), Some("note"));
    assert_eq!(partitions[1].committed_offset, -1, "nothing committed");

    client
        .send(
            ApiKey::DescribeGroups,
            5,
            &DescribeGroupsRequest::default().with_groups(vec![group()]),
        )
        .await;
    let (_, described): (_, DescribeGroupsResponse) =
        client.receive(ApiKey::DescribeGroups, 5).await;
    assert_eq!(described.groups[0].group_state.as_str(), "Stable");
    assert_eq!(
        described.groups[0].members[0].member_assignment,
        Bytes::from_static(b"all of it")
    );

    let leave = LeaveGroupRequest::default()
        .with_group_id(group())
        .with_members(vec![
            leave_group_request::MemberIdentity::default().with_member_id(member)
        ]);
    client.send(ApiKey::LeaveGroup, 5, &leave).await;
    let (_, left): (_, LeaveGroupResponse) = client.receive(ApiKey::LeaveGroup, 5).await;
    assert_eq!(left.members[0].error_code, 0);
    client
        .send(ApiKey::ListGroups, 4, &ListGroupsRequest::default())
        .await;
    let (_, listed): (_, ListGroupsResponse) = client.receive(ApiKey::ListGroups, 4).await;
    let state = listed
        .groups
        .iter()
        .find(|g| g.group_id.0.as_str() == "kafka-group")
        .map(|g| g.group_state.to_string());
    assert_eq!(
        state.as_deref(),
        Some("Empty"),
        "left, but its offsets remain"
    );
    // Kafka groups are not RocketMQ groups: nothing committed under the RocketMQ name.
    let query = Request::QueryConsumerOffset {
        group: "kafka-group".into(),
        queue: QueueRef {
            topic: "Grouped".into(),
            queue_id: 2,
            physical: false,
        },
        set_zero_if_not_found: false,
    };
    let reply = cluster.broker_client().await.invoke(&query, TIMEOUT).await;
    assert!(!matches!(reply, Ok(Reply::Offset(17))), "{reply:?}");
    cluster.stop().await;
}

#[tokio::test]
async fn topics_are_created_described_and_deleted_as_rocketmq_admin_would() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::*;
    let cluster = kafka_cluster().await;
    let mut client = Client::connect(&cluster).await;
    let topic = |name: &str, partitions: i32, replication: i16| {
        CreatableTopic::default()
            .with_name(self::name(name))
            .with_num_partitions(partitions)
            .with_replication_factor(replication)
    };
    let create = CreateTopicsRequest::default().with_topics(vec![
        topic("Created", 3, 1),
        topic("Created", 3, 1),
        topic("TooReplicated", 3, 3),
        topic("NoPartitions", 0, 1),
        topic("bad.name", 1, 1),
        topic("Defaulted", -1, -1),
    ]);
    client.send(ApiKey::CreateTopics, 7, &create).await;
    let (_, created): (_, CreateTopicsResponse) = client.receive(ApiKey::CreateTopics, 7).await;
    let codes: Vec<i16> = created.topics.iter().map(|t| t.error_code).collect();
    assert_eq!(codes, vec![0, 36, 38, 37, 17, 0]);
    assert_eq!(created.topics[5].num_partitions, 8, "defaultTopicQueueNums");
    assert_eq!(
        cluster.route("Created").await.queue_datas[0].write_queue_nums,
        3
    );

    let describe = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("Created"))
            .with_configuration_keys(Some(vec![StrBytes::from_static_str("max.message.bytes")])),
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("Missing")),
    ]);
    client.send(ApiKey::DescribeConfigs, 4, &describe).await;
    let (_, described): (_, DescribeConfigsResponse) =
        client.receive(ApiKey::DescribeConfigs, 4).await;
    assert_eq!(described.results[0].configs.len(), 1);
    assert_eq!(
        described.results[0].configs[0].value.as_deref(),
        Some("4194304")
    );
    assert_eq!(described.results[1].error_code, 3);

    let delete =
        DeleteTopicsRequest::default().with_topic_names(vec![name("Created"), name("Missing")]);
    client.send(ApiKey::DeleteTopics, 5, &delete).await;
    let (_, deleted): (_, DeleteTopicsResponse) = client.receive(ApiKey::DeleteTopics, 5).await;
    let codes: Vec<i16> = deleted.responses.iter().map(|t| t.error_code).collect();
    assert_eq!(codes, vec![0, 3]);
    cluster.stop().await;
}

/// With no CommitLog kept mapped behind the writer, every Fetch and pull reads cold data on a
/// blocking thread and unmaps what it mapped before answering: the answers are whole.
#[tokio::test]
async fn cold_reads_answer_whole_records_after_their_pages_are_released() {
    let cluster = Cluster::start(|config| {
        config.kafka_listen = Some("127.0.0.1:0".parse().unwrap());
        config.commit_log_resident_tail = 0;
    })
    .await;
    let mut client = Client::connect(&cluster).await;
    client
        .send(ApiKey::Metadata, 12, &metadata("ColdOrders"))
        .await;
    let (_, _meta): (_, MetadataResponse) = client.receive(ApiKey::Metadata, 12).await;
    let sent: Vec<_> = (0..5).map(record).collect();
    client.produce_ok("ColdOrders", 1, &sent).await;
    for _ in 0..2 {
        client
            .send(ApiKey::Fetch, 12, &fetch("ColdOrders", 1, 0, 0))
            .await;
        let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
        assert_eq!(fetched(&response), (0, sent.clone()));
    }
    let pulled = pull_all(&cluster, "cold-reader", "ColdOrders", 1).await;
    let bodies: Vec<_> = pulled
        .messages
        .iter()
        .map(|m| Record::decode(m, true).unwrap().body.to_vec())
        .collect();
    let expected: Vec<_> = sent
        .iter()
        .map(|r| r.value.clone().unwrap().to_vec())
        .collect();
    assert_eq!(bodies, expected);
    cluster.stop().await;
}

fn fetch_two(topic: &str, offsets: [i64; 2], partition_max_bytes: i32) -> FetchRequest {
    let partitions = offsets
        .iter()
        .enumerate()
        .map(|(partition, &offset)| {
            FetchPartition::default()
                .with_partition(partition as i32)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(partition_max_bytes)
        })
        .collect();
    FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(partitions)])
}

/// Fetches partitions 0 and 1 of `topic` from `offsets`; each partition's records and high
/// watermark.
async fn fetch_both(
    client: &mut Client,
    topic: &str,
    offsets: [i64; 2],
    partition_max_bytes: i32,
) -> Vec<(Vec<KeyedRecord>, i64)> {
    let request = fetch_two(topic, offsets, partition_max_bytes);
    client.send(ApiKey::Fetch, 12, &request).await;
    let (_, response): (_, FetchResponse) = client.receive(ApiKey::Fetch, 12).await;
    response.responses[0]
        .partitions
        .iter()
        .map(|partition| {
            assert_eq!(partition.error_code, 0);
            (partition_records(partition), partition.high_watermark)
        })
        .collect()
}

/// A consumer catching up has its next fetch read ahead while it works; the answer it gets from
/// that is the one a fresh read gives: a batch that filled its limit is still whole when more
/// records arrive behind it (with the high watermarks of now), and a partition that had reached
/// its end reads the records that came since.
#[tokio::test]
async fn a_fetch_read_ahead_answers_as_a_fresh_read_would() {
    let cluster = Cluster::start(|config| {
        config.kafka_listen = Some("127.0.0.1:0".parse().unwrap());
        config.commit_log_resident_tail = 0;
    })
    .await;
    let mut client = Client::connect(&cluster).await;
    client.send(ApiKey::Metadata, 12, &metadata("Behind")).await;
    let (_, _meta): (_, MetadataResponse) = client.receive(ApiKey::Metadata, 12).await;
    let sent: Vec<_> = (0..12).map(record).collect();
    client.produce_ok("Behind", 0, &sent[..10]).await;
    client.produce_ok("Behind", 1, &sent[..1]).await;
    // A limit that holds a few records: partition 0 stops at it, partition 1 at its end.
    let limit = (records::BATCH_HEADER_LEN + 3 * 60) as i32;
    let first = fetch_both(&mut client, "Behind", [0, 0], limit).await;
    let taken = first[0].0.len();
    assert!(
        (1..10).contains(&taken),
        "{taken} records under {limit} bytes"
    );
    assert_eq!(first[0], (sent[..taken].to_vec(), 10));
    assert_eq!(first[1], (sent[..1].to_vec(), 1));
    // Records arrive behind partition 0's batch while the next fetch is read ahead.
    client.produce_ok("Behind", 0, &sent[10..]).await;
    let second = fetch_both(&mut client, "Behind", [taken as i64, 1], limit).await;
    let next = taken + second[0].0.len();
    assert_eq!(second[0], (sent[taken..next].to_vec(), 12));
    assert_eq!(second[1], (Vec::new(), 1));
    // Records arrive on partition 1, which had been read to its end, after the read ahead of
    // the next fetch (it starts as the answer goes out and takes microseconds here).
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.produce_ok("Behind", 1, &sent[10..]).await;
    let third = fetch_both(&mut client, "Behind", [next as i64, 1], limit).await;
    assert_eq!(third[0].0, sent[next..next + third[0].0.len()].to_vec());
    assert_eq!(third[1], (sent[10..].to_vec(), 3));
    cluster.stop().await;
}
