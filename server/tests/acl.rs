//! ACL over real sockets: the broker checks every request, the name server the ones that change
//! routes, and a broker with `innerClientAuthenticationCredentials` registers through it.

mod common;

use std::sync::Arc;

use skiff_model::command::{ErrorKind, Reply, Request};
use skiff_model::route::{BrokerRegistration, TopicConfig};
use skiff_server::acl::Credentials;
use skiff_server::broker::Broker;
use skiff_server::config::{BrokerConfig, NamesrvConfig};
use skiff_server::namesrv::NameServer;
use skiff_server::remoting_client::RemotingClient;

use common::{auto_creating_send, TIMEOUT};

const ACL: &str = "\
accounts:
  - accessKey: adminKey1
    secretKey: adminSecret1
    admin: true
  - accessKey: userKey01
    secretKey: userSecret1
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
";

fn creds(key: &str, secret: &str) -> Option<Arc<Credentials>> {
    Some(Arc::new(Credentials {
        access_key: key.into(),
        secret_key: secret.into(),
    }))
}

fn refusal(reply: &Reply) -> &str {
    match reply {
        Reply::Error(e) if e.kind == ErrorKind::SystemError => &e.message,
        other => panic!("expected an ACL refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_and_name_server_check_signatures() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain_acl.yml");
    std::fs::write(&file, ACL).unwrap();
    let namesrv = NameServer::start(NamesrvConfig {
        bind_address: "127.0.0.1".parse().unwrap(),
        listen_port: 0,
        acl_enable: true,
        acl_plain_file: file.clone(),
        ..NamesrvConfig::default()
    })
    .await
    .unwrap();
    let ns_addr = namesrv.local_addr().to_string();
    let broker = Broker::start(BrokerConfig {
        bind_address: "127.0.0.1".parse().unwrap(),
        broker_ip1: Some("127.0.0.1".into()),
        listen_port: 0,
        namesrv_addr: Some(ns_addr.clone()),
        store_path_root_dir: dir.path().join("store"),
        acl_enable: true,
        acl_plain_file: file.clone(),
        inner_client_authentication_credentials: Some(
            r#"{"accessKey":"adminKey1","secretKey":"adminSecret1"}"#.into(),
        ),
        ..BrokerConfig::default()
    })
    .await
    .unwrap();
    let broker_addr = broker.local_addr().to_string();

    // The signed registration went through; route queries are open, as on Java's name server.
    let anyone = RemotingClient::connect(&ns_addr, TIMEOUT).await.unwrap();
    let route = anyone
        .invoke(
            &Request::GetRouteInfo {
                topic: "TBW102".into(),
            },
            TIMEOUT,
        )
        .await
        .unwrap();
    assert!(matches!(route, Reply::Route(_)), "{route:?}");

    // Nobody registers a fake broker without an admin account.
    let fake = Request::RegisterBroker(BrokerRegistration {
        cluster_name: "DefaultCluster".into(),
        broker_name: "fake".into(),
        broker_addr: "127.0.0.1:1".into(),
        ..BrokerRegistration::default()
    });
    let reply = anyone.invoke(&fake, TIMEOUT).await.unwrap();
    assert!(
        refusal(&reply).ends_with("No accessKey is configured"),
        "{reply:?}"
    );
    let user = RemotingClient::connect(&ns_addr, TIMEOUT)
        .await
        .unwrap()
        .signed_by(creds("userKey01", "userSecret1"));
    let reply = user.invoke(&fake, TIMEOUT).await.unwrap();
    assert!(
        refusal(&reply).contains("Need admin permission for request code=103"),
        "{reply:?}"
    );

    // The broker: unsigned, wrong secret, allowed, admin-only.
    let unsigned = RemotingClient::connect(&broker_addr, TIMEOUT)
        .await
        .unwrap();
    let reply = unsigned
        .invoke(&auto_creating_send("acl-producer", "AclTopic"), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(
        refusal(&reply),
        "org.apache.rocketmq.acl.common.AclException: No accessKey is configured"
    );
    let wrong = RemotingClient::connect(&broker_addr, TIMEOUT)
        .await
        .unwrap()
        .signed_by(creds("userKey01", "not-the-secret"));
    let reply = wrong
        .invoke(&auto_creating_send("acl-producer", "AclTopic"), TIMEOUT)
        .await
        .unwrap();
    assert!(refusal(&reply).ends_with("Check signature failed for accessKey=userKey01"));
    let user = RemotingClient::connect(&broker_addr, TIMEOUT)
        .await
        .unwrap()
        .signed_by(creds("userKey01", "userSecret1"));
    let reply = user
        .invoke(&auto_creating_send("acl-producer", "AclTopic"), TIMEOUT)
        .await
        .unwrap();
    assert!(matches!(reply, Reply::Sent(_)), "{reply:?}");
    let create = Request::CreateTopic(TopicConfig {
        topic_name: "AclAdminTopic".into(),
        read_queue_nums: 4,
        write_queue_nums: 4,
        perm: 6,
        ..TopicConfig::default()
    });
    let reply = user.invoke(&create, TIMEOUT).await.unwrap();
    assert!(refusal(&reply).contains("Need admin permission for request code=17"));
    let admin = RemotingClient::connect(&broker_addr, TIMEOUT)
        .await
        .unwrap()
        .signed_by(creds("adminKey1", "adminSecret1"));
    let reply = admin.invoke(&create, TIMEOUT).await.unwrap();
    assert!(!matches!(reply, Reply::Error(_)), "{reply:?}");

    broker.shutdown().await;
    namesrv.shutdown().await;
}
