//! Property tests: frames, requests and replies survive encode → decode, and no input panics.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::{Bytes, BytesMut};
use proptest::collection::{btree_map, btree_set, vec};
use proptest::option;
use proptest::prelude::*;
use skiff_model::command::{
    AutoCreateTopic, BoundaryType, ErrorKind, ErrorReply, PullRequest, PullResult, PullStatus,
    QueueRef, Reply, Request, SendRequest, SendResult, SendStatus, SubscriptionExpression,
};
use skiff_model::consumer::{
    ConsumeFromWhere, ConsumeStats, ConsumeType, ConsumerData, HeartbeatData, LockBatchRequest,
    MessageModel, MessageQueue, OffsetWrapper, ProducerData, SubscriptionData,
    SubscriptionGroupConfig, TopicOffset, TopicStatsTable,
};
use skiff_model::message::{Message, Properties};
use skiff_model::record::RecordFields;
use skiff_model::route::{
    BrokerData, BrokerRegistration, ClusterInfo, DataVersion, QueueData, RegistrationResult,
    TopicConfig, TopicFilterType, TopicRouteData,
};
use skiff_protocol::fastjson;
use skiff_protocol::remoting::{
    decode_frame, decode_reply, decode_request, encode_frame, encode_reply, encode_request, Body,
    LanguageCode, RemotingCodec, RemotingCommand, SerializeType,
};
use tokio_util::codec::Decoder;

// ---------------------------------------------------------------- strategies

/// Any text, including control characters and non-ASCII.
fn text() -> impl Strategy<Value = String> {
    "\\PC{0,12}|[\u{0}-\u{7f}]{0,8}"
}

/// Text that is never empty (empty strings read as absent in optional fields and binary headers).
fn some_text() -> impl Strategy<Value = String> {
    "\\PC{1,12}"
}

fn properties() -> impl Strategy<Value = Properties> {
    vec(("[A-Za-z_]{1,10}", "[^\u{1}\u{2}]{1,12}"), 0..5)
        .prop_map(|entries| entries.into_iter().collect())
}

fn message() -> impl Strategy<Value = Message> {
    (any::<i32>(), vec(any::<u8>(), 0..32), properties()).prop_map(|(flag, body, properties)| {
        Message {
            flag,
            body: body.into(),
            properties,
        }
    })
}

fn queue_ref() -> impl Strategy<Value = QueueRef> {
    // `physical`: Java's `lo=false`, set on requests one broker passes on to another.
    (text(), any::<i32>(), any::<bool>()).prop_map(|(topic, queue_id, physical)| QueueRef {
        topic,
        queue_id,
        physical,
    })
}

fn send_request() -> impl Strategy<Value = SendRequest> {
    (
        (
            text(),
            text(),
            any::<i32>(),
            any::<i32>(),
            any::<i64>(),
            any::<i32>(),
        ),
        (
            option::of(any::<i32>()),
            any::<bool>(),
            option::of((some_text(), any::<i32>())),
        ),
        any::<bool>(),
        vec(message(), 0..4),
        message(),
        option::of(some_text()),
    )
        .prop_map(
            |(
                (producer_group, topic, queue_id, sys_flag, born_timestamp, reconsume_times),
                (max_reconsume_times, unit_mode, auto),
                batch,
                batch_messages,
                single,
                broker_name,
            )| SendRequest {
                producer_group,
                topic,
                queue_id,
                sys_flag,
                born_timestamp,
                reconsume_times,
                max_reconsume_times,
                unit_mode,
                auto_create: auto.map(|(template_topic, queue_nums)| AutoCreateTopic {
                    template_topic,
                    queue_nums,
                }),
                batch,
                messages: if batch { batch_messages } else { vec![single] },
                broker_name,
            },
        )
}

fn pull_request() -> impl Strategy<Value = PullRequest> {
    (
        (
            text(),
            queue_ref(),
            any::<i64>(),
            any::<i32>(),
            option::of(any::<i32>()),
        ),
        (option::of(any::<i64>()), option::of(0..=i64::MAX as u64)),
        option::of(("TAG|SQL92", text())),
        any::<i64>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                (consumer_group, queue, queue_offset, max_msg_nums, max_msg_bytes),
                (commit_offset, suspend_timeout_millis),
                subscription,
                sub_version,
                lite,
            )| PullRequest {
                consumer_group,
                queue,
                queue_offset,
                max_msg_nums,
                max_msg_bytes,
                commit_offset,
                suspend_timeout_millis,
                subscription: subscription.map(|(expression_type, expression)| {
                    SubscriptionExpression {
                        expression_type,
                        expression,
                        version: sub_version,
                    }
                }),
                sub_version,
                lite,
            },
        )
}

fn subscription_data() -> impl Strategy<Value = SubscriptionData> {
    (
        any::<bool>(),
        text(),
        text(),
        btree_set(text(), 0..3),
        btree_set(any::<i32>(), 0..3),
        any::<i64>(),
        "TAG|SQL92",
        option::of(text()),
    )
        .prop_map(
            |(
                class_filter_mode,
                topic,
                sub_string,
                tags_set,
                code_set,
                sub_version,
                expression_type,
                filter_class_source,
            )| {
                SubscriptionData {
                    class_filter_mode,
                    topic,
                    sub_string,
                    tags_set,
                    code_set,
                    sub_version,
                    expression_type,
                    filter_class_source,
                }
            },
        )
}

fn heartbeat() -> impl Strategy<Value = HeartbeatData> {
    let consumer = (
        text(),
        prop_oneof![
            Just(ConsumeType::ConsumeActively),
            Just(ConsumeType::ConsumePassively),
            Just(ConsumeType::ConsumePop)
        ],
        prop_oneof![
            Just(MessageModel::Broadcasting),
            Just(MessageModel::Clustering)
        ],
        prop_oneof![
            Just(ConsumeFromWhere::ConsumeFromLastOffset),
            Just(ConsumeFromWhere::ConsumeFromFirstOffset),
            Just(ConsumeFromWhere::ConsumeFromTimestamp)
        ],
        vec(subscription_data(), 0..3),
        any::<bool>(),
    )
        .prop_map(
            |(
                group_name,
                consume_type,
                message_model,
                consume_from_where,
                subscription_data_set,
                unit_mode,
            )| {
                ConsumerData {
                    group_name,
                    consume_type,
                    message_model,
                    consume_from_where,
                    subscription_data_set,
                    unit_mode,
                }
            },
        );
    (
        text(),
        vec(
            text().prop_map(|group_name| ProducerData { group_name }),
            0..3,
        ),
        vec(consumer, 0..3),
        any::<i32>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                client_id,
                producer_data_set,
                consumer_data_set,
                heartbeat_fingerprint,
                without_sub,
            )| HeartbeatData {
                client_id,
                producer_data_set,
                consumer_data_set,
                heartbeat_fingerprint,
                without_sub,
            },
        )
}

fn topic_config() -> impl Strategy<Value = TopicConfig> {
    (
        text(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        prop_oneof![
            Just(TopicFilterType::SingleTag),
            Just(TopicFilterType::MultiTag)
        ],
        any::<i32>(),
        any::<bool>(),
        btree_map(text(), text(), 0..3),
    )
        .prop_map(
            |(
                topic_name,
                read_queue_nums,
                write_queue_nums,
                perm,
                topic_filter_type,
                topic_sys_flag,
                order,
                attributes,
            )| {
                TopicConfig {
                    topic_name,
                    read_queue_nums,
                    write_queue_nums,
                    perm,
                    topic_filter_type,
                    topic_sys_flag,
                    order,
                    attributes,
                }
            },
        )
}

/// A topic as UPDATE_AND_CREATE_TOPIC carries it: attributes in `AttributeParser` form.
fn create_topic() -> impl Strategy<Value = TopicConfig> {
    let attribute = prop_oneof![
        ("\\+[a-z.]{1,8}", "[a-zA-Z0-9]{1,8}"),
        "-[a-z.]{1,8}".prop_map(|k| (k, String::new())),
    ];
    (topic_config(), vec(attribute, 0..3)).prop_map(|(mut topic, attributes)| {
        topic.attributes = attributes.into_iter().collect();
        topic
    })
}

fn data_version() -> impl Strategy<Value = DataVersion> {
    (any::<i64>(), any::<i64>(), any::<i64>()).prop_map(|(state_version, timestamp, counter)| {
        DataVersion {
            state_version,
            timestamp,
            counter,
        }
    })
}

fn group_config() -> impl Strategy<Value = SubscriptionGroupConfig> {
    (
        (
            text(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
        (any::<i32>(), any::<i32>(), any::<i64>(), any::<i64>()),
        (
            any::<bool>(),
            any::<i32>(),
            any::<i32>(),
            btree_map(text(), text(), 0..3),
        ),
    )
        .prop_map(
            |((name, a, b, c, d), (rq, rm, broker, slow), (notify, sys, timeout, attributes))| {
                SubscriptionGroupConfig {
                    group_name: name,
                    consume_enable: a,
                    consume_from_min_enable: b,
                    consume_broadcast_enable: c,
                    consume_message_orderly: d,
                    retry_queue_nums: rq,
                    retry_max_times: rm,
                    broker_id: broker,
                    which_broker_when_consume_slowly: slow,
                    notify_consumer_ids_changed_enable: notify,
                    group_sys_flag: sys,
                    consume_timeout_minute: timeout,
                    attributes,
                }
            },
        )
}

fn registration() -> impl Strategy<Value = BrokerRegistration> {
    (
        (text(), text(), text(), any::<i64>(), text()),
        (
            option::of(any::<i64>()),
            option::of(any::<bool>()),
            data_version(),
        ),
        btree_map(text(), topic_config(), 0..3),
        vec(text(), 0..3),
    )
        .prop_map(
            |(
                (cluster_name, broker_name, broker_addr, broker_id, ha_server_addr),
                (heartbeat_timeout_millis, enable_acting_master, data_version),
                topics,
                filter_server_list,
            )| BrokerRegistration {
                cluster_name,
                broker_name,
                broker_addr,
                broker_id,
                ha_server_addr,
                heartbeat_timeout_millis,
                enable_acting_master,
                data_version,
                topics,
                topic_queue_mappings: BTreeMap::new(),
                filter_server_list,
            },
        )
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        send_request().prop_map(Request::Send),
        pull_request().prop_map(Request::Pull),
        (text(), queue_ref(), any::<bool>()).prop_map(|(group, queue, set_zero_if_not_found)| {
            Request::QueryConsumerOffset {
                group,
                queue,
                set_zero_if_not_found,
            }
        }),
        (text(), queue_ref(), any::<i64>()).prop_map(|(group, queue, offset)| {
            Request::UpdateConsumerOffset {
                group,
                queue,
                offset,
            }
        }),
        queue_ref().prop_map(|queue| Request::GetMaxOffset { queue }),
        queue_ref().prop_map(|queue| Request::GetMinOffset { queue }),
        (
            queue_ref(),
            any::<i64>(),
            prop_oneof![Just(BoundaryType::Lower), Just(BoundaryType::Upper)]
        )
            .prop_map(
                |(queue, timestamp, boundary)| Request::SearchOffsetByTimestamp {
                    queue,
                    timestamp,
                    boundary
                }
            ),
        queue_ref().prop_map(|queue| Request::GetEarliestMsgStoreTime { queue }),
        (
            text(),
            text(),
            any::<i32>(),
            any::<i64>(),
            any::<i64>(),
            any::<bool>()
        )
            .prop_map(
                |(topic, key, max_num, begin_timestamp, end_timestamp, unique_key)| {
                    Request::QueryMessage {
                        topic,
                        key,
                        max_num,
                        begin_timestamp,
                        end_timestamp,
                        unique_key,
                    }
                }
            ),
        any::<i64>().prop_map(|commit_log_offset| Request::ViewMessage { commit_log_offset }),
        (
            any::<i64>(),
            text(),
            any::<i32>(),
            option::of(some_text()),
            option::of(some_text()),
            any::<bool>(),
            option::of(any::<i32>())
        )
            .prop_map(
                |(
                    offset,
                    group,
                    delay_level,
                    origin_msg_id,
                    origin_topic,
                    unit_mode,
                    max_reconsume_times,
                )| {
                    Request::ConsumerSendMsgBack(skiff_model::command::SendBackRequest {
                        offset,
                        group,
                        delay_level,
                        origin_msg_id,
                        origin_topic,
                        unit_mode,
                        max_reconsume_times,
                    })
                }
            ),
        heartbeat().prop_map(Request::Heartbeat),
        (text(), option::of(some_text()), option::of(some_text())).prop_map(
            |(client_id, producer_group, consumer_group)| Request::UnregisterClient {
                client_id,
                producer_group,
                consumer_group
            }
        ),
        text().prop_map(|group| Request::GetConsumerListByGroup { group }),
        create_topic().prop_map(Request::CreateTopic),
        text().prop_map(|topic| Request::DeleteTopicInBroker { topic }),
        Just(Request::GetAllTopicConfig),
        (text(), any::<bool>()).prop_map(|(topic, lo)| Request::GetTopicConfig { topic, lo }),
        group_config().prop_map(Request::CreateSubscriptionGroup),
        text().prop_map(|topic| Request::GetTopicStats { topic }),
        (text(), option::of(some_text()))
            .prop_map(|(group, topic)| Request::GetConsumeStats { group, topic }),
        Just(Request::GetBrokerRuntimeInfo),
        registration().prop_map(Request::RegisterBroker),
        (text(), text(), text(), any::<i64>()).prop_map(
            |(cluster_name, broker_name, broker_addr, broker_id)| {
                Request::UnregisterBroker {
                    cluster_name,
                    broker_name,
                    broker_addr,
                    broker_id,
                }
            }
        ),
        text().prop_map(|topic| Request::GetRouteInfo { topic }),
        Just(Request::GetBrokerClusterInfo),
        Just(Request::GetAllTopicList),
        (text(), option::of(some_text())).prop_map(|(topic, cluster_name)| {
            Request::DeleteTopicInNamesrv {
                topic,
                cluster_name,
            }
        }),
        text().prop_map(|group| Request::NotifyConsumerIdsChanged { group }),
        lock_request().prop_map(Request::LockBatchMq),
        lock_request().prop_map(Request::UnlockBatchMq),
    ]
}

fn lock_request() -> impl Strategy<Value = LockBatchRequest> {
    (
        option::of(text()),
        option::of(text()),
        any::<bool>(),
        vec(message_queue(), 0..4),
    )
        .prop_map(
            |(consumer_group, client_id, only_this_broker, mq_set)| LockBatchRequest {
                consumer_group,
                client_id,
                only_this_broker,
                mq_set,
            },
        )
}

fn error_kind() -> impl Strategy<Value = ErrorKind> {
    prop_oneof![
        Just(ErrorKind::SystemError),
        Just(ErrorKind::SystemBusy),
        Just(ErrorKind::RequestNotSupported),
        Just(ErrorKind::TopicNotExist),
        Just(ErrorKind::TopicExistAlready),
        Just(ErrorKind::MessageIllegal),
        Just(ErrorKind::ServiceNotAvailable),
        Just(ErrorKind::NoPermission),
        Just(ErrorKind::QueryNotFound),
        Just(ErrorKind::SubscriptionParseFailed),
        Just(ErrorKind::SubscriptionNotExist),
        Just(ErrorKind::SubscriptionNotLatest),
        Just(ErrorKind::SubscriptionGroupNotExist),
        Just(ErrorKind::InvalidParameter),
        Just(ErrorKind::ConsumerNotOnline),
        Just(ErrorKind::FlowControl),
        Just(ErrorKind::VersionNotSupported),
        Just(ErrorKind::IllegalOperation),
    ]
}

fn record() -> impl Strategy<Value = Bytes> {
    ("[A-Za-z0-9_]{1,200}", vec(any::<u8>(), 0..40), any::<i64>()).prop_map(
        |(topic, body, offset)| {
            let fields = RecordFields {
                queue_id: 1,
                flag: 0,
                queue_offset: offset,
                physical_offset: offset,
                sys_flag: 0,
                born_timestamp: 1,
                born_host: "10.0.0.9:5000".parse().unwrap(),
                store_timestamp: 2,
                store_host: "127.0.0.1:10911".parse().unwrap(),
                reconsume_times: 0,
                prepared_transaction_offset: 0,
                body: &body,
                topic: &topic,
                properties: "TAGS\u{1}A\u{2}",
            };
            let mut out = Vec::new();
            fields.encode(&mut out).unwrap();
            Bytes::from(out)
        },
    )
}

fn message_queue() -> impl Strategy<Value = MessageQueue> {
    (text(), text(), any::<i32>()).prop_map(|(topic, broker_name, queue_id)| MessageQueue {
        topic,
        broker_name,
        queue_id,
    })
}

fn broker_data() -> impl Strategy<Value = BrokerData> {
    (
        text(),
        text(),
        btree_map(any::<i64>(), "[0-9.]{1,15}:[0-9]{1,5}", 0..3),
        any::<bool>(),
        option::of(text()),
    )
        .prop_map(
            |(cluster, broker_name, broker_addrs, enable_acting_master, zone_name)| BrokerData {
                cluster,
                broker_name,
                broker_addrs,
                enable_acting_master,
                zone_name,
            },
        )
}

fn route() -> impl Strategy<Value = TopicRouteData> {
    let queue_data = (
        text(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
    )
        .prop_map(
            |(broker_name, read_queue_nums, write_queue_nums, perm, topic_sys_flag)| QueueData {
                broker_name,
                read_queue_nums,
                write_queue_nums,
                perm,
                topic_sys_flag,
            },
        );
    (
        option::of(text()),
        vec(queue_data, 0..3),
        vec(broker_data(), 0..3),
        btree_map(text(), vec(text(), 0..2), 0..2),
    )
        .prop_map(
            |(order_topic_conf, queue_datas, broker_datas, filter_server_table)| TopicRouteData {
                order_topic_conf,
                queue_datas,
                broker_datas,
                filter_server_table,
                topic_queue_mapping_by_broker: None,
            },
        )
}

/// A finite double that survives text (Java writes doubles, and so do we).
fn tps() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(1.5),
        -1e6..1e6f64,
        any::<i32>().prop_map(f64::from)
    ]
}

/// A reply and a request it may answer.
fn reply_for_request() -> impl Strategy<Value = (Request, Reply)> {
    let offset_request = queue_ref().prop_map(|queue| Request::GetMaxOffset { queue });
    prop_oneof![
        prop_oneof![
            text().prop_map(|topic| Request::DeleteTopicInBroker { topic }),
            heartbeat().prop_map(Request::Heartbeat),
            text().prop_map(|group| Request::NotifyConsumerIdsChanged { group }),
        ]
        .prop_map(|request| (request, Reply::Success)),
        (request(), error_kind(), text()).prop_map(|(request, kind, message)| (
            request,
            Reply::Error(ErrorReply { kind, message })
        )),
        (
            send_request(),
            prop_oneof![
                Just(SendStatus::Ok),
                Just(SendStatus::FlushDiskTimeout),
                Just(SendStatus::FlushSlaveTimeout),
                Just(SendStatus::SlaveNotAvailable)
            ],
            vec("[0-9A-F]{32}", 1..4),
            (
                any::<i32>(),
                any::<i64>(),
                option::of(some_text()),
                text(),
                any::<bool>()
            ),
        )
            .prop_map(
                |(
                    send,
                    status,
                    msg_ids,
                    (queue_id, queue_offset, transaction_id, region_id, trace_on),
                )| {
                    (
                        Request::Send(send),
                        Reply::Sent(SendResult {
                            status,
                            msg_ids,
                            queue_id,
                            queue_offset,
                            transaction_id,
                            region_id,
                            trace_on,
                        }),
                    )
                }
            ),
        (
            pull_request(),
            prop_oneof![
                Just(PullStatus::Found),
                Just(PullStatus::NoNewMessage),
                Just(PullStatus::NoMatchedMessage),
                Just(PullStatus::OffsetMoved)
            ],
            (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()),
            vec(record(), 0..4),
            option::of(any::<i64>()),
        )
            .prop_map(
                |(pull, status, (next, min, max, suggest), messages, delta)| {
                    (
                        Request::Pull(pull),
                        Reply::Pulled(PullResult {
                            status,
                            next_begin_offset: next,
                            min_offset: min,
                            max_offset: max,
                            suggest_which_broker_id: suggest,
                            messages,
                            offset_delta: delta,
                        }),
                    )
                }
            ),
        (offset_request, any::<i64>()).prop_map(|(r, o)| (r, Reply::Offset(o))),
        (queue_ref(), any::<i64>()).prop_map(|(queue, t)| (
            Request::GetEarliestMsgStoreTime { queue },
            Reply::Timestamp(t)
        )),
        vec(text(), 0..4).prop_map(|ids| (
            Request::GetConsumerListByGroup { group: "g".into() },
            Reply::ConsumerIds(ids)
        )),
        (lock_request(), vec(message_queue(), 0..4))
            .prop_map(|(lock, queues)| (Request::LockBatchMq(lock), Reply::LockedQueues(queues))),
        lock_request().prop_map(|lock| (Request::UnlockBatchMq(lock), Reply::Success)),
        route().prop_map(|route| (
            Request::GetRouteInfo { topic: "T".into() },
            Reply::Route(route)
        )),
        (
            btree_map(text(), broker_data(), 0..3),
            btree_map(text(), btree_set(text(), 0..3), 0..3)
        )
            .prop_map(|(broker_addr_table, cluster_addr_table)| {
                (
                    Request::GetBrokerClusterInfo,
                    Reply::ClusterInfo(ClusterInfo {
                        broker_addr_table,
                        cluster_addr_table,
                    }),
                )
            }),
        vec(text(), 0..4).prop_map(|topics| (Request::GetAllTopicList, Reply::TopicList(topics))),
        (
            registration(),
            option::of(some_text()),
            option::of(some_text())
        )
            .prop_map(|(r, master_addr, ha_server_addr)| {
                (
                    Request::RegisterBroker(r),
                    Reply::BrokerRegistered(RegistrationResult {
                        master_addr,
                        ha_server_addr,
                    }),
                )
            }),
        (btree_map(text(), topic_config(), 0..3), data_version()).prop_map(
            |(topics, data_version)| (
                Request::GetAllTopicConfig,
                Reply::TopicConfigs {
                    topics,
                    data_version
                }
            )
        ),
        btree_map(
            message_queue(),
            (any::<i64>(), any::<i64>(), any::<i64>()),
            0..4
        )
        .prop_map(|table| {
            let offset_table = table
                .into_iter()
                .map(|(q, (min_offset, max_offset, last_update_timestamp))| {
                    (
                        q,
                        TopicOffset {
                            min_offset,
                            max_offset,
                            last_update_timestamp,
                        },
                    )
                })
                .collect();
            (
                Request::GetTopicStats { topic: "T".into() },
                Reply::TopicStats(TopicStatsTable { offset_table }),
            )
        }),
        (
            btree_map(
                message_queue(),
                (any::<i64>(), any::<i64>(), any::<i64>(), any::<i64>()),
                0..4
            ),
            tps()
        )
            .prop_map(|(table, consume_tps)| {
                let offset_table = table
                    .into_iter()
                    .map(
                        |(q, (broker_offset, consumer_offset, pull_offset, last_timestamp))| {
                            (
                                q,
                                OffsetWrapper {
                                    broker_offset,
                                    consumer_offset,
                                    pull_offset,
                                    last_timestamp,
                                },
                            )
                        },
                    )
                    .collect();
                (
                    Request::GetConsumeStats {
                        group: "g".into(),
                        topic: None,
                    },
                    Reply::ConsumeStats(ConsumeStats {
                        offset_table,
                        consume_tps,
                    }),
                )
            }),
        btree_map(text(), text(), 0..4)
            .prop_map(|table| (Request::GetBrokerRuntimeInfo, Reply::KeyValues(table))),
        topic_config().prop_map(|topic| (
            Request::GetTopicConfig {
                topic: topic.topic_name.clone(),
                lo: true,
            },
            Reply::TopicConfig {
                config: Box::new(topic),
                mapping: None,
            }
        )),
        (vec(record(), 0..4), any::<i64>(), any::<i64>()).prop_map(
            |(messages, index_last_update_timestamp, index_last_update_phyoffset)| (
                Request::QueryMessage {
                    topic: "T".into(),
                    key: "k".into(),
                    max_num: 32,
                    begin_timestamp: 0,
                    end_timestamp: i64::MAX,
                    unique_key: false,
                },
                Reply::QueriedMessages {
                    messages,
                    index_last_update_timestamp,
                    index_last_update_phyoffset,
                }
            )
        ),
        record().prop_map(|record| (
            Request::ViewMessage {
                commit_log_offset: 0
            },
            Reply::Message(record)
        )),
    ]
}

fn command(binary: bool) -> impl Strategy<Value = RemotingCommand> {
    let language = if binary {
        any::<u8>().boxed()
    } else {
        (0u8..=13).boxed()
    };
    (
        (
            any::<i32>(),
            any::<i16>(),
            language,
            any::<i32>(),
            any::<i32>(),
        ),
        option::of(some_text()),
        vec((some_text(), some_text()), 0..5),
        vec(any::<u8>(), 0..64),
    )
        .prop_map(
            move |((code, short, language, opaque, flag), remark, ext, body)| RemotingCommand {
                code: if binary { i32::from(short) } else { code },
                language: LanguageCode::from_code(language),
                version: i32::from(short),
                opaque,
                flag,
                remark,
                ext_fields: ext.into_iter().collect::<HashMap<_, _>>(),
                body: Body::from(body),
                serialize_type: if binary {
                    SerializeType::RocketMq
                } else {
                    SerializeType::Json
                },
            },
        )
}

// ---------------------------------------------------------------- properties

fn through_the_wire(cmd: &RemotingCommand) -> RemotingCommand {
    let mut wire = BytesMut::new();
    encode_frame(cmd, &mut wire).unwrap();
    let decoded = RemotingCodec::default().decode(&mut wire).unwrap().unwrap();
    assert!(wire.is_empty());
    decoded
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn frames_round_trip(cmd in prop_oneof![command(false), command(true)]) {
        prop_assert_eq!(through_the_wire(&cmd), cmd);
    }

    #[test]
    fn requests_round_trip(request in request(), opaque in any::<i32>(), oneway in any::<bool>()) {
        let cmd = encode_request(&request, opaque, oneway);
        prop_assert_eq!(cmd.opaque, opaque);
        prop_assert_eq!(cmd.is_oneway(), oneway);
        prop_assert!(!cmd.is_response());
        let wire = through_the_wire(&cmd);
        prop_assert_eq!(decode_request(&wire), Ok(request));
    }

    #[test]
    fn replies_round_trip((request, reply) in reply_for_request(), binary in any::<bool>(), version in prop_oneof![Just(317), Just(479)]) {
        let mut request_cmd = encode_request(&request, 77, false);
        request_cmd.version = version;
        if binary {
            request_cmd.serialize_type = SerializeType::RocketMq;
        }
        let response = encode_reply(&request_cmd, reply.clone());
        prop_assert!(response.is_response());
        prop_assert_eq!(response.opaque, 77);
        prop_assert_eq!(response.serialize_type, request_cmd.serialize_type);
        // Binary headers drop empty remarks and values; replies carry none that matter.
        let wire = through_the_wire(&response);
        prop_assert_eq!(decode_reply(&request, &wire), Ok(reply));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..512), max in 0usize..1024) {
        let mut buf = BytesMut::from(&bytes[..]);
        let mut codec = RemotingCodec::new(max);
        while let Ok(Some(_)) = codec.decode(&mut buf) {}
        let _ = decode_frame(Bytes::from(bytes.clone()));
        let _ = fastjson::parse_slice(&bytes);
    }

    #[test]
    fn arbitrary_frames_never_panic(
        serialize_type in 0u8..3,
        header in vec(any::<u8>(), 0..256),
        body in vec(any::<u8>(), 0..64),
    ) {
        let mut frame = Vec::new();
        frame.extend_from_slice(&((header.len() as u32) | (u32::from(serialize_type) << 24)).to_be_bytes());
        frame.extend_from_slice(&header);
        frame.extend_from_slice(&body);
        let _ = decode_frame(Bytes::from(frame));
    }

    #[test]
    fn arbitrary_requests_never_panic_and_accepted_ones_round_trip(
        code in prop_oneof![
            Just(10), Just(11), Just(14), Just(15), Just(17), Just(21), Just(28), Just(29), Just(30), Just(31),
            Just(32), Just(34), Just(35), Just(38), Just(40), Just(103), Just(104), Just(105), Just(106),
            Just(200), Just(202), Just(206), Just(208), Just(215), Just(216), Just(310), Just(320), Just(361),
            any::<i32>()
        ],
        ext in vec((prop_oneof![
            Just("topic".to_string()), Just("queueId".to_string()), Just("sysFlag".to_string()),
            Just("b".to_string()), Just("e".to_string()), Just("m".to_string()), Just("bodyCrc32".to_string()),
            Just("attributes".to_string()), "[a-z]{1,3}"
        ], prop_oneof![Just("1".to_string()), Just("-1".to_string()), Just("true".to_string()), text()]), 0..12),
        body in vec(any::<u8>(), 0..128),
    ) {
        let mut cmd = RemotingCommand::request(code, 1);
        cmd.ext_fields = ext.into_iter().collect();
        cmd.body = Body::from(body);
        // Whatever is accepted survives re-encoding unchanged.
        if let Ok(request) = decode_request(&cmd) {
            let again = encode_request(&request, 1, false);
            prop_assert_eq!(decode_request(&again), Ok(request));
        }
        let _ = decode_reply(&Request::GetAllTopicConfig, &RemotingCommand { flag: 1, ..cmd.clone() });
        let _ = decode_reply(&Request::Pull(PullRequest::default()), &RemotingCommand { flag: 1, ..cmd });
    }
}

#[test]
fn lenient_sets_survive() {
    // BTreeSet-typed fields in model types accept Java's arrays in any order.
    let info: ClusterInfo =
        fastjson::from_str(r#"{"clusterAddrTable":{"c":["b","a","b"]}}"#).unwrap();
    assert_eq!(
        info.cluster_addr_table["c"],
        BTreeSet::from(["a".to_string(), "b".to_string()])
    );
    let map: BTreeMap<i64, String> = fastjson::from_str(r#"{"1":"x",2:"y"}"#).unwrap();
    assert_eq!(map.len(), 2);
}
