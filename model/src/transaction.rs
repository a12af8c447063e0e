//! Transactional messages: the names RocketMQ reserves for them and the two requests of the
//! two-phase protocol.
//!
//! A producer first sends a *prepared* message (`TRAN_MSG=true`). The broker keeps it as a *half*
//! message in [`HALF_TOPIC`], runs the producer's local transaction outcome through
//! [`EndTransactionRequest`] (commit: the message goes to its real topic; rollback: it never
//! does), and records every resolved half in [`OP_TOPIC`]. Halves nobody resolves are asked about
//! with [`CheckTransactionStateRequest`], sent by the broker to a producer of the group.

use bytes::Bytes;

/// Where half messages wait (`TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC`), always queue 0.
pub const HALF_TOPIC: &str = crate::topic::TRANS_HALF_TOPIC;
/// Where resolved halves are recorded (`RMQ_SYS_TRANS_OP_HALF_TOPIC`); op queue n serves half
/// queue n.
pub const OP_TOPIC: &str = crate::topic::TRANS_OP_HALF_TOPIC;
/// Where halves checked `transactionCheckMax` times go (`TRANS_CHECK_MAX_TIME_TOPIC`).
pub const CHECK_MAX_TIME_TOPIC: &str = crate::topic::TRANS_CHECK_MAX_TIME_TOPIC;
/// The group under which the check's progress on the half and op queues is kept
/// (`MixAll.CID_SYS_RMQ_TRANS`).
pub const SYSTEM_GROUP: &str = "CID_RMQ_SYS_TRANS";
/// Tag of an op record that removes halves (`TransactionalMessageUtil.REMOVE_TAG`).
pub const REMOVE_TAG: &str = "d";
/// Separator after each half queue offset in an op record's body.
pub const OFFSET_SEPARATOR: char = ',';

/// Message properties of the transaction protocol (`MessageConst`).
pub mod keys {
    /// How often the broker has asked about this half.
    pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
    /// Seconds after birth before the first check (at least `transactionTimeOut`).
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
    /// The queue offset of the first copy of a half that was re-put while immune.
    pub const TRANSACTION_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
}

/// What the producer decided (`commitOrRollback`: the sys flag transaction type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionResolution {
    /// `TRANSACTION_NOT_TYPE` (0): not decided yet (`UNKNOW`).
    Unknown,
    /// `TRANSACTION_COMMIT_TYPE` (8).
    Commit,
    /// `TRANSACTION_ROLLBACK_TYPE` (12).
    Rollback,
}

/// END_TRANSACTION: the producer's outcome for one half message, from its local transaction or in
/// answer to a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTransactionRequest {
    pub producer_group: String,
    /// The half's queue offset in [`HALF_TOPIC`] (the send result's `queueOffset`).
    pub tran_state_table_offset: i64,
    /// The half's CommitLog offset (decoded from the send result's offset message id).
    pub commit_log_offset: i64,
    pub resolution: TransactionResolution,
    /// The producer answers a check rather than finishing its local transaction.
    pub from_transaction_check: bool,
    /// The client's message id (`UNIQ_KEY`).
    pub msg_id: String,
    pub transaction_id: Option<String>,
}

/// CHECK_TRANSACTION_STATE: the broker asks a producer of the group how a half ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckTransactionStateRequest {
    /// The real topic of the message.
    pub topic: String,
    pub tran_state_table_offset: i64,
    pub commit_log_offset: i64,
    /// `UNIQ_KEY`.
    pub msg_id: Option<String>,
    pub transaction_id: Option<String>,
    /// The offset message id of the half.
    pub offset_msg_id: String,
    pub broker_name: String,
    /// The half as one encoded record with its real topic and queue, as the client decodes it.
    pub message: Bytes,
}

/// The body of an op record: every half queue offset followed by [`OFFSET_SEPARATOR`].
pub fn encode_op_body(half_offsets: &[i64]) -> String {
    let mut body = String::new();
    for offset in half_offsets {
        body.push_str(&offset.to_string());
        body.push(OFFSET_SEPARATOR);
    }
    body
}

/// The half queue offsets an op record body names; pieces that are not numbers are skipped, as
/// Java logs and skips them (its `getLong` yields -1, below every offset).
pub fn decode_op_body(body: &[u8]) -> Vec<i64> {
    String::from_utf8_lossy(body)
        .split(OFFSET_SEPARATOR)
        .filter_map(|piece| piece.trim().parse::<i64>().ok())
        .filter(|offset| *offset >= 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_bodies_round_trip_like_java() {
        assert_eq!(encode_op_body(&[3]), "3,");
        assert_eq!(encode_op_body(&[3, 10]), "3,10,");
        assert_eq!(decode_op_body(b"3,10,"), vec![3, 10]);
        assert_eq!(decode_op_body(b"x,-1,7"), vec![7]);
        assert!(decode_op_body(b"").is_empty());
    }
}
