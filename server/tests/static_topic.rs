//! Static topics on the wire, without a JDK: UPDATE_AND_CREATE_STATIC_TOPIC stores the broker's
//! part of the mapping, GET_TOPIC_CONFIG shows it, the registration brings what the broker leads
//! into the route, and a mapping with an older epoch is refused with Java's remark. Over two
//! broker groups, a logical queue remapped from one to the other is served by its new leader:
//! sends, pulls of the older stretch passed on to the old leader, consumer offsets and offset
//! queries. The official tools' and clients' view (`mqadmin updateStaticTopic`,
//! `remappingStaticTopic`, a producer and push consumers) is in `compat-tests/tests/mqadmin.rs`.

mod common;

use std::collections::BTreeMap;

use skiff_model::admin::AdminCommand;
use skiff_model::command::{
    ErrorKind, PullRequest, PullStatus, QueueRef, Reply, Request, SendRequest,
    SubscriptionExpression,
};
use skiff_model::message::{Message, Properties};
use skiff_model::route::TopicConfig;
use skiff_model::static_topic::{LogicQueueMappingItem, TopicQueueMappingDetail};

use common::{Cluster, TIMEOUT};

const TOPIC: &str = "static_topic";

/// Broker `bname`'s part of `TOPIC` with `queues` logical queues, each on its own physical queue.
fn mapping(bname: &str, queues: i32, epoch: i64) -> TopicQueueMappingDetail {
    TopicQueueMappingDetail {
        topic: TOPIC.into(),
        total_queues: queues,
        bname: bname.into(),
        epoch,
        hosted_queues: (0..queues)
            .map(|id| {
                let item = LogicQueueMappingItem {
                    queue_id: id,
                    bname: bname.into(),
                    ..LogicQueueMappingItem::default()
                };
                (id, vec![item])
            })
            .collect(),
        ..TopicQueueMappingDetail::default()
    }
}

fn create(mapping: TopicQueueMappingDetail) -> Request {
    Request::Admin(AdminCommand::CreateStaticTopic {
        config: TopicConfig::new(TOPIC, mapping.total_queues),
        mapping,
        force: false,
    })
}

#[tokio::test]
async fn a_static_topics_mapping_is_kept_shown_and_routed() {
    let cluster = Cluster::start(|_| {}).await;
    let broker = cluster.broker_client().await;
    let bname = skiff_server::config::BrokerConfig::default().broker_name;

    let created = broker
        .invoke(&create(mapping(&bname, 2, 1_000)), TIMEOUT)
        .await;
    assert_eq!(created.unwrap(), Reply::Success);
    let grown = broker
        .invoke(&create(mapping(&bname, 3, 2_000)), TIMEOUT)
        .await;
    assert_eq!(grown.unwrap(), Reply::Success);

    let get = |lo| Request::GetTopicConfig {
        topic: TOPIC.into(),
        lo,
    };
    let Reply::TopicConfig {
        config,
        mapping: Some(shown),
    } = broker.invoke(&get(true), TIMEOUT).await.unwrap()
    else {
        panic!("no mapping");
    };
    assert_eq!(*config, TopicConfig::new(TOPIC, 3));
    assert_eq!(*shown, mapping(&bname, 3, 2_000));
    // Without `lo` (Java's admin client always sets it) the settings alone.
    let plain = broker.invoke(&get(false), TIMEOUT).await.unwrap();
    assert!(
        matches!(plain, Reply::TopicConfig { mapping: None, .. }),
        "{plain:?}"
    );

    // Registered before the answer: the route has the logical → physical queue ids.
    let route = cluster.route(TOPIC).await;
    let by_broker = route.topic_queue_mapping_by_broker.expect("a mapping");
    let info = &by_broker[&bname];
    assert_eq!((info.total_queues, info.epoch), (3, 2_000));
    assert_eq!(info.curr_id_map, BTreeMap::from([(0, 0), (1, 1), (2, 2)]));

    // An older epoch changes nothing.
    let stale = broker
        .invoke(&create(mapping(&bname, 4, 1_500)), TIMEOUT)
        .await;
    assert_eq!(
        stale.unwrap(),
        Reply::error(
            ErrorKind::SystemError,
            "Can't accept data with small epoch 1500 < 2000"
        )
    );
    let Reply::TopicConfig { config, .. } = broker.invoke(&get(true), TIMEOUT).await.unwrap()
    else {
        panic!("no topic");
    };
    assert_eq!(config.write_queue_nums, 3);

    cluster.stop().await;
}

fn send(queue_id: i32) -> Request {
    Request::Send(SendRequest {
        producer_group: "static_pg".into(),
        topic: TOPIC.into(),
        queue_id,
        messages: vec![Message {
            flag: 0,
            body: bytes::Bytes::from_static(b"x"),
            properties: Properties::new(),
        }],
        ..SendRequest::default()
    })
}

fn pull(offset: i64) -> Request {
    Request::Pull(PullRequest {
        consumer_group: "static_cg".into(),
        queue: QueueRef::new(TOPIC, 0),
        queue_offset: offset,
        max_msg_nums: 32,
        subscription: Some(SubscriptionExpression {
            expression_type: "TAG".into(),
            expression: "*".into(),
            version: 0,
        }),
        ..PullRequest::default()
    })
}

fn item(gen: i32, bname: &str, logic_offset: i64) -> LogicQueueMappingItem {
    LogicQueueMappingItem {
        gen,
        queue_id: 0,
        bname: bname.into(),
        logic_offset,
        ..LogicQueueMappingItem::default()
    }
}

/// Logical queue 0 of a one-queue static topic, as `remappingStaticTopic` leaves it: from
/// broker-a's queue 0 to broker-b's queue 0 from logical offset 10,000.
fn remapped(bname: &str, epoch: i64) -> TopicQueueMappingDetail {
    TopicQueueMappingDetail {
        topic: TOPIC.into(),
        total_queues: 1,
        bname: bname.into(),
        epoch,
        hosted_queues: BTreeMap::from([(
            0,
            vec![item(0, "broker-a", 0), item(1, "broker-b", 10_000)],
        )]),
        ..TopicQueueMappingDetail::default()
    }
}

#[tokio::test]
async fn a_remapped_logical_queue_is_served_by_its_new_leader_with_the_old_stretch_passed_on() {
    let cluster = Cluster::start(|config| config.broker_name = "broker-a".into()).await;
    let (broker_b, _b_dir) = cluster.add_broker("broker-b").await;
    let a = cluster.broker_client().await;
    let b = skiff_server::remoting_client::RemotingClient::connect(
        &broker_b.local_addr().to_string(),
        TIMEOUT,
    )
    .await
    .unwrap();

    // On broker-a alone first: two messages at logical (= physical) offsets 0 and 1.
    let created = a
        .invoke(&create(mapping("broker-a", 1, 1_000)), TIMEOUT)
        .await;
    assert_eq!(created.unwrap(), Reply::Success);
    for offset in 0..2 {
        let Reply::Sent(sent) = a.invoke(&send(0), TIMEOUT).await.unwrap() else {
            panic!("send refused");
        };
        assert_eq!((sent.queue_id, sent.queue_offset), (0, offset));
    }

    // Remapped: the new leader first, then the old one (as mqadmin orders it).
    for (client, bname) in [(&b, "broker-b"), (&a, "broker-a")] {
        let remap = client
            .invoke(&create(remapped(bname, 2_000)), TIMEOUT)
            .await;
        assert_eq!(remap.unwrap(), Reply::Success, "{bname}");
    }
    let Reply::Sent(sent) = b.invoke(&send(0), TIMEOUT).await.unwrap() else {
        panic!("send to the new leader refused");
    };
    assert_eq!((sent.queue_id, sent.queue_offset), (0, 10_000));
    let Reply::Error(refused) = a.invoke(&send(0), TIMEOUT).await.unwrap() else {
        panic!("the old leader took a send");
    };
    assert_eq!(refused.kind, ErrorKind::NotLeaderForQueue);
    assert_eq!(
        refused.message,
        "static_topic-0 does not exit in request process of current broker broker-a"
    );

    // The old stretch, read through the new leader.
    let Reply::Pulled(old) = b.invoke(&pull(0), TIMEOUT).await.unwrap() else {
        panic!("no pull answer");
    };
    assert_eq!(old.status, PullStatus::Found);
    assert_eq!(old.messages.len(), 2);
    assert_eq!(
        (old.next_begin_offset, old.max_offset, old.offset_delta),
        (2, 10_000, Some(0))
    );
    // Its end sends the client on to the new stretch.
    let Reply::Pulled(end) = b.invoke(&pull(2), TIMEOUT).await.unwrap() else {
        panic!("no pull answer");
    };
    assert_eq!(
        (end.status, end.next_begin_offset),
        (PullStatus::NoMatchedMessage, 10_000)
    );
    let Reply::Pulled(new) = b.invoke(&pull(10_000), TIMEOUT).await.unwrap() else {
        panic!("no pull answer");
    };
    assert_eq!(new.status, PullStatus::Found);
    assert_eq!(new.messages.len(), 1);
    assert_eq!(
        (new.next_begin_offset, new.offset_delta),
        (10_001, Some(10_000))
    );
    let Reply::Error(not_here) = a.invoke(&pull(0), TIMEOUT).await.unwrap() else {
        panic!("the old leader served a logical pull");
    };
    assert_eq!(not_here.kind, ErrorKind::NotLeaderForQueue);

    // Consumer offsets live with the stretch they fall in.
    let logical = QueueRef::new(TOPIC, 0);
    let commit = |offset| Request::UpdateConsumerOffset {
        group: "static_cg".into(),
        queue: logical.clone(),
        offset,
    };
    let query = Request::QueryConsumerOffset {
        group: "static_cg".into(),
        queue: logical.clone(),
        set_zero_if_not_found: true,
    };
    assert_eq!(b.invoke(&commit(1), TIMEOUT).await.unwrap(), Reply::Success);
    assert_eq!(b.invoke(&query, TIMEOUT).await.unwrap(), Reply::Offset(1));
    let physical_a = QueueRef {
        physical: true,
        ..logical.clone()
    };
    let on_a = Request::QueryConsumerOffset {
        group: "static_cg".into(),
        queue: physical_a.clone(),
        set_zero_if_not_found: false,
    };
    assert_eq!(a.invoke(&on_a, TIMEOUT).await.unwrap(), Reply::Offset(1));
    assert_eq!(
        b.invoke(&commit(10_001), TIMEOUT).await.unwrap(),
        Reply::Success
    );
    assert_eq!(
        b.invoke(&query, TIMEOUT).await.unwrap(),
        Reply::Offset(10_001)
    );

    // Offset queries: the earliest stretch's start, the newest's end.
    let min = b
        .invoke(
            &Request::GetMinOffset {
                queue: logical.clone(),
            },
            TIMEOUT,
        )
        .await;
    assert_eq!(min.unwrap(), Reply::Offset(0));
    let max = b
        .invoke(
            &Request::GetMaxOffset {
                queue: logical.clone(),
            },
            TIMEOUT,
        )
        .await;
    assert_eq!(max.unwrap(), Reply::Offset(10_001));
    let physical_max = a
        .invoke(&Request::GetMaxOffset { queue: physical_a }, TIMEOUT)
        .await;
    assert_eq!(physical_max.unwrap(), Reply::Offset(2));

    broker_b.shutdown().await;
    cluster.stop().await;
}
