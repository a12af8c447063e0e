//! A name server and a broker both in `tls.server.mode=enforcing`: the broker registers over TLS
//! (Java's `useTLS` default in enforcing mode), TLS clients reach both, plain ones neither.

mod common;

use skiff_model::command::{Reply, Request};
use skiff_server::broker::Broker;
use skiff_server::config::{BrokerConfig, NamesrvConfig, TlsConfig, TlsMode};
use skiff_server::namesrv::NameServer;
use skiff_server::remoting_client::RemotingClient;

use common::TIMEOUT;

#[tokio::test]
async fn enforcing_broker_registers_over_tls_and_serves_tls_clients() {
    let dir = tempfile::tempdir().unwrap();
    // Test mode: both listeners serve a certificate made at start.
    let tls = TlsConfig {
        server_mode: TlsMode::Enforcing,
        config_file: dir.path().join("no-tls.properties"),
        ..TlsConfig::default()
    };
    let namesrv = NameServer::start(NamesrvConfig {
        bind_address: "127.0.0.1".parse().unwrap(),
        listen_port: 0,
        tls: tls.clone(),
        ..NamesrvConfig::default()
    })
    .await
    .unwrap();
    let broker = Broker::start(BrokerConfig {
        bind_address: "127.0.0.1".parse().unwrap(),
        broker_ip1: Some("127.0.0.1".into()),
        listen_port: 0,
        namesrv_addr: Some(namesrv.local_addr().to_string()),
        store_path_root_dir: dir.path().join("store"),
        tls,
        ..BrokerConfig::default()
    })
    .await
    .unwrap();

    let namesrv_addr = namesrv.local_addr().to_string();
    let client = RemotingClient::connect_with(&namesrv_addr, TIMEOUT, true)
        .await
        .unwrap();
    let Reply::ClusterInfo(info) = client
        .invoke(&Request::GetBrokerClusterInfo, TIMEOUT)
        .await
        .unwrap()
    else {
        panic!("no cluster info");
    };
    let broker_addr = broker.local_addr().to_string();
    let addrs: Vec<_> = info
        .broker_addr_table
        .values()
        .flat_map(|b| b.broker_addrs.values())
        .collect();
    assert!(addrs.iter().any(|a| **a == broker_addr), "{addrs:?}");

    let tls_client = RemotingClient::connect_with(&broker_addr, TIMEOUT, true)
        .await
        .unwrap();
    assert!(tls_client
        .invoke(&Request::GetBrokerClusterInfo, TIMEOUT)
        .await
        .is_ok());
    for addr in [&namesrv_addr, &broker_addr] {
        let plain = RemotingClient::connect(addr, TIMEOUT).await.unwrap();
        assert!(
            plain
                .invoke(&Request::GetBrokerClusterInfo, TIMEOUT)
                .await
                .is_err(),
            "{addr} answered a plain client"
        );
    }
    broker.shutdown().await;
    namesrv.shutdown().await;
}
