//! Writes what Skiff sends (frames and bodies) to `$SKIFF_JAVA_CHECK_DIR`, for a manual check that
//! the Java client, broker and name server classes parse them (see the report of this crate's
//! author: a Java program feeds each file to `RemotingCommand.decode`, the client's
//! `processSendResponse`/`processPullResponse`, and fastjson `decode` into the Java body classes).
//! Ignored by default: it only writes files.
//!
//! `SKIFF_JAVA_CHECK_DIR=/tmp/out cargo test -p skiff-protocol --test java_check -- --ignored`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use skiff_model::command::{
    PullResult, PullStatus, QueueRef, Reply, Request, SendRequest, SendResult, SendStatus,
};
use skiff_model::consumer::{
    ConsumeStats, ConsumerData, HeartbeatData, MessageQueue, OffsetWrapper, ProducerData,
    SubscriptionData, SubscriptionGroupConfig, TopicOffset, TopicStatsTable,
};
use skiff_model::message::{Message, Properties};
use skiff_model::record::RecordFields;
use skiff_model::route::{
    BrokerData, BrokerRegistration, ClusterInfo, DataVersion, QueueData, TopicConfig,
    TopicRouteData,
};
use skiff_protocol::fastjson;
use skiff_protocol::remoting::{
    encode_frame, encode_reply, encode_request, RemotingCommand, SerializeType,
};

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn frame(cmd: &RemotingCommand) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_frame(cmd, &mut out).unwrap();
    out.to_vec()
}

/// Writes `reply` to a JSON and a binary request, as `<name>.json.bin` and `<name>.rocketmq.bin`.
fn replies(dir: &Path, name: &str, request: &Request, reply: Reply) {
    for (kind, serialize_type) in [
        ("json", SerializeType::Json),
        ("rocketmq", SerializeType::RocketMq),
    ] {
        let mut cmd = encode_request(request, 42, false);
        cmd.serialize_type = serialize_type;
        write(
            dir,
            &format!("{name}.{kind}.bin"),
            &frame(&encode_reply(&cmd, reply.clone())),
        );
    }
}

fn queue(id: i32) -> MessageQueue {
    MessageQueue {
        topic: "TopicTest".into(),
        broker_name: "broker-a".into(),
        queue_id: id,
    }
}

fn record(offset: i64, body: &[u8]) -> Bytes {
    let fields = RecordFields {
        queue_id: 1,
        flag: 0,
        queue_offset: offset,
        physical_offset: 1000 + offset,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.9:5000".parse().unwrap(),
        store_timestamp: 1_700_000_000_001,
        store_host: "127.0.0.1:10911".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body,
        topic: "TopicTest",
        properties: "TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}AC110001000078308DB11E0E7B5E0000\u{2}",
    };
    let mut out = Vec::new();
    fields.encode(&mut out).unwrap();
    out.into()
}

#[test]
#[ignore = "writes files for the manual Java check"]
fn dump_for_java_check() {
    let dir =
        PathBuf::from(std::env::var("SKIFF_JAVA_CHECK_DIR").expect("set SKIFF_JAVA_CHECK_DIR"));
    std::fs::create_dir_all(&dir).unwrap();

    // Replies the Java client parses with its own code.
    let send = Request::Send(SendRequest::default());
    replies(
        &dir,
        "send_response",
        &send,
        Reply::Sent(SendResult {
            status: SendStatus::Ok,
            msg_ids: vec!["7F00000100002A9F0000000000001234".into()],
            queue_id: 1,
            queue_offset: 42,
            transaction_id: None,
            region_id: "DefaultRegion".into(),
            trace_on: false,
        }),
    );
    let pull = Request::Pull(Default::default());
    replies(
        &dir,
        "pull_response",
        &pull,
        Reply::Pulled(PullResult {
            status: PullStatus::Found,
            next_begin_offset: 12,
            min_offset: 0,
            max_offset: 12,
            suggest_which_broker_id: 0,
            messages: vec![record(10, b"hello"), record(11, b"world")],
            offset_delta: None,
        }),
    );
    replies(
        &dir,
        "pull_not_found",
        &pull,
        Reply::Pulled(PullResult {
            status: PullStatus::NoNewMessage,
            next_begin_offset: 12,
            min_offset: 0,
            max_offset: 12,
            ..Default::default()
        }),
    );
    let offset_request = Request::QueryConsumerOffset {
        group: "cg".into(),
        queue: QueueRef {
            topic: "TopicTest".into(),
            queue_id: 0,
            physical: false,
        },
        set_zero_if_not_found: true,
    };
    replies(&dir, "offset_response", &offset_request, Reply::Offset(250));
    replies(
        &dir,
        "error_response",
        &offset_request,
        Reply::error(
            skiff_model::command::ErrorKind::QueryNotFound,
            "Not found, V3_0_6_SNAPSHOT maybe",
        ),
    );

    // Requests the Java broker and name server decode.
    let mut properties = Properties::new();
    properties.insert("TAGS", "TagA");
    properties.insert("UNIQ_KEY", "AC110001000078308DB11E0E7B5E0000");
    let message = Message {
        flag: 0,
        body: Bytes::from_static(b"hello"),
        properties,
    };
    let send = SendRequest {
        producer_group: "pg".into(),
        topic: "TopicTest".into(),
        queue_id: 1,
        born_timestamp: 1_700_000_000_000,
        auto_create: Some(skiff_model::command::AutoCreateTopic {
            template_topic: "TBW102".into(),
            queue_nums: 4,
        }),
        messages: vec![message.clone()],
        ..SendRequest::default()
    };
    write(
        &dir,
        "send_request.bin",
        &frame(&encode_request(&Request::Send(send.clone()), 1, false)),
    );
    let batch = SendRequest {
        batch: true,
        messages: vec![message.clone(), message],
        ..send
    };
    write(
        &dir,
        "batch_request.bin",
        &frame(&encode_request(&Request::Send(batch), 2, false)),
    );
    let mut topics = BTreeMap::new();
    let mut tbw = TopicConfig::new("TBW102", 8);
    tbw.perm = 7;
    tbw.attributes
        .insert("message.type".into(), "NORMAL".into());
    topics.insert("TBW102".to_string(), tbw);
    topics.insert("TopicTest".to_string(), TopicConfig::new("TopicTest", 4));
    let data_version = DataVersion {
        state_version: 0,
        timestamp: 1_700_000_000_000,
        counter: 3,
    };
    let registration = BrokerRegistration {
        cluster_name: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
        broker_addr: "10.0.0.5:10911".into(),
        broker_id: 0,
        ha_server_addr: "10.0.0.5:10912".into(),
        heartbeat_timeout_millis: Some(30_000),
        enable_acting_master: Some(false),
        data_version,
        topics: topics.clone(),
        topic_queue_mappings: BTreeMap::new(),
        filter_server_list: vec![],
    };
    write(
        &dir,
        "register_broker_request.bin",
        &frame(&encode_request(
            &Request::RegisterBroker(registration),
            3,
            false,
        )),
    );
    write(
        &dir,
        "notify_request.bin",
        &frame(&encode_request(
            &Request::NotifyConsumerIdsChanged { group: "cg".into() },
            4,
            true,
        )),
    );
    let heartbeat = HeartbeatData {
        client_id: "127.0.0.1@skiff".into(),
        producer_data_set: vec![ProducerData {
            group_name: "pg".into(),
        }],
        consumer_data_set: vec![ConsumerData {
            group_name: "cg".into(),
            subscription_data_set: vec![SubscriptionData::from_expression(
                "TopicTest",
                "TAG",
                "TagA || TagB",
                7,
            )],
            ..Default::default()
        }],
        ..Default::default()
    };
    write(
        &dir,
        "heartbeat_request.bin",
        &frame(&encode_request(&Request::Heartbeat(heartbeat), 5, false)),
    );

    // Bodies the Java admin, client and name server decode with fastjson.
    let body = |reply: Reply, version: i32| {
        let mut request = RemotingCommand::request(0, 1);
        request.version = version;
        encode_reply(&request, reply).body.to_bytes()
    };
    let stats = TopicStatsTable {
        offset_table: vec![(
            queue(0),
            TopicOffset {
                min_offset: 0,
                max_offset: 10,
                last_update_timestamp: 1_700_000_000_000,
            },
        )],
    };
    write(
        &dir,
        "topic_stats.json",
        &body(Reply::TopicStats(stats), 479),
    );
    let consume = ConsumeStats {
        offset_table: vec![
            (
                queue(0),
                OffsetWrapper {
                    broker_offset: 10,
                    consumer_offset: 7,
                    pull_offset: 8,
                    last_timestamp: 1_700_000_000_000,
                },
            ),
            (queue(1), OffsetWrapper::default()),
        ],
        consume_tps: 1.5,
    };
    write(
        &dir,
        "consume_stats.json",
        &body(Reply::ConsumeStats(consume), 479),
    );
    let broker = BrokerData {
        cluster: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
        broker_addrs: BTreeMap::from([
            (0, "10.0.0.5:10911".to_string()),
            (1, "10.0.0.6:10911".to_string()),
        ]),
        enable_acting_master: false,
        zone_name: None,
    };
    let route = TopicRouteData {
        order_topic_conf: None,
        queue_datas: vec![QueueData {
            broker_name: "broker-a".into(),
            read_queue_nums: 4,
            write_queue_nums: 4,
            perm: 6,
            topic_sys_flag: 0,
        }],
        broker_datas: vec![broker.clone()],
        filter_server_table: BTreeMap::new(),
        topic_queue_mapping_by_broker: None,
    };
    write(
        &dir,
        "route_standard.json",
        &body(Reply::Route(route.clone()), 479),
    );
    write(&dir, "route_plain.json", &body(Reply::Route(route), 317));
    let cluster = ClusterInfo {
        broker_addr_table: BTreeMap::from([("broker-a".to_string(), broker)]),
        cluster_addr_table: BTreeMap::from([(
            "DefaultCluster".to_string(),
            ["broker-a".to_string()].into(),
        )]),
    };
    write(
        &dir,
        "cluster_info.json",
        &body(Reply::ClusterInfo(cluster), 479),
    );
    write(
        &dir,
        "topic_configs.json",
        &body(
            Reply::TopicConfigs {
                topics: topics.clone(),
                data_version,
            },
            479,
        ),
    );
    write(
        &dir,
        "kv_table.json",
        &body(
            Reply::KeyValues(BTreeMap::from([(
                "brokerVersionDesc".to_string(),
                "V5_3_3".to_string(),
            )])),
            479,
        ),
    );
    write(
        &dir,
        "topic_list.json",
        &body(
            Reply::TopicList(vec!["TopicTest".into(), "TBW102".into()]),
            479,
        ),
    );
    write(
        &dir,
        "consumer_list.json",
        &body(Reply::ConsumerIds(vec!["10.0.0.9@1#2".into()]), 479),
    );
    let group = SubscriptionGroupConfig::new("cg");
    write(
        &dir,
        "subscription_group.json",
        fastjson::to_string(&group).unwrap().as_bytes(),
    );
    let offsets = BTreeMap::from([(
        "TopicTest@cg".to_string(),
        BTreeMap::from([(0, 250_i64), (1, 248)]),
    )]);
    write(
        &dir,
        "consumer_offset.json",
        fastjson::consumer_offset_file(&offsets).as_bytes(),
    );
}
