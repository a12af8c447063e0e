//! The compatibility harness: it runs the **official** Apache RocketMQ Java clients (4.9.8 and
//! 5.3.3, fetched from Maven Central) against a broker, either Skiff (`skiff standalone`) or the
//! real Apache RocketMQ broker, so that every scenario can first be proven against Apache RocketMQ
//! and then serve as an acceptance test for Skiff. The official Go client (`rocketmq-client-go/v2`
//! 2.1.2, from the Go module proxy) runs its own scenarios the same way ([`golang`]), and so do
//! three Kafka client families against the Kafka listener, Skiff's or Apache Kafka's ([`kafka`],
//! [`kafka_clients`]). It knows
//! Skiff only as a process with ports and a data directory: no Skiff crate is a dependency, and the
//! few remoting frames it writes itself (readiness probe, bad-input tests) are built by hand in
//! [`remoting`].
//!
//! See `compat-tests/README.md` for how to run it and what each scenario proves.

pub mod broker_files;
pub mod container;
pub mod golang;
pub mod ha;
pub mod java;
pub mod kafka;
pub mod kafka_clients;
pub mod process;
pub mod remoting;
pub mod runtime;
pub mod settings;
pub mod suite;
pub mod target;
pub mod tls;
