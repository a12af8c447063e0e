//! Prepared sends, END_TRANSACTION and check rounds against a real store in a temporary
//! directory, through the broker's handlers on the neutral model (no sockets, no JDK).

use std::sync::Arc;

use bytes::Bytes;
use skiff_model::command::{ErrorKind, Reply, Request, SendRequest, SendResult};
use skiff_model::message::{keys, sys_flag, Message, Properties};
use skiff_model::record::Record;
use skiff_model::transaction::{
    self as tx, keys as tx_keys, EndTransactionRequest, TransactionResolution,
};
use skiff_protocol::remoting::{self, RemotingCommand};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::service::check_round;
use crate::broker::{store_config, BrokerState, ScheduleService};
use crate::config::BrokerConfig;
use crate::net::{ClientChannel, Handled, RequestContext, Service};

const GROUP: &str = "tx-group";
const TOPIC: &str = "TxTopic";

struct Fixture {
    state: Arc<BrokerState>,
    ctx: RequestContext,
    _dir: tempfile::TempDir,
}

fn fixture(tune: impl FnOnce(&mut BrokerConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig {
        store_path_root_dir: dir.path().to_path_buf(),
        mapped_file_size_commit_log: 1 << 20,
        namesrv_addr: None,
        ..BrokerConfig::default()
    };
    tune(&mut config);
    let broker_addr = "127.0.0.1:10911".to_string();
    let store =
        skiff_store::MessageStore::open(store_config(&config, broker_addr.parse().unwrap()))
            .unwrap();
    let store = Arc::new(store);
    let schedule = ScheduleService::start(&config, store.clone()).unwrap();
    let store_host = broker_addr.parse().unwrap();
    let state = Arc::new(BrokerState::new(
        config,
        broker_addr,
        store_host,
        store,
        schedule,
    ));
    state.topics.create_if_absent(TOPIC, 4, 6);
    let (channel, _rx) = ClientChannel::detached("127.0.0.1:5555".parse().unwrap());
    Fixture {
        state,
        ctx: RequestContext {
            channel,
            language: skiff_protocol::remoting::LanguageCode::Java,
            version: skiff_protocol::remoting::SKIFF_VERSION,
        },
        _dir: dir,
    }
}

async fn answer(handled: Handled) -> Reply {
    match handled {
        Handled::Now(reply) => reply,
        Handled::Later(future) => future.await,
    }
}

fn prepared_send(born: i64, extra: &[(&str, &str)]) -> SendRequest {
    let mut properties: Properties = [
        (keys::TRANSACTION_PREPARED, "true"),
        (keys::PRODUCER_GROUP, GROUP),
        (keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "UNIQ-1"),
        (keys::TAGS, "TagA"),
    ]
    .into_iter()
    .collect();
    for (k, v) in extra {
        properties.insert(*k, *v);
    }
    SendRequest {
        producer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id: 2,
        sys_flag: sys_flag::TRANSACTION_PREPARED_TYPE,
        born_timestamp: born,
        messages: vec![Message {
            flag: 7,
            body: Bytes::from_static(b"payload"),
            properties,
        }],
        ..SendRequest::default()
    }
}

async fn send(f: &Fixture, request: SendRequest) -> Reply {
    answer(f.state.clone().handle(&f.ctx, Request::Send(request))).await
}

async fn send_ok(f: &Fixture, request: SendRequest) -> SendResult {
    match send(f, request).await {
        Reply::Sent(sent) => sent,
        other => panic!("send failed: {other:?}"),
    }
}

fn records(f: &Fixture, topic: &str, queue_id: i32) -> Vec<Bytes> {
    f.state
        .store
        .get_messages(topic, queue_id, 0, 64, usize::MAX, &|_| true)
        .messages
}

fn end_of(sent: &SendResult, resolution: TransactionResolution) -> EndTransactionRequest {
    let (_, offset) = skiff_model::record::decode_offset_msg_id(&sent.msg_ids[0]).unwrap();
    EndTransactionRequest {
        producer_group: GROUP.into(),
        tran_state_table_offset: sent.queue_offset,
        commit_log_offset: offset,
        resolution,
        from_transaction_check: false,
        msg_id: "UNIQ-1".into(),
        transaction_id: sent.transaction_id.clone(),
    }
}

async fn end(f: &Fixture, request: EndTransactionRequest) -> Reply {
    answer(
        f.state
            .clone()
            .handle(&f.ctx, Request::EndTransaction(request)),
    )
    .await
}

fn error_of(reply: Reply) -> (ErrorKind, String) {
    match reply {
        Reply::Error(e) => (e.kind, e.message),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_prepared_send_is_stored_as_a_half_in_queue_zero() {
    let f = fixture(|_| {});
    let sent = send_ok(&f, prepared_send(1, &[])).await;
    assert_eq!(
        sent.queue_id, 2,
        "the reply names the real queue, as Java's"
    );
    assert_eq!(sent.queue_offset, 0);
    assert_eq!(sent.transaction_id.as_deref(), Some("UNIQ-1"));
    assert!(
        records(&f, TOPIC, 2).is_empty(),
        "nothing is consumable yet"
    );
    let halves = records(&f, tx::HALF_TOPIC, 0);
    assert_eq!(halves.len(), 1);
    let half = Record::decode(&halves[0], true).unwrap();
    assert_eq!(half.topic, tx::HALF_TOPIC);
    assert_eq!(half.sys_flag & sys_flag::TRANSACTION_TYPE_MASK, 0);
    let props = half.parsed_properties();
    assert_eq!(props.get(keys::REAL_TOPIC), Some(TOPIC));
    assert_eq!(props.get(keys::REAL_QUEUE_ID), Some("2"));
    assert_eq!(props.get(keys::TRANSACTION_ID), Some("UNIQ-1"));
    assert_eq!(props.get(keys::TRANSACTION_PREPARED), Some("true"));
    assert_eq!(half.msg_id(), sent.msg_ids[0]);
}

#[tokio::test]
async fn commit_puts_the_half_into_its_real_queue_and_writes_an_op_record() {
    let f = fixture(|_| {});
    let sent = send_ok(&f, prepared_send(1, &[])).await;
    assert_eq!(
        end(&f, end_of(&sent, TransactionResolution::Commit)).await,
        Reply::Success
    );
    let delivered = records(&f, TOPIC, 2);
    assert_eq!(delivered.len(), 1);
    let message = Record::decode(&delivered[0], true).unwrap();
    let half_offset = end_of(&sent, TransactionResolution::Commit).commit_log_offset;
    assert_eq!(message.topic, TOPIC);
    assert_eq!(message.body, b"payload");
    assert_eq!(message.flag, 7);
    assert_eq!(message.born_timestamp, 1);
    assert_eq!(
        sys_flag::transaction_type(message.sys_flag),
        sys_flag::TRANSACTION_COMMIT_TYPE
    );
    assert_eq!(message.prepared_transaction_offset, half_offset);
    let props = message.parsed_properties();
    assert_eq!(props.uniq_key(), Some("UNIQ-1"));
    assert_eq!(props.tags(), Some("TagA"));
    let ops = records(&f, tx::OP_TOPIC, 0);
    assert_eq!(ops.len(), 1);
    let op = Record::decode(&ops[0], true).unwrap();
    assert_eq!(op.body, b"0,");
    assert_eq!(op.parsed_properties().tags(), Some(tx::REMOVE_TAG));
}

#[tokio::test]
async fn the_end_of_a_recent_half_is_resolved_without_the_blocking_pool() {
    let f = fixture(|_| {});
    let sent = send_ok(&f, prepared_send(1, &[])).await;
    let handled = f.state.clone().handle(
        &f.ctx,
        Request::EndTransaction(end_of(&sent, TransactionResolution::Commit)),
    );
    assert!(matches!(handled, Handled::Now(Reply::Success)));
    assert_eq!(records(&f, TOPIC, 2).len(), 1);
}

#[tokio::test]
async fn rollback_writes_only_the_op_record() {
    let f = fixture(|_| {});
    let sent = send_ok(&f, prepared_send(1, &[])).await;
    assert_eq!(
        end(&f, end_of(&sent, TransactionResolution::Rollback)).await,
        Reply::Success
    );
    assert!(records(&f, TOPIC, 2).is_empty());
    assert_eq!(records(&f, tx::OP_TOPIC, 0).len(), 1);
    // Unknown leaves it for the check.
    let sent = send_ok(&f, prepared_send(1, &[])).await;
    assert_eq!(
        end(&f, end_of(&sent, TransactionResolution::Unknown)).await,
        Reply::Success
    );
    assert_eq!(records(&f, tx::OP_TOPIC, 0).len(), 1);
}

#[tokio::test]
async fn bad_end_transactions_get_javas_codes_and_remarks() {
    let f = fixture(|_| {});
    let sent = send_ok(&f, prepared_send(1, &[])).await;
    let good = end_of(&sent, TransactionResolution::Commit);
    for offset in [-1, 123_456_789, i64::MAX, good.commit_log_offset + 3] {
        let request = EndTransactionRequest {
            commit_log_offset: offset,
            ..good.clone()
        };
        assert_eq!(
            error_of(end(&f, request).await),
            (
                ErrorKind::SystemError,
                "Find prepared transaction message failed".into()
            ),
            "offset {offset}"
        );
    }
    let wrong_group = EndTransactionRequest {
        producer_group: "other".into(),
        ..good.clone()
    };
    assert_eq!(
        error_of(end(&f, wrong_group).await).1,
        "The producer group wrong"
    );
    let wrong_queue_offset = EndTransactionRequest {
        tran_state_table_offset: 9,
        ..good.clone()
    };
    assert_eq!(
        error_of(end(&f, wrong_queue_offset).await).1,
        "The transaction state table offset wrong"
    );
    // A committed (not half) message with the right group and queue offset.
    end(&f, good.clone()).await;
    let delivered = records(&f, TOPIC, 2);
    let delivered = Record::decode(&delivered[0], false).unwrap();
    let not_half = EndTransactionRequest {
        commit_log_offset: delivered.physical_offset,
        tran_state_table_offset: delivered.queue_offset,
        ..good
    };
    assert_eq!(error_of(end(&f, not_half).await).0, ErrorKind::SystemError);
    assert_eq!(
        records(&f, TOPIC, 2).len(),
        1,
        "nothing was committed twice"
    );
}

#[tokio::test]
async fn late_ends_of_immune_halves_are_refused_as_illegal_operations() {
    let f = fixture(|_| {});
    let sent = send_ok(
        &f,
        prepared_send(1, &[(tx_keys::CHECK_IMMUNITY_TIME_IN_SECONDS, "10")]),
    )
    .await;
    let (kind, _) = error_of(end(&f, end_of(&sent, TransactionResolution::Commit)).await);
    assert_eq!(kind, ErrorKind::IllegalOperation);
    // The check's answer is taken.
    let from_check = EndTransactionRequest {
        from_transaction_check: true,
        ..end_of(&sent, TransactionResolution::Commit)
    };
    assert_eq!(end(&f, from_check).await, Reply::Success);
}

#[tokio::test]
async fn reject_transaction_message_refuses_prepared_sends() {
    let f = fixture(|c| c.reject_transaction_message = true);
    let (kind, remark) = error_of(send(&f, prepared_send(1, &[])).await);
    assert_eq!(kind, ErrorKind::NoPermission);
    assert_eq!(
        remark,
        "the broker[127.0.0.1] sending transaction message is forbidden"
    );
}

fn frames(rx: &mut mpsc::Receiver<RemotingCommand>) -> Vec<RemotingCommand> {
    let mut out = Vec::new();
    while let Ok(frame) = rx.try_recv() {
        out.push(frame);
    }
    out
}

#[tokio::test]
async fn unresolved_halves_are_checked_then_discarded_after_the_maximum() {
    let f = fixture(|c| {
        c.transaction_time_out = 1_000;
        c.transaction_check_max = 2;
    });
    let (producer, mut rx) = ClientChannel::detached("127.0.0.1:6666".parse().unwrap());
    let from = crate::broker::consumers::Heartbeater {
        channel: &producer,
        client_id: "producer-1",
        language: "JAVA",
        version: 479,
    };
    f.state.producers.register(&from, GROUP);
    let born = super::now_millis() - 5_000;
    let sent = send_ok(&f, prepared_send(born, &[])).await;
    // A young half: left alone.
    send_ok(&f, prepared_send(super::now_millis(), &[])).await;
    std::thread::sleep(std::time::Duration::from_millis(5));
    let stop = CancellationToken::new();

    assert_eq!(check_round(&f.state, &stop), 1);
    let checks = frames(&mut rx);
    assert_eq!(checks.len(), 1);
    let Request::CheckTransactionState(check) = remoting::decode_request(&checks[0]).unwrap()
    else {
        panic!("not a check")
    };
    assert!(checks[0].is_oneway());
    assert_eq!(check.msg_id.as_deref(), Some("UNIQ-1"));
    assert_eq!(
        check.tran_state_table_offset, 2,
        "the copy after the young half"
    );
    let body = Record::decode(&check.message, true).unwrap();
    assert_eq!(body.topic, TOPIC, "the body carries the real topic");
    assert_eq!(body.queue_id, 2);
    assert_eq!(body.physical_offset, check.commit_log_offset);
    assert_eq!(
        body.parsed_properties()
            .get(tx_keys::TRANSACTION_CHECK_TIMES),
        Some("1")
    );
    let progress = |topic| f.state.offsets.query(tx::SYSTEM_GROUP, topic, 0);
    assert_eq!(progress(tx::HALF_TOPIC), Some(1));
    assert_eq!(sent.queue_offset, 0);

    // The round stops at the young half, so the copy waits behind it; resolve the young one.
    let halves = records(&f, tx::HALF_TOPIC, 0);
    let young = Record::decode(&halves[1], false).unwrap();
    let resolve_young = EndTransactionRequest {
        producer_group: GROUP.into(),
        tran_state_table_offset: 1,
        commit_log_offset: young.physical_offset,
        resolution: TransactionResolution::Rollback,
        from_transaction_check: false,
        msg_id: "UNIQ-1".into(),
        transaction_id: None,
    };
    assert_eq!(end(&f, resolve_young).await, Reply::Success);
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(check_round(&f.state, &stop), 1, "second check of the copy");
    assert_eq!(progress(tx::HALF_TOPIC), Some(3));
    assert_eq!(progress(tx::OP_TOPIC), Some(1));
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(check_round(&f.state, &stop), 0, "checked twice: discarded");
    assert_eq!(frames(&mut rx).len(), 1);
    let discarded = records(&f, tx::CHECK_MAX_TIME_TOPIC, 0);
    assert_eq!(discarded.len(), 1);
    let discarded = Record::decode(&discarded[0], true).unwrap();
    assert_eq!(
        discarded.parsed_properties().get(keys::REAL_TOPIC),
        Some(TOPIC)
    );
    assert!(records(&f, TOPIC, 2).is_empty(), "never delivered");
    assert_eq!(progress(tx::HALF_TOPIC), Some(4));

    // A check's answer commits the copy it names.
    let sent = send_ok(&f, prepared_send(born, &[])).await;
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(check_round(&f.state, &stop), 1);
    let Request::CheckTransactionState(check) =
        remoting::decode_request(&frames(&mut rx)[0]).unwrap()
    else {
        panic!("not a check")
    };
    let answer = EndTransactionRequest {
        tran_state_table_offset: check.tran_state_table_offset,
        commit_log_offset: check.commit_log_offset,
        from_transaction_check: true,
        ..end_of(&sent, TransactionResolution::Commit)
    };
    assert_eq!(end(&f, answer).await, Reply::Success);
    assert_eq!(records(&f, TOPIC, 2).len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(check_round(&f.state, &stop), 0, "resolved: not asked again");
}

#[tokio::test]
async fn without_a_live_producer_the_half_is_still_counted() {
    let f = fixture(|c| c.transaction_time_out = 1_000);
    send_ok(&f, prepared_send(super::now_millis() - 5_000, &[])).await;
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(check_round(&f.state, &CancellationToken::new()), 1);
    let halves = records(&f, tx::HALF_TOPIC, 0);
    assert_eq!(halves.len(), 2);
    let copy = Record::decode(&halves[1], false).unwrap();
    assert_eq!(
        copy.parsed_properties()
            .get(tx_keys::TRANSACTION_CHECK_TIMES),
        Some("1")
    );
}
