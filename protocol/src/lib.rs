//! Skiff's wire codecs.
//!
//! This crate owns the byte layouts clients put on the wire and the mapping between them and the
//! protocol-neutral command model of `skiff-model`: the RocketMQ remoting frame with its JSON and
//! ROCKETMQ binary headers, the request codes and header fields that become a
//! [`skiff_model::command::Request`], the response codes, fields and bodies a
//! [`skiff_model::command::Reply`] becomes ([`remoting`]), and the fastjson dialect Java RocketMQ
//! writes bodies and config files in ([`fastjson`]); and the Kafka subset ([`kafka`]): frames,
//! headers and the served APIs' schemas, and record batches read into
//! [`skiff_model::keyed::KeyedRecord`]s; and compressed message bodies ([`compression`]); and the
//! master/slave replication stream's reports and transfer frames ([`ha`]). It is pure
//! translation: it must not know the store, sockets, connections or handlers, so everything here
//! is testable on bytes alone.

pub mod compression;
pub mod fastjson;
pub mod ha;
pub mod kafka;
pub mod remoting;
