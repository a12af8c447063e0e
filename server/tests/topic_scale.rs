//! Metadata scale (issue 8): the cost of UPDATE_AND_CREATE_TOPIC as the topic count grows, and
//! broker start with 100,000 topics. Ignored by default (a measurement, not a check); run with
//!
//!   SKIFF_SCALE_TOPICS=100000 cargo test -p skiff-server --test topic_scale -- --ignored --nocapture
//!
//! Results and how they were taken: docs/benchmarks.md, "Metadata scale".

mod common;

use std::time::{Duration, Instant};

use skiff_model::command::{Reply, Request};
use skiff_model::route::TopicConfig;
use skiff_server::broker::Broker;
use skiff_server::config::{BrokerConfig, NamesrvConfig};
use skiff_server::namesrv::NameServer;
use skiff_server::remoting_client::RemotingClient;

fn topics_wanted() -> usize {
    std::env::var("SKIFF_SCALE_TOPICS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

async fn namesrv() -> NameServer {
    NameServer::start(NamesrvConfig {
        bind_address: "127.0.0.1".parse().unwrap(),
        listen_port: 0,
        ..NamesrvConfig::default()
    })
    .await
    .unwrap()
}

fn broker_config(dir: &std::path::Path, namesrv: &NameServer) -> BrokerConfig {
    BrokerConfig {
        bind_address: "127.0.0.1".parse().unwrap(),
        broker_ip1: Some("127.0.0.1".into()),
        listen_port: 0,
        namesrv_addr: Some(namesrv.local_addr().to_string()),
        store_path_root_dir: dir.to_path_buf(),
        ..BrokerConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; see the module doc"]
async fn topic_creation_cost_by_topic_count() {
    let total = topics_wanted();
    let dir = tempfile::tempdir().unwrap();
    let namesrv = namesrv().await;
    let broker = Broker::start(broker_config(dir.path(), &namesrv))
        .await
        .unwrap();
    let client = RemotingClient::connect(&broker.local_addr().to_string(), Duration::from_secs(5))
        .await
        .unwrap();
    let checkpoints = [1_000, 4_000, 10_000, 40_000, 100_000];
    let window = 200;
    let mut latencies = Vec::with_capacity(window);
    for i in 1..=total {
        let started = Instant::now();
        let reply = client
            .invoke(
                &Request::CreateTopic(TopicConfig::new(format!("Scale{i:06}"), 4)),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        assert_eq!(reply, Reply::Success);
        latencies.push(started.elapsed());
        if latencies.len() > window {
            latencies.remove(0);
        }
        if checkpoints.contains(&i) {
            let mean = latencies.iter().sum::<Duration>() / latencies.len() as u32;
            let mut sorted = latencies.clone();
            sorted.sort();
            let p99 = sorted[sorted.len() * 99 / 100];
            println!(
                "topics={i} create mean={:.3} ms p99={:.3} ms (last {window})",
                mean.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3
            );
        }
    }
    broker.shutdown().await;
    namesrv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; see the module doc"]
async fn broker_start_with_many_topics() {
    let total = topics_wanted();
    let dir = tempfile::tempdir().unwrap();
    let config_dir = dir.path().join("config");
    std::fs::create_dir_all(&config_dir).unwrap();
    let mut table = serde_json::Map::new();
    for i in 0..total {
        let name = format!("Start{i:06}");
        table.insert(
            name.clone(),
            serde_json::json!({"topicName": name, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}),
        );
    }
    let file = serde_json::json!({"topicConfigTable": table, "dataVersion": {"counter": 1, "timestamp": 0}});
    std::fs::write(config_dir.join("topics.json"), file.to_string()).unwrap();
    let namesrv = namesrv().await;
    let mut config = broker_config(dir.path(), &namesrv);
    let registers = std::env::var_os("SKIFF_SCALE_NO_NAMESRV").is_none();
    if !registers {
        config.namesrv_addr = None;
    }
    let started = Instant::now();
    let broker = Broker::start(config).await.unwrap();
    let took = started.elapsed();
    println!(
        "topics={total} broker start (store open, topics.json, first registration) = {:.3} s",
        took.as_secs_f64()
    );
    if registers {
        // Start returns once every topic is routable (100,000 need a split registration).
        let client =
            RemotingClient::connect(&namesrv.local_addr().to_string(), Duration::from_secs(5))
                .await
                .unwrap();
        let Reply::TopicList(listed) = client
            .invoke(&Request::GetAllTopicList, Duration::from_secs(30))
            .await
            .unwrap()
        else {
            panic!("no topic list");
        };
        let listed: std::collections::BTreeSet<String> = listed.into_iter().collect();
        let missing = (0..total)
            .filter(|i| !listed.contains(&format!("Start{i:06}")))
            .count();
        assert_eq!(missing, 0, "topics without a route when start returned");
    }
    broker.shutdown().await;
    namesrv.shutdown().await;
}
