//! The Kafka wire protocol, the subset Skiff serves: frames, request headers, the APIs and
//! versions Skiff advertises, and record batches ([`records`]).
//!
//! A frame is a 4-byte big-endian size and that many bytes ([`frame_codec`] cuts requests,
//! refusing sizes over the listener's limit before buffering; [`encode_response`] writes replies
//! whole, size included). A request frame starts with a header
//! (api key, api version, correlation id, client id, and tagged fields for flexible versions);
//! its body's schema depends on the key and version. [`decode_request`] reads both, using the
//! `kafka-protocol` crate for the message schemas after `guard` has checked the body's array
//! counts, and [`encode_response`] writes a reply with the response header version the request's
//! version calls for (v0 always for ApiVersions, KIP-511).
//!
//! Only what Skiff serves is advertised ([`SERVED`]). A request of another key or version
//! closes the connection, as Kafka does, except ApiVersions at a newer version than Skiff's,
//! which gets Kafka's v0 answer (UNSUPPORTED_VERSION with Skiff's range) so that the client
//! retries at a version both know.
//!
//! This module knows no broker: which topics exist and what a fetch returns are the server's.

mod guard;
pub mod records;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use tokio_util::codec::LengthDelimitedCodec;

pub use kafka_protocol::messages as schema;
pub use kafka_protocol::protocol::StrBytes;

/// Kafka error codes Skiff answers with.
pub mod error {
    pub const NONE: i16 = 0;
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    pub const CORRUPT_MESSAGE: i16 = 2;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub const LEADER_NOT_AVAILABLE: i16 = 5;
    pub const REQUEST_TIMED_OUT: i16 = 7;
    pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const NOT_COORDINATOR: i16 = 16;
    pub const MESSAGE_TOO_LARGE: i16 = 10;
    pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
    pub const NOT_ENOUGH_REPLICAS: i16 = 19;
    pub const INVALID_REQUIRED_ACKS: i16 = 21;
    pub const ILLEGAL_GENERATION: i16 = 22;
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
    pub const INVALID_GROUP_ID: i16 = 24;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const INVALID_SESSION_TIMEOUT: i16 = 26;
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
    pub const TOPIC_ALREADY_EXISTS: i16 = 36;
    pub const INVALID_PARTITIONS: i16 = 37;
    pub const INVALID_REPLICATION_FACTOR: i16 = 38;
    pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
    pub const UNSUPPORTED_VERSION: i16 = 35;
    pub const INVALID_REQUEST: i16 = 42;
    pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = 43;
    pub const KAFKA_STORAGE_ERROR: i16 = 56;
    pub const UNKNOWN_SERVER_ERROR: i16 = -1;
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
    pub const INVALID_PRODUCER_EPOCH: i16 = 47;
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
    pub const NON_EMPTY_GROUP: i16 = 68;
    pub const TOPIC_DELETION_DISABLED: i16 = 73;
    pub const GROUP_ID_NOT_FOUND: i16 = 69;
    pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
    pub const MEMBER_ID_REQUIRED: i16 = 79;
    pub const FENCED_INSTANCE_ID: i16 = 82;
    pub const INVALID_RECORD: i16 = 87;
}

/// Largest frame of any API but Produce: the others are a few hundred bytes, and a decoded
/// request takes several times its frame's size.
pub const MAX_NON_PRODUCE_FRAME: usize = 1 << 20;

/// Cuts the byte stream into frames of at most `max_frame_len` bytes (Kafka's
/// `socket.request.max.bytes`); a longer one is an error, reported before it is buffered.
pub fn frame_codec(max_frame_len: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(max_frame_len)
        .new_codec()
}

/// The table of served APIs, declared once: each line gives the variant of [`Request`] and
/// [`Response`], the API key, the versions advertised (min, max) and the two schemas; the enums,
/// [`SERVED`], the decoding and the encoding are generated from it.
macro_rules! served_apis {
    ($($variant:ident: $key:ident $min:literal..=$max:literal, $request:ident => $response:ident;)*) => {
        /// The APIs Skiff serves with the versions it advertises (min, max).
        pub const SERVED: &[(ApiKey, i16, i16)] = &[$((ApiKey::$key, $min, $max),)*];

        /// A request Skiff serves, decoded.
        #[derive(Debug)]
        pub enum Request {
            $($variant(schema::$request),)*
        }

        /// A response to one of the [`Request`]s.
        #[derive(Debug)]
        pub enum Response {
            $($variant(schema::$response),)*
        }

        fn decode_body(
            api: ApiKey,
            version: i16,
            buf: &mut Bytes,
        ) -> Option<anyhow::Result<Request>> {
            Some(match api {
                $(ApiKey::$key => schema::$request::decode(buf, version).map(Request::$variant),)*
                _ => return None,
            })
        }

        fn encode_body(response: &Response, buf: &mut BytesMut, version: i16) -> anyhow::Result<()> {
            match response {
                $(Response::$variant(r) => r.encode(buf, version),)*
            }
        }

        fn body_size(response: &Response, version: i16) -> anyhow::Result<usize> {
            match response {
                $(Response::$variant(r) => r.compute_size(version),)*
            }
        }
    };
}

// Produce starts at 0 as Kafka 4 advertises it (librdkafka before 2.11.1 enables compression only
// when v0 is in the range); v0–2 carry message sets of magic 0/1, which are refused. The maxima
// stay below the versions that name topics by id (Fetch 13, Produce 13, OffsetCommit and
// OffsetFetch 10) and below FindCoordinator's share-group keys.
served_apis! {
    Produce: Produce 0..=11, ProduceRequest => ProduceResponse;
    Fetch: Fetch 4..=12, FetchRequest => FetchResponse;
    ListOffsets: ListOffsets 1..=7, ListOffsetsRequest => ListOffsetsResponse;
    Metadata: Metadata 0..=12, MetadataRequest => MetadataResponse;
    OffsetCommit: OffsetCommit 2..=9, OffsetCommitRequest => OffsetCommitResponse;
    OffsetFetch: OffsetFetch 1..=9, OffsetFetchRequest => OffsetFetchResponse;
    FindCoordinator: FindCoordinator 0..=4, FindCoordinatorRequest => FindCoordinatorResponse;
    JoinGroup: JoinGroup 0..=9, JoinGroupRequest => JoinGroupResponse;
    Heartbeat: Heartbeat 0..=4, HeartbeatRequest => HeartbeatResponse;
    LeaveGroup: LeaveGroup 0..=5, LeaveGroupRequest => LeaveGroupResponse;
    SyncGroup: SyncGroup 0..=5, SyncGroupRequest => SyncGroupResponse;
    DescribeGroups: DescribeGroups 0..=5, DescribeGroupsRequest => DescribeGroupsResponse;
    ListGroups: ListGroups 0..=4, ListGroupsRequest => ListGroupsResponse;
    ApiVersions: ApiVersions 0..=4, ApiVersionsRequest => ApiVersionsResponse;
    InitProducerId: InitProducerId 0..=5, InitProducerIdRequest => InitProducerIdResponse;
    CreateTopics: CreateTopics 2..=7, CreateTopicsRequest => CreateTopicsResponse;
    DeleteTopics: DeleteTopics 1..=6, DeleteTopicsRequest => DeleteTopicsResponse;
    DescribeConfigs: DescribeConfigs 1..=4, DescribeConfigsRequest => DescribeConfigsResponse;
}

/// What a response needs of its request: which schema and version, and the correlation id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyTo {
    pub api_key: ApiKey,
    pub version: i16,
    pub correlation_id: i32,
}

/// A decoded request frame.
#[derive(Debug)]
pub enum Decoded {
    Request {
        reply_to: ReplyTo,
        client_id: Option<String>,
        /// Boxed: a decoded request is a few hundred bytes, the other variant a few.
        request: Box<Request>,
    },
    /// ApiVersions at a version above Skiff's: answer [`api_versions_too_new`] (`reply_to` is
    /// already set to version 0).
    ApiVersionsTooNew { reply_to: ReplyTo },
}

/// A frame the connection cannot go on after; it is closed.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("API key {0} is not served")]
    UnknownApi(i16),
    #[error("{api:?} version {version} is not served")]
    UnsupportedVersion { api: ApiKey, version: i16 },
    #[error("{api:?} request of {len} bytes is over the {MAX_NON_PRODUCE_FRAME}-byte limit")]
    TooLong { api: ApiKey, len: usize },
    #[error("malformed request: {0}")]
    Malformed(String),
}

/// The advertised range of `api_key`, if Skiff serves it.
pub fn served(api_key: ApiKey) -> Option<(i16, i16)> {
    SERVED
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}

/// Decodes one frame (without its size prefix).
pub fn decode_request(frame: Bytes) -> Result<Decoded, DecodeError> {
    if frame.len() < 8 {
        return Err(DecodeError::Malformed(format!(
            "a frame of {} bytes has no header",
            frame.len()
        )));
    }
    let key = (&frame[0..2]).get_i16();
    let version = (&frame[2..4]).get_i16();
    let api = ApiKey::try_from(key).map_err(|()| DecodeError::UnknownApi(key))?;
    let (min, max) = served(api).ok_or(DecodeError::UnknownApi(key))?;
    if api == ApiKey::ApiVersions && version > max {
        return Ok(Decoded::ApiVersionsTooNew {
            reply_to: ReplyTo {
                api_key: api,
                version: 0,
                correlation_id: (&frame[4..8]).get_i32(),
            },
        });
    }
    // Produce v0-2 would carry message sets of magic 0 or 1.
    if version < min.max(if api == ApiKey::Produce { 3 } else { 0 }) || version > max {
        return Err(DecodeError::UnsupportedVersion { api, version });
    }
    if api != ApiKey::Produce && frame.len() > MAX_NON_PRODUCE_FRAME {
        return Err(DecodeError::TooLong {
            api,
            len: frame.len(),
        });
    }
    let malformed =
        |err: anyhow::Error| DecodeError::Malformed(format!("{api:?} v{version}: {err}"));
    let mut buf = frame;
    let header =
        RequestHeader::decode(&mut buf, api.request_header_version(version)).map_err(malformed)?;
    guard::check(api, version, &buf)
        .map_err(|why| DecodeError::Malformed(format!("{api:?} v{version}: {why}")))?;
    let request = decode_body(api, version, &mut buf)
        .ok_or(DecodeError::UnknownApi(key))?
        .map_err(malformed)?;
    Ok(Decoded::Request {
        reply_to: ReplyTo {
            api_key: api,
            version,
            correlation_id: header.correlation_id,
        },
        client_id: header.client_id.map(|id| id.to_string()),
        request: Box::new(request),
    })
}

/// The ApiVersions answer: every served API with its range, error 0.
pub fn api_versions() -> ApiVersionsResponse {
    let mut response = ApiVersionsResponse::default();
    response.api_keys = SERVED
        .iter()
        .map(|(key, min, max)| {
            ApiVersion::default()
                .with_api_key(*key as i16)
                .with_min_version(*min)
                .with_max_version(*max)
        })
        .collect();
    response
}

/// Kafka's answer to an ApiVersions request newer than the broker's: UNSUPPORTED_VERSION with
/// only ApiVersions' own range, encoded at version 0.
pub fn api_versions_too_new() -> ApiVersionsResponse {
    let (min, max) = served(ApiKey::ApiVersions).expect("ApiVersions is served");
    let mut response = ApiVersionsResponse::default();
    response.error_code = error::UNSUPPORTED_VERSION;
    response.api_keys = vec![ApiVersion::default()
        .with_api_key(ApiKey::ApiVersions as i16)
        .with_min_version(min)
        .with_max_version(max)];
    response
}

/// Encodes a whole response frame, its 4-byte size first, into one buffer allocated at its
/// size: a Fetch answer of megabytes is copied once here, and the connection's writer sends it
/// as it is (no growing buffer, no second copy into a write buffer).
pub fn encode_response(reply_to: &ReplyTo, response: &Response) -> Result<Bytes, String> {
    let version = reply_to.version;
    let header_version = reply_to.api_key.response_header_version(version);
    let header = ResponseHeader::default().with_correlation_id(reply_to.correlation_id);
    let context = |err: anyhow::Error| format!("{:?} v{version}: {err}", reply_to.api_key);
    let size = header.compute_size(header_version).map_err(context)?
        + body_size(response, version).map_err(context)?;
    let mut buf = BytesMut::with_capacity(4 + size);
    buf.extend_from_slice(&[0; 4]);
    header.encode(&mut buf, header_version).map_err(context)?;
    encode_body(response, &mut buf, version).map_err(context)?;
    // The size written is the size encoded (compute_size only sized the buffer).
    let len = buf.len() - 4;
    let prefix = i32::try_from(len).map_err(|_| format!("a response of {len} bytes"))?;
    buf[..4].copy_from_slice(&prefix.to_be_bytes());
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests;
