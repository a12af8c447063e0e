//! The remoting codec on the hot paths of a broker: a SEND_MESSAGE_V2 request with a 1 KiB body
//! (frame encode and decode, JSON and ROCKETMQ binary headers, then `decode_request`), and the
//! reply to a pull that found 32 records (`encode_reply`, and with the frame written).
//!
//! `cargo bench -p skiff-protocol --bench codec`

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use skiff_model::command::{
    AutoCreateTopic, PullRequest, PullResult, PullStatus, QueueRef, Reply, Request, SendRequest,
    SubscriptionExpression,
};
use skiff_model::message::{Message, Properties};
use skiff_model::record::RecordFields;
use skiff_protocol::remoting::{
    decode_frame, decode_request, encode_frame, encode_reply, encode_request, RemotingCommand,
    SerializeType,
};

/// A send as the Java client writes it: tag, unique id, WAIT, 1 KiB body.
fn send_request() -> RemotingCommand {
    let properties: Properties = [
        ("TAGS", "TagA"),
        ("UNIQ_KEY", "7F000001000118B4AAC2640AAD3E0000"),
        ("WAIT", "true"),
    ]
    .into_iter()
    .collect();
    encode_request(
        &Request::Send(SendRequest {
            producer_group: "benchmark_producer".into(),
            topic: "BenchmarkTest".into(),
            queue_id: 3,
            born_timestamp: 1_700_000_000_000,
            auto_create: Some(AutoCreateTopic {
                template_topic: "TBW102".into(),
                queue_nums: 4,
            }),
            messages: vec![Message {
                flag: 0,
                body: Bytes::from(vec![b'x'; 1024]),
                properties,
            }],
            ..SendRequest::default()
        }),
        42,
        false,
    )
}

/// The frame content after the length field, as `RemotingCodec` hands it to `decode_frame`.
fn wire(cmd: &RemotingCommand) -> Bytes {
    let mut out = BytesMut::new();
    encode_frame(cmd, &mut out).unwrap();
    out.freeze().slice(4..)
}

fn send(c: &mut Criterion) {
    let mut group = c.benchmark_group("send_message_v2_1k");
    group.throughput(Throughput::Elements(1));
    for serialize_type in [SerializeType::Json, SerializeType::RocketMq] {
        let name = serialize_type.name().to_lowercase();
        let cmd = RemotingCommand {
            serialize_type,
            ..send_request()
        };
        let bytes = wire(&cmd);
        group.bench_function(format!("encode_frame/{name}"), |b| {
            let mut out = BytesMut::with_capacity(4096);
            b.iter(|| {
                out.clear();
                encode_frame(black_box(&cmd), &mut out).unwrap();
            })
        });
        group.bench_function(format!("decode_frame/{name}"), |b| {
            b.iter(|| decode_frame(black_box(bytes.clone())).unwrap())
        });
        let decoded = decode_frame(bytes.clone()).unwrap();
        group.bench_function(format!("decode_request/{name}"), |b| {
            b.iter(|| decode_request(black_box(&decoded)).unwrap())
        });
    }
    group.finish();
}

/// 32 stored 1 KiB records, as the store hands them to a pull's reply.
fn records() -> Vec<Bytes> {
    let properties =
        "TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}7F000001000118B4AAC2640AAD3E0000\u{2}WAIT\u{1}true\u{2}";
    let body = vec![b'x'; 1024];
    (0..32)
        .map(|i| {
            let fields = RecordFields {
                queue_id: 3,
                flag: 0,
                queue_offset: i,
                physical_offset: i * 1200,
                sys_flag: 0,
                born_timestamp: 1_700_000_000_000,
                born_host: "10.0.0.1:50000".parse().unwrap(),
                store_timestamp: 1_700_000_000_001,
                store_host: "10.0.0.2:10911".parse().unwrap(),
                reconsume_times: 0,
                prepared_transaction_offset: 0,
                body: &body,
                topic: "BenchmarkTest",
                properties,
            };
            let mut out = BytesMut::new();
            fields.encode(&mut out).unwrap();
            out.freeze()
        })
        .collect()
}

fn pull_reply(c: &mut Criterion) {
    let pull = encode_request(
        &Request::Pull(PullRequest {
            consumer_group: "benchmark_consumer".into(),
            queue: QueueRef {
                topic: "BenchmarkTest".into(),
                queue_id: 3,
                physical: false,
            },
            queue_offset: 0,
            max_msg_nums: 32,
            suspend_timeout_millis: Some(15_000),
            subscription: Some(SubscriptionExpression {
                expression_type: "TAG".into(),
                expression: "*".into(),
                version: 0,
            }),
            ..PullRequest::default()
        }),
        7,
        false,
    );
    let result = PullResult {
        status: PullStatus::Found,
        next_begin_offset: 32,
        min_offset: 0,
        max_offset: 1000,
        suggest_which_broker_id: 0,
        messages: records(),
        offset_delta: None,
    };
    let mut group = c.benchmark_group("pull_reply_32x1k");
    group.throughput(Throughput::Elements(32));
    group.bench_function("encode_reply", |b| {
        b.iter_batched(
            || Reply::Pulled(result.clone()),
            |reply| encode_reply(black_box(&pull), reply),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("encode_reply+frame", |b| {
        let mut out = BytesMut::with_capacity(64 * 1024);
        b.iter_batched(
            || Reply::Pulled(result.clone()),
            |reply| {
                out.clear();
                encode_frame(&encode_reply(black_box(&pull), reply), &mut out).unwrap();
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, send, pull_reply);
criterion_main!(benches);
