//! A name server and a broker on ephemeral loopback ports, for cross-module tests.

// Every test binary compiles this module and uses a different part of it.
#![allow(dead_code)]

use std::time::Duration;

use skiff_server::broker::Broker;
use skiff_server::config::{BrokerConfig, NamesrvConfig};
use skiff_server::namesrv::NameServer;
use skiff_server::remoting_client::RemotingClient;

pub const TIMEOUT: Duration = Duration::from_secs(5);

pub struct Cluster {
    pub namesrv: NameServer,
    pub broker: Broker,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts both; `tune` adjusts the broker config (its store lives in a temp dir).
    pub async fn start(tune: impl FnOnce(&mut BrokerConfig)) -> Cluster {
        Cluster::start_with(|_| {}, tune).await
    }

    /// [`Cluster::start`], with `tune_namesrv` adjusting the name server's config too.
    pub async fn start_with(
        tune_namesrv: impl FnOnce(&mut NamesrvConfig),
        tune: impl FnOnce(&mut BrokerConfig),
    ) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut namesrv_config = NamesrvConfig {
            bind_address: "127.0.0.1".parse().unwrap(),
            listen_port: 0,
            ..NamesrvConfig::default()
        };
        tune_namesrv(&mut namesrv_config);
        let namesrv = NameServer::start(namesrv_config).await.unwrap();
        let mut config = BrokerConfig {
            bind_address: "127.0.0.1".parse().unwrap(),
            broker_ip1: Some("127.0.0.1".into()),
            listen_port: 0,
            namesrv_addr: Some(namesrv.local_addr().to_string()),
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        tune(&mut config);
        let broker = Broker::start(config).await.unwrap();
        Cluster {
            namesrv,
            broker,
            _dir: dir,
        }
    }

    /// Another broker group, `broker_name`, registered with the same name server (stop it
    /// before the cluster; its store lives in the returned temp dir).
    pub async fn add_broker(&self, broker_name: &str) -> (Broker, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            bind_address: "127.0.0.1".parse().unwrap(),
            broker_ip1: Some("127.0.0.1".into()),
            listen_port: 0,
            broker_name: broker_name.into(),
            namesrv_addr: Some(self.namesrv.local_addr().to_string()),
            store_path_root_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        (Broker::start(config).await.unwrap(), dir)
    }

    /// The broker's data directory (`storePathRootDir`).
    pub fn store_dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    pub async fn broker_client(&self) -> RemotingClient {
        RemotingClient::connect(&self.broker.local_addr().to_string(), TIMEOUT)
            .await
            .unwrap()
    }

    pub async fn namesrv_client(&self) -> RemotingClient {
        RemotingClient::connect(&self.namesrv.local_addr().to_string(), TIMEOUT)
            .await
            .unwrap()
    }

    /// The name server's route of `topic`.
    pub async fn route(&self, topic: &str) -> skiff_model::route::TopicRouteData {
        let request = skiff_model::command::Request::GetRouteInfo {
            topic: topic.into(),
        };
        match self.namesrv_client().await.invoke(&request, TIMEOUT).await {
            Ok(skiff_model::command::Reply::Route(route)) => route,
            other => panic!("no route of {topic}: {other:?}"),
        }
    }

    /// Stops only the broker; the name server keeps serving (and its temp dir is kept).
    pub async fn stop_broker(self) -> (NameServer, tempfile::TempDir) {
        self.broker.shutdown().await;
        (self.namesrv, self._dir)
    }

    pub async fn stop(self) {
        self.broker.shutdown().await;
        self.namesrv.shutdown().await;
    }
}

/// A one-message SEND_MESSAGE that creates `topic` (4 queues, from TBW102) if the broker lacks it,
/// as the Java producer's first send does.
pub fn auto_creating_send(producer_group: &str, topic: &str) -> skiff_model::command::Request {
    use skiff_model::command::{AutoCreateTopic, Request, SendRequest};
    use skiff_model::message::{Message, Properties};
    Request::Send(SendRequest {
        producer_group: producer_group.into(),
        topic: topic.into(),
        queue_id: 0,
        auto_create: Some(AutoCreateTopic {
            template_topic: "TBW102".into(),
            queue_nums: 4,
        }),
        messages: vec![Message {
            flag: 0,
            body: bytes::Bytes::from_static(b"x"),
            properties: Properties::new(),
        }],
        ..SendRequest::default()
    })
}
