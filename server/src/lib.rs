//! Skiff's name server and broker.
//!
//! This crate owns what happens between a decoded request and a reply: the name server's route
//! tables and broker liveness ([`namesrv`]), and the broker ([`broker`]) — send, pull with long
//! polling, consumer offsets, heartbeats and consumer groups, topic and subscription-group config
//! persisted under `config/`, administration, and registration with name servers. [`config`] reads
//! broker and name server settings (TOML or Java `broker.conf`, with Java's key names). [`net`] serves
//! connections (framing through the codec, concurrent handling, replies and server-initiated
//! requests), [`tls`] adds TLS to both (`tls.server.mode`), and [`remoting_client`] is the small client the broker and the tools use to talk to
//! other nodes.
//!
//! It must not know wire layouts — request codes, header fields and body formats belong to
//! `skiff-protocol` — nor file formats of the message store, which belong to `skiff-store`.

pub mod acl;
pub mod broker;
pub mod config;
pub mod namesrv;
pub mod net;
pub mod remoting_client;
pub mod tls;
