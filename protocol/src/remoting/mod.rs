//! The RocketMQ remoting protocol: frames ([`RemotingCodec`]), their headers, and the mapping of
//! request codes and fields to [`skiff_model::command::Request`] and of
//! [`skiff_model::command::Reply`] to response codes, fields and bodies.
//!
//! Server side: decode frames with [`RemotingCodec`], turn each into a request with
//! [`decode_request`] (its `Err` is already the reply to send), and answer with [`encode_reply`].
//! Client side (Skiff's tools, broker → name server, broker → consumer): [`encode_request`] and
//! [`decode_reply`].

pub mod access;
mod admin;
mod body;
pub mod codes;
mod command;
mod fields;
mod frame;
mod header;
mod pop;
mod reply;
mod request;

pub use access::access_request;
pub use body::{parse_client_consumer_status, register_broker_body_len};
pub use command::{Body, LanguageCode, RemotingCommand, SerializeType, FLAG_ONEWAY, FLAG_RESPONSE};
pub use frame::{decode_frame, encode_frame, CodecError, RemotingCodec};
pub use reply::{decode_reply, encode_reply, encode_reply_to, ReplyDecodeError, ReplyTo};
pub use request::{decode_request, encode_request, request_code, request_name};

/// Largest frame accepted, length field included (Java's `frameMaxLength` default).
pub const DEFAULT_MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

/// Version ordinal Skiff puts in every header it writes (MQVersion V5_3_3 = 479).
pub const SKIFF_VERSION: i32 = 479;
