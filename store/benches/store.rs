//! CommitLog append (1 KiB messages, one and sixteen per put) and pulls of 32 messages.
//!
//! `cargo bench -p skiff-store`

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use skiff_store::{MessageStore, MessageToStore, StoreConfig};

fn message(queue_id: i32) -> MessageToStore {
    MessageToStore {
        topic: "BenchTopic".to_string(),
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.1:50000".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::from(vec![b'x'; 1024]),
        properties:
            "TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}7F000001000118B4AAC2640AAD3E0000\u{2}WAIT\u{1}true\u{2}"
                .to_string(),
    }
}

fn open(dir: &std::path::Path) -> MessageStore {
    MessageStore::open(StoreConfig {
        // Small enough that the benches also roll segments.
        commit_log_file_size: 64 * 1024 * 1024,
        message_index_enable: false,
        ..StoreConfig::new(dir)
    })
    .unwrap()
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Elements(1));
    group.bench_function("1KiB", |b| {
        b.iter_batched(
            || vec![message(0)],
            |batch| runtime.block_on(store.put_messages(batch)).unwrap(),
            BatchSize::SmallInput,
        )
    });
    group.throughput(Throughput::Elements(16));
    group.bench_function("1KiB x16 batch", |b| {
        b.iter_batched(
            || (0..16).map(|_| message(1)).collect(),
            |batch| runtime.block_on(store.put_messages(batch)).unwrap(),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    const MESSAGES: i64 = 100_000;
    for _ in 0..MESSAGES / 100 {
        runtime
            .block_on(store.put_messages((0..100).map(|_| message(0)).collect()))
            .unwrap();
    }
    let mut offset = 0;
    let mut group = c.benchmark_group("get_messages");
    group.throughput(Throughput::Elements(32));
    group.bench_function("32 of 1KiB", |b| {
        b.iter(|| {
            let result = store.get_messages("BenchTopic", 0, offset, 32, usize::MAX, &|_| true);
            offset = (offset + 32) % (MESSAGES - 32);
            black_box(result.messages.len())
        })
    });
    group.finish();
}

criterion_group!(benches, append, read);
criterion_main!(benches);
