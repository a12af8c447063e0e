//! Operator codes answered from the broker's and name server's tables, on the wire, without a
//! JDK: QUERY_CONSUME_QUEUE (`mqadmin queryCq`), VIEW_BROKER_STATS_DATA, the system topic lists,
//! the connection lists' refusals, and config updates written into the config files. The
//! official tools' view of them is in `compat-tests/tests/mqadmin.rs`.

mod common;

use serde_json::Value;
use skiff_model::admin::AdminCommand;
use skiff_model::command::{Reply, Request};
use skiff_model::consumer::SubscriptionGroupConfig;
use skiff_model::route::TopicConfig;
use skiff_protocol::remoting::{self, RemotingCommand};
use skiff_server::remoting_client::RemotingClient;

use common::{auto_creating_send, Cluster, TIMEOUT};

const TOPIC: &str = "admin_codes";

async fn call(client: &RemotingClient, command: AdminCommand) -> RemotingCommand {
    let frame = remoting::encode_request(&Request::Admin(command), 0, false);
    client.invoke_frame(frame, TIMEOUT).await.unwrap()
}

fn body_json(response: &RemotingCommand) -> Value {
    serde_json::from_slice(&response.body.to_bytes()).unwrap()
}

fn query_cq(queue_id: i32, index: i64) -> AdminCommand {
    AdminCommand::QueryConsumeQueue {
        topic: TOPIC.into(),
        queue_id,
        index,
        count: 10,
        group: Some("nobody".into()),
    }
}

#[tokio::test]
async fn consume_queue_stats_and_system_topics_answer_as_java() {
    let cluster = Cluster::start(|_| {}).await;
    let broker = cluster.broker_client().await;
    for _ in 0..3 {
        let sent = broker
            .invoke(&auto_creating_send("p", TOPIC), TIMEOUT)
            .await
            .unwrap();
        assert!(matches!(sent, Reply::Sent(_)), "{sent:?}");
    }

    // QUERY_CONSUME_QUEUE: the three entries of queue 0, in CommitLog order.
    let response = call(&broker, query_cq(0, 0)).await;
    assert_eq!(response.code, 0, "{:?}", response.remark);
    let body = body_json(&response);
    assert_eq!(body["maxQueueIndex"], 3);
    assert_eq!(body["minQueueIndex"], 0);
    assert_eq!(body["filterData"], format!("nobody@{TOPIC} is not online!"));
    let entries = body["queueData"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    let offsets: Vec<i64> = entries
        .iter()
        .map(|e| e["physicOffset"].as_i64().unwrap())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    assert!(entries.iter().all(|e| e["physicSize"].as_i64() > Some(0)));
    // An index past the end: success, only a remark (Java's iterateFrom found nothing).
    let response = call(&broker, query_cq(0, 3)).await;
    assert_eq!(response.code, 0);
    assert_eq!(
        response.remark.as_deref(),
        Some(format!("Index 3 of 0@{TOPIC} is not exist!").as_str())
    );
    assert!(response.body.to_bytes().is_empty());
    let response = call(&broker, query_cq(9, 0)).await;
    assert_eq!(
        (response.code, response.remark.as_deref()),
        (1, Some(format!("9@{TOPIC} is not exist!").as_str()))
    );

    // VIEW_BROKER_STATS_DATA: the topic's puts exist from the first send (sampled later).
    let stats = |name: &str, key: &str| AdminCommand::StatsData {
        name: name.into(),
        key: key.into(),
    };
    let response = call(&broker, stats("TOPIC_PUT_NUMS", TOPIC)).await;
    assert_eq!(response.code, 0, "{:?}", response.remark);
    let body = body_json(&response);
    for window in ["statsMinute", "statsHour", "statsDay"] {
        assert!(body[window]["sum"].is_i64(), "{body}");
    }
    let response = call(&broker, stats("TOPIC_PUT_NUMS", "nope")).await;
    assert_eq!(
        (response.code, response.remark.as_deref()),
        (1, Some("The stats <TOPIC_PUT_NUMS> <nope> not exist"))
    );

    // The connection lists of groups nobody is in.
    let response = call(
        &broker,
        AdminCommand::ConsumerConnections {
            group: "nobody".into(),
        },
    )
    .await;
    assert_eq!(
        (response.code, response.remark.as_deref()),
        (206, Some("the consumer group[nobody] not online"))
    );
    let response = call(
        &broker,
        AdminCommand::ProducerConnections {
            group: "nobody".into(),
        },
    )
    .await;
    assert_eq!(
        (response.code, response.remark.as_deref()),
        (1, Some("the producer group[nobody] not exist"))
    );

    // The system topic lists: the name server's names a broker to ask for the rest.
    let namesrv = cluster.namesrv_client().await;
    let response = call(&namesrv, AdminCommand::SystemTopicsFromNamesrv).await;
    let body = body_json(&response);
    let topics: Vec<&str> = body["topicList"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(topics.contains(&"DefaultCluster"), "{topics:?}");
    assert_eq!(
        body["brokerAddr"].as_str(),
        Some(cluster.broker.local_addr().to_string().as_str())
    );
    let response = call(&broker, AdminCommand::SystemTopicsFromBroker).await;
    let body = body_json(&response);
    let topics: Vec<&str> = body["topicList"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for topic in ["TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster"] {
        assert!(topics.contains(&topic), "{topic} in {topics:?}");
    }
    assert!(body.get("brokerAddr").is_none());
    cluster.stop().await;
}

#[tokio::test]
async fn broker_config_updates_apply_together_and_permission_at_once() {
    let cluster = Cluster::start(|_| {}).await;
    let broker = cluster.broker_client().await;
    let update = |text: &str| AdminCommand::UpdateBrokerConfig {
        properties: text.to_string(),
    };
    let response = call(&broker, update("brokerConfigPath=/etc/passwd\n")).await;
    assert_eq!(
        (response.code, response.remark.as_deref()),
        (16, Some("Can not update config in black list."))
    );
    // One bad value: nothing changes, and the answer names the key.
    let response = call(
        &broker,
        update("brokerPermission=4\nflushDiskType=SOMETIMES\n"),
    )
    .await;
    assert_eq!(response.code, 1);
    assert!(
        response
            .remark
            .as_deref()
            .unwrap_or("")
            .contains("flushDiskType"),
        "{:?}",
        response.remark
    );
    let sent = broker
        .invoke(&auto_creating_send("p", TOPIC), TIMEOUT)
        .await
        .unwrap();
    assert!(matches!(sent, Reply::Sent(_)), "{sent:?}");

    let response = call(&broker, update("brokerPermission=4\n")).await;
    assert_eq!(response.code, 0, "{:?}", response.remark);
    let refused = broker
        .invoke(&auto_creating_send("p", TOPIC), TIMEOUT)
        .await
        .unwrap();
    assert!(
        matches!(&refused, Reply::Error(e) if e.message.contains("sending message is forbidden")),
        "{refused:?}"
    );
    let config = call(&broker, AdminCommand::GetBrokerConfig).await;
    let text = String::from_utf8(config.body.to_bytes().to_vec()).unwrap();
    assert!(text.lines().any(|l| l == "brokerPermission=4"), "{text}");
    // The name server's routes say read-only too.
    let route = cluster.route(TOPIC).await;
    assert!(route.queue_datas.iter().all(|q| q.perm == 4), "{route:?}");
    cluster.stop().await;
}

#[tokio::test]
async fn name_server_config_updates_show_in_its_config() {
    let cluster = Cluster::start(|_| {}).await;
    let namesrv = cluster.namesrv_client().await;
    let update = |text: &str| AdminCommand::UpdateNamesrvConfig {
        properties: text.to_string(),
    };
    let response = call(&namesrv, update("kvConfigPath=/tmp/x\n")).await;
    assert_eq!(response.code, 16, "{:?}", response.remark);
    let response = call(&namesrv, update("scanNotActiveBrokerInterval=soon\n")).await;
    assert_eq!(response.code, 1);
    assert!(response
        .remark
        .unwrap_or_default()
        .contains("scanNotActiveBrokerInterval"));
    let response = call(&namesrv, update("scanNotActiveBrokerInterval=6000\n")).await;
    assert_eq!(response.code, 0, "{:?}", response.remark);
    let config = call(&namesrv, AdminCommand::GetNamesrvConfig).await;
    let text = String::from_utf8(config.body.to_bytes().to_vec()).unwrap();
    assert!(
        text.lines()
            .any(|l| l == "scanNotActiveBrokerInterval=6000"),
        "{text}"
    );
    cluster.stop().await;
}

#[tokio::test]
async fn maintenance_codes_keep_what_is_in_use() {
    let cluster = Cluster::start(|_| {}).await;
    let broker = cluster.broker_client().await;
    let sent = broker
        .invoke(&auto_creating_send("p", TOPIC), TIMEOUT)
        .await
        .unwrap();
    assert!(matches!(sent, Reply::Sent(_)), "{sent:?}");
    for command in [
        AdminCommand::CleanUnusedTopic,
        AdminCommand::CleanExpiredConsumeQueue,
        AdminCommand::DeleteExpiredCommitLog,
    ] {
        let response = call(&broker, command).await;
        assert_eq!(response.code, 0, "{:?}", response.remark);
    }
    // The topic in use keeps its queue and its message.
    let max = broker
        .invoke(
            &Request::GetMaxOffset {
                queue: skiff_model::command::QueueRef {
                    topic: TOPIC.into(),
                    queue_id: 0,
                    physical: false,
                },
            },
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(max, Reply::Offset(1));
    cluster.stop().await;
}

#[tokio::test]
async fn list_creations_take_all_or_nothing() {
    let cluster = Cluster::start(|_| {}).await;
    let broker = cluster.broker_client().await;
    let namesrv = cluster.namesrv_client().await;
    let route = |topic: &str| {
        let request = Request::GetRouteInfo {
            topic: topic.into(),
        };
        let namesrv = &namesrv;
        async move { namesrv.invoke(&request, TIMEOUT).await.unwrap() }
    };

    // UPDATE_AND_CREATE_TOPIC_LIST: one bad name refuses the whole list.
    let refused = call(
        &broker,
        AdminCommand::CreateTopicList(vec![
            TopicConfig::new("list_a", 2),
            TopicConfig::new("bad name", 2),
        ]),
    )
    .await;
    assert_eq!(refused.code, 29, "INVALID_PARAMETER: {:?}", refused.remark);
    assert!(matches!(route("list_a").await, Reply::Error(_)));
    // Both created and routed once the answer is in.
    let created = call(
        &broker,
        AdminCommand::CreateTopicList(vec![
            TopicConfig::new("list_a", 2),
            TopicConfig::new("list_b", 3),
        ]),
    )
    .await;
    assert_eq!(created.code, 0, "{:?}", created.remark);
    for (topic, queues) in [("list_a", 2), ("list_b", 3)] {
        let Reply::Route(r) = route(topic).await else {
            panic!("{topic} has no route")
        };
        assert_eq!(r.queue_datas[0].write_queue_nums, queues, "{r:?}");
    }

    // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, the same way.
    let groups = |names: &[&str]| {
        AdminCommand::CreateSubscriptionGroupList(
            names
                .iter()
                .map(|g| SubscriptionGroupConfig::new(*g))
                .collect(),
        )
    };
    let refused = call(&broker, groups(&["list_g1", "bad/group"])).await;
    assert_eq!(refused.code, 29, "INVALID_PARAMETER: {:?}", refused.remark);
    let created = call(&broker, groups(&["list_g1", "list_g2"])).await;
    assert_eq!(created.code, 0, "{:?}", created.remark);
    let all = body_json(&call(&broker, AdminCommand::GetAllSubscriptionGroups).await);
    let table = all["subscriptionGroupTable"].as_object().unwrap();
    assert!(table.contains_key("list_g1") && table.contains_key("list_g2"));
    cluster.stop().await;
}

/// UPDATE_NAMESRV_CONFIG and UPDATE_BROKER_CONFIG answer once the settings are in the config
/// files the processes started from (Java's `Configuration.persist`), the files' other lines kept.
#[tokio::test]
async fn config_updates_are_in_the_config_files_when_answered() {
    let dir = tempfile::tempdir().unwrap();
    let namesrv_file = dir.path().join("namesrv.conf");
    let broker_file = dir.path().join("broker.toml");
    std::fs::write(&namesrv_file, "# the name server\nlistenPort=0\n").unwrap();
    std::fs::write(&broker_file, "# the broker\nbrokerName = \"broker-a\"\n").unwrap();
    let cluster = Cluster::start_with(
        |namesrv| namesrv.config_file = Some(namesrv_file.clone()),
        |broker| broker.config_file = Some(broker_file.clone()),
    )
    .await;
    let update = |command| Request::Admin(command);
    let namesrv = cluster.namesrv_client().await;
    let properties = "scanNotActiveBrokerInterval=7000".to_string();
    let reply = namesrv
        .invoke(
            &update(AdminCommand::UpdateNamesrvConfig { properties }),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    assert_eq!(
        std::fs::read_to_string(&namesrv_file).unwrap(),
        "# the name server\nlistenPort=0\nscanNotActiveBrokerInterval=7000\n"
    );
    let broker = cluster.broker_client().await;
    let properties = "deleteWhen=01".to_string();
    let reply = broker
        .invoke(
            &update(AdminCommand::UpdateBrokerConfig { properties }),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
    assert_eq!(
        std::fs::read_to_string(&broker_file).unwrap(),
        "# the broker\nbrokerName = \"broker-a\"\ndeleteWhen = \"01\"\n"
    );
    cluster.stop().await;
}
