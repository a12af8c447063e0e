//! A slave's write path: CommitLog bytes replicated from its master, appended as they are (Java's
//! `DefaultMessageStore.appendToCommitLog` and `ReputMessageService.doReput`).
//!
//! Java appends whatever the master sent and lets the reput thread find out later what it
//! meant. Here a chunk is checked whole before anything is written (records, the segment's end
//! blank, queue offsets), so a torn or foreign chunk leaves the store as it was, and the
//! ConsumeQueue entries are written in the same lock hold as the bytes, with the code recovery
//! uses: a slave's queues are byte-identical to its master's.

use std::collections::HashMap;
use std::sync::Arc;

use skiff_model::record::{Record, BLANK_MAGIC};

use crate::commit_log::END_FILE_MIN_BLANK_LENGTH;
use crate::consume_queue::{is_storable_topic, ConsumeQueue, Gaps, Put};
use crate::dispatch::Dispatch;
use crate::error::{PutError, ReplicaError};
use crate::message_store::Shared;

/// Checks that `bytes`, to be written at `offset`, are whole records (body CRCs checked with
/// `check_crc`) and possibly the end blank of their segment, all inside one segment. Returns the
/// records with their CommitLog offsets. A blank spans to the segment's end, so once written the
/// segment is full and the next bytes go to the next one.
pub(crate) fn check_chunk(
    offset: i64,
    bytes: &[u8],
    segment_size: i64,
    check_crc: bool,
) -> Result<Vec<Dispatch<'_>>, ReplicaError> {
    if offset % segment_size + bytes.len() as i64 > segment_size {
        return Err(ReplicaError::CrossesSegment { offset });
    }
    let mut records = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let at = offset + pos as i64;
        let rest = &bytes[pos..];
        let bad = |reason: String| ReplicaError::BadRecord { offset: at, reason };
        let to_segment_end = segment_size - at % segment_size;
        if rest.len() >= 8 && i32::from_be_bytes(rest[4..8].try_into().expect("4")) == BLANK_MAGIC {
            let declared = i32::from_be_bytes(rest[..4].try_into().expect("4"));
            if i64::from(declared) != to_segment_end {
                return Err(bad(format!(
                    "the end-of-segment blank says {declared} bytes, but {to_segment_end} are left in the segment"
                )));
            }
            if rest.len() as i64 != to_segment_end {
                return Err(bad(format!(
                    "only {} of the end-of-segment blank's {to_segment_end} bytes",
                    rest.len()
                )));
            }
            break;
        }
        let record = Record::decode(rest, check_crc).map_err(|e| bad(e.to_string()))?;
        if record.physical_offset != at {
            return Err(bad(format!(
                "its PHYSICALOFFSET field says {}",
                record.physical_offset
            )));
        }
        let size = i64::from(record.total_size);
        if to_segment_end - size < END_FILE_MIN_BLANK_LENGTH as i64 {
            return Err(bad(format!(
                "its {size} bytes leave no room for the end-of-segment blank"
            )));
        }
        if !is_storable_topic(record.topic) {
            return Err(bad(format!(
                "the topic {:?} cannot be stored",
                record.topic
            )));
        }
        if record.queue_offset < 0 {
            return Err(bad(format!(
                "negative queue offset {}",
                record.queue_offset
            )));
        }
        let mut dispatch = Dispatch::from_record(&record);
        dispatch.commit_log_offset = at;
        records.push(dispatch);
        pos += size as usize;
    }
    Ok(records)
}

/// [`check_chunk`] for a chunk received in parts, each of whole records: together they must
/// stay inside one segment, so only the last part may end in the segment's blank.
fn check_parts<'a>(
    offset: i64,
    parts: &[&'a [u8]],
    segment_size: i64,
    check_crc: bool,
) -> Result<Vec<Dispatch<'a>>, ReplicaError> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if offset % segment_size + len as i64 > segment_size {
        return Err(ReplicaError::CrossesSegment { offset });
    }
    let mut records = Vec::new();
    let mut at = offset;
    for part in parts {
        records.extend(check_chunk(at, part, segment_size, check_crc)?);
        at += part.len() as i64;
    }
    Ok(records)
}

/// The entries a chunk adds to one queue.
struct Target<'a> {
    topic: &'a str,
    queue_id: i32,
    /// `None` while the queue does not exist yet.
    queue: Option<Arc<ConsumeQueue>>,
    first: i64,
    count: i64,
    /// The queue is empty and its first entry is not 0: padded up to it.
    pad: bool,
}

/// Appends a checked chunk under the put lock (see [`crate::MessageStore::append_replicated`]).
pub(crate) fn append(shared: &Shared, offset: i64, parts: &[&[u8]]) -> Result<i64, ReplicaError> {
    let segment_size = shared.config.commit_log_file_size as i64;
    let commit_log = &shared.commit_log;
    // CRCs outside the lock: what a record must carry depends only on where it goes. A wrong
    // offset, found under the lock, is the error to report before any about the bytes.
    let checked = check_parts(
        offset,
        parts,
        segment_size,
        shared.config.check_crc_on_recover,
    );
    let guard = commit_log.lock();
    shared
        .check_writable()
        .map_err(|e| ReplicaError::ServiceNotAvailable(e.to_string()))?;
    let max = commit_log.max_offset();
    if commit_log.is_empty() {
        if offset < 0 || offset % segment_size != 0 {
            return Err(ReplicaError::Misaligned {
                offset,
                segment_size,
            });
        }
    } else if offset != max {
        return Err(ReplicaError::WrongOffset {
            expected: max,
            got: offset,
        });
    }
    let records = checked?;
    if parts.iter().all(|p| p.is_empty()) {
        return Ok(max);
    }

    // Queue offsets must continue each queue; only an empty queue may start late.
    let mut targets: Vec<Target<'_>> = Vec::new();
    let mut index: HashMap<(&str, i32), usize> = HashMap::new();
    // Each record's target, in order, so that writing the entries below looks up nothing.
    let mut record_targets: Vec<usize> = Vec::with_capacity(records.len());
    for record in records.iter().filter(|r| r.has_queue_entry()) {
        let diverged = |reason: String| ReplicaError::Diverged {
            offset: record.commit_log_offset,
            reason,
        };
        let key = (record.topic, record.queue_id);
        if let Some(&i) = index.get(&key) {
            let target = &mut targets[i];
            let expected = target.first + target.count;
            if record.queue_offset != expected {
                return Err(diverged(format!(
                    "queue {}:{} gets queue offset {} after {}",
                    record.topic,
                    record.queue_id,
                    record.queue_offset,
                    expected - 1
                )));
            }
            target.count += 1;
            record_targets.push(i);
            continue;
        }
        let queue = shared.queues.get(record.topic, record.queue_id);
        let end = queue.as_ref().map_or(0, |q| q.max_offset());
        if end > 0 && record.queue_offset != end {
            return Err(diverged(format!(
                "queue {}:{} ends at {end}, the record has queue offset {}",
                record.topic, record.queue_id, record.queue_offset
            )));
        }
        index.insert(key, targets.len());
        record_targets.push(targets.len());
        targets.push(Target {
            topic: record.topic,
            queue_id: record.queue_id,
            queue,
            first: record.queue_offset,
            count: 1,
            pad: record.queue_offset > end,
        });
    }
    // As the put path does: queue files first, so that a full disk refuses the chunk before the
    // CommitLog has it. A padded queue is laid out by its first entry.
    for target in targets.iter_mut().filter(|t| !t.pad) {
        let queue = shared
            .queues
            .get_or_create(&guard, target.topic, target.queue_id)
            .map_err(ReplicaError::Io)?;
        queue
            .prepare(target.first, target.count as usize)
            .map_err(|e| refusal(shared.write_error(e)))?;
        target.queue = Some(queue);
    }

    let last = records
        .last()
        .map(|r| (r.commit_log_offset, r.store_timestamp));
    commit_log
        .append_replicated(&guard, offset, parts, last)
        .map_err(|e| refusal(shared.write_error(e)))?;

    let with_entries = records.iter().filter(|r| r.has_queue_entry());
    for (record, &i) in with_entries.zip(&record_targets) {
        let target = &mut targets[i];
        let gaps = if std::mem::take(&mut target.pad) {
            Gaps::Pad
        } else {
            Gaps::Refuse
        };
        let put = record.put_entry(&shared.delays, gaps, |topic, queue_id| {
            shared.queues.get_or_create(&guard, topic, queue_id)
        });
        let failure = match put {
            Ok(Some(Put::Appended)) => continue,
            // Checked above under this lock hold; only a bug gets here.
            Ok(other) => ReplicaError::Diverged {
                offset: record.commit_log_offset,
                reason: format!("the consume queue answered {other:?}"),
            },
            Err(e) => ReplicaError::Io(e),
        };
        // The records are in the CommitLog; recovery will rebuild the entries. Stop taking
        // writes rather than leave the queues behind the CommitLog.
        shared.mark_consume_queue_error();
        tracing::error!(topic = record.topic, queue_id = record.queue_id, error = %failure, "consume queue write of replicated bytes failed");
        return Err(failure);
    }
    if let Some((_, store_timestamp)) = last.filter(|_| !targets.is_empty()) {
        shared.checkpoint.set_logics_msg_timestamp(store_timestamp);
    }
    let end = commit_log.max_offset();
    drop(guard);

    for target in &targets {
        let Some(queue) = target
            .queue
            .clone()
            .or_else(|| shared.queues.get(target.topic, target.queue_id))
        else {
            continue;
        };
        let queue_end = target.first + target.count;
        if queue.wants_ahead(queue_end) {
            shared.cq_allocator.request(&queue);
        }
        shared.notify_arrival(&queue, queue_end);
    }
    shared.publish_end(end);
    shared.wake_flush(end);
    Ok(end)
}

/// A write refusal of the put path as a replication error.
fn refusal(e: PutError) -> ReplicaError {
    match e {
        PutError::Io(e) => ReplicaError::Io(e),
        other => ReplicaError::ServiceNotAvailable(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_model::record::RecordFields;

    const SEGMENT: i64 = 4096;

    /// An encoded record that belongs at `offset`.
    fn record(offset: i64, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        RecordFields {
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            physical_offset: offset,
            sys_flag: 0,
            born_timestamp: 1,
            born_host: "10.0.0.1:1".parse().unwrap(),
            store_timestamp: 2,
            store_host: "10.0.0.2:2".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body,
            topic: "T",
            properties: "",
        }
        .encode(&mut out)
        .unwrap();
        out
    }

    fn blank(len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        out[..4].copy_from_slice(&(len as i32).to_be_bytes());
        out[4..8].copy_from_slice(&BLANK_MAGIC.to_be_bytes());
        out
    }

    fn reason(result: Result<Vec<Dispatch<'_>>, ReplicaError>) -> (i64, String) {
        match result {
            Err(ReplicaError::BadRecord { offset, reason }) => (offset, reason),
            other => panic!("expected a bad record, got {other:?}"),
        }
    }

    #[test]
    fn records_and_the_blank_that_ends_the_segment() {
        let start = 2 * SEGMENT + 100;
        let mut bytes = record(start, b"one");
        let second = start + bytes.len() as i64;
        bytes.extend(record(second, b"two"));
        let end = start + bytes.len() as i64;
        bytes.extend(blank((3 * SEGMENT - end) as usize));
        let records = check_chunk(start, &bytes, SEGMENT, true).unwrap();
        let offsets: Vec<i64> = records.iter().map(|r| r.commit_log_offset).collect();
        assert_eq!(offsets, [start, second]);

        let records_only = &bytes[..(end - start) as usize];
        assert_eq!(
            check_chunk(start, records_only, SEGMENT, true)
                .unwrap()
                .len(),
            2
        );
        let blank_only = &bytes[(end - start) as usize..];
        assert!(check_chunk(end, blank_only, SEGMENT, true)
            .unwrap()
            .is_empty());
        assert!(check_chunk(start, &[], SEGMENT, true).unwrap().is_empty());
    }

    #[test]
    fn what_is_refused() {
        let at = SEGMENT - 500;
        let one = record(at, b"body");
        // Past the segment end.
        let mut long = one.clone();
        long.resize(600, 0);
        assert!(matches!(
            check_chunk(at, &long, SEGMENT, true),
            Err(ReplicaError::CrossesSegment { offset }) if offset == at
        ));
        // Torn: the last record misses bytes.
        let mut torn = one.clone();
        torn.extend_from_slice(&record(at + one.len() as i64, b"next")[..30]);
        let (offset, why) = reason(check_chunk(at, &torn, SEGMENT, true));
        assert_eq!(offset, at + one.len() as i64);
        assert!(why.contains("truncated"), "{why}");
        // Placed elsewhere than its PHYSICALOFFSET says.
        let (_, why) = reason(check_chunk(at + 8, &one, SEGMENT, true));
        assert!(why.contains("PHYSICALOFFSET"), "{why}");
        // A flipped body byte: refused only when CRCs are checked.
        let mut flipped = one.clone();
        let body_at = flipped.len() - 2 - 1 - 1 - 4; // properties len, topic, topic len, body
        flipped[body_at] ^= 1;
        let (_, why) = reason(check_chunk(at, &flipped, SEGMENT, true));
        assert!(why.contains("CRC"), "{why}");
        assert_eq!(check_chunk(at, &flipped, SEGMENT, false).unwrap().len(), 1);
        // A record must leave room for the end blank.
        let tight = SEGMENT - one.len() as i64 - 4;
        let (_, why) = reason(check_chunk(tight, &record(tight, b"body"), SEGMENT, true));
        assert!(why.contains("no room"), "{why}");
        // The blank must span exactly to the segment end, and be whole.
        let (_, why) = reason(check_chunk(at, &blank(400), SEGMENT, true));
        assert!(why.contains("500 are left"), "{why}");
        let mut short = blank(500);
        short.truncate(100);
        let (_, why) = reason(check_chunk(at, &short, SEGMENT, true));
        assert!(why.contains("only 100"), "{why}");
        // Zeros are no record.
        let (_, why) = reason(check_chunk(at, &[0; 64], SEGMENT, true));
        assert!(why.contains("magic"), "{why}");
    }
}
