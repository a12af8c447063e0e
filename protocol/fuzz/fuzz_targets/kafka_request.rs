//! Feeds arbitrary bytes to the Kafka request decoder as one frame's content, as a hostile or
//! broken Kafka client would send it. Decoding must never panic nor allocate far beyond the
//! frame (libFuzzer's RSS limit catches an array count taken on trust); a decoded ApiVersions
//! must encode its answer.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use skiff_protocol::kafka::{self, Decoded, Response};

fuzz_target!(|data: &[u8]| {
    match kafka::decode_request(Bytes::copy_from_slice(data)) {
        Ok(Decoded::ApiVersionsTooNew { reply_to }) => {
            let answer = Response::ApiVersions(kafka::api_versions_too_new());
            kafka::encode_response(&reply_to, &answer).unwrap();
        }
        Ok(Decoded::Request { reply_to, .. }) if reply_to.api_key == kafka::schema::ApiKey::ApiVersions => {
            let answer = Response::ApiVersions(kafka::api_versions());
            kafka::encode_response(&reply_to, &answer).unwrap();
        }
        _ => {}
    }
});
