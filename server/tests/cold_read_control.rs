//! The cold-read flow control (`coldDataFlowControlEnable`) and the other storage-tuning codes
//! of `mqadmin` (SET_COMMITLOG_READ_MODE, RESET_MASTER_FLUSH_OFFSET,
//! CHECK_ROCKSDB_CQ_WRITE_PROGRESS, POP_ROLLBACK), on the wire. The official tool's view of them is in
//! `compat-tests/tests/mqadmin.rs`.

mod common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use skiff_model::admin::AdminCommand;
use skiff_model::command::{
    ErrorKind, PullRequest, QueueRef, Reply, Request, SubscriptionExpression,
};
use skiff_model::consumer::{ConsumeType, ConsumerData, HeartbeatData, SubscriptionData};
use skiff_protocol::remoting::{self, RemotingCommand};
use skiff_server::remoting_client::RemotingClient;

use common::{auto_creating_send, Cluster, TIMEOUT};

const TOPIC: &str = "cold_read_control";

async fn call(client: &RemotingClient, command: AdminCommand) -> RemotingCommand {
    let frame = remoting::encode_request(&Request::Admin(command), 0, false);
    client.invoke_frame(frame, TIMEOUT).await.unwrap()
}

fn body_json(response: &RemotingCommand) -> Value {
    serde_json::from_slice(&response.body.to_bytes()).unwrap()
}

fn pull(group: &str) -> Request {
    Request::Pull(PullRequest {
        consumer_group: group.into(),
        queue: QueueRef {
            topic: TOPIC.into(),
            queue_id: 0,
            physical: false,
        },
        queue_offset: 0,
        max_msg_nums: 32,
        subscription: Some(SubscriptionExpression {
            expression_type: "TAG".into(),
            expression: "*".into(),
            version: 0,
        }),
        lite: true,
        ..PullRequest::default()
    })
}

fn pulled_count(reply: &Reply) -> usize {
    match reply {
        Reply::Pulled(result) => result.messages.len(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn cold_read_tables_and_storage_codes_answer_as_java() {
    let cluster = Cluster::start(|_| {}).await;
    let broker = cluster.broker_client().await;

    let info = call(&broker, AdminCommand::ColdReadInfo).await;
    assert_eq!(info.code, 0);
    assert_eq!(
        body_json(&info),
        json!({"cgColdReadThreshold": 3145728, "configTable": {}, "globalAcc": 0,
               "globalColdReadThreshold": 104857600, "runtimeTable": {}})
    );
    let set = AdminCommand::UpdateColdReadThresholds {
        properties: "G1=100\nG2=200\nG3=lots\n".into(),
    };
    assert_eq!(call(&broker, set).await.code, 0);
    let remove = AdminCommand::RemoveColdReadThreshold { group: "G1".into() };
    assert_eq!(call(&broker, remove).await.code, 0);
    let info = call(&broker, AdminCommand::ColdReadInfo).await;
    assert_eq!(body_json(&info)["configTable"], json!({"G2": 200}));

    let response = call(&broker, AdminCommand::SetCommitLogReadAhead { mode: 1 }).await;
    assert_eq!(
        (response.code, response.remark.as_deref()),
        (0, Some("set commitlog readahead mode success, mode: 1"))
    );
    let response = call(&broker, AdminCommand::SetCommitLogReadAhead { mode: 0 }).await;
    assert_eq!(response.code, 0);
    let response = call(&broker, AdminCommand::SetCommitLogReadAhead { mode: 4 }).await;
    assert_eq!(
        (response.code, response.remark.as_deref()),
        (29, Some("set commitlog readahead mode param value error"))
    );

    let response = call(&broker, AdminCommand::ResetMasterFlushOffset { offset: 42 }).await;
    assert_eq!(response.code, 0);
    assert_eq!(call(&broker, AdminCommand::ExportPopRecords).await.code, 0);
    let check = AdminCommand::CheckRocksDbCqWriteProgress {
        topic: String::new(),
        check_store_time: 0,
    };
    let response = call(&broker, check).await;
    assert_eq!(
        (response.code, body_json(&response)),
        (0, json!({"checkStatus": 2}))
    );
    cluster.stop().await;
}

#[tokio::test]
async fn groups_past_their_cold_read_threshold_are_throttled() {
    // Everything behind the CommitLog's end is cold, and one byte is too much.
    let cluster = Cluster::start(|config| {
        config.cold_data_flow_control_enable = true;
        config.access_message_in_memory_hot_ratio = 0;
        config.cg_cold_read_threshold = 1;
    })
    .await;
    let client = cluster.broker_client().await;
    for _ in 0..3 {
        let sent = client
            .invoke(&auto_creating_send("p", TOPIC), TIMEOUT)
            .await
            .unwrap();
        assert!(matches!(sent, Reply::Sent(_)), "{sent:?}");
    }
    let heartbeat = HeartbeatData {
        client_id: "push-client".into(),
        consumer_data_set: vec![ConsumerData {
            group_name: "push_group".into(),
            consume_type: ConsumeType::ConsumePassively,
            subscription_data_set: vec![SubscriptionData {
                topic: TOPIC.into(),
                sub_string: "*".into(),
                ..SubscriptionData::default()
            }],
            ..ConsumerData::default()
        }],
        ..HeartbeatData::default()
    };
    let reply = client
        .invoke(&Request::Heartbeat(heartbeat), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);

    // The first pull reads (and accounts) the cold data; the next is refused.
    let first = client.invoke(&pull("push_group"), TIMEOUT).await.unwrap();
    assert_eq!(pulled_count(&first), 3);
    let info = body_json(&call(&client, AdminCommand::ColdReadInfo).await);
    assert!(
        info["runtimeTable"]["push_group"]["coldAcc"].as_i64() > Some(0),
        "{info}"
    );
    match client.invoke(&pull("push_group"), TIMEOUT).await.unwrap() {
        Reply::Error(error) => {
            assert_eq!(error.kind, ErrorKind::SystemBusy);
            assert_eq!(
                error.message,
                "This consumer group is reading cold data. It has been flow control"
            );
        }
        other => panic!("{other:?}"),
    }

    // A pull consumer (no heartbeat here) is held and then gets one message.
    let first = client.invoke(&pull("pull_group"), TIMEOUT).await.unwrap();
    assert_eq!(pulled_count(&first), 3);
    let started = Instant::now();
    let throttled = client.invoke(&pull("pull_group"), TIMEOUT).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(2900));
    assert_eq!(pulled_count(&throttled), 1);
    cluster.stop().await;
}
