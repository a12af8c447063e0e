//! The console's JSON handlers against a real store in a temporary directory, through the
//! broker's own send handler (no sockets).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use skiff_model::command::{Reply, Request, SendRequest};
use skiff_model::message::{keys, Message, Properties};

use super::*;
use crate::broker::{store_config, BrokerState, ScheduleService};
use crate::config::BrokerConfig;
use crate::net::{ClientChannel, RequestContext, Service};

const TOPIC: &str = "ConsoleTopic";
const GROUP: &str = "console-group";

struct Fixture {
    state: Arc<BrokerState>,
    ctx: RequestContext,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: 1 << 20,
        namesrv_addr: None,
        broker_cluster_name: "ConsoleCluster".into(),
        ..BrokerConfig::default()
    };
    let broker_addr = "127.0.0.1:10911".to_string();
    let store =
        skiff_store::MessageStore::open(store_config(&config, broker_addr.parse().unwrap()))
            .unwrap();
    let store = Arc::new(store);
    let schedule = ScheduleService::start(&config, store.clone()).unwrap();
    let store_host = broker_addr.parse().unwrap();
    let state = Arc::new(BrokerState::new(
        config,
        broker_addr,
        store_host,
        store,
        schedule,
    ));
    state.topics.create_if_absent(TOPIC, 2, 6);
    let (channel, _rx) = ClientChannel::detached("127.0.0.1:5555".parse().unwrap());
    Fixture {
        state,
        ctx: RequestContext {
            channel,
            language: skiff_protocol::remoting::LanguageCode::Java,
            version: skiff_protocol::remoting::SKIFF_VERSION,
        },
        _dir: dir,
    }
}

async fn send(f: &Fixture, queue_id: i32, key: &str, body: &'static str) -> String {
    let properties: Properties = [
        (keys::KEYS, key),
        (keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, key),
    ]
    .into_iter()
    .collect();
    let request = SendRequest {
        producer_group: "console-producer".into(),
        topic: TOPIC.into(),
        queue_id,
        messages: vec![Message {
            flag: 0,
            body: Bytes::from_static(body.as_bytes()),
            properties,
        }],
        ..SendRequest::default()
    };
    let reply = match f.state.clone().handle(&f.ctx, Request::Send(request)) {
        Handled::Now(reply) => reply,
        Handled::Later(future) => future.await,
    };
    match reply {
        Reply::Sent(sent) => sent.msg_ids[0].clone(),
        other => panic!("{other:?}"),
    }
}

fn ok(answer: ApiAnswer) -> Value {
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}

fn query(text: &str) -> Query {
    Query::parse(Some(text))
}

#[tokio::test]
async fn pages_show_topics_groups_lag_and_messages() {
    let f = fixture();
    let first = send(&f, 0, "order-1", "hello <b>console</b>").await;
    send(&f, 0, "order-2", "second").await;
    send(&f, 1, "order-3", "third").await;
    f.state.offsets.commit(GROUP, TOPIC, 0, 1);
    f.state.offsets.commit(GROUP, TOPIC, 1, 0);
    let state = &f.state;

    let overview = ok(get(state, "overview", &query("")));
    assert_eq!(overview["cluster"], "ConsoleCluster");
    assert_eq!(overview["writable"], false);
    assert!(overview["userTopics"].as_u64().unwrap() >= 1);
    assert!(overview["runtime"]["msgPutTotalTodayNow"].is_string());

    let topics = ok(get(state, "topics", &query("filter=consoletop")));
    assert_eq!(topics["total"], 1);
    assert_eq!(topics["topics"][0]["name"], TOPIC);
    assert_eq!(topics["topics"][0]["messages"], 3);

    let topic = ok(get(state, "topic", &query("name=ConsoleTopic")));
    assert_eq!(topic["queues"][0]["maxOffset"], 2);
    assert_eq!(topic["queues"][1]["maxOffset"], 1);
    assert_eq!(topic["groups"][0], GROUP);
    assert_eq!(get(state, "topic", &query("name=Nope")).status, 404);
    assert_eq!(get(state, "topic", &query("")).status, 400);

    let groups = ok(get(state, "groups", &query("")));
    let listed = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == GROUP)
        .expect("the group with offsets is listed");
    assert_eq!(listed["lag"], 2);
    let group = ok(get(state, "group", &query("name=console-group")));
    assert_eq!(group["lag"], 2);
    assert_eq!(group["online"], false);
    let queue0 = &group["queues"][0];
    assert_eq!(
        (
            &queue0["queueId"],
            &queue0["consumerOffset"],
            &queue0["lag"]
        ),
        (&Value::from(0), &Value::from(1), &Value::from(1))
    );
    assert_eq!(get(state, "group", &query("name=nobody")).status, 404);

    // By queue offset, by offset message id, by key and by unique key.
    let by_offset = ok(get(
        state,
        "messages",
        &query("topic=ConsoleTopic&queue=0&offset=0"),
    ));
    assert_eq!(by_offset["messages"][0]["body"], "hello <b>console</b>");
    assert_eq!(by_offset["messages"][0]["msgId"], first.as_str());
    let by_id = ok(get(state, "messages", &query(&format!("id={first}"))));
    assert_eq!(by_id["messages"][0]["keys"], "order-1");
    // The index is written by the store's dispatcher: give it a moment.
    let mut by_key = Value::Null;
    for _ in 0..50 {
        by_key = ok(get(
            state,
            "messages",
            &query("topic=ConsoleTopic&key=order-2"),
        ));
        if !by_key["messages"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(by_key["messages"][0]["body"], "second");
    let by_uniq = ok(get(
        state,
        "messages",
        &query("topic=ConsoleTopic&id=order-3"),
    ));
    assert_eq!(by_uniq["messages"][0]["body"], "third");
    let nothing = ok(get(
        state,
        "messages",
        &query("topic=ConsoleTopic&queue=0&offset=9"),
    ));
    assert_eq!(nothing["messages"].as_array().unwrap().len(), 0);
    assert_eq!(get(state, "messages", &query("key=x")).status, 400);
    assert_eq!(get(state, "messages", &query("id=order-3")).status, 400);
    assert_eq!(get(state, "nope", &query("")).status, 404);

    let throughput = ok(get(state, "throughput", &query("")));
    assert_eq!(throughput["periodSeconds"], 10);
}

#[tokio::test]
async fn cluster_says_when_no_name_server_answers() {
    let f = fixture();
    let answer = cluster(&f.state).await;
    assert_eq!(answer.status, 502);
    assert!(answer.body["error"]
        .as_str()
        .unwrap()
        .contains("namesrvAddr is not set"));
}

#[tokio::test]
async fn writes_are_refused_without_acl() {
    let f = fixture();
    let refused = check_write(&f.state, "topics", None, true).unwrap_err();
    assert_eq!(refused.status, 403);
    assert!(refused.body["error"]
        .as_str()
        .unwrap()
        .contains("aclEnable=true"));
    assert_eq!(
        check_write(&f.state, "other", None, true)
            .unwrap_err()
            .status,
        404
    );
}

#[test]
fn write_bodies_are_checked() {
    let Write::CreateTopic(config) = parse_write("topics", br#"{"name":"T1","queues":"3"}"#)
        .ok()
        .unwrap()
    else {
        panic!("not a topic creation")
    };
    assert_eq!(
        (config.topic_name.as_str(), config.write_queue_nums),
        ("T1", 3)
    );
    assert_eq!(parse_write("topics", b"{}").err().unwrap().status, 400);
    assert_eq!(
        parse_write("topics", b"not json").err().unwrap().status,
        400
    );
    let Ok(Write::ResetOffset(AdminCommand::ResetOffset {
        timestamp,
        queue_id,
        ..
    })) = parse_write("reset-offset", br#"{"group":"g","topic":"T"}"#)
    else {
        panic!("not a reset")
    };
    assert_eq!((timestamp, queue_id), (-1, -1));
    assert_eq!(
        parse_write("reset-offset", br#"{"group":"g","topic":"T","offset":3}"#)
            .err()
            .unwrap()
            .status,
        400
    );
}

#[test]
fn basic_credentials_are_checked_in_constant_time() {
    assert!(constant_time_eq("secret", "secret"));
    assert!(!constant_time_eq("secret", "secreT"));
    assert!(!constant_time_eq("secret", "secret1"));
}

#[test]
fn throughput_is_a_bounded_ring_of_rates() {
    let ring = Throughput::new(0);
    for i in 0..1000u64 {
        ring.sample(i as i64 * 10_000, i * 50, i * 20);
    }
    let points = ring.points(999 * 10_000 + 5_000, 999 * 50 + 10, 999 * 20);
    assert_eq!(points.len(), THROUGHPUT_POINTS);
    assert_eq!(points[0]["in"], 5.0);
    assert_eq!(points[0]["out"], 2.0);
    let last = points.last().unwrap();
    assert_eq!(last["in"], 2.0);
    assert_eq!(last["t"], 999 * 10_000 + 5_000);
    assert!(ring.samples.lock().len() <= THROUGHPUT_POINTS + 1);
}

#[test]
fn query_strings_are_decoded() {
    let q = query("name=a%20b+c&x=%ZZ&empty=&flag");
    assert_eq!(q.get("name"), Some("a b c"));
    assert_eq!(q.get("x"), Some("%ZZ"));
    assert_eq!(q.get("empty"), None);
    assert_eq!(q.get("flag"), None);
}
