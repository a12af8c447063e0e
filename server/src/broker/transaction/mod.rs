//! Transactional messages (`TransactionalMessageBridge`, `EndTransactionProcessor`,
//! `TransactionalMessageCheckService`).
//!
//! A prepared send (`TRAN_MSG=true`) is stored as a *half* in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0,
//! with its destination in `REAL_TOPIC` / `REAL_QID` ([`into_half`], called by the send path).
//! END_TRANSACTION ([`end_transaction`]) commits a half, which puts the message into its real
//! queue, or rolls it back; either way an op record naming the half's queue offset goes to
//! `RMQ_SYS_TRANS_OP_HALF_TOPIC`. The check service ([`service`], rules in [`checker`]) asks a
//! producer about halves that stay unresolved.
//!
//! Everything lives in the CommitLog, so a restart or `kill -9` loses nothing: a committed message
//! is stored before its op record, and a half without an op record is checked again.

pub(super) mod checker;
pub(super) mod service;

use std::net::SocketAddr;
use std::sync::Arc;

use skiff_model::command::{ErrorKind, Reply};
use skiff_model::message::{keys, sys_flag, Properties};
use skiff_model::record::Record;
use skiff_model::transaction::{
    self as tx, keys as tx_keys, EndTransactionRequest, TransactionResolution,
};
use skiff_store::{MessageToStore, Put, PutError};
use tracing::{debug, warn};

use super::{now_millis, BrokerState};
use crate::net::Handled;

/// Whether a send is the first phase of a transaction (`SendMessageProcessor`): `TRAN_MSG` is
/// `true` (any case), unless it is a pre-4.6.1 client's retry of a delayed message.
pub(super) fn is_prepared(properties: &Properties, reconsume_times: i32) -> bool {
    properties
        .get(skiff_model::message::keys::TRANSACTION_PREPARED)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        && !(reconsume_times > 0 && properties.delay_level().is_some())
}

/// Turns a prepared message into its half (`parseHalfMessageInner`): the destination moves into
/// `REAL_TOPIC` / `REAL_QID`, the transaction bits of the sys flag are cleared (so the half gets a
/// queue entry), and `__transactionId__` repeats the `UNIQ_KEY`.
pub(super) fn into_half(message: &mut MessageToStore, properties: &mut Properties) {
    if let Some(uniq) = properties.uniq_key().map(str::to_string) {
        properties.insert(keys::TRANSACTION_ID, uniq);
    }
    properties.insert(keys::REAL_TOPIC, message.topic.clone());
    properties.insert(keys::REAL_QUEUE_ID, message.queue_id.to_string());
    message.sys_flag = reset_transaction(message.sys_flag, sys_flag::TRANSACTION_NOT_TYPE);
    message.topic = tx::HALF_TOPIC.to_string();
    message.queue_id = 0;
}

/// `MessageSysFlag.resetTransactionValue`.
fn reset_transaction(flag: i32, transaction_type: i32) -> i32 {
    (flag & !sys_flag::TRANSACTION_TYPE_MASK) | transaction_type
}

/// A half within `commitLogResidentTail` of the CommitLog's head was written moments ago and is
/// still mapped, so reading it is a copy, not a disk read. The usual END_TRANSACTION, sent right
/// after the half, is then resolved on the connection's reader like a send; an older half (a
/// check's answer, a slow local transaction) is read on the blocking pool. The hop cost about a
/// tenth of the broker's CPU in the 16-thread transaction benchmark.
fn is_recent(state: &BrokerState, commit_log_offset: i64) -> bool {
    let resident_tail = state.config.commit_log_resident_tail as i64;
    commit_log_offset >= 0
        && commit_log_offset >= state.store.commit_log_max_offset() - resident_tail
}

/// END_TRANSACTION. Reading an older half may touch cold CommitLog pages, so that work runs on a
/// blocking thread. The client sends it oneway; the reply matters only to tools and tests.
pub(super) fn end_transaction(state: &Arc<BrokerState>, request: EndTransactionRequest) -> Handled {
    if request.resolution == TransactionResolution::Unknown {
        // Java logs and does not answer; the half stays for the check.
        debug!(producer_group = %request.producer_group, msg_id = %request.msg_id,
               from_check = request.from_transaction_check, "transaction still unknown");
        return Handled::Now(Reply::Success);
    }
    if is_recent(state, request.commit_log_offset) {
        return Handled::Now(resolve(state, &request, now_millis()));
    }
    let state = state.clone();
    Handled::Later(Box::pin(async move {
        let blocking = state.clone();
        tokio::task::spawn_blocking(move || resolve(&blocking, &request, now_millis()))
            .await
            .unwrap_or_else(|e| {
                Reply::error(
                    ErrorKind::SystemError,
                    format!("end transaction failed: {e}"),
                )
            })
    }))
}

/// Commits or rolls back the half at `request.commit_log_offset`, with Java's checks and answers.
pub(super) fn resolve(state: &BrokerState, request: &EndTransactionRequest, now: i64) -> Reply {
    let not_found = || {
        Reply::error(
            ErrorKind::SystemError,
            "Find prepared transaction message failed",
        )
    };
    let Some(bytes) = (request.commit_log_offset >= 0)
        .then(|| state.store.read_message(request.commit_log_offset))
        .flatten()
    else {
        return not_found();
    };
    let Ok(half) = Record::decode(&bytes, false) else {
        return not_found();
    };
    let properties = half.parsed_properties();
    if !request.from_transaction_check {
        if let Some(immunity) = properties
            .get(tx_keys::CHECK_IMMUNITY_TIME_IN_SECONDS)
            .filter(|v| !v.is_empty())
        {
            let limit = checker::end_transaction_immunity_ms(
                immunity,
                state.config.transaction_time_out as i64,
            );
            if now - half.born_timestamp > limit {
                warn!(msg_id = %request.msg_id, commit_log_offset = request.commit_log_offset,
                      "end transaction after the check immunity time: waiting for the check");
                return Reply::error(
                    ErrorKind::IllegalOperation,
                    format!(
                        "the transaction of {} ended after its check immunity time ({limit} ms); the broker will check it instead",
                        request.msg_id
                    ),
                );
            }
        }
    }
    if properties.get(keys::PRODUCER_GROUP) != Some(request.producer_group.as_str()) {
        return Reply::error(ErrorKind::SystemError, "The producer group wrong");
    }
    if half.queue_offset != request.tran_state_table_offset {
        return Reply::error(
            ErrorKind::SystemError,
            "The transaction state table offset wrong",
        );
    }
    if half.physical_offset != request.commit_log_offset {
        return Reply::error(ErrorKind::SystemError, "The commit log offset wrong");
    }
    if half.topic != tx::HALF_TOPIC {
        return Reply::error(
            ErrorKind::SystemError,
            format!(
                "the message at commitLogOffset {} is in topic {}, not a half message",
                request.commit_log_offset, half.topic
            ),
        );
    }
    if request.resolution == TransactionResolution::Commit {
        let committed = match committed_message(&half, &properties) {
            Ok(message) => message,
            Err(reply) => return reply,
        };
        if let Err(err) = state.store.append_messages(vec![committed]) {
            return final_put_error(state, &err);
        }
        state.stats.messages_put(1);
    }
    if let Err(err) = write_op(state, half.queue_id, &[half.queue_offset], now) {
        // The message stays a half; the check will ask again.
        warn!(%err, half_offset = half.queue_offset, "writing the transaction op record failed");
    }
    Reply::Success
}

/// The message a commit stores (`endMessageTransaction`): the half's content in its real queue,
/// the commit type in the sys flag and the half's offset as the prepared transaction offset. Like
/// Java 5.3.3, whose store writes the properties string taken from the half, the stored
/// properties are the half's (`REAL_TOPIC`, `REAL_QID`, `TRAN_MSG` and `PGROUP` included).
fn committed_message(half: &Record, properties: &Properties) -> Result<MessageToStore, Reply> {
    let real_topic = properties.get(keys::REAL_TOPIC).unwrap_or_default();
    let real_queue = properties
        .get(keys::REAL_QUEUE_ID)
        .and_then(|q| q.parse::<i32>().ok());
    let (false, Some(queue_id)) = (real_topic.is_empty(), real_queue) else {
        return Err(Reply::error(
            ErrorKind::SystemError,
            "the half message lacks a valid REAL_TOPIC / REAL_QID",
        ));
    };
    Ok(MessageToStore {
        sys_flag: reset_transaction(half.sys_flag, sys_flag::TRANSACTION_COMMIT_TYPE),
        prepared_transaction_offset: half.physical_offset,
        ..MessageToStore::copy_of(
            half,
            real_topic.to_string(),
            queue_id,
            String::from_utf8_lossy(half.properties).into_owned(),
        )
    })
}

/// Java's answers when the final message cannot be stored (`sendFinalMessage`).
fn final_put_error(state: &BrokerState, err: &PutError) -> Reply {
    match err {
        PutError::MessageTooLarge { .. }
        | PutError::PropertiesTooLarge { .. }
        | PutError::InvalidTopic(_) => Reply::error(
            ErrorKind::MessageIllegal,
            format!(
                "The message is illegal, maybe msg body or properties length not matched. msg body length limit {}B, msg properties length limit 32KB.",
                state.config.max_message_size
            ),
        ),
        PutError::ServiceNotAvailable(_) => {
            Reply::error(ErrorKind::ServiceNotAvailable, "Service not available now.")
        }
        PutError::Io(e) => Reply::error(ErrorKind::SystemError, e.to_string()),
    }
}

/// Appends the op record that resolves `half_offsets` of half queue `queue_id`
/// (`TransactionalMessageBridge.writeOp`): tag `d`, body `offset,` per half. Java 5.3.3 batches
/// several offsets into one record over `transactionOpBatchInterval`; one record per resolution is
/// the same format, read the same way, and never delays the resolution.
fn write_op(
    state: &BrokerState,
    queue_id: i32,
    half_offsets: &[i64],
    now: i64,
) -> Result<(), PutError> {
    let mut properties = Properties::new();
    properties.insert(keys::WAIT_STORE_MSG_OK, "true");
    properties.insert(keys::TAGS, tx::REMOVE_TAG);
    state.store.append_messages(vec![MessageToStore {
        topic: tx::OP_TOPIC.to_string(),
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp: now,
        born_host: store_host(state),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: bytes::Bytes::from(tx::encode_op_body(half_offsets)),
        properties: properties.encode(),
    }])?;
    Ok(())
}

fn store_host(state: &BrokerState) -> SocketAddr {
    state
        .broker_addr
        .parse()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
}

/// The appended messages of a put, whether or not a sync flush is still to come (the broker's
/// own transaction records never wait for it, as Java's `waitStoreMsgOK=false`).
fn appended(put: Put) -> Vec<skiff_store::AppendedMessage> {
    match put {
        Put::Done(result) => result.messages,
        Put::AwaitFlush(wait) => wait.messages().to_vec(),
    }
}

#[cfg(test)]
mod tests;
