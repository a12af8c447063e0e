//! Split registration (`enableSplitRegistration`, `splitRegistrationSize`, as Java 5.x): a broker
//! whose topic table is sent in parts is routable for every topic when `Broker::start` returns,
//! and a table too big for one frame is split even when nobody asked.

mod common;

use std::collections::BTreeSet;

use skiff_model::command::{Reply, Request};
use skiff_server::config::BrokerConfig;
use skiff_server::remoting_client::RemotingClient;

use common::{Cluster, TIMEOUT};

const TOPICS: usize = 2_500;

fn topic(i: usize) -> String {
    format!("split-topic-{i}")
}

/// Writes a `topics.json` of [`TOPICS`] topics (4 queues each) into the broker's data directory.
fn with_many_topics(config: &mut BrokerConfig) {
    let dir = config.store_path_root_dir.join("config");
    std::fs::create_dir_all(&dir).unwrap();
    let table: serde_json::Map<String, serde_json::Value> = (0..TOPICS)
        .map(|i| {
            let name = topic(i);
            let config = serde_json::json!({"topicName": name, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6});
            (name, config)
        })
        .collect();
    let file = serde_json::json!({"topicConfigTable": table, "dataVersion": {"counter": 1, "timestamp": 0}});
    std::fs::write(dir.join("topics.json"), file.to_string()).unwrap();
}

async fn assert_every_topic_routable(namesrv: &RemotingClient) {
    let reply = namesrv
        .invoke(&Request::GetAllTopicList, TIMEOUT)
        .await
        .unwrap();
    let Reply::TopicList(listed) = reply else {
        panic!("no topic list: {reply:?}");
    };
    let listed: BTreeSet<String> = listed.into_iter().collect();
    let missing: Vec<String> = (0..TOPICS)
        .map(topic)
        .filter(|t| !listed.contains(t))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {TOPICS} topics have no route when start returned, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(3)]
    );
    // A route as a client gets it, for the first, a middle and the last topic of the table.
    for name in [topic(0), topic(TOPICS / 2), topic(TOPICS - 1)] {
        let route = namesrv
            .invoke(
                &Request::GetRouteInfo {
                    topic: name.clone(),
                },
                TIMEOUT,
            )
            .await
            .unwrap();
        match route {
            Reply::Route(route) => assert_eq!(route.queue_datas[0].write_queue_nums, 4),
            other => panic!("no route for {name}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_registration_routes_every_topic_before_start_returns() {
    let cluster = Cluster::start(|config| {
        with_many_topics(config);
        config.enable_split_registration = true;
        config.split_registration_size = 300;
    })
    .await;
    let namesrv = cluster.namesrv_client().await;
    assert_every_topic_routable(&namesrv).await;
    drop(namesrv);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_too_big_for_one_frame_is_registered_in_parts() {
    // ~430 KB of topics (parts of 800, ~140 KB, fit); the name server (like Java's at 16 MiB) closes the connection on a
    // frame over its frameMaxLength, so one request would leave every topic unroutable.
    const FRAME: usize = 256 * 1024;
    let cluster = Cluster::start_with(
        |namesrv| namesrv.frame_max_length = FRAME,
        |broker| {
            broker.frame_max_length = FRAME;
            broker.max_message_size = FRAME / 2;
            assert!(!broker.enable_split_registration, "Java's default: off");
            with_many_topics(broker);
        },
    )
    .await;
    assert_every_topic_routable(&cluster.namesrv_client().await).await;
    cluster.stop().await;
}
