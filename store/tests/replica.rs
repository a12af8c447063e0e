//! A slave store fed its master's CommitLog bytes: equal files, equal reads, refusals that write
//! nothing, restarts.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use skiff_model::message::sys_flag;
use skiff_model::record::{BLANK_MAGIC, QUEUE_OFFSET_POS};
use skiff_store::{FlushDiskType, MessageStore, PutError, ReplicaError, StoreConfig, StoreRole};

const SEGMENT: i64 = 64 * 1024;

fn config(root: &Path, role: StoreRole) -> StoreConfig {
    StoreConfig {
        role,
        commit_log_file_size: SEGMENT as u64,
        max_hash_slot_num: 64,
        max_index_num: 400,
        ..small_config(root)
    }
}

/// xorshift64: reproducible cuts without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

const LONG_TOPIC: &str = "a-topic-whose-name-is-longer-than-one-hundred-and-twenty-seven-bytes-so-that-its-records-are-written-in-the-second-record-version";

/// A few hundred messages of several sizes over topics and queues, rolling 64 KiB segments:
/// keyed ones, a batch, one too large for the rest of its segment, a delayed one (its entry
/// carries a due time) and a prepared transaction half (a record without an entry).
fn fill(master: &MessageStore, from: usize, count: usize) {
    let mut rng = Rng(0x5eed + from as u64);
    for i in from..from + count {
        let topic = ["A", "B", LONG_TOPIC][i % 3];
        let queue = rng.below(4) as i32;
        let body = vec![b'a' + (i % 26) as u8; [10, 200, 1500, 4000][rng.below(4)]];
        let keyed = with_keys(
            message(topic, queue, &body, Some("TagA")),
            &format!("U{i}"),
            &format!("K{i} G{}", i % 10),
        );
        put(master, vec![keyed]);
        if i % 50 == 7 {
            let batch = (0..3)
                .map(|j| message("A", 1, format!("batch {i} {j}").as_bytes(), Some("B")))
                .collect();
            put(master, batch);
        }
        if i % 100 == 42 {
            put(master, vec![message("B", 0, &vec![b'x'; 50_000], None)]);
            let mut delayed = message("SCHEDULE_TOPIC_XXXX", 2, b"later", None);
            delayed.properties.push_str("DELAY\u{1}3\u{2}");
            put(master, vec![delayed]);
            let mut half = message("A", 3, b"half", None);
            half.sys_flag = sys_flag::TRANSACTION_PREPARED_TYPE;
            put(master, vec![half]);
        }
    }
}

/// The master's CommitLog from `from` to its end, read with `commit_log_data` in random sizes;
/// no read crosses a segment end.
fn read_log(master: &MessageStore, from: i64, rng: &mut Rng) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut at = from;
    while at < master.commit_log_max_offset() {
        let data = master.commit_log_data(at, 1 + rng.below(20_000)).unwrap();
        assert!(!data.is_empty());
        assert!(at / SEGMENT == (at + data.len() as i64 - 1) / SEGMENT);
        bytes.extend_from_slice(&data);
        at += data.len() as i64;
    }
    bytes
}

/// Records and blanks of `bytes` (starting at `from`): (offset, length).
fn units(from: i64, bytes: &[u8]) -> Vec<(i64, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let at = from + pos as i64;
        let int = |p: usize| i32::from_be_bytes(bytes[p..p + 4].try_into().unwrap());
        let len = if int(pos + 4) == BLANK_MAGIC {
            (SEGMENT - at % SEGMENT) as usize
        } else {
            int(pos) as usize
        };
        out.push((at, len));
        pos += len;
    }
    out
}

/// Whole-unit chunks of 1 to 6 units, never past a segment's end blank.
fn chunks(units: &[(i64, usize)], rng: &mut Rng) -> Vec<(i64, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < units.len() {
        let (start, mut len) = units[i];
        i += 1;
        for _ in 0..rng.below(6) {
            let Some(&(at, next)) = units.get(i) else {
                break;
            };
            if at / SEGMENT != start / SEGMENT {
                break;
            }
            len += next;
            i += 1;
        }
        out.push((start, len));
    }
    out
}

/// Feeds `bytes` (the master's log from `from`) to the slave in random whole-record chunks,
/// every other chunk in parts of whole records (as frames arrive).
fn replicate(slave: &MessageStore, from: i64, bytes: &[u8], rng: &mut Rng) {
    for (at, len) in chunks(&units(from, bytes), rng) {
        let pos = (at - from) as usize;
        let chunk = &bytes[pos..pos + len];
        let end = if rng.below(2) == 0 {
            slave.append_replicated(at, chunk).unwrap()
        } else {
            let parts: Vec<&[u8]> = units(at, chunk)
                .iter()
                .map(|&(u, n)| &chunk[(u - at) as usize..(u - at) as usize + n])
                .collect();
            slave.append_replicated_parts(at, &parts).unwrap()
        };
        assert_eq!(end, at + len as i64);
        assert_eq!(slave.commit_log_max_offset(), end);
    }
}

fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push((path, fs::read(entry.path()).unwrap()));
        }
    }
    out
}

/// The files of `sub` under each root, by relative path.
fn same_files(a: &Path, b: &Path, sub: &str) {
    let relative = |root: &Path| {
        files_under(&root.join(sub))
            .into_iter()
            .map(|(p, bytes)| (p.strip_prefix(root).unwrap().to_path_buf(), bytes))
            .collect::<Vec<_>>()
    };
    let (a, b) = (relative(a), relative(b));
    let names =
        |files: &[(PathBuf, Vec<u8>)]| files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "{sub}: the same files");
    for ((path, left), (_, right)) in a.iter().zip(&b) {
        assert!(left == right, "{} differs", path.display());
    }
}

fn every_queue(store: &MessageStore) -> Vec<(String, i32)> {
    store
        .topics()
        .into_iter()
        .flat_map(|t| store.queue_ids(&t).into_iter().map(move |q| (t.clone(), q)))
        .collect()
}

fn query(store: &MessageStore, topic: &str, key: &str) -> Vec<bytes::Bytes> {
    store.query_messages(topic, key, 64, 0, i64::MAX).messages
}

#[test]
fn a_slave_fed_the_masters_bytes_has_the_masters_files_and_answers_the_same() {
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = MessageStore::open(config(master_dir.path(), StoreRole::Master)).unwrap();
    let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();
    fill(&master, 0, 300);
    assert!(master.commit_log_max_offset() > 5 * SEGMENT);
    let mut rng = Rng(42);
    let bytes = read_log(&master, 0, &mut rng);
    assert!(units(0, &bytes).iter().any(|&(at, len)| {
        i32::from_be_bytes(bytes[at as usize + 4..at as usize + 8].try_into().unwrap())
            == BLANK_MAGIC
            && len > 8
    }));
    replicate(&slave, 0, &bytes, &mut rng);

    assert_eq!(
        slave.commit_log_max_offset(),
        master.commit_log_max_offset()
    );
    assert_eq!(slave.last_record(), master.last_record());
    assert_eq!(every_queue(&slave), every_queue(&master));
    for (topic, queue) in every_queue(&master) {
        assert_eq!(
            pull_all(&slave, &topic, queue),
            pull_all(&master, &topic, queue),
            "{topic}:{queue}"
        );
        assert_eq!(
            slave.max_offset_in_queue(&topic, queue),
            master.max_offset_in_queue(&topic, queue)
        );
    }
    // The index is built in the background on both sides.
    for store in [&master, &slave] {
        wait_until("the index", || query(store, "A", "U297").len() == 1);
    }
    for key in ["G0", "G3", "K10", "U150", "U299", "nothing"] {
        for topic in ["A", "B", LONG_TOPIC] {
            assert_eq!(
                query(&slave, topic, key),
                query(&master, topic, key),
                "{key}"
            );
        }
    }
    assert_eq!(query(&slave, "B", "G1").len(), 10);

    drop((master, slave));
    same_files(master_dir.path(), slave_dir.path(), "commitlog");
    same_files(master_dir.path(), slave_dir.path(), "consumequeue");
}

#[test]
fn a_slave_may_start_at_a_later_segment_with_padded_queues() {
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = MessageStore::open(config(master_dir.path(), StoreRole::Master)).unwrap();
    fill(&master, 0, 200);
    let mut rng = Rng(7);
    let bytes = read_log(&master, SEGMENT, &mut rng);
    {
        let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();
        replicate(&slave, SEGMENT, &bytes, &mut rng);
        assert_eq!(slave.commit_log_min_offset(), SEGMENT);
    }
    // The segment the allocator made for an empty CommitLog is gone, or the next recovery
    // would end the CommitLog at 0.
    assert!(!slave_dir
        .path()
        .join("commitlog/00000000000000000000")
        .exists());
    let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();
    assert_eq!(slave.commit_log_min_offset(), SEGMENT);
    assert_eq!(
        slave.commit_log_max_offset(),
        master.commit_log_max_offset()
    );
    for (topic, queue) in every_queue(&master) {
        let later: Vec<_> = pull_all(&master, &topic, queue)
            .into_iter()
            .filter(|m| decode(m).physical_offset >= SEGMENT)
            .collect();
        let max = master.max_offset_in_queue(&topic, queue);
        assert_eq!(slave.max_offset_in_queue(&topic, queue), max);
        assert_eq!(
            slave.min_offset_in_queue(&topic, queue),
            max - later.len() as i64,
            "{topic}:{queue} starts at its first record in the slave"
        );
        assert_eq!(pull_all(&slave, &topic, queue), later, "{topic}:{queue}");
    }
    // And it goes on with what the master writes next.
    fill(&master, 200, 20);
    let end = slave.commit_log_max_offset();
    replicate(&slave, end, &read_log(&master, end, &mut rng), &mut rng);
    assert_eq!(slave.last_record(), master.last_record());
    assert_eq!(
        pull_all(&slave, "A", 1).last(),
        pull_all(&master, "A", 1).last()
    );
}

#[test]
fn a_record_without_an_entry_does_not_take_a_padded_queues_place() {
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = MessageStore::open(config(master_dir.path(), StoreRole::Master)).unwrap();
    while master.commit_log_max_offset() < SEGMENT - 25_000 {
        put(&master, vec![message("A", 3, &[b'a'; 1000], None)]);
    }
    // A prepared half too large for the rest of the segment opens the next one, followed by the
    // queue's next entry.
    let mut half = message("A", 3, &[b'h'; 30_000], None);
    half.sys_flag = sys_flag::TRANSACTION_PREPARED_TYPE;
    let batch = put(&master, vec![half, message("A", 3, b"next", None)]);
    assert_eq!(batch.messages[0].physical_offset, SEGMENT);
    let next = batch.messages[1].queue_offset;
    assert!(next > 0);

    let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();
    let bytes = master.commit_log_data(SEGMENT, usize::MAX).unwrap();
    assert_eq!(
        slave.append_replicated(SEGMENT, &bytes).unwrap(),
        master.commit_log_max_offset()
    );
    assert_eq!(slave.min_offset_in_queue("A", 3), next);
    assert_eq!(slave.max_offset_in_queue("A", 3), next + 1);
    assert_eq!(
        pull_all(&slave, "A", 3),
        pull_all(&master, "A", 3)[next as usize..]
    );
}

#[test]
fn a_slave_that_crashed_mid_append_recovers_to_a_record_end_and_continues() {
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = MessageStore::open(config(master_dir.path(), StoreRole::Master)).unwrap();
    fill(&master, 0, 150);
    let mut rng = Rng(99);
    let bytes = read_log(&master, 0, &mut rng);
    let all_units = units(0, &bytes);
    // Stop inside the second segment, away from its ends.
    let stop = all_units
        .iter()
        .position(|&(at, _)| at > SEGMENT + 20_000)
        .unwrap();
    let (resume, _) = all_units[stop];
    {
        let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();
        replicate(&slave, 0, &bytes[..resume as usize], &mut rng);
    }
    // The crash: one more record reached the CommitLog but not its queue, the next one only in
    // part, and the store never stopped.
    let (whole_at, whole_len) = all_units[stop];
    let (torn_at, torn_len) = all_units[stop + 1];
    assert!(
        torn_at + torn_len as i64 <= 2 * SEGMENT && torn_len < 8_000,
        "two records"
    );
    let segment = slave_dir
        .path()
        .join("commitlog")
        .join(format!("{SEGMENT:020}"));
    let mut file = fs::read(&segment).unwrap();
    let in_segment = |at: i64| (at - SEGMENT) as usize;
    let whole = whole_at as usize..whole_at as usize + whole_len;
    file[in_segment(whole_at)..in_segment(whole_at) + whole_len].copy_from_slice(&bytes[whole]);
    file[in_segment(torn_at)..in_segment(torn_at) + torn_len / 2]
        .copy_from_slice(&bytes[torn_at as usize..torn_at as usize + torn_len / 2]);
    fs::write(&segment, file).unwrap();
    fs::write(slave_dir.path().join("abort"), b"").unwrap();

    let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();
    assert_eq!(slave.commit_log_max_offset(), torn_at, "a record end");
    let (last_at, last) = slave.last_record().unwrap();
    assert_eq!(last_at, whole_at);
    assert_eq!(&last[..], &bytes[whole_at as usize..torn_at as usize]);
    // The torn bytes are refused as a place to continue; the recovered end is the place.
    assert!(matches!(
        slave.append_replicated(torn_at + 1, &[]),
        Err(ReplicaError::WrongOffset { expected, .. }) if expected == torn_at
    ));
    replicate(&slave, torn_at, &bytes[torn_at as usize..], &mut rng);
    for (topic, queue) in every_queue(&master) {
        assert_eq!(
            pull_all(&slave, &topic, queue),
            pull_all(&master, &topic, queue)
        );
    }
    drop((master, slave));
    same_files(master_dir.path(), slave_dir.path(), "commitlog");
    same_files(master_dir.path(), slave_dir.path(), "consumequeue");
}

/// The slave's CommitLog and queue files, to compare before and after a refusal.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = files_under(&root.join("commitlog"));
    files.extend(files_under(&root.join("consumequeue")));
    files
}

/// `now` holds every file of `before` as it was; a file only in `now` is all zeros: the next
/// CommitLog segment, which the store's allocator thread creates at a time of its own.
fn unchanged(before: &[(PathBuf, Vec<u8>)], now: &[(PathBuf, Vec<u8>)]) -> bool {
    let was: std::collections::HashMap<_, _> = before.iter().map(|(p, b)| (p, b)).collect();
    before.iter().all(|(p, _)| now.iter().any(|(q, _)| q == p))
        && now.iter().all(|(path, bytes)| match was.get(path) {
            Some(old) => *old == bytes,
            None => bytes.iter().all(|b| *b == 0),
        })
}

#[test]
fn refusals_write_nothing() {
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = MessageStore::open(config(master_dir.path(), StoreRole::Master)).unwrap();
    fill(&master, 0, 60);
    let mut rng = Rng(3);
    let bytes = read_log(&master, 0, &mut rng);
    let all_units = units(0, &bytes);
    let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();

    // An empty slave starts at a segment start only.
    let first = &bytes[..all_units[0].1];
    assert!(matches!(
        slave.append_replicated(100, first),
        Err(ReplicaError::Misaligned {
            offset: 100,
            segment_size: SEGMENT
        })
    ));
    assert_eq!(slave.commit_log_max_offset(), 0);
    assert!(slave.topics().is_empty());

    // Up to the last plain record (one with an entry, a body and IPv4 hosts) before the first
    // segment's end blank.
    let blank = all_units
        .iter()
        .position(|&(at, len)| at + len as i64 == SEGMENT)
        .unwrap();
    let (at, len) = *all_units[..blank]
        .iter()
        .rev()
        .find(|&&(at, len)| {
            let record = decode(&bytes[at as usize..at as usize + len]);
            record.sys_flag == 0 && record.topic == "A"
        })
        .unwrap();
    replicate(&slave, 0, &bytes[..at as usize], &mut rng);
    let end = slave.commit_log_max_offset();
    let before = snapshot(slave_dir.path());
    let next = &bytes[at as usize..at as usize + len];
    let refused = |result: Result<i64, ReplicaError>| {
        let error = result.unwrap_err();
        assert_eq!(slave.commit_log_max_offset(), end, "{error}");
        assert!(
            unchanged(&before, &snapshot(slave_dir.path())),
            "{error}: nothing written"
        );
        error
    };

    let error = refused(slave.append_replicated(end + 20, next));
    assert!(
        matches!(error, ReplicaError::WrongOffset { expected, got } if expected == end && got == end + 20)
    );
    refused(slave.append_replicated(end - 20, next));

    // The first body byte of a record with IPv4 hosts.
    const BODY_POS: usize = 88;
    let mut flipped = next.to_vec();
    flipped[BODY_POS] ^= 0x20;
    let error = refused(slave.append_replicated(end, &flipped));
    assert!(
        matches!(&error, ReplicaError::BadRecord { offset, reason } if *offset == end && reason.contains("CRC")),
        "{error}"
    );

    // In parts, a bad one refuses the good ones before it too.
    let error = refused(slave.append_replicated_parts(end, &[next, &flipped]));
    assert!(
        matches!(&error, ReplicaError::BadRecord { offset, reason } if *offset == end + len as i64 && reason.contains("CRC")),
        "{error}"
    );

    let error = refused(slave.append_replicated(end, &next[..len - 1]));
    assert!(matches!(error, ReplicaError::BadRecord { offset, .. } if offset == end));

    let (next_segment_at, next_len) = all_units[blank + 1];
    let crossing = &bytes[at as usize..(next_segment_at as usize + next_len)];
    let error = refused(slave.append_replicated(end, crossing));
    assert!(matches!(error, ReplicaError::CrossesSegment { offset } if offset == end));
    let (before_next, after_next) = crossing.split_at(crossing.len() - next_len);
    let error = refused(slave.append_replicated_parts(end, &[before_next, after_next]));
    assert!(matches!(error, ReplicaError::CrossesSegment { offset } if offset == end));

    // A record whose queue offset does not continue its queue (the CRC covers the body only).
    let mut skipped = next.to_vec();
    let queue_offset = i64::from_be_bytes(
        skipped[QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8]
            .try_into()
            .unwrap(),
    );
    skipped[QUEUE_OFFSET_POS..QUEUE_OFFSET_POS + 8]
        .copy_from_slice(&(queue_offset + 1).to_be_bytes());
    let error = refused(slave.append_replicated(end, &skipped));
    assert!(
        matches!(error, ReplicaError::Diverged { offset, .. } if offset == end),
        "{error}"
    );

    // One writer: the slave takes no puts, the master no replicated bytes.
    let put = block_on(slave.put_messages(vec![message("A", 0, b"no", None)]));
    assert!(matches!(&put, Err(PutError::ServiceNotAvailable(why)) if why.contains("slave mode")));
    assert!(matches!(
        master.append_replicated(master.commit_log_max_offset(), &[]),
        Err(ReplicaError::NotSlave)
    ));

    // After all that, the right bytes still go in.
    assert_eq!(
        slave.append_replicated(end, next).unwrap(),
        end + len as i64
    );
    assert_eq!(slave.role(), StoreRole::Slave);
    assert_eq!(master.role(), StoreRole::Master);
    slave.shutdown();
    let after = slave.commit_log_max_offset();
    let (at, len) = all_units[all_units.iter().position(|u| u.0 == after).unwrap()];
    assert!(matches!(
        slave.append_replicated(at, &bytes[at as usize..at as usize + len]),
        Err(ReplicaError::ServiceNotAvailable(why)) if why.contains("shut down")
    ));
}

#[test]
fn data_bounds_last_record_and_the_end_watch() {
    let (master_dir, slave_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = MessageStore::open(config(master_dir.path(), StoreRole::Master)).unwrap();
    assert_eq!(master.commit_log_segment_size(), SEGMENT);
    assert_eq!(master.commit_log_data(0, 100), None);
    assert_eq!(master.last_record(), None);
    let mut watch = master.commit_log_end_watch();
    assert_eq!(*watch.borrow_and_update(), 0);

    let stored = put(&master, vec![message("A", 0, b"first", None)]);
    assert!(watch.has_changed().unwrap());
    assert_eq!(*watch.borrow_and_update(), master.commit_log_max_offset());
    let first = &stored.messages[0];
    assert_eq!(
        master.last_record(),
        Some((0, master.read_message(0).unwrap()))
    );
    fill(&master, 0, 80);
    assert_eq!(*watch.borrow_and_update(), master.commit_log_max_offset());
    let (last_at, last) = master.last_record().unwrap();
    assert_eq!(last_at + last.len() as i64, master.commit_log_max_offset());
    assert_eq!(decode(&last).physical_offset, last_at);

    let max = master.commit_log_max_offset();
    assert!(max > SEGMENT);
    assert_eq!(master.commit_log_data(-1, 10), None);
    assert_eq!(master.commit_log_data(max, 10), None);
    assert_eq!(master.commit_log_data(max - 1, 10).unwrap().len(), 1);
    assert_eq!(
        master.commit_log_data(SEGMENT - 10, 1000).unwrap().len(),
        10
    );
    assert_eq!(master.commit_log_data(0, 0).unwrap().len(), 0);
    let head = master.commit_log_data(0, first.size as usize).unwrap();
    assert_eq!(head, master.read_message(0).unwrap());
    // A whole segment at most.
    assert_eq!(
        master.commit_log_data(0, usize::MAX).unwrap().len(),
        SEGMENT as usize
    );

    let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();
    let mut slave_watch = slave.commit_log_end_watch();
    let bytes = master.commit_log_data(0, 3000).unwrap();
    let whole = units(0, &bytes)
        .into_iter()
        .take_while(|&(at, len)| at as usize + len <= bytes.len())
        .last()
        .map(|(at, len)| at as usize + len)
        .unwrap();
    let end = slave.append_replicated(0, &bytes[..whole]).unwrap();
    assert!(slave_watch.has_changed().unwrap());
    assert_eq!(*slave_watch.borrow_and_update(), end);
    // A watcher that comes later sees the end at once.
    assert_eq!(*slave.commit_log_end_watch().borrow(), end);
    drop(slave);
    let slave = MessageStore::open(config(slave_dir.path(), StoreRole::Slave)).unwrap();
    let (at, record) = slave.last_record().unwrap();
    assert_eq!(at as usize + record.len(), whole, "recovered");
}

#[test]
fn a_slave_flushes_as_configured_and_wakes_long_polls() {
    let master_dir = tempfile::tempdir().unwrap();
    let master = MessageStore::open(config(master_dir.path(), StoreRole::Master)).unwrap();
    fill(&master, 0, 30);
    let mut rng = Rng(11);
    let bytes = read_log(&master, 0, &mut rng);
    for flush_disk_type in [FlushDiskType::AsyncFlush, FlushDiskType::SyncFlush] {
        let slave_dir = tempfile::tempdir().unwrap();
        let slave = MessageStore::open(StoreConfig {
            flush_disk_type,
            // Async: no timed flush within the test, only the one appends ask for.
            flush_commit_log_timed: false,
            flush_commit_log_least_pages: 1,
            flush_interval_commit_log_ms: 600_000,
            ..config(slave_dir.path(), StoreRole::Slave)
        })
        .unwrap();
        let arrived = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = arrived.clone();
        slave.set_message_arrival_listener(std::sync::Arc::new(move |topic, queue, max| {
            seen.lock().unwrap().push((topic.to_string(), queue, max));
        }));
        replicate(&slave, 0, &bytes, &mut rng);
        // Sync: the group commit flushes everything. Async with flushCommitLogLeastPages=1:
        // appends wake the flush once a page is dirty, so less than a page may wait for the
        // timed flush, as in Java (how much depends on when the flush thread ran).
        let left = match flush_disk_type {
            FlushDiskType::SyncFlush => 1,
            FlushDiskType::AsyncFlush => 4096,
        };
        wait_until("the flush", || slave.flush_behind_bytes() < left);
        let arrived = arrived.lock().unwrap();
        for (topic, queue) in every_queue(&master) {
            let max = master.max_offset_in_queue(&topic, queue);
            assert!(
                arrived.contains(&(topic.clone(), queue, max)),
                "{topic}:{queue} up to {max}"
            );
        }
    }
}
