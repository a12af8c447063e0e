use super::*;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::encode_request_header_into_buffer;

/// A request frame as a client writes it (without the size prefix).
fn frame(api: ApiKey, version: i16, correlation_id: i32, body: impl Encodable) -> Bytes {
    let mut buf = BytesMut::new();
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("producer-1")));
    encode_request_header_into_buffer(&mut buf, &header).unwrap();
    body.encode(&mut buf, version).unwrap();
    buf.freeze()
}

fn metadata(topics: &[&str]) -> MetadataRequest {
    MetadataRequest::default().with_topics(Some(
        topics
            .iter()
            .map(|t| {
                MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(t.to_string()))))
            })
            .collect(),
    ))
}

#[test]
fn requests_decode_at_classic_and_flexible_versions() {
    for version in [0, 1, 8, 9, 12] {
        let decoded = decode_request(frame(ApiKey::Metadata, version, 7, metadata(&["a", "b"])));
        let Ok(Decoded::Request {
            reply_to,
            client_id,
            request,
        }) = decoded
        else {
            panic!("v{version}: {decoded:?}");
        };
        let Request::Metadata(request) = *request else {
            panic!("v{version}: not Metadata");
        };
        assert_eq!(reply_to.correlation_id, 7);
        assert_eq!(reply_to.version, version);
        assert_eq!(client_id.as_deref(), Some("producer-1"));
        assert_eq!(request.topics.unwrap().len(), 2);
    }
}

#[test]
fn unserved_keys_and_versions_close_but_a_newer_api_versions_is_answered() {
    let too_new = frame(ApiKey::ApiVersions, 4, 9, ApiVersionsRequest::default());
    // A client newer than Skiff asks at version 5: only the header is read.
    let mut bumped = too_new.to_vec();
    bumped[2..4].copy_from_slice(&5i16.to_be_bytes());
    let Ok(Decoded::ApiVersionsTooNew { reply_to }) = decode_request(Bytes::from(bumped)) else {
        panic!("ApiVersions v5 is answered");
    };
    assert_eq!((reply_to.version, reply_to.correlation_id), (0, 9));
    let encoded =
        encode_response(&reply_to, &Response::ApiVersions(api_versions_too_new())).unwrap();
    // The frame's size, header v0 (correlation id only), then the v0 body: error code, one api.
    assert_eq!(&encoded[..4], &(encoded.len() as i32 - 4).to_be_bytes());
    assert_eq!(&encoded[4..8], &9i32.to_be_bytes());
    assert_eq!(&encoded[8..10], &error::UNSUPPORTED_VERSION.to_be_bytes());

    // kafka-protocol writes Produce from v3 only; v2 is the same header with another version.
    let mut produce_v2 = frame(ApiKey::Produce, 3, 1, ProduceRequest::default()).to_vec();
    produce_v2[2..4].copy_from_slice(&2i16.to_be_bytes());
    let produce_v2 = Bytes::from(produce_v2);
    assert!(matches!(
        decode_request(produce_v2),
        Err(DecodeError::UnsupportedVersion { version: 2, .. })
    ));
    let mut unknown = frame(ApiKey::Metadata, 1, 1, metadata(&[])).to_vec();
    unknown[0..2].copy_from_slice(&60i16.to_be_bytes()); // DescribeCluster: not served
    assert!(matches!(
        decode_request(Bytes::from(unknown)),
        Err(DecodeError::UnknownApi(60))
    ));
    assert!(decode_request(Bytes::from_static(&[0, 3])).is_err());
}

#[test]
fn an_array_claiming_more_elements_than_bytes_is_refused_before_decoding() {
    // The fuzzed case of kafka-protocol-rs #152: Metadata v0 with 54 million topics in 5 bytes (0x033c0c00).
    let mut request = frame(ApiKey::Metadata, 0, 1, metadata(&[])).to_vec();
    let body_at = request.len() - 4;
    request.truncate(body_at);
    request.extend_from_slice(&[0x03, 0x3c, 0x0c, 0x00, 0xb6]);
    let err = decode_request(Bytes::from(request)).unwrap_err();
    assert!(err.to_string().contains("54266880 elements"), "{err}");
    // The same in a flexible version (a compact array's count is a varint).
    let mut request = frame(ApiKey::Metadata, 12, 1, metadata(&[])).to_vec();
    let header_len = {
        let mut buf = BytesMut::new();
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::Metadata as i16)
            .with_request_api_version(12)
            .with_correlation_id(1)
            .with_client_id(Some(StrBytes::from_static_str("producer-1")));
        encode_request_header_into_buffer(&mut buf, &header).unwrap();
        buf.len()
    };
    request.truncate(header_len);
    request.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(decode_request(Bytes::from(request)).is_err());
}

#[test]
fn every_served_request_decodes_at_every_advertised_version() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    let name = || TopicName(StrBytes::from_static_str("orders"));
    for &(api, min, max) in SERVED {
        for version in min.max(if api == ApiKey::Produce { 3 } else { 0 })..=max {
            let body = match api {
                ApiKey::ApiVersions => frame(api, version, 1, ApiVersionsRequest::default()),
                ApiKey::InitProducerId => frame(api, version, 1, InitProducerIdRequest::default()),
                ApiKey::Metadata => frame(api, version, 1, metadata(&["orders"])),
                ApiKey::Produce => frame(
                    api,
                    version,
                    1,
                    ProduceRequest::default().with_topic_data(vec![TopicProduceData::default()
                        .with_name(name())
                        .with_partition_data(vec![PartitionProduceData::default()
                            .with_index(1)
                            .with_records(Some(Bytes::from_static(b"batch")))])]),
                ),
                ApiKey::Fetch => frame(
                    api,
                    version,
                    1,
                    FetchRequest::default().with_topics(vec![FetchTopic::default()
                        .with_topic(name())
                        .with_partitions(vec![FetchPartition::default().with_partition(2)])]),
                ),
                ApiKey::ListOffsets => frame(
                    api,
                    version,
                    1,
                    ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
                        .with_name(name())
                        .with_partitions(vec![
                            ListOffsetsPartition::default().with_partition_index(3)
                        ])]),
                ),
                ApiKey::FindCoordinator => frame(
                    api,
                    version,
                    1,
                    if version < 4 {
                        FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g"))
                    } else {
                        FindCoordinatorRequest::default()
                            .with_key(StrBytes::default())
                            .with_coordinator_keys(vec![StrBytes::from_static_str("g")])
                    },
                ),
                ApiKey::JoinGroup => frame(
                    api,
                    version,
                    1,
                    JoinGroupRequest::default().with_protocols(vec![
                        join_group_request::JoinGroupRequestProtocol::default()
                            .with_name(StrBytes::from_static_str("range"))
                            .with_metadata(Bytes::from_static(b"meta")),
                    ]),
                ),
                ApiKey::SyncGroup => frame(
                    api,
                    version,
                    1,
                    SyncGroupRequest::default().with_assignments(vec![
                        sync_group_request::SyncGroupRequestAssignment::default()
                            .with_assignment(Bytes::from_static(b"a")),
                    ]),
                ),
                ApiKey::Heartbeat => frame(api, version, 1, HeartbeatRequest::default()),
                ApiKey::LeaveGroup => frame(
                    api,
                    version,
                    1,
                    if version >= 3 {
                        LeaveGroupRequest::default()
                            .with_members(vec![leave_group_request::MemberIdentity::default()])
                    } else {
                        LeaveGroupRequest::default()
                    },
                ),
                ApiKey::OffsetCommit => frame(
                    api,
                    version,
                    1,
                    OffsetCommitRequest::default().with_topics(vec![
                        offset_commit_request::OffsetCommitRequestTopic::default()
                            .with_name(name())
                            .with_partitions(vec![
                                offset_commit_request::OffsetCommitRequestPartition::default(),
                            ]),
                    ]),
                ),
                ApiKey::OffsetFetch => frame(
                    api,
                    version,
                    1,
                    if version >= 8 {
                        OffsetFetchRequest::default().with_groups(vec![
                            offset_fetch_request::OffsetFetchRequestGroup::default().with_topics(
                                Some(vec![
                                    offset_fetch_request::OffsetFetchRequestTopics::default()
                                        .with_name(name())
                                        .with_partition_indexes(vec![0, 1]),
                                ]),
                            ),
                        ])
                    } else {
                        OffsetFetchRequest::default().with_topics(Some(vec![
                            offset_fetch_request::OffsetFetchRequestTopic::default()
                                .with_name(name())
                                .with_partition_indexes(vec![0, 1]),
                        ]))
                    },
                ),
                ApiKey::DescribeGroups => frame(
                    api,
                    version,
                    1,
                    DescribeGroupsRequest::default()
                        .with_groups(vec![GroupId(StrBytes::from_static_str("g"))]),
                ),
                ApiKey::ListGroups => frame(api, version, 1, ListGroupsRequest::default()),
                ApiKey::CreateTopics => frame(
                    api,
                    version,
                    1,
                    CreateTopicsRequest::default().with_topics(vec![
                        create_topics_request::CreatableTopic::default()
                            .with_name(name())
                            .with_configs(vec![
                                create_topics_request::CreatableTopicConfig::default()
                                    .with_name(StrBytes::from_static_str("retention.ms"))
                                    .with_value(Some(StrBytes::from_static_str("1000"))),
                            ]),
                    ]),
                ),
                ApiKey::DeleteTopics => frame(
                    api,
                    version,
                    1,
                    if version >= 6 {
                        DeleteTopicsRequest::default()
                            .with_topics(vec![delete_topics_request::DeleteTopicState::default()
                                .with_name(Some(name()))])
                    } else {
                        DeleteTopicsRequest::default().with_topic_names(vec![name()])
                    },
                ),
                ApiKey::DescribeConfigs => frame(
                    api,
                    version,
                    1,
                    DescribeConfigsRequest::default().with_resources(vec![
                        describe_configs_request::DescribeConfigsResource::default()
                            .with_resource_type(2)
                            .with_resource_name(StrBytes::from_static_str("orders"))
                            .with_configuration_keys(Some(vec![StrBytes::from_static_str(
                                "retention.ms",
                            )])),
                    ]),
                ),
                _ => unreachable!(),
            };
            let decoded = decode_request(body);
            assert!(
                matches!(decoded, Ok(Decoded::Request { .. })),
                "{api:?} v{version}: {decoded:?}"
            );
        }
    }
}
