//! Frames and bodies produced by the real Java classes (rocketmq-remoting/-client 4.9.8 and 5.3.3,
//! `RemotingCommand.encode()`, `fastEncodeHeader`, `RemotingSerializable.encode`, fastjson pretty
//! printing) under `tests/golden/java-<version>/`, decoded by Skiff and compared with what Skiff
//! writes for the same content.

use std::collections::BTreeMap;
use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use serde::Serialize;
use serde_json::Value;
use skiff_model::command::{
    BoundaryType, ErrorKind, PullStatus, QueueRef, Reply, Request, SendStatus,
};
use skiff_model::consumer::{
    ConsumeFromWhere, ConsumeStats, ConsumeType, HeartbeatData, MessageModel, MessageQueue,
    OffsetWrapper, SubscriptionGroupConfig, TopicOffset, TopicStatsTable,
};
use skiff_model::message::Properties;
use skiff_model::route::{
    BrokerData, ClusterInfo, DataVersion, QueueData, TopicConfig, TopicRouteData,
};
use skiff_protocol::fastjson::{self, Style};
use skiff_protocol::remoting::{
    decode_reply, decode_request, encode_frame, encode_reply, LanguageCode, RemotingCodec,
    RemotingCommand, SerializeType,
};
use tokio_util::codec::Decoder;

const VERSIONS: [&str; 2] = ["java-4.9.8", "java-5.3.3"];

fn path(version: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(version)
        .join(name)
}

fn text(version: &str, name: &str) -> String {
    std::fs::read_to_string(path(version, name)).unwrap_or_else(|e| panic!("{version}/{name}: {e}"))
}

fn hex(version: &str, name: &str) -> Vec<u8> {
    let text = text(version, &format!("{name}.hex"));
    let text = text.trim();
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn decode(bytes: &[u8]) -> RemotingCommand {
    let mut buf = BytesMut::from(bytes);
    let cmd = RemotingCodec::default().decode(&mut buf).unwrap().unwrap();
    assert!(buf.is_empty(), "frame has trailing bytes");
    cmd
}

fn encode(cmd: &RemotingCommand) -> Vec<u8> {
    let mut out = BytesMut::new();
    encode_frame(cmd, &mut out).unwrap();
    out.to_vec()
}

/// Every header type Java wrote for a frame, decoded.
fn frames(version: &str, name: &str) -> Vec<(String, RemotingCommand)> {
    let mut kinds = vec!["json", "rocketmq"];
    if version == "java-5.3.3" {
        kinds.push("rocketmq-fast");
    }
    kinds
        .into_iter()
        .map(|kind| {
            (
                format!("{version}/{name}.{kind}"),
                decode(&hex(version, &format!("{name}.{kind}"))),
            )
        })
        .collect()
}

fn java_version(version: &str) -> i32 {
    if version == "java-5.3.3" {
        479
    } else {
        409
    }
}

const PROPS: &str =
    "KEYS\u{1}k1 k2\u{2}TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}AC110001000078308DB11E0E7B5E0000\u{2}WAIT\u{1}true\u{2}";

#[test]
fn every_header_type_decodes_to_the_same_command() {
    for version in VERSIONS {
        for name in [
            "send_v2_request",
            "send_v1_request",
            "send_batch_request",
            "pull_request",
            "send_response",
            "pull_response",
            "not_supported_response",
            "heartbeat_request",
            "offset_response",
        ] {
            let decoded = frames(version, name);
            let (_, json) = &decoded[0];
            assert_eq!(json.serialize_type, SerializeType::Json);
            assert_eq!(json.language, LanguageCode::Java);
            assert_eq!(json.version, java_version(version));
            for (label, other) in &decoded[1..] {
                assert_eq!(other.serialize_type, SerializeType::RocketMq, "{label}");
                let same = RemotingCommand {
                    serialize_type: SerializeType::Json,
                    ..other.clone()
                };
                assert_eq!(&same, json, "{label}");
            }
        }
    }
}

/// Skiff writes the same bytes Java writes (JSON: Java's extFields are a HashMap, so frames whose
/// keys Java happened to emit unsorted are compared as JSON values instead).
#[test]
fn reencoded_frames_match_java() {
    for version in VERSIONS {
        for name in [
            "send_v2_request",
            "not_supported_response",
            "heartbeat_request",
            "offset_response",
        ] {
            let java = hex(version, &format!("{name}.json"));
            assert_eq!(encode(&decode(&java)), java, "{version}/{name}.json");
        }
        for name in [
            "pull_request",
            "send_response",
            "pull_response",
            "send_batch_request",
        ] {
            let java = hex(version, &format!("{name}.json"));
            let ours = encode(&decode(&java));
            assert_eq!(ours.len(), java.len(), "{version}/{name}.json");
            let header = |frame: &[u8]| {
                let len = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]) as usize
                    & 0xFF_FFFF;
                serde_json::from_slice::<Value>(&frame[8..8 + len]).unwrap()
            };
            assert_eq!(header(&ours), header(&java), "{version}/{name}.json");
        }
    }
    // fastEncodeHeader writes the V2 send fields in a..n order, which is sorted: byte-identical.
    for name in [
        "send_v2_request",
        "not_supported_response",
        "heartbeat_request",
        "offset_response",
    ] {
        let java = hex("java-5.3.3", &format!("{name}.rocketmq-fast"));
        assert_eq!(encode(&decode(&java)), java, "{name}.rocketmq-fast");
    }
}

#[test]
fn java_send_requests_decode() {
    for version in VERSIONS {
        for name in ["send_v2_request", "send_v1_request"] {
            for (label, cmd) in frames(version, name) {
                let Request::Send(send) = decode_request(&cmd).unwrap() else {
                    panic!("{label}: not a send")
                };
                assert_eq!(send.producer_group, "pg", "{label}");
                assert_eq!(send.topic, "TopicTest");
                assert_eq!(send.queue_id, 1);
                assert_eq!(send.born_timestamp, 1_700_000_000_000);
                let auto = send.auto_create.unwrap();
                assert_eq!(
                    (auto.template_topic.as_str(), auto.queue_nums),
                    ("TBW102", 4)
                );
                assert!(!send.batch && !send.unit_mode);
                assert_eq!(send.messages.len(), 1);
                assert_eq!(send.messages[0].body, Bytes::from_static(b"hello"));
                assert_eq!(send.messages[0].properties, Properties::decode(PROPS));
                let expected_broker = (version == "java-5.3.3").then(|| "broker-a".to_string());
                assert_eq!(send.broker_name, expected_broker, "{label}");
            }
        }
        for (label, cmd) in frames(version, "send_batch_request") {
            let Request::Send(send) = decode_request(&cmd).unwrap() else {
                panic!("{label}: not a send")
            };
            assert!(send.batch);
            assert_eq!(send.messages.len(), 2, "{label}");
            let second = &send.messages[1];
            assert_eq!(second.flag, 3);
            assert_eq!(second.body, Bytes::from_static(b"two"));
            assert_eq!(second.properties.tags(), Some("TagB"));
            assert_eq!(
                second.properties.uniq_key(),
                Some("AC110001000078308DB11E0E7B5E0002")
            );
            assert_eq!(second.properties.get("WAIT"), Some("true"));
            assert_eq!(
                send.messages[0].properties.uniq_key(),
                Some("AC110001000078308DB11E0E7B5E0001")
            );
        }
        let java_body = hex(version, "batch_body");
        let Request::Send(send) =
            decode_request(&frames(version, "send_batch_request")[0].1).unwrap()
        else {
            panic!()
        };
        // Re-encoding the decoded batch gives Java's body back (4.9 drops the last property
        // separator, which the properties reader does not need).
        let again =
            skiff_protocol::remoting::encode_request(&Request::Send(send.clone()), 1, false);
        if version == "java-5.3.3" {
            assert_eq!(
                again.body.to_bytes(),
                Bytes::from(java_body),
                "{version} batch body"
            );
        } else {
            assert_eq!(decode_request(&again).unwrap(), Request::Send(send));
        }
    }
}

#[test]
fn java_pull_and_heartbeat_requests_decode() {
    for version in VERSIONS {
        for (label, cmd) in frames(version, "pull_request") {
            let Request::Pull(pull) = decode_request(&cmd).unwrap() else {
                panic!("{label}: not a pull")
            };
            assert_eq!(pull.consumer_group, "cg");
            assert_eq!(
                pull.queue,
                QueueRef {
                    topic: "TopicTest".into(),
                    queue_id: 1,
                    physical: false,
                }
            );
            assert_eq!(pull.queue_offset, 42);
            assert_eq!(pull.max_msg_nums, 32);
            assert_eq!(pull.commit_offset, Some(40));
            assert_eq!(pull.suspend_timeout_millis, Some(15000));
            let sub = pull.subscription.unwrap();
            assert_eq!(sub.expression, "TagA || TagB");
            assert_eq!(sub.expression_type, "TAG");
            assert_eq!(sub.version, 1_700_000_000_001);
            assert!(!pull.lite);
            let bytes = (version == "java-5.3.3").then_some(1_048_576);
            assert_eq!(pull.max_msg_bytes, bytes, "{label}");
        }
        for (label, cmd) in frames(version, "heartbeat_request") {
            let Request::Heartbeat(hb) = decode_request(&cmd).unwrap() else {
                panic!("{label}: not a heartbeat")
            };
            assert_eq!(hb, expected_heartbeat(), "{label}");
        }
        let hb: HeartbeatData = fastjson::from_str(&text(version, "heartbeat.json")).unwrap();
        assert_eq!(hb, expected_heartbeat());
    }
}

fn expected_heartbeat() -> HeartbeatData {
    let mut sub = skiff_model::consumer::SubscriptionData::from_expression(
        "TopicTest",
        "TAG",
        "TagA || TagB",
        1_700_000_000_001,
    );
    sub.sub_version = 1_700_000_000_001;
    HeartbeatData {
        client_id: "10.0.0.9@12345#987654321".into(),
        producer_data_set: vec![skiff_model::consumer::ProducerData {
            group_name: "pg".into(),
        }],
        consumer_data_set: vec![skiff_model::consumer::ConsumerData {
            group_name: "cg".into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            subscription_data_set: vec![sub],
            unit_mode: false,
        }],
        heartbeat_fingerprint: 0,
        without_sub: false,
    }
}

fn request_for(code_name: &str) -> Request {
    let queue = QueueRef {
        topic: "TopicTest".into(),
        queue_id: 1,
        physical: false,
    };
    match code_name {
        "send" => Request::Send(Default::default()),
        "pull" => Request::Pull(Default::default()),
        _ => Request::QueryConsumerOffset {
            group: "cg".into(),
            queue,
            set_zero_if_not_found: true,
        },
    }
}

#[test]
fn java_responses_decode() {
    for version in VERSIONS {
        for (label, cmd) in frames(version, "send_response") {
            let Reply::Sent(sent) = decode_reply(&request_for("send"), &cmd).unwrap() else {
                panic!("{label}")
            };
            assert_eq!(sent.status, SendStatus::Ok);
            assert_eq!(sent.msg_ids, ["7F00000100002A9F0000000000001234"]);
            assert_eq!((sent.queue_id, sent.queue_offset), (1, 42));
            assert_eq!(
                sent.transaction_id.as_deref(),
                Some("AC110001000078308DB11E0E7B5E0000")
            );
            assert_eq!(sent.region_id, "DefaultRegion");
            assert!(sent.trace_on);
        }
        for (label, cmd) in frames(version, "pull_response") {
            let Reply::Pulled(pulled) = decode_reply(&request_for("pull"), &cmd).unwrap() else {
                panic!("{label}")
            };
            assert_eq!(pulled.status, PullStatus::NoNewMessage);
            assert_eq!(
                (
                    pulled.next_begin_offset,
                    pulled.min_offset,
                    pulled.max_offset
                ),
                (42, 0, 42)
            );
            assert!(pulled.messages.is_empty());
        }
        for (label, cmd) in frames(version, "not_supported_response") {
            let Reply::Error(error) = decode_reply(&request_for("offset"), &cmd).unwrap() else {
                panic!("{label}")
            };
            assert_eq!(error.kind, ErrorKind::RequestNotSupported);
            assert_eq!(error.message, " request type 999 not supported");
        }
        for (_, cmd) in frames(version, "offset_response") {
            assert_eq!(
                decode_reply(&request_for("offset"), &cmd).unwrap(),
                Reply::Offset(250)
            );
        }
    }
}

/// Skiff's answers to Java's requests look like Java's answers.
#[test]
fn skiff_replies_match_java_replies() {
    for version in VERSIONS {
        for (label, request) in frames(version, "send_v2_request") {
            let ours = encode_reply(
                &request,
                Reply::Sent(skiff_model::command::SendResult {
                    status: SendStatus::Ok,
                    msg_ids: vec!["7F00000100002A9F0000000000001234".into()],
                    queue_id: 1,
                    queue_offset: 42,
                    transaction_id: Some("AC110001000078308DB11E0E7B5E0000".into()),
                    region_id: "DefaultRegion".into(),
                    trace_on: true,
                }),
            );
            let java = frames(version, "send_response")
                .into_iter()
                .find(|(_, c)| c.serialize_type == request.serialize_type)
                .unwrap()
                .1;
            assert_eq!(
                ours,
                RemotingCommand {
                    version: 479,
                    ..java
                },
                "{label}"
            );
        }
        let java = hex(version, "not_supported_response.json");
        let request = RemotingCommand::request(999, 9);
        let ours = encode_reply(
            &request,
            Reply::Error(decode_request(&request).unwrap_err()),
        );
        let expected = RemotingCommand {
            version: 479,
            ..decode(&java)
        };
        assert_eq!(ours, expected);
        if version == "java-5.3.3" {
            assert_eq!(encode(&ours), java);
        }
    }
}

fn queue(id: i32) -> MessageQueue {
    MessageQueue {
        topic: "TopicTest".into(),
        broker_name: "broker-a".into(),
        queue_id: id,
    }
}

fn response_with_body(body: String) -> RemotingCommand {
    let mut cmd = RemotingCommand::response(0, 1);
    cmd.body = body.into_bytes().into();
    cmd
}

#[test]
fn admin_bodies_match_java_byte_for_byte() {
    for version in VERSIONS {
        // Java's HashMap put queue 1 before queue 0; give Skiff the same order.
        let stats = TopicStatsTable {
            offset_table: vec![
                (
                    queue(1),
                    TopicOffset {
                        min_offset: 2,
                        max_offset: 12,
                        last_update_timestamp: 0,
                    },
                ),
                (
                    queue(0),
                    TopicOffset {
                        min_offset: 0,
                        max_offset: 10,
                        last_update_timestamp: 1_700_000_000_000,
                    },
                ),
            ],
        };
        let consume = ConsumeStats {
            offset_table: vec![
                (
                    queue(1),
                    OffsetWrapper {
                        broker_offset: 12,
                        consumer_offset: 12,
                        pull_offset: 12,
                        last_timestamp: 0,
                    },
                ),
                (
                    queue(0),
                    OffsetWrapper {
                        broker_offset: 10,
                        consumer_offset: 7,
                        pull_offset: 8,
                        last_timestamp: 1_700_000_000_000,
                    },
                ),
            ],
            consume_tps: 1.5,
        };
        let request = RemotingCommand::request(202, 1);
        let ours = encode_reply(&request, Reply::TopicStats(stats.clone()))
            .body
            .to_bytes();
        let java_stats = text(version, "topic_stats.json");
        let ours_consume = encode_reply(&request, Reply::ConsumeStats(consume.clone()))
            .body
            .to_bytes();
        let java_consume = text(version, "consume_stats.json");
        if version == "java-5.3.3" {
            assert_eq!(std::str::from_utf8(&ours).unwrap(), java_stats);
            assert_eq!(std::str::from_utf8(&ours_consume).unwrap(), java_consume);
        }
        // Java's bodies read back as the same tables (sorted by queue).
        let mut sorted = stats.clone();
        sorted.offset_table.sort_by(|a, b| a.0.cmp(&b.0));
        let get_stats = Request::GetTopicStats {
            topic: "TopicTest".into(),
        };
        assert_eq!(
            decode_reply(&get_stats, &response_with_body(java_stats)).unwrap(),
            Reply::TopicStats(sorted)
        );
        let mut sorted = consume.clone();
        sorted.offset_table.sort_by(|a, b| a.0.cmp(&b.0));
        if version == "java-4.9.8" {
            // 4.9 has no pullOffset.
            sorted
                .offset_table
                .iter_mut()
                .for_each(|(_, w)| w.pull_offset = 0);
        }
        let get_consume = Request::GetConsumeStats {
            group: "cg".into(),
            topic: None,
        };
        assert_eq!(
            decode_reply(&get_consume, &response_with_body(java_consume)).unwrap(),
            Reply::ConsumeStats(sorted)
        );
    }
}

fn broker_data() -> BrokerData {
    BrokerData {
        cluster: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
        broker_addrs: BTreeMap::from([
            (0, "10.0.0.5:10911".to_string()),
            (1, "10.0.0.6:10911".to_string()),
        ]),
        enable_acting_master: false,
        zone_name: None,
    }
}

fn route() -> TopicRouteData {
    TopicRouteData {
        order_topic_conf: None,
        queue_datas: vec![QueueData {
            broker_name: "broker-a".into(),
            read_queue_nums: 4,
            write_queue_nums: 4,
            perm: 6,
            topic_sys_flag: 0,
        }],
        broker_datas: vec![broker_data()],
        filter_server_table: BTreeMap::new(),
        topic_queue_mapping_by_broker: None,
    }
}

#[test]
fn route_and_cluster_bodies_match_java() {
    for version in VERSIONS {
        let get_route = Request::GetRouteInfo {
            topic: "TopicTest".into(),
        };
        for file in ["route_plain.json", "route_standard.json"] {
            let reply = decode_reply(&get_route, &response_with_body(text(version, file))).unwrap();
            assert_eq!(reply, Reply::Route(route()), "{version}/{file}");
        }
        let cluster = ClusterInfo {
            broker_addr_table: BTreeMap::from([("broker-a".to_string(), broker_data())]),
            cluster_addr_table: BTreeMap::from([(
                "DefaultCluster".to_string(),
                ["broker-a".to_string()].into_iter().collect(),
            )]),
        };
        let reply = decode_reply(
            &Request::GetBrokerClusterInfo,
            &response_with_body(text(version, "cluster_info.json")),
        );
        assert_eq!(reply.unwrap(), Reply::ClusterInfo(cluster.clone()));
        if version == "java-5.3.3" {
            // The name server's choice: standard JSON for clients at V4_9_4 or later, fastjson's
            // bare keys for older ones and for Go (which reports 317).
            let mut old_client = RemotingCommand::request(105, 1);
            old_client.version = 317;
            let body = encode_reply(&old_client, Reply::Route(route()))
                .body
                .to_bytes();
            assert_eq!(
                std::str::from_utf8(&body).unwrap(),
                text(version, "route_plain.json")
            );
            old_client.set_ext("acceptStandardJsonOnly", "true");
            let body = encode_reply(&old_client, Reply::Route(route()))
                .body
                .to_bytes();
            assert_eq!(
                std::str::from_utf8(&body).unwrap(),
                text(version, "route_standard.json")
            );
            let new_client = RemotingCommand::request(105, 1);
            let body = encode_reply(&new_client, Reply::Route(route()))
                .body
                .to_bytes();
            assert_eq!(
                std::str::from_utf8(&body).unwrap(),
                text(version, "route_standard.json")
            );
            let body = encode_reply(&new_client, Reply::ClusterInfo(cluster))
                .body
                .to_bytes();
            assert_eq!(
                std::str::from_utf8(&body).unwrap(),
                text(version, "cluster_info.json")
            );
            // Non-ASCII text is escaped in the standard form, exactly as fastjson does.
            let mut unicode = route();
            unicode.order_topic_conf = Some("broker-a:4".into());
            unicode.broker_datas[0].cluster = "集群".into();
            unicode.broker_datas[0].zone_name = Some("zone-1".into());
            unicode.broker_datas[0].broker_addrs.remove(&1);
            let body = encode_reply(&new_client, Reply::Route(unicode.clone()))
                .body
                .to_bytes();
            assert_eq!(
                std::str::from_utf8(&body).unwrap(),
                text(version, "route_standard_unicode.json")
            );
            let body = encode_reply(&old_client_without_flag(), Reply::Route(unicode))
                .body
                .to_bytes();
            assert_eq!(
                std::str::from_utf8(&body).unwrap(),
                text(version, "route_plain_unicode.json")
            );
        }
    }
}

fn old_client_without_flag() -> RemotingCommand {
    let mut cmd = RemotingCommand::request(105, 1);
    cmd.version = 317;
    cmd
}

fn topic_configs(version: &str) -> (BTreeMap<String, TopicConfig>, DataVersion) {
    let mut tbw = TopicConfig::new("TBW102", 8);
    tbw.perm = 7;
    if version == "java-5.3.3" {
        tbw.attributes
            .insert("message.type".into(), "NORMAL".into());
    }
    let topics = BTreeMap::from([
        ("TopicTest".to_string(), TopicConfig::new("TopicTest", 4)),
        ("TBW102".to_string(), tbw),
    ]);
    let data_version = DataVersion {
        state_version: 0,
        timestamp: 1_700_000_000_000,
        counter: 3,
    };
    (topics, data_version)
}

#[test]
fn topic_config_bodies_and_files_match_java() {
    for version in VERSIONS {
        let (topics, data_version) = topic_configs(version);
        let reply = decode_reply(
            &Request::GetAllTopicConfig,
            &response_with_body(text(version, "topic_configs.json")),
        );
        assert_eq!(
            reply.unwrap(),
            Reply::TopicConfigs {
                topics: topics.clone(),
                data_version
            }
        );
        // The register body carries the same wrapper (5.x adds mapping tables Skiff ignores).
        let mut register = RemotingCommand::request(103, 1);
        for (k, v) in [
            ("clusterName", "c"),
            ("brokerName", "broker-a"),
            ("brokerAddr", "10.0.0.5:10911"),
            ("brokerId", "0"),
            ("haServerAddr", "10.0.0.5:10912"),
        ] {
            register.set_ext(k, v);
        }
        register.body = text(version, "register_broker_body.json")
            .into_bytes()
            .into();
        let Request::RegisterBroker(registration) = decode_request(&register).unwrap() else {
            panic!()
        };
        assert_eq!(registration.topics, topics);
        assert_eq!(registration.data_version, data_version);

        if version == "java-5.3.3" {
            // Java's table is a HashMap; lay ours out in the same order to compare bytes.
            #[derive(Serialize)]
            #[serde(rename_all = "camelCase")]
            struct Wrapper<'a> {
                topic_config_table: Ordered<'a>,
                data_version: DataVersion,
            }
            struct Ordered<'a>(Vec<(&'a str, &'a TopicConfig)>);
            impl Serialize for Ordered<'_> {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    s.collect_map(self.0.iter().copied())
                }
            }
            let wrapper = Wrapper {
                topic_config_table: Ordered(vec![
                    ("TopicTest", &topics["TopicTest"]),
                    ("TBW102", &topics["TBW102"]),
                ]),
                data_version,
            };
            assert_eq!(
                fastjson::to_string(&wrapper).unwrap(),
                text(version, "topic_configs.json")
            );
            assert_eq!(
                fastjson::to_string_pretty(&wrapper).unwrap(),
                text(version, "topics_pretty.json")
            );
        }
    }
}

#[test]
fn small_bodies_match_java() {
    for version in VERSIONS {
        let request = RemotingCommand::request(0, 1);
        let ids = vec!["10.0.0.9@123#456".to_string(), "10.0.0.10@7#8".to_string()];
        let body = encode_reply(&request, Reply::ConsumerIds(ids.clone()))
            .body
            .to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            text(version, "consumer_list.json")
        );
        let topics = vec!["TopicTest".to_string(), "TBW102".to_string()];
        let body = encode_reply(&request, Reply::TopicList(topics.clone()))
            .body
            .to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            text(version, "topic_list.json")
        );
        let get_list = Request::GetConsumerListByGroup { group: "cg".into() };
        assert_eq!(
            decode_reply(
                &get_list,
                &response_with_body(text(version, "consumer_list.json"))
            )
            .unwrap(),
            Reply::ConsumerIds(ids)
        );
        assert_eq!(
            decode_reply(
                &Request::GetAllTopicList,
                &response_with_body(text(version, "topic_list.json"))
            )
            .unwrap(),
            Reply::TopicList(topics)
        );
        let table = BTreeMap::from([
            ("brokerVersionDesc".to_string(), "V5_3_3".to_string()),
            ("msgPutTotalTodayNow".to_string(), "12".to_string()),
        ]);
        assert_eq!(
            decode_reply(
                &Request::GetBrokerRuntimeInfo,
                &response_with_body(text(version, "kv_table.json"))
            )
            .unwrap(),
            Reply::KeyValues(table.clone())
        );
        let body = encode_reply(&request, Reply::KeyValues(table))
            .body
            .to_bytes();
        let ours: Value = serde_json::from_slice(&body).unwrap();
        let java: Value = serde_json::from_str(&text(version, "kv_table.json")).unwrap();
        assert_eq!(ours, java);
        // A subscription group from Java (5.x adds groupRetryPolicy, which Skiff ignores).
        let mut create = RemotingCommand::request(200, 1);
        create.body = text(version, "subscription_group.json").into_bytes().into();
        let Request::CreateSubscriptionGroup(group) = decode_request(&create).unwrap() else {
            panic!()
        };
        assert_eq!(group, SubscriptionGroupConfig::new("cg"));
    }
}

#[test]
fn config_files_match_java() {
    for version in VERSIONS {
        let java = text(version, "consumer_offset_pretty.json");
        let table = fastjson::read_consumer_offset_file(&java).unwrap();
        assert_eq!(table["TopicTest@cg"], BTreeMap::from([(0, 250), (1, 248)]));
        assert_eq!(table["%RETRY%cg@cg"], BTreeMap::from([(0, 0)]));
        assert_eq!(fastjson::consumer_offset_file(&table), java);
        let compact = text(version, "consumer_offset.json");
        assert_eq!(
            fastjson::read_consumer_offset_file(&compact).unwrap(),
            table
        );
    }
    // 5.x's ConsumerOffsetManager adds dataVersion and groupTopicMap.
    let java = text("java-5.3.3", "broker_consumer_offset_pretty.json");
    let table = fastjson::read_consumer_offset_file(&java).unwrap();
    assert_eq!(table["TopicTest@cg"], BTreeMap::from([(0, 250), (1, 248)]));
    let group_file =
        fastjson::parse(&text("java-5.3.3", "subscription_group_pretty.json")).unwrap();
    let group: SubscriptionGroupConfig =
        serde_json::from_value(group_file["subscriptionGroupTable"]["cg"].clone()).unwrap();
    assert_eq!(group, SubscriptionGroupConfig::new("cg"));
    // The pretty printer puts string-keyed entries on their own lines like fastjson.
    assert_eq!(
        fastjson::to_string_with(
            &BTreeMap::from([("a", BTreeMap::from([(1, 2)]))]),
            Style::PRETTY
        )
        .unwrap(),
        "{\n\t\"a\":{1:2\n\t}\n}"
    );
}

#[test]
fn search_boundary_round_trips_through_java_names() {
    let request = Request::SearchOffsetByTimestamp {
        queue: QueueRef {
            topic: "T".into(),
            queue_id: 0,
            physical: false,
        },
        timestamp: 5,
        boundary: BoundaryType::Upper,
    };
    let cmd = skiff_protocol::remoting::encode_request(&request, 1, false);
    assert_eq!(cmd.ext("boundaryType"), Some("UPPER"));
    assert_eq!(decode_request(&cmd).unwrap(), request);
}

/// rocketmq-client-go (`internal/route.go`, `TopicRouteData.decode`) does not parse `brokerAddrs`
/// as JSON: it takes the raw object text, splits it on `,` and the first `:`, and (from v2.1.2 on)
/// strips quotes from the id. Before v2.1.2 a quoted id failed `ParseInt` and became 0, so the
/// slave's address overwrote the master's. Go reports version 317, so Skiff, like Java's name
/// server, sends it bare keys, which both Go parsers read correctly.
#[test]
fn go_client_parses_the_routes_skiff_sends_it() {
    fn go_parse(route_json: &str, strips_quotes: bool) -> BTreeMap<i64, String> {
        let start = route_json.find("\"brokerAddrs\":").unwrap() + "\"brokerAddrs\":".len();
        let end = start + route_json[start..].find('}').unwrap() + 1;
        let addrs = &route_json[start..end];
        let mut out = BTreeMap::new();
        for item in addrs[1..addrs.len() - 1].split(',') {
            let Some(i) = item.find(':') else { continue };
            let id = if strips_quotes {
                item[..i].replace('"', "")
            } else {
                item[..i].to_string()
            };
            out.insert(id.parse().unwrap_or(0), item[i + 1..].replace('"', ""));
        }
        out
    }
    let expected = broker_data().broker_addrs;
    let mut go = RemotingCommand::request(105, 1);
    go.version = 317;
    go.language = LanguageCode::Go;
    let body = encode_reply(&go, Reply::Route(route())).body.to_bytes();
    let ours = std::str::from_utf8(&body).unwrap();
    assert_eq!(go_parse(ours, true), expected);
    assert_eq!(go_parse(ours, false), expected);
    // What a standard body would do to an old Go client: both ids read as 0.
    let standard = text("java-5.3.3", "route_standard.json");
    assert_ne!(go_parse(&standard, false), expected);
    assert_eq!(go_parse(&standard, true), expected);
}
