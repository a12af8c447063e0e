//! What one peer can hold of a broker (issue 8): idle and trickling connections are reaped,
//! connections and in-flight requests are bounded, held pulls are capped in time and dropped with
//! their connection. Short limits are configured so each test takes about a second.

mod common;

use std::time::{Duration, Instant};

use skiff_model::command::{
    ErrorKind, PullRequest, QueueRef, Reply, Request, SubscriptionExpression,
};
use skiff_model::route::TopicConfig;
use skiff_server::remoting_client::RemotingClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::{Cluster, TIMEOUT};

/// Waits up to `within` for the server to close `stream`; true if it did.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 64];
    match tokio::time::timeout(within, stream.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => true,
        Ok(Ok(_)) => panic!("unexpected bytes from the server"),
        Err(_) => false,
    }
}

fn held_pull(topic: &str, suspend_ms: u64) -> Request {
    Request::Pull(PullRequest {
        consumer_group: "holders".into(),
        queue: QueueRef {
            topic: topic.into(),
            queue_id: 0,
            physical: false,
        },
        max_msg_nums: 1,
        suspend_timeout_millis: Some(suspend_ms),
        subscription: Some(SubscriptionExpression {
            expression_type: "TAG".into(),
            expression: "*".into(),
            version: 0,
        }),
        lite: true,
        ..PullRequest::default()
    })
}

async fn create_topic(client: &RemotingClient, name: &str) {
    let reply = client
        .invoke(&Request::CreateTopic(TopicConfig::new(name, 1)), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(reply, Reply::Success);
}

async fn held_count(client: &RemotingClient) -> usize {
    match client
        .invoke(&Request::GetBrokerRuntimeInfo, TIMEOUT)
        .await
        .unwrap()
    {
        Reply::KeyValues(table) => table["pullRequestsHeld"].parse().unwrap(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn idle_and_trickling_connections_are_reaped() {
    let cluster = Cluster::start(|c| c.server_channel_max_idle_time_seconds = 1).await;
    let addr = cluster.broker.local_addr();
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    // One byte every 200 ms of a frame that declares 1 KiB: never a whole frame.
    let trickle = async {
        slow.write_all(&1024u32.to_be_bytes()).await.unwrap();
        for _ in 0..20 {
            if slow.write_all(&[0]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let (_, idle_closed) = tokio::join!(trickle, closed_within(&mut idle, Duration::from_secs(4)));
    assert!(idle_closed, "an idle connection must be closed");
    assert!(
        closed_within(&mut slow, Duration::from_secs(1)).await,
        "a trickling one too"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // A working client is served as before.
    let client = cluster.broker_client().await;
    create_topic(&client, "StillServing").await;
    cluster.stop().await;
}

#[tokio::test]
async fn connections_beyond_the_limit_are_closed_at_accept() {
    let cluster = Cluster::start(|c| c.server_max_connections = 2).await;
    let addr = cluster.broker.local_addr();
    let first = cluster.broker_client().await;
    let _second = TcpStream::connect(addr).await.unwrap();
    let mut third = TcpStream::connect(addr).await.unwrap();
    assert!(closed_within(&mut third, Duration::from_secs(2)).await);
    create_topic(&first, "Limited").await;
    drop(first);
    // The freed slot is taken by the next connection.
    let mut served = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Ok(client) = RemotingClient::connect(&addr.to_string(), TIMEOUT).await {
            if client
                .invoke(&Request::GetBrokerRuntimeInfo, Duration::from_millis(500))
                .await
                .is_ok()
            {
                served = Some(client);
                break;
            }
        }
    }
    assert!(
        served.is_some(),
        "a slot freed by a closed connection is reusable"
    );
    cluster.stop().await;
}

#[tokio::test]
async fn in_flight_requests_are_bounded_and_holds_die_with_their_connection() {
    let cluster = Cluster::start(|c| c.server_max_in_flight_requests = 2).await;
    let admin = cluster.broker_client().await;
    create_topic(&admin, "Held").await;
    let holder = std::sync::Arc::new(cluster.broker_client().await);
    let request = held_pull("Held", 20_000);
    let mut held = Vec::new();
    for _ in 0..2 {
        let (holder, request) = (holder.clone(), request.clone());
        held.push(tokio::spawn(async move {
            holder.invoke(&request, Duration::from_secs(30)).await
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while held_count(&admin).await != 2 {
        assert!(Instant::now() < deadline, "two pulls should be held");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let busy = holder.invoke(&request, TIMEOUT).await.unwrap();
    match busy {
        Reply::Error(e) => {
            assert_eq!(e.kind, ErrorKind::SystemBusy);
            assert_eq!(
                e.message,
                "[OVERLOAD]system busy, start flow control for a while"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(held.iter().all(|h| !h.is_finished()));
    for h in &held {
        h.abort();
    }
    drop(held);
    drop(holder);
    let deadline = Instant::now() + Duration::from_secs(5);
    while held_count(&admin).await != 0 {
        assert!(
            Instant::now() < deadline,
            "held pulls outlive their connection"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.stop().await;
}

#[tokio::test]
async fn the_broker_caps_the_suspend_time() {
    let cluster = Cluster::start(|c| c.broker_suspend_max_time_millis = 300).await;
    let client = cluster.broker_client().await;
    create_topic(&client, "Capped").await;
    let started = Instant::now();
    let reply = client
        .invoke(&held_pull("Capped", 1_000_000_000_000), TIMEOUT)
        .await
        .unwrap();
    assert!(matches!(reply, Reply::Pulled(_)), "{reply:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(3),
        "{took:?}"
    );
    cluster.stop().await;
}

#[tokio::test]
async fn stalled_partial_frames_do_not_stop_the_broker() {
    let cluster = Cluster::start(|_| {}).await;
    let addr = cluster.broker.local_addr();
    // 50 peers each declare a 15 MiB frame and send 1 KiB of it: the broker keeps serving.
    let mut peers = Vec::new();
    for _ in 0..50 {
        let mut peer = TcpStream::connect(addr).await.unwrap();
        peer.write_all(&(15u32 << 20).to_be_bytes()).await.unwrap();
        peer.write_all(&[0u8; 1024]).await.unwrap();
        peers.push(peer);
    }
    let client = cluster.broker_client().await;
    create_topic(&client, "Unpinned").await;
    drop(peers);
    cluster.stop().await;
}

/// A loopback port `p` with `p - 2` free too (for the VIP channel).
fn free_port_pair() -> u16 {
    for _ in 0..50 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        if port > 2 && std::net::TcpListener::bind(("127.0.0.1", port - 2)).is_ok() {
            return port;
        }
    }
    panic!("no free pair of loopback ports");
}

/// Java's broker also listens on the listen port - 2 (the "VIP channel" that admin tools and the
/// Dashboard use by default); it serves the same requests over the same state.
#[tokio::test]
async fn the_vip_channel_serves_the_same_requests() {
    let port = free_port_pair();
    let cluster = Cluster::start(|c| {
        c.listen_port = port;
        // Not port + 1, Java's default: another test's connection may hold it.
        c.ha_listen_port = Some(0);
    })
    .await;
    let vip = cluster.broker.vip_addr().expect("the VIP channel is open");
    assert_eq!(vip.port(), port - 2);
    let over_vip = RemotingClient::connect(&vip.to_string(), TIMEOUT)
        .await
        .unwrap();
    create_topic(&over_vip, "vip_topic").await;
    let main = cluster.broker_client().await;
    let found = main
        .invoke(
            &Request::GetTopicConfig {
                topic: "vip_topic".into(),
                lo: true,
            },
            TIMEOUT,
        )
        .await
        .unwrap();
    assert!(
        matches!(&found, Reply::TopicConfig { config, .. } if config.topic_name == "vip_topic"),
        "{found:?}"
    );
    cluster.stop().await;
}
