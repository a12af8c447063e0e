//! Apache RocketMQ store compatibility, both directions (issue #3). One data directory is written
//! by one broker and opened by the other, on the same ports, with the same store settings (1 MiB
//! CommitLog segments, 60-entry ConsumeQueue files, so both roll many times):
//!
//! - the Java broker (Apache RocketMQ 5.3.3) writes, stops, and Skiff opens the directory;
//! - Skiff writes, stops, and the Java broker opens it;
//!
//! each once after a clean stop and once after `kill -9` of the writer (ASYNC_FLUSH), so that the
//! reader runs its crash recovery over the other's files. The Java client (`store-write`) fills
//! two topics, lets a group commit offsets and dumps every stored message as the writer serves
//! it; `store-read` against the reader checks the dump line for line, finds messages by key, uniq
//! id and offset id, resumes the group from its committed offsets and appends after the old
//! messages. See StoreCompat.java.
//!
//! With `SKIFF_COMPAT_TARGET=apache` both writer and reader are the Java broker, which validates
//! the expectations themselves.

use std::fs;
use std::path::Path;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use skiff_compat_tests::broker_files::committed_offsets;
use skiff_compat_tests::java::Client;
use skiff_compat_tests::settings::{self, TargetKind};
use skiff_compat_tests::suite::{unique_id, SCENARIO_TIMEOUT};
use skiff_compat_tests::target::{FlushDisk, Options, Stop, Target};

/// Each test runs a Java broker; one at a time keeps 2 cores from thrashing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How long a killed writer may take to persist the committed offsets (both persist them every
/// second in these tests).
const OFFSETS_PERSIST_TIMEOUT: Duration = Duration::from_secs(30);
/// Entries per ConsumeQueue file: small, so that every queue spans several files.
const CQ_ENTRIES: u64 = 60;

/// (writer, reader): the Java broker and Skiff, or the Java broker twice against Apache.
fn kinds(java_writes: bool) -> Result<(TargetKind, TargetKind)> {
    Ok(match settings::target_kind()? {
        TargetKind::Apache => (TargetKind::Apache, TargetKind::Apache),
        TargetKind::Skiff if java_writes => (TargetKind::Apache, TargetKind::Skiff),
        TargetKind::Skiff => (TargetKind::Skiff, TargetKind::Apache),
    })
}

fn name(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Skiff => "Skiff",
        TargetKind::Apache => "the Java broker",
    }
}

fn run(label: &str, java_writes: bool, stop: Stop) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (writer, reader) = kinds(java_writes).expect("settings");
    let opts = Options {
        kind: writer,
        commit_log_size: 1024 * 1024,
        consume_queue_size: CQ_ENTRIES * 20,
        max_message_size: 512 * 1024,
        ..Options::new(FlushDisk::Async).expect("settings")
    };
    let target = Target::start_with(label, opts).expect("start the writer");
    if let Err(e) = swap(&target, writer, reader, stop) {
        panic!(
            "{label}: {e:#}\n{}\n(the data directory is kept: {})",
            target.logs(),
            target.store_dir().display()
        );
    }
}

/// Writes with `writer`, stops it with `stop`, opens the directory with `reader` and checks it.
fn swap(target: &Target, writer: TargetKind, reader: TargetKind, stop: Stop) -> Result<()> {
    let started = Instant::now();
    let client = Client::get(&settings::store_client())?;
    let id = unique_id(&client.version);
    let dump = target.dir().join("writer-dump.txt");
    let offsets = target.dir().join("group-offsets.txt");
    let (namesrv, broker) = (target.namesrv(), target.broker());
    let (dump_s, offsets_s) = (path_arg(&dump), path_arg(&offsets));
    let cq_entries = CQ_ENTRIES.to_string();
    let args = [
        ("namesrv", namesrv.as_str()),
        ("broker", broker.as_str()),
        ("id", id.as_str()),
        ("dump", dump_s.as_str()),
        ("offsets", offsets_s.as_str()),
        ("cq-entries", cq_entries.as_str()),
        // Java's own recovery drops index files newer than its checkpoint (see StoreCompat.java).
        (
            "index",
            if stop == Stop::Kill {
                "lossy"
            } else {
                "strict"
            },
        ),
    ];
    let runs = target.dir().join("runs");
    client
        .run("store-write", &args, &runs.join("write"), SCENARIO_TIMEOUT)
        .with_context(|| format!("write with {}", name(writer)))?;
    let written = Instant::now();
    if stop == Stop::Kill {
        wait_offsets_persisted(&target.store_dir(), &offsets)?;
    }
    target.stop_all(stop)?;
    let abort = target.store_dir().join("abort").exists();
    match stop {
        Stop::Graceful if abort => bail!("{} left an abort file after a clean stop", name(writer)),
        Stop::Kill if !abort => bail!(
            "{} left no abort file after kill -9: the reader would not recover",
            name(writer)
        ),
        _ => {}
    }
    let opened = target.restart_as(reader)?;
    let read = client
        .run("store-read", &args, &runs.join("read"), SCENARIO_TIMEOUT)
        .with_context(|| {
            format!(
                "read with {} what {} wrote{}",
                name(reader),
                name(writer),
                if stop == Stop::Kill {
                    " before kill -9"
                } else {
                    ""
                }
            )
        })?;
    target.check_alive()?;
    for line in read.lines().filter(|l| l.contains("found by offset id")) {
        println!("  {line}");
    }
    println!(
        "{} wrote {} messages, stopped ({stop:?}); {} opened the directory in {opened:.1?} and \
         served them all; {:.0?} in all ({:.0?} to write)",
        name(writer),
        fs::read_to_string(&dump)?
            .lines()
            .filter(|l| !l.starts_with("QUEUE "))
            .count(),
        name(reader),
        started.elapsed(),
        written - started
    );
    Ok(())
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Before a kill -9: waits until the writer has persisted the group's committed offsets (lines
/// `topic@group queue offset` in `expected`) to `config/consumerOffset.json`.
fn wait_offsets_persisted(store: &Path, expected: &Path) -> Result<()> {
    let mut key = String::new();
    let mut want = std::collections::BTreeMap::new();
    for line in fs::read_to_string(expected)?.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if let [k, q, o] = f[..] {
            key = k.to_string();
            want.insert(q.parse::<u32>()?, o.parse::<i64>()?);
        }
    }
    let file = store.join("config/consumerOffset.json");
    let deadline = Instant::now() + OFFSETS_PERSIST_TIMEOUT;
    loop {
        let text = fs::read_to_string(&file).unwrap_or_default();
        let got = committed_offsets(&text, &key);
        if got.as_ref() == Some(&want) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{} does not show {key} = {want:?} within {OFFSETS_PERSIST_TIMEOUT:?} (has {got:?})",
                file.display()
            );
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// (a) The Java broker writes and stops cleanly; Skiff serves everything unchanged.
#[test]
fn java_store_opened_by_skiff() {
    run("java-to-skiff", true, Stop::Graceful);
}

/// (a) after kill -9 of the Java broker: Skiff recovers Java's files.
#[test]
fn java_store_opened_by_skiff_after_kill9() {
    run("java-to-skiff-kill9", true, Stop::Kill);
}

/// (b) Skiff writes and stops cleanly; the Java broker serves everything unchanged.
#[test]
fn skiff_store_opened_by_java() {
    run("skiff-to-java", false, Stop::Graceful);
}

/// (b) after kill -9 of Skiff: the Java broker recovers Skiff's files.
#[test]
fn skiff_store_opened_by_java_after_kill9() {
    run("skiff-to-java-kill9", false, Stop::Kill);
}
