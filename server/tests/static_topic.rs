//! Static topics on the wire, without a JDK: UPDATE_AND_CREATE_STATIC_TOPIC stores the broker's
//! part of the mapping, GET_TOPIC_CONFIG shows it, the registration brings what the broker leads
//! into the route, and a mapping with an older epoch is refused with Java's remark, one that is
//! not one to one with Skiff's own. The
//! official tools' view (`mqadmin updateStaticTopic`, `remappingStaticTopic`) is in
//! `compat-tests/tests/mqadmin.rs`.

mod common;

use std::collections::BTreeMap;

use skiff_model::admin::AdminCommand;
use skiff_model::command::{ErrorKind, Reply, Request};
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

    // Logical queue 1 on physical queue 0, as mqadmin spreads a topic over two broker groups:
    // Skiff does not translate between them, and says so.
    let mut spread = mapping(&bname, 4, 3_000);
    spread.hosted_queues.get_mut(&1).unwrap()[0].queue_id = 0;
    let Reply::Error(refused) = broker.invoke(&create(spread), TIMEOUT).await.unwrap() else {
        panic!("a spread mapping was taken");
    };
    assert_eq!(refused.kind, ErrorKind::SystemError);
    assert!(
        refused
            .message
            .contains("puts logical queue 1 on [\"broker-a/0 from 0\"]"),
        "{}",
        refused.message
    );
    cluster.stop().await;
}
