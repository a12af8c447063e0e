//! How a request for a static topic's logical queue becomes requests on physical queues, and
//! how their answers become the logical queue's (`TopicQueueMappingContext` and the
//! `rewriteRequestForStaticTopic` / `rewriteResponseForStaticTopic` methods of Java's
//! processors). Pure: what to read where, and how to present it. Reading, and passing requests
//! on to other broker groups (`forward`), is the handlers' business (`send`, `pull`, `queries`).
//!
//! A logical queue is a list of items, oldest first, each a stretch of it on one physical queue
//! of one broker group; the newest is the leader, where sends go. Clients address the leader's
//! group with the logical queue id and logical offsets; an older stretch may live on another
//! group, which is then asked for it with the physical queue id and offsets (`lo=false`).

use skiff_model::command::{ErrorKind, PullResult, PullStatus, Reply};
use skiff_model::static_topic::{find_item, find_next, LogicQueueMappingItem};

/// A request's logical queue, on the broker group that leads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LogicalQueue {
    pub topic: String,
    pub global_id: i32,
    /// This broker group's name.
    pub here: String,
    /// Oldest first; the last is the leader (on this group).
    pub items: Vec<LogicQueueMappingItem>,
}

/// How a request addresses its queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Addressed {
    /// A plain topic, or a physical queue of a static topic (a request passed on by a broker).
    Physical,
    /// A logical queue this broker group leads.
    Logical(LogicalQueue),
    /// A logical queue this group does not lead (or that does not exist): Java's
    /// NOT_LEADER_FOR_QUEUE, with the group's name for the remark.
    NotLeader { here: String },
}

/// Where a logical offset is read: the item holding it, and the physical offset there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Located {
    pub item: LogicQueueMappingItem,
    pub physical_offset: i64,
}

/// `"<topic>-<id> does not exit in request process of current broker <name>"` (sic): Java's
/// NOT_LEADER_FOR_QUEUE remark for sends, consumer offsets and offset queries.
pub(super) fn not_leader(topic: &str, queue_id: i32, here: &str) -> Reply {
    Reply::error(
        ErrorKind::NotLeaderForQueue,
        format!("{topic}-{queue_id} does not exit in request process of current broker {here}"),
    )
}

/// Java's NOT_LEADER_FOR_QUEUE remark for pulls.
pub(super) fn not_leader_for_pull(topic: &str, queue_id: i32, here: &str) -> Reply {
    Reply::error(
        ErrorKind::NotLeaderForQueue,
        format!(
            "{topic}-{queue_id} cannot find mapping item in request process of current broker {here}"
        ),
    )
}

/// Java's NOT_LEADER_FOR_QUEUE remark for GET_MIN_OFFSET (request code 31).
pub(super) fn not_leader_for_min_offset(topic: &str, queue_id: i32, here: &str) -> Reply {
    Reply::error(
        ErrorKind::NotLeaderForQueue,
        format!("{topic}-{queue_id} is not leader in broker {here}, request code 31"),
    )
}

/// A logical queue none of whose stretches has a logical offset yet (Java fails on a null).
pub(super) fn undecided(logical: &LogicalQueue) -> Reply {
    Reply::error(
        ErrorKind::SystemError,
        format!(
            "no stretch of logical queue {}-{} has a logical offset yet",
            logical.topic, logical.global_id
        ),
    )
}

impl LogicalQueue {
    /// The newest item: where sends go.
    pub fn leader(&self) -> &LogicQueueMappingItem {
        self.items.last().expect("a led logical queue has items")
    }

    /// Whether `item` lives on this broker group.
    pub fn is_here(&self, item: &LogicQueueMappingItem) -> bool {
        item.bname == self.here
    }

    /// Where logical offset `logical` lives; `None` while no item has a decided logical offset
    /// (Java fails such a request with a system error).
    pub fn locate(&self, logical: i64) -> Option<Located> {
        let item = find_item(&self.items, logical)?.clone();
        Some(Located {
            physical_offset: item.physical_offset(logical),
            item,
        })
    }

    /// The earliest item (logical offset 0, or the oldest decided one).
    pub fn earliest(&self) -> Option<&LogicQueueMappingItem> {
        find_item(&self.items, 0)
    }

    /// The newest item with a decided logical offset.
    pub fn newest_decided(&self) -> Option<&LogicQueueMappingItem> {
        find_item(&self.items, i64::MAX)
    }

    /// A send's answer: the physical queue offset of the first message, as the logical queue's
    /// (-1 while the leader's logical offset is undecided, as in Java).
    pub fn sent_offset(&self, physical_offset: i64) -> i64 {
        self.leader().static_offset_loosely(physical_offset)
    }

    /// A pull's answer from the physical queue of `at` (read here or on another group) as the
    /// logical queue's (`rewriteResponseForStaticTopic`): offsets made logical, `offset_delta`
    /// set for the messages' own offsets, and a read past the end of an older item turned into
    /// "pull again from the next item" (PULL_RETRY_IMMEDIATELY).
    pub fn present_pull(&self, at: &Located, mut result: PullResult) -> PullResult {
        let leader = self.leader();
        let Some(earliest) = self.earliest() else {
            return result;
        };
        let mut current = at.item.clone();
        let request_offset = at.physical_offset;
        let (mut next_begin, mut min, mut max) = (
            result.next_begin_offset,
            result.min_offset,
            result.max_offset,
        );
        let mut status = result.status;
        if result.status != PullStatus::Found {
            let at_leader = leader.gen == current.gen;
            let at_earliest = earliest.gen == current.gen;
            if at_leader {
                if request_offset > max {
                    if result.status == PullStatus::OffsetMoved {
                        next_begin = max;
                    }
                } else if request_offset < min {
                    next_begin = min;
                    status = PullStatus::NoMatchedMessage;
                }
            }
            // An older stretch (the earliest, or one in the middle): read past its end, the
            // client goes on at the next one.
            if at_earliest || !at_leader {
                if request_offset < min {
                    next_begin = min;
                    status = if at_earliest {
                        PullStatus::OffsetMoved
                    } else {
                        PullStatus::NoMatchedMessage
                    };
                } else if request_offset >= max {
                    match find_next(&self.items, &current) {
                        Some(next) => {
                            current = next.clone();
                            (next_begin, min, max) =
                                (next.start_offset, next.start_offset, next.start_offset);
                            status = PullStatus::NoMatchedMessage;
                        }
                        None => status = PullStatus::NoNewMessage,
                    }
                } else {
                    status = result.status;
                }
            }
        }
        if current.end_decided() && next_begin >= current.end_offset {
            next_begin = current.end_offset;
        }
        result.status = status;
        result.next_begin_offset = current.static_offset_strictly(next_begin);
        result.min_offset = current.static_offset_strictly(current.start_offset.max(min));
        result.max_offset = current
            .static_offset_strictly(max)
            .max(leader.max_static_queue_offset());
        result.offset_delta = Some(current.offset_delta());
        if status != PullStatus::Found {
            result.messages.clear();
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(gen: i32, queue_id: i32, bname: &str, logic_offset: i64) -> LogicQueueMappingItem {
        LogicQueueMappingItem {
            gen,
            queue_id,
            bname: bname.into(),
            logic_offset,
            ..LogicQueueMappingItem::default()
        }
    }

    /// Logical queue 1, first on broker-a's queue 0, remapped to broker-b's queue 2 from
    /// logical offset 10,000; asked at broker-b.
    fn remapped() -> LogicalQueue {
        LogicalQueue {
            topic: "st".into(),
            global_id: 1,
            here: "broker-b".into(),
            items: vec![item(0, 0, "broker-a", 0), item(1, 2, "broker-b", 10_000)],
        }
    }

    fn pulled(status: PullStatus, next: i64, min: i64, max: i64) -> PullResult {
        PullResult {
            status,
            next_begin_offset: next,
            min_offset: min,
            max_offset: max,
            ..PullResult::default()
        }
    }

    #[test]
    fn offsets_are_located_in_the_item_that_holds_them() {
        let queue = remapped();
        let old = queue.locate(1).unwrap();
        assert_eq!(
            (old.item.bname.as_str(), old.physical_offset),
            ("broker-a", 1)
        );
        assert!(!queue.is_here(&old.item));
        let new = queue.locate(10_003).unwrap();
        assert_eq!((new.item.queue_id, new.physical_offset), (2, 3));
        assert!(queue.is_here(&new.item));
        // The gap between the old stretch's end and the new one's start reads the old stretch.
        assert_eq!(queue.locate(5_000).unwrap().item.gen, 0);
        assert_eq!(queue.sent_offset(3), 10_003);
    }

    #[test]
    fn messages_of_the_leader_get_logical_offsets() {
        let queue = remapped();
        let at = queue.locate(10_000).unwrap();
        let result = queue.present_pull(&at, pulled(PullStatus::Found, 2, 0, 2));
        assert_eq!(result.status, PullStatus::Found);
        assert_eq!(
            (
                result.next_begin_offset,
                result.min_offset,
                result.max_offset
            ),
            (10_002, 10_000, 10_002)
        );
        assert_eq!(result.offset_delta, Some(10_000));
    }

    #[test]
    fn an_older_stretch_read_to_its_end_moves_the_client_to_the_next() {
        let queue = remapped();
        let at = queue.locate(2).unwrap();
        // broker-a has 2 messages: offset 2 is its end.
        let result = queue.present_pull(&at, pulled(PullStatus::NoNewMessage, 2, 0, 2));
        assert_eq!(result.status, PullStatus::NoMatchedMessage);
        assert_eq!(
            (
                result.next_begin_offset,
                result.min_offset,
                result.max_offset
            ),
            (10_000, 10_000, 10_000)
        );
        assert_eq!(result.offset_delta, Some(10_000));
        // Messages of the older stretch keep its (zero) delta, and the max is the leader's.
        let found = queue.present_pull(&at, pulled(PullStatus::Found, 2, 0, 2));
        assert_eq!(
            (
                found.next_begin_offset,
                found.max_offset,
                found.offset_delta
            ),
            (2, 10_000, Some(0))
        );
    }

    #[test]
    fn below_the_earliest_data_the_offset_moves() {
        let queue = remapped();
        let at = queue.locate(0).unwrap();
        let result = queue.present_pull(&at, pulled(PullStatus::OffsetMoved, 5, 5, 9));
        assert_eq!(result.status, PullStatus::OffsetMoved);
        assert_eq!(result.next_begin_offset, 5);
    }

    #[test]
    fn a_middle_stretch_retries_below_its_data_and_moves_on_past_its_end() {
        // Remapped twice: broker-a, then broker-c from 10,000, then broker-b from 20,000.
        let queue = LogicalQueue {
            items: vec![
                item(0, 0, "broker-a", 0),
                item(1, 4, "broker-c", 10_000),
                item(2, 2, "broker-b", 20_000),
            ],
            ..remapped()
        };
        let at = queue.locate(10_001).unwrap();
        assert_eq!(
            (at.item.bname.as_str(), at.physical_offset),
            ("broker-c", 1)
        );
        // broker-c dropped its first entries: pull again from its first one (the earliest
        // stretch would say OFFSET_MOVED).
        let below = queue.present_pull(&at, pulled(PullStatus::OffsetMoved, 3, 3, 9));
        assert_eq!(
            (below.status, below.next_begin_offset),
            (PullStatus::NoMatchedMessage, 10_003)
        );
        let at_end = queue.locate(10_009).unwrap();
        let past = queue.present_pull(&at_end, pulled(PullStatus::NoNewMessage, 9, 0, 9));
        assert_eq!(
            (past.status, past.next_begin_offset, past.offset_delta),
            (PullStatus::NoMatchedMessage, 20_000, Some(20_000))
        );
    }

    #[test]
    fn a_queue_never_remapped_reads_as_its_physical_queue() {
        let queue = LogicalQueue {
            topic: "st".into(),
            global_id: 3,
            here: "broker-a".into(),
            items: vec![item(0, 1, "broker-a", 0)],
        };
        let at = queue.locate(7).unwrap();
        assert_eq!((at.item.queue_id, at.physical_offset), (1, 7));
        let caught_up = queue.present_pull(&at, pulled(PullStatus::NoNewMessage, 7, 0, 7));
        assert_eq!(caught_up.status, PullStatus::NoNewMessage);
        assert_eq!(caught_up.next_begin_offset, 7);
        // Past the end: Java answers PULL_NOT_FOUND, not OFFSET_MOVED, on a static topic.
        let at = queue.locate(50).unwrap();
        let past = queue.present_pull(&at, pulled(PullStatus::OffsetMoved, 7, 0, 7));
        assert_eq!(past.status, PullStatus::NoNewMessage);
    }
}
