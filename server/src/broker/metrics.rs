//! The broker's metrics (`metricsExporterType=PROM`), named, labelled and bucketed as Apache
//! RocketMQ 5.3.3's `BrokerMetricsManager`, `RemotingMetricsManager` and
//! `DefaultStoreMetricsManager` export them through OpenTelemetry's Prometheus exporter, so
//! that Grafana boards made for Java keep working; plus a few of Skiff's own (`skiff_*`).
//!
//! Counters and histograms are updated on the send, pull and reply paths: one read-locked map
//! lookup by topic (or request code) finds cached handles, then atomics; a new label set takes
//! the write lock once. Gauges are computed when scraped ([`Gauges`]), on a blocking thread
//! (the HTTP side's job), since they walk the group and topic tables and read store times.
//! The registry knows nothing of HTTP; `metrics_http` serves [`BrokerMetrics::render`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use skiff_model::consumer::ConsumeType;
use skiff_model::message::{keys, Properties};
use skiff_model::record::Record;
use skiff_protocol::remoting::codes::{request, response};

use super::BrokerState;
use crate::net::Answered;

/// Label sets a family may grow to before new ones are dropped (and counted): topics, groups
/// and request codes come from clients. Java's `metricsOtelCardinalityLimit` plays this role.
const MAX_SERIES: usize = 2000;

/// Java's message size view: 1 KiB, 4 KiB, 512 KiB, 1, 2, 4 MiB.
const MESSAGE_SIZE_BUCKETS: [f64; 6] = [
    1024.0,
    4096.0,
    524_288.0,
    1_048_576.0,
    2_097_152.0,
    4_194_304.0,
];
/// Java's `RemotingMetricsManager` view, in milliseconds.
const RPC_LATENCY_BUCKETS: [f64; 9] = [1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0];

/// `TopicMessageType` as Java's `BrokerMetricsManager.getMessageType` reads a send's properties.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum MessageType {
    Normal,
    Fifo,
    Delay,
    Transaction,
}

impl MessageType {
    pub(super) fn of(properties: &Properties) -> MessageType {
        if properties
            .get(keys::TRANSACTION_PREPARED)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            MessageType::Transaction
        } else if properties.contains(keys::SHARDING_KEY) {
            MessageType::Fifo
        } else if [
            "__STARTDELIVERTIME",
            keys::DELAY_TIME_LEVEL,
            keys::TIMER_DELIVER_MS,
            keys::TIMER_DELAY_SEC,
            keys::TIMER_DELAY_MS,
        ]
        .iter()
        .any(|key| properties.contains(key))
        {
            MessageType::Delay
        } else {
            MessageType::Normal
        }
    }

    fn label(self) -> &'static str {
        match self {
            MessageType::Normal => "normal",
            MessageType::Fifo => "fifo",
            MessageType::Delay => "delay",
            MessageType::Transaction => "transaction",
        }
    }
}

type Labels = Vec<(&'static str, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

#[derive(Clone)]
struct InHandles {
    messages: Counter,
    bytes: Counter,
    size: Histogram,
}

#[derive(Clone)]
struct OutHandles {
    messages: Counter,
    bytes: Counter,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct RpcKey {
    request_code: i32,
    response_code: i32,
    long_polling: bool,
    oneway: bool,
}

pub(super) struct BrokerMetrics {
    registry: Registry,
    messages_in: Family<Labels, Counter>,
    throughput_in: Family<Labels, Counter>,
    message_size: HistogramFamily,
    messages_out: Family<Labels, Counter>,
    throughput_out: Family<Labels, Counter>,
    rpc_latency: HistogramFamily,
    send_to_dlq: Family<Labels, Counter>,
    dlq_series: AtomicUsize,
    /// topic -> the handles of each message type sent to it.
    inbound: RwLock<HashMap<String, Vec<(MessageType, InHandles)>>>,
    /// group -> topic -> handles.
    outbound: RwLock<HashMap<String, HashMap<String, OutHandles>>>,
    rpc: RwLock<HashMap<RpcKey, Histogram>>,
    dropped_series: Counter,
    /// Open remoting connections (shared with [`Gauges`]).
    connections: Arc<AtomicI64>,
}

fn message_size_histogram() -> Histogram {
    Histogram::new(MESSAGE_SIZE_BUCKETS)
}

fn rpc_latency_histogram() -> Histogram {
    Histogram::new(RPC_LATENCY_BUCKETS)
}

/// Java's `TopicValidator.isSystemTopic`.
fn is_system_topic(topic: &str) -> bool {
    skiff_model::topic::is_system_topic(topic)
}

/// Java's `MixAll.isSysConsumerGroup`.
fn is_system_group(group: &str) -> bool {
    group.starts_with("CID_RMQ_SYS_")
}

/// Java's `BrokerMetricsManager.isRetryOrDlqTopic`: such traffic is not counted in or out.
fn is_retry_or_dlq(topic: &str) -> bool {
    topic.starts_with("%RETRY%") || topic.starts_with("%DLQ%")
}

impl BrokerMetrics {
    /// The metrics of the broker `node_id` of `cluster`; `recovery` is how long opening the
    /// store took. Gauges read `state` when scraped.
    pub(super) fn new(
        cluster: &str,
        node_id: &str,
        recovery: Duration,
        state: Weak<BrokerState>,
    ) -> BrokerMetrics {
        let mut registry = Registry::with_labels(
            [
                ("cluster".into(), cluster.to_string().into()),
                ("node_type".into(), "broker".into()),
                ("node_id".into(), node_id.to_string().into()),
            ]
            .into_iter(),
        );
        let messages_in = Family::<Labels, Counter>::default();
        let throughput_in = Family::<Labels, Counter>::default();
        let message_size =
            HistogramFamily::new_with_constructor(message_size_histogram as fn() -> _);
        let messages_out = Family::<Labels, Counter>::default();
        let throughput_out = Family::<Labels, Counter>::default();
        let rpc_latency = HistogramFamily::new_with_constructor(rpc_latency_histogram as fn() -> _);
        let send_to_dlq = Family::<Labels, Counter>::default();
        let dropped_series = Counter::default();
        // Counters are registered without `_total`: the encoder appends it.
        registry.register(
            "rocketmq_messages_in",
            "Total number of incoming messages",
            messages_in.clone(),
        );
        registry.register(
            "rocketmq_messages_out",
            "Total number of outgoing messages",
            messages_out.clone(),
        );
        registry.register(
            "rocketmq_throughput_in",
            "Total traffic of incoming messages",
            throughput_in.clone(),
        );
        registry.register(
            "rocketmq_throughput_out",
            "Total traffic of outgoing messages",
            throughput_out.clone(),
        );
        registry.register(
            "rocketmq_message_size",
            "Incoming messages size",
            message_size.clone(),
        );
        registry.register_with_unit(
            "rocketmq_rpc_latency",
            "Rpc latency",
            Unit::Other("milliseconds".into()),
            rpc_latency.clone(),
        );
        registry.register(
            "rocketmq_send_to_dlq_messages",
            "Consumer send to DLQ messages",
            send_to_dlq.clone(),
        );
        registry.register(
            "skiff_metrics_series_dropped",
            "Updates not recorded because their metric already had 2000 label sets",
            dropped_series.clone(),
        );
        let connections = Arc::new(AtomicI64::new(0));
        registry.register_collector(Box::new(Gauges {
            state,
            connections: connections.clone(),
            recovery_seconds: recovery.as_secs_f64(),
            scrapes: AtomicU64::new(0),
        }));
        BrokerMetrics {
            registry,
            messages_in,
            throughput_in,
            message_size,
            messages_out,
            throughput_out,
            rpc_latency,
            send_to_dlq,
            dlq_series: AtomicUsize::new(0),
            inbound: RwLock::default(),
            outbound: RwLock::default(),
            rpc: RwLock::default(),
            dropped_series,
            connections,
        }
    }

    /// A remoting connection opened (+1) or closed (-1).
    pub(super) fn connections(&self, delta: i64) {
        self.connections.fetch_add(delta, Ordering::Relaxed);
    }

    /// The whole registry in Prometheus text format 0.0.4 (what Java's exporter serves).
    pub(super) fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail; a collector's fmt error would be a bug.
        if let Err(error) =
            prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)
        {
            tracing::error!(%error, "cannot encode the metrics");
        }
        text
    }

    /// A stored send of `count` messages of `bytes` stored bytes (`SendMessageProcessor`).
    pub(super) fn messages_in(&self, topic: &str, kind: MessageType, count: u64, bytes: u64) {
        if is_retry_or_dlq(topic) || count == 0 {
            return;
        }
        let found = self
            .inbound
            .read()
            .get(topic)
            .and_then(|kinds| kinds.iter().find(|(k, _)| *k == kind))
            .map(|(_, handles)| handles.clone());
        let handles = match found {
            Some(handles) => handles,
            None => {
                let mut inbound = self.inbound.write();
                if !inbound.contains_key(topic) && inbound.len() >= MAX_SERIES {
                    drop(inbound);
                    self.dropped_series.inc();
                    return;
                }
                let kinds = inbound.entry(topic.to_string()).or_default();
                match kinds.iter().find(|(k, _)| *k == kind) {
                    Some((_, handles)) => handles.clone(),
                    None => {
                        let labels: Labels = vec![
                            ("topic", topic.to_string()),
                            ("message_type", kind.label().to_string()),
                            ("is_system", is_system_topic(topic).to_string()),
                        ];
                        let handles = InHandles {
                            messages: self.messages_in.get_or_create_owned(&labels),
                            bytes: self.throughput_in.get_or_create_owned(&labels),
                            size: self.message_size.get_or_create_owned(&labels),
                        };
                        kinds.push((kind, handles.clone()));
                        handles
                    }
                }
            }
        };
        handles.messages.inc_by(count);
        handles.bytes.inc_by(bytes);
        // Java records the average size of the batch once.
        handles.size.observe((bytes / count) as f64);
    }

    /// A pull that found messages (`DefaultPullMessageResultHandler`).
    pub(super) fn messages_out(&self, group: &str, topic: &str, count: u64, bytes: u64) {
        if is_retry_or_dlq(topic) || count == 0 {
            return;
        }
        let found = self
            .outbound
            .read()
            .get(group)
            .and_then(|topics| topics.get(topic))
            .cloned();
        let handles = match found {
            Some(handles) => handles,
            None => {
                let mut outbound = self.outbound.write();
                let series: usize = outbound.values().map(HashMap::len).sum();
                let exists = outbound.get(group).is_some_and(|t| t.contains_key(topic));
                if !exists && series >= MAX_SERIES {
                    drop(outbound);
                    self.dropped_series.inc();
                    return;
                }
                let labels: Labels = vec![
                    ("topic", topic.to_string()),
                    ("consumer_group", group.to_string()),
                    (
                        "is_system",
                        (is_system_topic(topic) || is_system_group(group)).to_string(),
                    ),
                ];
                outbound
                    .entry(group.to_string())
                    .or_default()
                    .entry(topic.to_string())
                    .or_insert_with(|| OutHandles {
                        messages: self.messages_out.get_or_create_owned(&labels),
                        bytes: self.throughput_out.get_or_create_owned(&labels),
                    })
                    .clone()
            }
        };
        handles.messages.inc_by(count);
        handles.bytes.inc_by(bytes);
    }

    /// A consumer's send-back that goes to the group's DLQ (`AbstractSendMessageProcessor`):
    /// counted when decided, as Java does. `topic` is the request's origin topic, left out
    /// when the client sent none (as OpenTelemetry drops a null attribute).
    pub(super) fn sent_to_dlq(&self, group: &str, topic: Option<&str>) {
        let mut labels: Labels = vec![("consumer_group", group.to_string())];
        if let Some(topic) = topic {
            labels.push(("topic", topic.to_string()));
        }
        let system = topic.is_some_and(is_system_topic) || is_system_group(group);
        labels.push(("is_system", system.to_string()));
        if let Some(counter) = self.send_to_dlq.get(&labels) {
            counter.inc();
            return;
        }
        // Racing first sends of one label set may count it twice: the bound stays close.
        if self.dlq_series.fetch_add(1, Ordering::Relaxed) >= MAX_SERIES {
            self.dlq_series.fetch_sub(1, Ordering::Relaxed);
            self.dropped_series.inc();
            return;
        }
        self.send_to_dlq.get_or_create(&labels).inc();
    }

    /// A request answered (`NettyRemotingAbstract.writeResponse`).
    pub(super) fn answered(&self, answered: &Answered) {
        let key = RpcKey {
            request_code: answered.request_code,
            response_code: answered.response_code,
            long_polling: answered.later && is_long_polling(answered.request_code),
            oneway: answered.oneway,
        };
        let found = self.rpc.read().get(&key).cloned();
        let histogram = match found {
            Some(histogram) => histogram,
            None => {
                let mut rpc = self.rpc.write();
                if !rpc.contains_key(&key) && rpc.len() >= MAX_SERIES {
                    drop(rpc);
                    self.dropped_series.inc();
                    return;
                }
                rpc.entry(key)
                    .or_insert_with(|| self.rpc_latency.get_or_create_owned(&rpc_labels(key)))
                    .clone()
            }
        };
        histogram.observe(answered.elapsed.as_millis() as f64);
    }
}

/// Requests that Skiff may hold until messages arrive: answered later means held (or, for a
/// pull of cold data, read on a blocking thread).
fn is_long_polling(code: i32) -> bool {
    matches!(
        code,
        request::PULL_MESSAGE | request::POP_MESSAGE | request::NOTIFICATION
    )
}

fn rpc_labels(key: RpcKey) -> Labels {
    vec![
        ("protocol_type", "remoting".to_string()),
        ("is_long_polling", key.long_polling.to_string()),
        ("request_code", code_name(request::ALL, key.request_code)),
        ("response_code", code_name(response::ALL, key.response_code)),
        (
            "result",
            if key.oneway { "oneway" } else { "success" }.to_string(),
        ),
    ]
}

/// Java's `RemotingHelper.getRequestCodeDesc`/`getResponseCodeDesc`: the lower-case constant
/// name, or the number for a code it does not know.
fn code_name(table: &[(i32, &str)], code: i32) -> String {
    table
        .iter()
        .find(|(c, _)| *c == code)
        .map_or_else(|| code.to_string(), |(_, name)| name.to_ascii_lowercase())
}

/// The gauges, computed at each scrape from the broker's tables and store.
struct Gauges {
    state: Weak<BrokerState>,
    connections: Arc<AtomicI64>,
    recovery_seconds: f64,
    scrapes: AtomicU64,
}

impl std::fmt::Debug for Gauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gauges")
    }
}

fn gauge<V: prometheus_client::encoding::EncodeGaugeValue + Copy + std::fmt::Debug>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    samples: &[(Labels, V)],
) -> Result<(), std::fmt::Error> {
    if samples.is_empty() {
        return Ok(());
    }
    let mut metric = encoder.encode_descriptor(name, help, unit, MetricType::Gauge)?;
    for (labels, value) in samples {
        ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
    }
    Ok(())
}

/// A store latency histogram, in milliseconds.
fn latency_histogram(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    latencies: &skiff_store::LatencySnapshot,
) -> Result<(), std::fmt::Error> {
    let unit = Unit::Other("milliseconds".into());
    let mut metric = encoder.encode_descriptor(name, help, Some(&unit), MetricType::Histogram)?;
    metric.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
        latencies.sum_ms,
        latencies.count,
        &latencies.buckets,
        None,
    )
}

/// One consumer group's lag on one topic (`ConsumerLagCalculator.calculateLag`).
struct Lag {
    group: String,
    topic: String,
    messages: i64,
    /// Store time of the oldest unconsumed message, if any is unconsumed.
    oldest_ms: Option<i64>,
}

fn lags(state: &BrokerState) -> Vec<Lag> {
    let mut lags = Vec::new();
    for online in state.consumers.online_groups() {
        let group = online.name;
        for topic in online.topics {
            if topic.starts_with("%RETRY%") || state.topics.get(&topic).is_none() {
                continue;
            }
            let mut lag = Lag {
                group: group.clone(),
                topic: topic.clone(),
                messages: 0,
                oldest_ms: None,
            };
            for queue_id in state.store.queue_ids(&topic) {
                let max = state.store.max_offset_in_queue(&topic, queue_id).max(0);
                let consumed = state.offsets.query(&group, &topic, queue_id).unwrap_or(max);
                if consumed < max {
                    lag.messages += max - consumed;
                    if let Some(at) = state.store.message_store_time(&topic, queue_id, consumed) {
                        lag.oldest_ms = Some(lag.oldest_ms.map_or(at, |o: i64| o.min(at)));
                    }
                }
            }
            lags.push(lag);
        }
    }
    lags
}

fn storage_labels() -> Labels {
    vec![
        ("storage_type", "local".to_string()),
        ("storage_medium", "disk".to_string()),
    ]
}

/// Bytes used on the file system of `path` (Java: `getTotalSpace() - getFreeSpace()`).
fn disk_used_bytes(path: &std::path::Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(path).ok()?;
    Some(stat.f_blocks.saturating_sub(stat.f_bfree) * stat.f_frsize)
}

impl Collector for Gauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.scrapes.fetch_add(1, Ordering::Relaxed);
        ConstCounter::new(self.scrapes.load(Ordering::Relaxed)).encode(
            encoder.encode_descriptor(
                "skiff_metrics_scrapes",
                "Scrapes of /metrics served",
                None,
                MetricType::Counter,
            )?,
        )?;
        gauge(
            &mut encoder,
            "skiff_store_recovery_seconds",
            "How long opening (and recovering) the message store took at start",
            None,
            &[(vec![], self.recovery_seconds)],
        )?;
        gauge(
            &mut encoder,
            "skiff_connections",
            "Open remoting connections (clients, admin tools)",
            None,
            &[(vec![], self.connections.load(Ordering::Relaxed))],
        )?;
        let Some(state) = self.state.upgrade() else {
            return Ok(());
        };
        let none = Labels::new;
        gauge(
            &mut encoder,
            "rocketmq_broker_permission",
            "Broker permission",
            None,
            &[(none(), i64::from(state.permission()))],
        )?;
        gauge(
            &mut encoder,
            "rocketmq_topic_number",
            "Active topic number",
            None,
            &[(none(), state.topics.snapshot().0.len() as i64)],
        )?;
        gauge(
            &mut encoder,
            "rocketmq_consumer_group_number",
            "Active subscription group number",
            None,
            &[(none(), state.groups.count() as i64)],
        )?;
        let producers = state.producers.connection_count() as i64;
        gauge(
            &mut encoder,
            "rocketmq_producer_connections",
            "Producer connections",
            None,
            &[(vec![("protocol_type", "remoting".to_string())], producers)],
        )?;
        let consumers: Vec<(Labels, i64)> = state
            .consumers
            .online_groups()
            .into_iter()
            .map(|online| {
                let system = is_system_group(&online.name).to_string();
                // Java's `ConsumeType.getTypeCN()`, lower-cased.
                let mode = match online.consume_type {
                    ConsumeType::ConsumeActively => "pull",
                    ConsumeType::ConsumePassively => "push",
                    ConsumeType::ConsumePop => "pop",
                };
                let labels = vec![
                    ("consumer_group", online.name),
                    ("consume_mode", mode.to_string()),
                    ("protocol_type", "remoting".to_string()),
                    ("is_system", system),
                ];
                (labels, online.members as i64)
            })
            .collect();
        gauge(
            &mut encoder,
            "rocketmq_consumer_connections",
            "Consumer connections",
            None,
            &consumers,
        )?;
        let now = super::now_millis();
        let lags = lags(&state);
        let lag_labels = |lag: &Lag| -> Labels {
            vec![
                ("consumer_group", lag.group.clone()),
                ("topic", lag.topic.clone()),
                ("is_retry", "false".to_string()),
                (
                    "is_system",
                    (is_system_topic(&lag.topic) || is_system_group(&lag.group)).to_string(),
                ),
            ]
        };
        let messages: Vec<(Labels, i64)> = lags
            .iter()
            .map(|lag| (lag_labels(lag), lag.messages))
            .collect();
        gauge(
            &mut encoder,
            "rocketmq_consumer_lag_messages",
            "Consumer lag messages",
            None,
            &messages,
        )?;
        let latency: Vec<(Labels, i64)> = lags
            .iter()
            .map(|lag| {
                let ms = lag.oldest_ms.map_or(0, |at| (now - at).max(0));
                (lag_labels(lag), ms)
            })
            .collect();
        gauge(
            &mut encoder,
            "rocketmq_consumer_lag_latency",
            "Consumer lag time",
            Some(&Unit::Other("milliseconds".into())),
            &latency,
        )?;
        if let Some(used) = disk_used_bytes(&state.config.store_path_root_dir) {
            gauge(
                &mut encoder,
                "rocketmq_storage_size",
                "Broker storage size",
                Some(&Unit::Bytes),
                &[(storage_labels(), used as i64)],
            )?;
        }
        gauge(
            &mut encoder,
            "rocketmq_storage_flush_behind_bytes",
            "Broker flush behind bytes",
            None,
            &[(storage_labels(), state.store.flush_behind_bytes())],
        )?;
        // Java's `getEarliestMessageTime`: the oldest record still in the CommitLog.
        let oldest = state
            .store
            .read_message(state.store.commit_log_min_offset())
            .and_then(|bytes| Some(Record::decode(&bytes, false).ok()?.store_timestamp))
            .filter(|&at| at > 0);
        if let Some(at) = oldest {
            gauge(
                &mut encoder,
                "rocketmq_storage_message_reserve_time",
                "Broker message reserve time",
                Some(&Unit::Other("milliseconds".into())),
                &[(storage_labels(), (now - at).max(0))],
            )?;
        }
        let (flushes, group_commits) = state.store.flush_latencies();
        latency_histogram(
            &mut encoder,
            "skiff_commitlog_flush_latency",
            "CommitLog flushes that wrote something (msync of the dirty range), by duration",
            &flushes,
        )?;
        latency_histogram(
            &mut encoder,
            "skiff_group_commit_wait_latency",
            "How long SYNC_FLUSH sends waited for their group commit",
            &group_commits,
        )?;
        gauge(
            &mut encoder,
            "skiff_pulls_held",
            "Pull requests held until messages arrive (long polling)",
            None,
            &[(none(), state.pull_holds.held_count() as i64)],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> BrokerMetrics {
        BrokerMetrics::new(
            "DefaultCluster",
            "broker-a",
            Duration::from_millis(1500),
            Weak::new(),
        )
    }

    #[test]
    fn counters_render_with_java_names_and_labels() {
        let m = metrics();
        m.messages_in("orders", MessageType::Normal, 3, 300);
        m.messages_in("orders", MessageType::Normal, 1, 50);
        m.messages_in("%RETRY%g", MessageType::Normal, 1, 50);
        m.messages_out("g1", "orders", 2, 200);
        let text = m.render();
        let in_labels = r#"{cluster="DefaultCluster",node_type="broker",node_id="broker-a",topic="orders",message_type="normal",is_system="false"}"#;
        assert!(
            text.contains(&format!("rocketmq_messages_in_total{in_labels} 4\n")),
            "{text}"
        );
        assert!(text.contains(&format!("rocketmq_throughput_in_total{in_labels} 350\n")));
        assert!(text.contains("# TYPE rocketmq_messages_in_total counter\n"));
        assert!(!text.contains("RETRY"), "retry topics are not counted");
        assert!(text.contains(r#"rocketmq_messages_out_total{cluster="DefaultCluster",node_type="broker",node_id="broker-a",topic="orders",consumer_group="g1",is_system="false"} 2"#));
        // Average size per batch: 100 and 50.
        assert!(text.contains(&format!(
            "rocketmq_message_size_bucket{}",
            r#"{cluster="DefaultCluster",node_type="broker",node_id="broker-a",topic="orders",message_type="normal",is_system="false",le="1024"} 2"#
        )));
        assert!(text.contains("skiff_store_recovery_seconds{"));
        assert!(text.contains("} 1.5\n"));
    }

    #[test]
    fn rpc_latency_is_a_millisecond_histogram_with_java_code_names() {
        let m = metrics();
        m.answered(&Answered {
            request_code: request::SEND_MESSAGE_V2,
            response_code: response::SUCCESS,
            oneway: false,
            later: false,
            elapsed: Duration::from_millis(4),
        });
        m.answered(&Answered {
            request_code: 99_999,
            response_code: response::PULL_NOT_FOUND,
            oneway: true,
            later: true,
            elapsed: Duration::from_millis(0),
        });
        let text = m.render();
        assert!(text.contains("# TYPE rocketmq_rpc_latency_milliseconds histogram"));
        let labels = r#"cluster="DefaultCluster",node_type="broker",node_id="broker-a",protocol_type="remoting",is_long_polling="false",request_code="send_message_v2",response_code="success",result="success""#;
        assert!(
            text.contains(&format!(
                "rocketmq_rpc_latency_milliseconds_bucket{{{labels},le=\"3\"}} 0\n"
            )),
            "{text}"
        );
        assert!(text.contains(&format!(
            "rocketmq_rpc_latency_milliseconds_bucket{{{labels},le=\"5\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "rocketmq_rpc_latency_milliseconds_count{{{labels}}} 1\n"
        )));
        assert!(
            text.contains(r#"request_code="99999",response_code="pull_not_found",result="oneway""#)
        );
    }

    #[test]
    fn dead_letters_are_counted_per_group_and_origin_topic() {
        let m = metrics();
        m.sent_to_dlq("g1", Some("orders"));
        m.sent_to_dlq("g1", Some("orders"));
        m.sent_to_dlq("CID_RMQ_SYS_X", None);
        let text = m.render();
        assert!(text.contains(r#"rocketmq_send_to_dlq_messages_total{cluster="DefaultCluster",node_type="broker",node_id="broker-a",consumer_group="g1",topic="orders",is_system="false"} 2"#), "{text}");
        assert!(text.contains(r#"consumer_group="CID_RMQ_SYS_X",is_system="true"} 1"#));
    }

    #[test]
    fn label_sets_are_bounded() {
        let m = metrics();
        for i in 0..MAX_SERIES + 10 {
            m.messages_in(&format!("t{i}"), MessageType::Normal, 1, 10);
        }
        let text = m.render();
        assert!(text.contains("skiff_metrics_series_dropped_total{cluster=\"DefaultCluster\",node_type=\"broker\",node_id=\"broker-a\"} 10\n"), "{}", &text[text.len() - 2000..]);
    }

    #[test]
    fn message_types_as_java_reads_them() {
        let props = |text: &str| Properties::decode(text);
        assert_eq!(MessageType::of(&props("")), MessageType::Normal);
        assert_eq!(
            MessageType::of(&props("TRAN_MSG\u{1}true\u{2}DELAY\u{1}3\u{2}")),
            MessageType::Transaction
        );
        assert_eq!(
            MessageType::of(&props("__SHARDINGKEY\u{1}k\u{2}DELAY\u{1}3\u{2}")),
            MessageType::Fifo
        );
        assert_eq!(
            MessageType::of(&props("TIMER_DELAY_SEC\u{1}3\u{2}")),
            MessageType::Delay
        );
    }
}
