//! `skiff health`: is a standalone Skiff serving? It asks the name server which brokers are
//! registered and sends the broker a heartbeat, as a client would, so it is a real readiness check
//! (a container image made `FROM scratch` has no shell or curl to do it) rather than a port probe.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use skiff_model::command::{Reply, Request};
use skiff_model::consumer::HeartbeatData;
use skiff_model::route::{ClusterInfo, MASTER_ID};
use skiff_server::remoting_client::RemotingClient;

use crate::bench::parse_duration;
use crate::serve::reachable;

#[derive(Debug, Args)]
#[command(after_long_help = "\
Examples:
  Check the standalone Skiff on the default ports:
    skiff health
  Check one on other ports, giving up after 500 ms:
    skiff health --namesrv 127.0.0.1:19876 --broker 127.0.0.1:20911 --timeout 500ms

Healthy means: the name server answers and lists a master broker on the broker's port, and that \
broker answers a heartbeat. An all-interfaces address such as 0.0.0.0:9876 (what \
SKIFF_NAMESRV_LISTEN holds in the container image) is checked on loopback. Exit status: 0 healthy, \
1 not (the reason goes to stderr), 2 for a bad command line.")]
pub struct HealthArgs {
    /// Name server address, IP:PORT
    #[arg(
        short = 'n',
        long,
        value_name = "ADDR",
        env = "SKIFF_NAMESRV_LISTEN",
        default_value = "127.0.0.1:9876"
    )]
    pub namesrv: SocketAddr,

    /// Broker address, IP:PORT
    #[arg(
        short = 'b',
        long,
        value_name = "ADDR",
        env = "SKIFF_BROKER_LISTEN",
        default_value = "127.0.0.1:10911"
    )]
    pub broker: SocketAddr,

    /// Give up after this long (500ms, 2s, ...)
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "2s")]
    pub timeout: Duration,
}

pub async fn run(args: HealthArgs) -> ExitCode {
    let namesrv = reachable(args.namesrv);
    let broker = reachable(args.broker);
    match tokio::time::timeout(args.timeout, check(namesrv, broker, args.timeout)).await {
        Ok(Ok(report)) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Ok(Err(err)) => {
            eprintln!("skiff health: not healthy: {}", describe(&err));
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!(
                "skiff health: not healthy: no answer from {namesrv} and {broker} within {:?}",
                args.timeout
            );
            ExitCode::FAILURE
        }
    }
}

async fn check(namesrv: SocketAddr, broker: SocketAddr, timeout: Duration) -> Result<String> {
    let ns = RemotingClient::connect(&namesrv.to_string(), timeout)
        .await
        .with_context(|| format!("name server {namesrv}"))?;
    let reply = ns
        .invoke(&Request::GetBrokerClusterInfo, timeout)
        .await
        .with_context(|| format!("asking the name server at {namesrv} for its brokers"))?;
    let Reply::ClusterInfo(info) = reply else {
        bail!("the name server at {namesrv} answered cluster info with {reply:?}");
    };
    let Some((name, published)) = registered_on_port(&info, broker.port()) else {
        bail!(
            "the name server at {namesrv} lists no master broker on port {} (it lists: {})",
            broker.port(),
            masters(&info).join(", ")
        );
    };
    let client = RemotingClient::connect(&broker.to_string(), timeout)
        .await
        .with_context(|| format!("broker {broker}"))?;
    let heartbeat = Request::Heartbeat(HeartbeatData {
        client_id: format!("skiff-health@{}", std::process::id()),
        ..HeartbeatData::default()
    });
    match client.invoke(&heartbeat, timeout).await {
        Ok(Reply::Success) => Ok(format!(
            "healthy: broker {name} at {published} is registered with the name server at \
             {namesrv} and answers heartbeats on {broker}"
        )),
        Ok(other) => bail!("the broker at {broker} answered a heartbeat with {other:?}"),
        Err(err) => Err(err).with_context(|| format!("heartbeat to the broker at {broker}")),
    }
}

/// The error and its causes, each once: client errors already include their cause in their text.
pub(crate) fn describe(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause);
        }
    }
    text
}

/// The name and published address of a master broker registered on `port`. The published IP
/// (brokerIP1) may differ from the one the check connects to (loopback), the port does not.
fn registered_on_port(info: &ClusterInfo, port: u16) -> Option<(String, String)> {
    let suffix = format!(":{port}");
    info.broker_addr_table.iter().find_map(|(name, data)| {
        data.broker_addrs
            .get(&MASTER_ID)
            .filter(|addr| addr.ends_with(&suffix))
            .map(|addr| (name.clone(), addr.clone()))
    })
}

fn masters(info: &ClusterInfo) -> Vec<String> {
    let all: Vec<String> = info
        .broker_addr_table
        .iter()
        .filter_map(|(name, data)| {
            let addr = data.broker_addrs.get(&MASTER_ID)?;
            Some(format!("{name} at {addr}"))
        })
        .collect();
    if all.is_empty() {
        vec!["no broker".into()]
    } else {
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_model::route::BrokerData;

    fn info(brokers: &[(&str, i64, &str)]) -> ClusterInfo {
        let mut info = ClusterInfo::default();
        for (name, id, addr) in brokers {
            info.broker_addr_table.insert(
                name.to_string(),
                BrokerData {
                    broker_name: name.to_string(),
                    broker_addrs: [(*id, addr.to_string())].into(),
                    ..BrokerData::default()
                },
            );
        }
        info
    }

    #[test]
    fn causes_already_in_the_text_are_not_repeated() {
        let io = std::io::Error::other("Connection refused");
        let err = anyhow::Error::new(io)
            .context("cannot connect to 127.0.0.1:9876: Connection refused")
            .context("name server 127.0.0.1:9876");
        assert_eq!(
            describe(&err),
            "name server 127.0.0.1:9876: cannot connect to 127.0.0.1:9876: Connection refused"
        );
    }

    #[test]
    fn a_master_on_the_port_counts_whatever_ip_it_publishes() {
        let info = info(&[("broker-a", MASTER_ID, "10.0.0.5:10911")]);
        assert_eq!(
            registered_on_port(&info, 10911),
            Some(("broker-a".into(), "10.0.0.5:10911".into()))
        );
    }

    #[test]
    fn slaves_and_other_ports_do_not_count() {
        let info = info(&[
            ("broker-a", 1, "127.0.0.1:10911"),
            ("broker-b", MASTER_ID, "127.0.0.1:109110"),
        ]);
        assert_eq!(registered_on_port(&info, 10911), None);
        assert_eq!(masters(&info), ["broker-b at 127.0.0.1:109110"]);
        assert_eq!(masters(&ClusterInfo::default()), ["no broker"]);
    }
}
