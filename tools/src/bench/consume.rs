//! Consumers: one task per readable queue, pulling with long polling (PULL_MESSAGE with the
//! suspend flag and an inline `*` subscription, so no heartbeat is needed) from a start offset.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use skiff_model::command::{PullRequest, PullStatus, Reply, Request, SubscriptionExpression};
use skiff_model::consumer::EXPRESSION_TYPE_TAG;
use skiff_model::record::Record;
use tokio::task::JoinSet;

use super::ids;
use super::pool::Pool;
use super::route::Target;
use super::stats::Stats;
use super::Stop;

/// How long a broker may hold a pull that found nothing (Java's push consumer asks for 15 s; a
/// shorter hold lets a stopped run end sooner and changes nothing while messages flow).
const SUSPEND: Duration = Duration::from_secs(2);
const ERROR_PAUSE: Duration = Duration::from_millis(100);
const ERRORS_SHOWN: u64 = 5;

/// What every queue's task shares.
pub struct Consuming {
    pub pool: Arc<Pool>,
    pub stats: Arc<Stats>,
    pub stop: Stop,
    pub group: String,
    pub batch: i32,
    pub timeout: Duration,
    /// The run whose message ids are collected for the consumed == produced check.
    pub track: Option<u64>,
    /// Messages of the tracked run seen so far (repeats included).
    pub tracked: AtomicU64,
    pub errors_shown: AtomicU64,
}

/// Where one queue's reading starts and, if it has one, ends (exclusive).
#[derive(Debug, Clone, Copy)]
pub struct Span {
    pub from: i64,
    pub until: Option<i64>,
}

/// Consumed sequence numbers of the tracked run, and how many other messages were read.
#[derive(Debug, Default)]
pub struct Outcome {
    pub seqs: Vec<u64>,
    pub foreign: u64,
}

/// The offset span of each queue: from its first or last message, up to its end at start when
/// `backlog`.
pub async fn spans(
    pool: &Pool,
    targets: &[Target],
    earliest: bool,
    backlog: bool,
    timeout: Duration,
) -> Result<Vec<Span>> {
    let mut spans = Vec::with_capacity(targets.len());
    for target in targets {
        let client = pool.client(&target.broker, 0).await?;
        let queue = target.queue.clone();
        let max = offset(&client, Request::GetMaxOffset { queue }, timeout).await?;
        let from = if earliest || backlog {
            let queue = target.queue.clone();
            offset(&client, Request::GetMinOffset { queue }, timeout).await?
        } else {
            max
        };
        spans.push(Span {
            from,
            until: backlog.then_some(max),
        });
    }
    Ok(spans)
}

async fn offset(
    client: &skiff_server::remoting_client::RemotingClient,
    request: Request,
    timeout: Duration,
) -> Result<i64> {
    match client.invoke(&request, timeout).await? {
        Reply::Offset(offset) => Ok(offset),
        other => bail!("{request:?} on {}: {other:?}", client.addr()),
    }
}

/// Starts one task per queue; the task ends when all have stopped.
pub fn start(
    ctx: Arc<Consuming>,
    targets: Vec<Target>,
    spans: Vec<Span>,
) -> tokio::task::JoinHandle<Outcome> {
    tokio::spawn(async move {
        let mut set = JoinSet::new();
        for (lane, (target, span)) in targets.into_iter().zip(spans).enumerate() {
            set.spawn(run_queue(ctx.clone(), target, span, lane));
        }
        let mut total = Outcome::default();
        while let Some(done) = set.join_next().await {
            if let Ok(outcome) = done {
                total.seqs.extend(outcome.seqs);
                total.foreign += outcome.foreign;
            }
        }
        total
    })
}

async fn run_queue(ctx: Arc<Consuming>, target: Target, span: Span, lane: usize) -> Outcome {
    let mut outcome = Outcome::default();
    let mut offset = span.from;
    while !ctx.stop.is_set() && span.until.is_none_or(|until| offset < until) {
        let request = Request::Pull(PullRequest {
            consumer_group: ctx.group.clone(),
            queue: target.queue.clone(),
            queue_offset: offset,
            max_msg_nums: ctx.batch,
            suspend_timeout_millis: Some(SUSPEND.as_millis() as u64),
            subscription: Some(SubscriptionExpression {
                expression_type: EXPRESSION_TYPE_TAG.to_string(),
                expression: "*".to_string(),
                version: 0,
            }),
            ..PullRequest::default()
        });
        let pulled = async {
            let client = ctx.pool.client(&target.broker, lane).await?;
            client.invoke(&request, SUSPEND + ctx.timeout).await
        };
        let reply = tokio::select! {
            reply = pulled => reply.map_err(|e| e.to_string()),
            _ = ctx.stop.wait() => break,
        };
        match reply {
            Ok(Reply::Pulled(result)) => {
                if result.status == PullStatus::Found {
                    ctx.stats.record_messages(result.messages.len() as u64);
                    if let Some(run) = ctx.track {
                        ctx.note_ids(run, &result.messages, &mut outcome);
                    }
                }
                offset = result.next_begin_offset;
            }
            other => {
                ctx.stats.record_error();
                if ctx.errors_shown.fetch_add(1, Ordering::Relaxed) < ERRORS_SHOWN {
                    let why = match other {
                        Ok(reply) => format!("{reply:?}"),
                        Err(e) => e,
                    };
                    tracing::warn!(
                        "pull of {}:{} from {} failed: {why}",
                        target.queue.topic,
                        target.queue.queue_id,
                        target.broker
                    );
                }
                tokio::time::sleep(ERROR_PAUSE).await;
            }
        }
    }
    outcome
}

impl Consuming {
    fn note_ids(&self, run: u64, records: &[bytes::Bytes], outcome: &mut Outcome) {
        for bytes in records {
            let seq = Record::decode(bytes, false).ok().and_then(|record| {
                let properties = record.parsed_properties();
                properties.uniq_key().and_then(|key| ids::seq_of(run, key))
            });
            match seq {
                Some(seq) => {
                    outcome.seqs.push(seq);
                    self.tracked.fetch_add(1, Ordering::Relaxed);
                }
                None => outcome.foreign += 1,
            }
        }
    }
}
