//! [`Skiff`], a `testcontainers` image of Skiff, the RocketMQ-compatible broker: a name server
//! and a broker in one container, for integration tests of code that talks to RocketMQ.
//!
//! ```no_run
//! use testcontainers::clients::Cli;
//! use testcontainers_skiff::Skiff;
//!
//! let docker = Cli::default();
//! let skiff = Skiff::default();
//! let namesrv = skiff.namesrv_addr(); // e.g. "127.0.0.1:40123", for the client under test
//! let _container = docker.run(skiff.runnable());
//! // ... the broker is registered with the name server: send and consume through `namesrv`.
//! ```
//!
//! The image (`skiff:latest`, built locally by `scripts/image.sh`) is never pulled. The container
//! uses the host network: a RocketMQ broker publishes its own address through the name server and
//! clients connect to it, so that address must be reachable from the test with the port the
//! broker listens on. Both ports are picked free on the host, so tests can run side by side.
//!
//! It owns no protocol knowledge: readiness is the line `skiff standalone` prints once the
//! broker has registered with the name server.
//!
//! Built on testcontainers 0.15, the newest release that drives the `docker` CLI: later releases
//! speak the Engine API at version 1.44 or newer, which Docker 20.10 (Debian bookworm) refuses.

use std::collections::HashMap;
use std::net::TcpListener;

use testcontainers::core::WaitFor;
use testcontainers::{Image, RunnableImage};

/// What `skiff standalone` prints once its broker is registered with its name server.
pub const READY_LINE: &str = "standalone is ready.";

/// The Skiff image with free host ports chosen for its name server and broker.
#[derive(Debug, Clone)]
pub struct Skiff {
    name: String,
    tag: String,
    namesrv_port: u16,
    broker_port: u16,
    env: HashMap<String, String>,
}

impl Default for Skiff {
    /// `skiff:latest`, or the image named by `SKIFF_IMAGE` (`name:tag`).
    fn default() -> Self {
        let image = std::env::var("SKIFF_IMAGE")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| "skiff:latest".into());
        let (name, tag) = image.rsplit_once(':').unwrap_or((image.as_str(), "latest"));
        Skiff::image(name, tag)
    }
}

impl Skiff {
    /// Another build of the image, e.g. `Skiff::image("skiff", "dev")`.
    pub fn image(name: &str, tag: &str) -> Self {
        // The broker binds its port and the next one (the HA port slaves connect to).
        let broker_port = free_ports(2, None);
        let namesrv_port = free_ports(1, Some(broker_port));
        let env = HashMap::from([
            (
                "SKIFF_NAMESRV_LISTEN".to_string(),
                format!("127.0.0.1:{namesrv_port}"),
            ),
            (
                "SKIFF_BROKER_LISTEN".to_string(),
                format!("127.0.0.1:{broker_port}"),
            ),
            ("SKIFF_brokerIP1".to_string(), "127.0.0.1".to_string()),
        ]);
        Skiff {
            name: name.to_string(),
            tag: tag.to_string(),
            namesrv_port,
            broker_port,
            env,
        }
    }

    /// Any broker setting in Apache RocketMQ's name, e.g. `with_setting("flushDiskType",
    /// "SYNC_FLUSH")` (the image reads `SKIFF_<key>`).
    pub fn with_setting(mut self, key: &str, value: &str) -> Self {
        self.env.insert(format!("SKIFF_{key}"), value.to_string());
        self
    }

    /// The name server address for RocketMQ clients.
    pub fn namesrv_addr(&self) -> String {
        format!("127.0.0.1:{}", self.namesrv_port)
    }

    /// The broker address, as registered with the name server.
    pub fn broker_addr(&self) -> String {
        format!("127.0.0.1:{}", self.broker_port)
    }

    /// The image on the host network, ready to `run`.
    pub fn runnable(self) -> RunnableImage<Skiff> {
        RunnableImage::from(self).with_network("host")
    }
}

impl Image for Skiff {
    type Args = ();

    fn name(&self) -> String {
        self.name.clone()
    }

    fn tag(&self) -> String {
        self.tag.clone()
    }

    fn ready_conditions(&self) -> Vec<WaitFor> {
        vec![WaitFor::message_on_stdout(READY_LINE)]
    }

    fn env_vars(&self) -> Box<dyn Iterator<Item = (&String, &String)> + '_> {
        Box::new(self.env.iter())
    }
}

/// The first of `n` consecutive loopback ports nothing listens on right now (the container binds
/// them a moment later), none within 1 of `avoid`. They are drawn below the kernel's ephemeral
/// range (32768 and up by default): a port from that range goes to the next outgoing connection
/// of any process, so another test's client could take it before the container binds it.
fn free_ports(n: u16, avoid: Option<u16>) -> u16 {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new();
    for attempt in 0..200u32 {
        let first = 20_000 + (random.hash_one(attempt) % u64::from(12_000 - n)) as u16;
        let clash = avoid.is_some_and(|a| a + 1 >= first && a <= first + n);
        let all_bind = || {
            (first..first + n)
                .map(|port| TcpListener::bind(("127.0.0.1", port)))
                .collect::<std::io::Result<Vec<_>>>()
                .is_ok()
        };
        if !clash && all_bind() {
            return first;
        }
    }
    panic!("no {n} free loopback ports between 20000 and 32000")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_skiff_variables_and_ports_differ() {
        let skiff = Skiff::image("skiff", "dev").with_setting("flushDiskType", "SYNC_FLUSH");
        let env: HashMap<_, _> = skiff.env_vars().collect();
        assert_eq!(env[&"SKIFF_flushDiskType".to_string()], "SYNC_FLUSH");
        assert_eq!(
            env[&"SKIFF_NAMESRV_LISTEN".to_string()],
            &skiff.namesrv_addr()
        );
        assert_ne!(skiff.namesrv_addr(), skiff.broker_addr());
        assert_eq!((skiff.name(), skiff.tag()), ("skiff".into(), "dev".into()));
    }
}
