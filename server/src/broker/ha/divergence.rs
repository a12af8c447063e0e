//! What a slave decides before it streams from a master: whether the master's CommitLog can
//! continue this slave's (design note §5.2, "Divergence check").
//!
//! Java's slave never asks: an ahead or diverged slave gets the master's bytes after its own
//! different prefix (or heartbeats forever), and a segment size that differs misplaces every
//! byte. A Skiff slave compares first, over the remoting protocol: the master's
//! `mappedFileSizeCommitLog` (GET_BROKER_CONFIG) with its own, and the master's record at the
//! offset of its last record (VIEW_MESSAGE_BY_ID, which answers the raw stored bytes) with that
//! record. It then streams, or refuses and leaves its files as they are: the operator moves the
//! store aside; nothing is overwritten or truncated.
//!
//! This module owns the decisions and their messages, as pure functions of the answers; the
//! shell (`client.rs`) makes the calls and logs.

use std::fmt;

/// The key that must be equal on both brokers.
pub(crate) const SEGMENT_SIZE_KEY: &str = "mappedFileSizeCommitLog";

/// The master's answer to VIEW_MESSAGE_BY_ID at the slave's last record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MasterRecord<'a> {
    /// The bytes the master stores there (Java answers as many bytes as the size field there
    /// says, whatever they are).
    Found(&'a [u8]),
    /// "can not find message by the offset": the master holds nothing at that offset.
    Missing,
}

/// Why a slave does not stream from its master.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The brokers' CommitLog segments differ in size.
    SegmentSize { ours: i64, master: i64 },
    /// The master has no record where this slave's last record starts.
    Ahead { last_record: i64, slave_end: i64 },
    /// The master's record at this slave's last record differs from it.
    Diverged {
        last_record: i64,
        slave_end: i64,
        ours_len: usize,
        master_len: usize,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::SegmentSize { ours, master } => write!(
                f,
                "the master's {SEGMENT_SIZE_KEY} is {master}, this slave's is {ours}: set the \
                 same {SEGMENT_SIZE_KEY} on both brokers (a slave places the master's bytes by \
                 offset within a segment)"
            ),
            Refusal::Ahead {
                last_record,
                slave_end,
            } => write!(
                f,
                "this slave's CommitLog ends at {slave_end} with a record at {last_record}, but \
                 the master holds no record at {last_record}: the slave holds data the master \
                 does not (a master that lost its tail, or another master's data), or the master \
                 deleted that segment. Nothing was changed; move this slave's store aside so \
                 that it copies the master from scratch"
            ),
            Refusal::Diverged {
                last_record,
                slave_end,
                ours_len,
                master_len,
            } => write!(
                f,
                "this slave's CommitLog ends at {slave_end} with a record of {ours_len} bytes at \
                 {last_record}, but the master's {master_len} bytes at {last_record} differ: the \
                 CommitLogs diverged (another master's data, or a master that lost its tail and \
                 was written again). Nothing was changed; move this slave's store aside so that \
                 it copies the master from scratch"
            ),
        }
    }
}

/// The master's `mappedFileSizeCommitLog` in its GET_BROKER_CONFIG answer (`None` when it does
/// not say).
pub(crate) fn master_segment_size(config: &[(String, String)]) -> Option<i64> {
    config
        .iter()
        .find(|(key, _)| key == SEGMENT_SIZE_KEY)
        .and_then(|(_, value)| value.trim().parse().ok())
}

/// Both brokers must cut the CommitLog at the same offsets.
pub(crate) fn check_segment_size(ours: i64, master: i64) -> Result<(), Refusal> {
    if ours == master {
        Ok(())
    } else {
        Err(Refusal::SegmentSize { ours, master })
    }
}

/// A non-empty slave streams on only when the master stores, at the offset of the slave's last
/// record, the same bytes. `last` is that record (offset and bytes), `slave_end` the slave's
/// CommitLog end.
pub(crate) fn check_last_record(
    last: (i64, &[u8]),
    slave_end: i64,
    master: MasterRecord<'_>,
) -> Result<(), Refusal> {
    let (last_record, ours) = last;
    match master {
        MasterRecord::Found(theirs) if theirs == ours => Ok(()),
        MasterRecord::Found(theirs) => Err(Refusal::Diverged {
            last_record,
            slave_end,
            ours_len: ours.len(),
            master_len: theirs.len(),
        }),
        MasterRecord::Missing => Err(Refusal::Ahead {
            last_record,
            slave_end,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_record_streams() {
        let record = b"\x00\x00\x00\x10record-bytes";
        assert_eq!(
            check_last_record((4096, record), 4112, MasterRecord::Found(record)),
            Ok(())
        );
    }

    #[test]
    fn a_different_record_is_divergence() {
        let ours = b"\x00\x00\x00\x10record-bytes";
        let theirs = b"\x00\x00\x00\x10record-BYTES";
        let refusal =
            check_last_record((4096, ours), 4112, MasterRecord::Found(theirs)).unwrap_err();
        assert_eq!(
            refusal,
            Refusal::Diverged {
                last_record: 4096,
                slave_end: 4112,
                ours_len: 16,
                master_len: 16,
            }
        );
        let message = refusal.to_string();
        assert!(
            message.contains("4096") && message.contains("4112"),
            "{message}"
        );
        assert!(
            message.contains("move this slave's store aside"),
            "{message}"
        );
    }

    #[test]
    fn a_longer_or_shorter_answer_is_divergence() {
        // Java answers as many bytes as the size field at the offset says: a prefix of ours is
        // not ours.
        let ours = b"\x00\x00\x00\x10record-bytes";
        assert!(matches!(
            check_last_record((0, ours), 16, MasterRecord::Found(&ours[..8])),
            Err(Refusal::Diverged { master_len: 8, .. })
        ));
        assert!(matches!(
            check_last_record((0, &ours[..8]), 8, MasterRecord::Found(ours)),
            Err(Refusal::Diverged { ours_len: 8, .. })
        ));
    }

    #[test]
    fn no_record_on_the_master_means_the_slave_is_ahead() {
        let refusal =
            check_last_record((8192, b"record"), 8198, MasterRecord::Missing).unwrap_err();
        assert_eq!(
            refusal,
            Refusal::Ahead {
                last_record: 8192,
                slave_end: 8198
            }
        );
        assert!(refusal.to_string().contains("no record at 8192"));
    }

    #[test]
    fn segment_sizes_must_match() {
        assert_eq!(check_segment_size(1 << 30, 1 << 30), Ok(()));
        let refusal = check_segment_size(1 << 30, 256 * 1024).unwrap_err();
        assert_eq!(
            refusal,
            Refusal::SegmentSize {
                ours: 1 << 30,
                master: 256 * 1024
            }
        );
        assert!(refusal.to_string().contains("mappedFileSizeCommitLog"));
    }

    #[test]
    fn the_segment_size_is_read_from_the_master_config() {
        let config = |value: &str| {
            vec![
                ("brokerName".to_string(), "a".to_string()),
                (SEGMENT_SIZE_KEY.to_string(), value.to_string()),
            ]
        };
        assert_eq!(master_segment_size(&config("1073741824")), Some(1 << 30));
        assert_eq!(master_segment_size(&config("big")), None);
        assert_eq!(master_segment_size(&[]), None);
    }
}
