//! A topic created by a request is routable the moment that request is answered, as with the Java
//! broker: clients look the route up right after their first SEND_OK or after an admin create.

mod common;

use skiff_model::command::{Reply, Request};
use skiff_model::route::TopicConfig;

use common::{auto_creating_send, Cluster, TIMEOUT};

async fn assert_routable(namesrv: &skiff_server::remoting_client::RemotingClient, topic: &str) {
    let route = namesrv
        .invoke(
            &Request::GetRouteInfo {
                topic: topic.into(),
            },
            TIMEOUT,
        )
        .await
        .unwrap();
    match route {
        Reply::Route(route) => assert_eq!(route.queue_datas[0].write_queue_nums, 4),
        other => panic!("no route for {topic} right after it was created: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_topics_are_routable_when_the_request_is_answered() {
    let cluster = Cluster::start(|_| {}).await;
    let broker = cluster.broker_client().await;
    let namesrv = cluster.namesrv_client().await;
    // Many in a row: a registration already running must not swallow the next change.
    for i in 0..30 {
        let topic = format!("AutoCreated{i}");
        let reply = broker
            .invoke(&auto_creating_send("routes-producer", &topic), TIMEOUT)
            .await
            .unwrap();
        assert!(matches!(reply, Reply::Sent(_)), "send failed: {reply:?}");
        assert_routable(&namesrv, &topic).await;
    }
    let created = broker
        .invoke(
            &Request::CreateTopic(TopicConfig::new("AdminCreated", 4)),
            TIMEOUT,
        )
        .await
        .unwrap();
    assert_eq!(created, Reply::Success);
    assert_routable(&namesrv, "AdminCreated").await;
    drop((broker, namesrv));
    cluster.stop().await;
}
