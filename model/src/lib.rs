//! The vocabulary every other Skiff crate speaks.
//!
//! This crate owns the **protocol-neutral command model** ([`command`]): what a client asked for
//! (send these messages, pull from this queue, commit this offset, …) and what the broker answers,
//! independent of how the bytes looked on the wire. The RocketMQ remoting codec decodes into it
//! today; the Kafka and gRPC codecs will decode into the same types. It also owns the formats that
//! are shared by the wire and the disk: message properties ([`message`]), the stored message record
//! that is both the CommitLog entry and the pull-response payload ([`record`]), offset message ids,
//! and Java's `String.hashCode` ([`hash`]) that tag codes and index slots depend on, and the SQL92
//! message selector ([`filter`]) that brokers evaluate over message properties, and UTC calendar
//! arithmetic ([`calendar`]) for dates in ids and output. Records as key/value protocols carry
//! them, and how they are stored as RocketMQ messages, are in [`keyed`].
//!
//! It must not know any transport, any request code, any file layout beyond the single record, or
//! any I/O: it is plain data and pure functions so that codecs, store and server can all depend on
//! it without depending on each other.

pub mod acl;
pub mod admin;
pub mod calendar;
pub mod command;
pub mod consumer;
pub mod delay;
pub mod filter;
pub mod hash;
pub mod keyed;
pub mod message;
pub mod pop;
pub mod record;
pub mod retry;
pub mod route;
pub mod static_topic;
pub mod topic;
pub mod transaction;

pub use hash::java_string_hash;
