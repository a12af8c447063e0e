//! Producers: lanes that each keep one SEND_MESSAGE_V2 in flight, spreading messages over the
//! topic's writable queues round robin. A synchronous producer is one lane; an asynchronous one
//! is `--inflight` lanes. A transactional lane sends a half message and then commits it with a
//! oneway END_TRANSACTION, as the Java `TransactionMQProducer` does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use skiff_model::command::{AutoCreateTopic, Reply, Request, SendRequest, SendResult};
use skiff_model::message::{keys, sys_flag, Message, Properties};
use skiff_model::record::decode_offset_msg_id;
use skiff_model::topic::AUTO_CREATE_TOPIC_KEY;
use skiff_model::transaction::{EndTransactionRequest, TransactionResolution};
use tokio::task::JoinSet;

use super::ids::{self, Ledger};
use super::pool::Pool;
use super::route::Target;
use super::stats::Stats;
use super::Stop;

/// Producer group named in every send (brokers do not check it).
const PRODUCER_GROUP: &str = "skiff_bench_producer";
/// Pause after a failed send, so a broker in trouble is not hammered.
const ERROR_PAUSE: Duration = Duration::from_millis(100);
/// How many failures are described on stderr; the rest are only counted.
const ERRORS_SHOWN: u64 = 5;

/// What every lane shares.
pub struct Producing {
    pub pool: Arc<Pool>,
    pub targets: Vec<Target>,
    pub stats: Arc<Stats>,
    pub stop: Stop,
    pub run_id: u64,
    pub body: Bytes,
    pub tags: bool,
    pub keys: bool,
    /// Send halves and commit them (`--transaction`).
    pub transaction: bool,
    /// Total messages to send, warm-up included.
    pub limit: Option<u64>,
    /// `--rate`: message `seq` is due at start + `seq` × the gap.
    pub pace: Option<(Instant, Duration)>,
    pub timeout: Duration,
    /// Keep every sequence number for the consumed == produced check.
    pub track: bool,
    pub next_seq: AtomicU64,
    /// Sends acknowledged so far, warm-up included.
    pub acked: AtomicU64,
    pub errors_shown: AtomicU64,
}

/// Starts `lanes` lanes; the task ends when all have stopped, with what they sent.
pub fn start(ctx: Arc<Producing>, lanes: usize) -> tokio::task::JoinHandle<Ledger> {
    tokio::spawn(async move {
        let mut set = JoinSet::new();
        for lane in 0..lanes {
            set.spawn(run_lane(ctx.clone(), lane));
        }
        let mut ledger = Ledger::default();
        while let Some(done) = set.join_next().await {
            if let Ok((acked, failed)) = done {
                ledger.acked.extend(acked);
                ledger.failed.extend(failed);
            }
        }
        ledger
    })
}

async fn run_lane(ctx: Arc<Producing>, lane: usize) -> (Vec<u64>, Vec<u64>) {
    let (mut acked, mut failed) = (Vec::new(), Vec::new());
    while !ctx.stop.is_set() {
        let seq = ctx.next_seq.fetch_add(1, Ordering::Relaxed);
        if ctx.limit.is_some_and(|limit| seq >= limit) {
            break;
        }
        if let Some((start, gap)) = ctx.pace {
            let due = start + gap.saturating_mul(u32::try_from(seq).unwrap_or(u32::MAX));
            tokio::time::sleep_until(due.into()).await;
        }
        let target = &ctx.targets[(seq % ctx.targets.len() as u64) as usize];
        let request = ctx.message(seq, target);
        let started = Instant::now();
        let outcome = match ctx.pool.client(&target.broker, lane).await {
            Ok(client) => match client.invoke(&request, ctx.timeout).await {
                Ok(Reply::Sent(sent)) if ctx.transaction => {
                    let end = ctx.commit(seq, &sent);
                    match end {
                        Ok(end) => client
                            .invoke_oneway(&end)
                            .await
                            .map(|()| Reply::Sent(sent))
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    }
                }
                other => other.map_err(|e| e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok(Reply::Sent(_)) => {
                ctx.stats.record_latency(started.elapsed());
                ctx.acked.fetch_add(1, Ordering::Relaxed);
                if ctx.track {
                    acked.push(seq);
                }
            }
            other => {
                ctx.stats.record_error();
                if ctx.track {
                    failed.push(seq);
                }
                if ctx.errors_shown.fetch_add(1, Ordering::Relaxed) < ERRORS_SHOWN {
                    let why = match other {
                        Ok(reply) => format!("{reply:?}"),
                        Err(e) => e,
                    };
                    tracing::warn!("send to {} failed: {why}", target.broker);
                }
                tokio::time::sleep(ERROR_PAUSE).await;
            }
        }
    }
    (acked, failed)
}

impl Producing {
    /// Message `seq`, as the Java client would send it (unique id, WAIT=true).
    fn message(&self, seq: u64, target: &Target) -> Request {
        let mut properties = Properties::new();
        if self.tags {
            properties.insert(keys::TAGS, format!("tag{}", seq % 4));
        }
        if self.keys {
            properties.insert(keys::KEYS, seq.to_string());
        }
        properties.insert(
            keys::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            ids::uniq_key(self.run_id, seq),
        );
        properties.insert(keys::WAIT_STORE_MSG_OK, "true");
        if self.transaction {
            properties.insert(keys::TRANSACTION_PREPARED, "true");
            properties.insert(keys::PRODUCER_GROUP, PRODUCER_GROUP);
        }
        let born_timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Request::Send(SendRequest {
            producer_group: PRODUCER_GROUP.to_string(),
            topic: target.queue.topic.clone(),
            queue_id: target.queue.queue_id,
            sys_flag: if self.transaction {
                sys_flag::TRANSACTION_PREPARED_TYPE
            } else {
                0
            },
            born_timestamp,
            // The Java client always names the template topic; brokers need it only for topics
            // they do not have.
            auto_create: Some(AutoCreateTopic {
                template_topic: AUTO_CREATE_TOPIC_KEY.to_string(),
                queue_nums: 4,
            }),
            messages: vec![Message {
                flag: 0,
                body: self.body.clone(),
                properties,
            }],
            ..SendRequest::default()
        })
    }

    /// The commit of half `seq` that `sent` acknowledged, as `DefaultMQProducerImpl.endTransaction`
    /// builds it: the half's queue offset and, from its offset message id, its CommitLog offset.
    fn commit(&self, seq: u64, sent: &SendResult) -> Result<Request, String> {
        let commit_log_offset = sent
            .msg_ids
            .first()
            .and_then(|id| decode_offset_msg_id(id))
            .map(|(_, offset)| offset)
            .ok_or_else(|| format!("the half's send result has no offset message id: {sent:?}"))?;
        Ok(Request::EndTransaction(EndTransactionRequest {
            producer_group: PRODUCER_GROUP.to_string(),
            tran_state_table_offset: sent.queue_offset,
            commit_log_offset,
            resolution: TransactionResolution::Commit,
            from_transaction_check: false,
            msg_id: ids::uniq_key(self.run_id, seq),
            transaction_id: sent.transaction_id.clone(),
        }))
    }
}
