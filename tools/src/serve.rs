//! Running servers: start, say where they listen, wait for a stop signal, stop in order (broker
//! first, so it can unregister and flush while the name server still answers) within bounded time.

use std::fmt;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use skiff_server::broker::Broker;
use skiff_server::config::{BrokerConfig, ConfigError};
use skiff_server::namesrv::NameServer;
use tracing::{info, warn};

use crate::cli::{BrokerArgs, NamesrvArgs, StandaloneArgs};
use crate::settings;
use crate::signals::StopSignals;

/// How long the broker may take to unregister, answer held pulls and flush.
const BROKER_STOP: Duration = Duration::from_secs(8);
const NAMESRV_STOP: Duration = Duration::from_secs(2);

/// Why the process ends unsuccessfully; decides the exit status.
#[derive(Debug)]
pub enum Failure {
    Config(ConfigError),
    Signals(std::io::Error),
    Start(String),
    Stop(String),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Config(_) => 2,
            Failure::Signals(_) | Failure::Start(_) | Failure::Stop(_) => 1,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Config(err) => write!(f, "{err}"),
            Failure::Signals(err) => write!(f, "cannot watch for Ctrl-C and SIGTERM: {err}"),
            Failure::Start(msg) | Failure::Stop(msg) => f.write_str(msg),
        }
    }
}

impl From<ConfigError> for Failure {
    fn from(err: ConfigError) -> Self {
        Failure::Config(err)
    }
}

pub async fn standalone(args: StandaloneArgs) -> Result<(), Failure> {
    let (namesrv_config, mut broker_config) = settings::standalone(&args)?;
    if broker_config.acl_enable
        && broker_config
            .inner_client_authentication_credentials
            .is_none()
    {
        // The broker registers with the name server next to it as an admin of their shared file.
        let json = skiff_server::acl::standalone_credentials(&broker_config.acl_plain_file)
            .map_err(Failure::Start)?;
        broker_config.inner_client_authentication_credentials = Some(json);
    }
    let signals = StopSignals::install().map_err(Failure::Signals)?;
    let namesrv_bind = SocketAddr::new(namesrv_config.bind_address, namesrv_config.listen_port);
    let namesrv = NameServer::start(namesrv_config)
        .await
        .map_err(|e| start_failure(e, "name server", namesrv_bind, "--namesrv-listen"))?;
    let namesrv_addr = reachable(namesrv.local_addr());
    if let Some(configured) = &broker_config.namesrv_addr {
        warn!("namesrvAddr {configured} replaced by this process's name server, {namesrv_addr}");
    }
    broker_config.namesrv_addr = Some(namesrv_addr.to_string());
    let broker = match Broker::start(broker_config.clone()).await {
        Ok(broker) => broker,
        Err(err) => {
            namesrv.shutdown().await;
            return Err(start_failure(
                err,
                "broker",
                bind_addr(&broker_config),
                "--broker-listen",
            ));
        }
    };
    println!("Skiff {} standalone is ready.", env!("CARGO_PKG_VERSION"));
    println!("  name server  {namesrv_addr}");
    print_broker(&broker_config, broker.local_addr());
    if let Some(kafka) = broker.kafka_addr() {
        println!("  kafka        {}", reachable(kafka));
    }
    println!("Point RocketMQ clients at the name server: namesrvAddr={namesrv_addr}");
    if let Some(kafka) = broker.kafka_addr() {
        println!(
            "Point Kafka clients at the broker: bootstrap.servers={}",
            reachable(kafka)
        );
    }
    println!("Stop with Ctrl-C or SIGTERM.");
    wait_and_stop(signals, Some(broker), Some(namesrv)).await
}

pub async fn namesrv(args: NamesrvArgs) -> Result<(), Failure> {
    let config = settings::namesrv(&args)?;
    let signals = StopSignals::install().map_err(Failure::Signals)?;
    let bind = SocketAddr::new(config.bind_address, config.listen_port);
    let namesrv = NameServer::start(config)
        .await
        .map_err(|e| start_failure(e, "name server", bind, "--listen"))?;
    println!("Skiff {} name server is ready.", env!("CARGO_PKG_VERSION"));
    println!("  name server  {}", namesrv.local_addr());
    println!("Stop with Ctrl-C or SIGTERM.");
    wait_and_stop(signals, None, Some(namesrv)).await
}

pub async fn broker(args: BrokerArgs) -> Result<(), Failure> {
    let config = settings::broker(&args)?;
    let signals = StopSignals::install().map_err(Failure::Signals)?;
    let broker = Broker::start(config.clone())
        .await
        .map_err(|e| start_failure(e, "broker", bind_addr(&config), "--set listenPort=PORT"))?;
    println!("Skiff {} broker is ready.", env!("CARGO_PKG_VERSION"));
    print_broker(&config, broker.local_addr());
    if let Some(kafka) = broker.kafka_addr() {
        println!("  kafka        {kafka}");
    }
    match &config.namesrv_addr {
        Some(addrs) => println!("  name servers {addrs}"),
        None => println!("  name servers none: clients cannot find this broker (set namesrvAddr)"),
    }
    println!("Stop with Ctrl-C or SIGTERM.");
    wait_and_stop(signals, Some(broker), None).await
}

fn print_broker(config: &BrokerConfig, bound: SocketAddr) {
    let published = SocketAddr::new(
        config.advertised_ip().parse().unwrap_or(bound.ip()),
        bound.port(),
    );
    let listening = if published == bound {
        String::new()
    } else {
        format!(" (listening on {bound})")
    };
    println!(
        "  broker       {} in cluster {} at {published}{listening}",
        config.broker_name, config.broker_cluster_name
    );
    println!(
        "  data         {}",
        std::path::absolute(&config.store_path_root_dir)
            .unwrap_or_else(|_| config.store_path_root_dir.clone())
            .display()
    );
}

fn bind_addr(config: &BrokerConfig) -> SocketAddr {
    SocketAddr::new(config.bind_address, config.listen_port)
}

/// An address this host can connect to: loopback when the listener is on all interfaces.
pub(crate) fn reachable(bound: SocketAddr) -> SocketAddr {
    match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), bound.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), bound.port())
        }
        _ => bound,
    }
}

/// Explains the usual reasons a server cannot start, naming the flag that fixes it.
fn start_failure(err: anyhow::Error, what: &str, addr: SocketAddr, flag: &str) -> Failure {
    let io_kind = err
        .chain()
        .find_map(|cause| cause.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    let (ip, port) = (addr.ip(), addr.port());
    Failure::Start(match io_kind {
        Some(ErrorKind::AddrInUse) => {
            format!("port {port} is in use: is another {what} running? use {flag}")
        }
        Some(ErrorKind::AddrNotAvailable) => {
            format!("cannot listen on {ip}: not an address of this host; use {flag}")
        }
        Some(ErrorKind::PermissionDenied) if port < 1024 => {
            format!("port {port} needs privileges: use a port from 1024 up with {flag}")
        }
        _ => format!("the {what} cannot start: {err:#}"),
    })
}

/// Serves until a stop signal, restarting the broker in place whenever UPDATE_BROKER_CONFIG
/// changes its role (a slave promoted by `skiff migrate cutover`, or by hand).
async fn wait_and_stop(
    mut signals: StopSignals,
    mut broker: Option<Broker>,
    namesrv: Option<NameServer>,
) -> Result<(), Failure> {
    let signal = loop {
        let restart = async {
            match &broker {
                Some(broker) => broker.restart_requested().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            signal = signals.next() => break signal,
            config = restart => {
                let Some(old) = broker.take() else { unreachable!("restart without a broker") };
                info!(role = %config.broker_role, broker_id = config.broker_id, "restarting the broker in place with its new role");
                tokio::time::timeout(BROKER_STOP, old.shutdown())
                    .await
                    .map_err(|_| Failure::Stop(format!(
                        "the broker did not stop within {} s for its role change; start it again",
                        BROKER_STOP.as_secs()
                    )))?;
                let started = Broker::start(config.clone())
                    .await
                    .map_err(|e| start_failure(e, "broker", bind_addr(&config), "--set listenPort=PORT"))?;
                println!(
                    "Skiff broker restarted as {} (brokerId {}).",
                    config.broker_role, config.broker_id
                );
                broker = Some(started);
            }
        }
    };
    info!("{signal} received: stopping (again to stop at once)");
    let in_order = async {
        if let Some(broker) = broker {
            tokio::time::timeout(BROKER_STOP, broker.shutdown())
                .await
                .map_err(|_| ("broker", BROKER_STOP))?;
        }
        if let Some(namesrv) = namesrv {
            tokio::time::timeout(NAMESRV_STOP, namesrv.shutdown())
                .await
                .map_err(|_| ("name server", NAMESRV_STOP))?;
        }
        Ok(())
    };
    tokio::select! {
        stopped = in_order => stopped.map_err(|(what, limit)| {
            Failure::Stop(format!("the {what} did not stop within {} s", limit.as_secs()))
        }),
        signal = signals.next() => Err(Failure::Stop(format!(
            "{signal} received again: stopped without waiting for a clean shutdown"
        ))),
    }?;
    info!("stopped");
    Ok(())
}
