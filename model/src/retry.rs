//! Where a message a consumer failed goes next: back through `%RETRY%<group>` after a delay that
//! grows with each attempt, or to `%DLQ%<group>` once it was retried too often
//! (`AbstractSendMessageProcessor.consumerSendMsgBack` and `SendMessageProcessor.handleRetryAndDLQ`).

/// Queues of a group's dead-letter topic (`DLQ_NUMS_PER_GROUP`).
pub const DLQ_NUMS_PER_GROUP: i32 = 1;

/// How often a message is retried when neither the client nor the group says
/// (`SubscriptionGroupConfig.retryMaxTimes`).
pub const DEFAULT_MAX_RECONSUME_TIMES: i32 = 16;

/// The first retry waits at this level, the next one a level higher, and so on (10 s, 30 s, 1 m …
/// with the default levels).
pub const FIRST_RETRY_LEVEL: i32 = 3;

/// The destination of a message sent back by a consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendBack {
    /// To the group's retry topic, delayed by this level (not yet clamped to the highest level:
    /// the schedule does that as for any delayed send).
    Retry { delay_level: i32 },
    /// To the group's dead-letter topic, at once.
    DeadLetter,
}

/// CONSUMER_SEND_MSG_BACK: `reconsume_times` is how often the stored message was consumed again
/// already, `delay_level` what the client asked (0: the broker's ladder, negative: straight to the
/// dead letters).
pub fn send_back(reconsume_times: i32, max_reconsume_times: i32, delay_level: i32) -> SendBack {
    if reconsume_times >= max_reconsume_times || delay_level < 0 {
        SendBack::DeadLetter
    } else if delay_level == 0 {
        SendBack::Retry {
            delay_level: FIRST_RETRY_LEVEL.saturating_add(reconsume_times),
        }
    } else {
        SendBack::Retry { delay_level }
    }
}

/// A plain send to `%RETRY%<group>` (the orderly consumer's and the client's fallback path): the
/// client already counted this attempt in `reconsume_times`, so the limit is exceeded only above
/// the maximum.
pub fn retry_send_goes_to_dead_letters(reconsume_times: i32, max_reconsume_times: i32) -> bool {
    reconsume_times > max_reconsume_times
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_by_reconsume_count() {
        assert_eq!(send_back(0, 16, 0), SendBack::Retry { delay_level: 3 });
        assert_eq!(send_back(1, 16, 0), SendBack::Retry { delay_level: 4 });
        assert_eq!(send_back(15, 16, 0), SendBack::Retry { delay_level: 18 });
        // The client's own level wins over the ladder.
        assert_eq!(send_back(5, 16, 2), SendBack::Retry { delay_level: 2 });
        // An absurd level is passed on; the schedule clamps it to the highest.
        assert_eq!(
            send_back(0, 16, i32::MAX),
            SendBack::Retry {
                delay_level: i32::MAX
            }
        );
    }

    #[test]
    fn dead_letters_after_the_limit_or_on_request() {
        assert_eq!(send_back(16, 16, 0), SendBack::DeadLetter);
        assert_eq!(send_back(17, 16, 3), SendBack::DeadLetter);
        assert_eq!(send_back(0, 16, -1), SendBack::DeadLetter);
        assert_eq!(send_back(2, 2, 0), SendBack::DeadLetter);
        assert_eq!(send_back(1, 2, 0), SendBack::Retry { delay_level: 4 });
        // A limit of 0 sends the first failure to the dead letters; so does a negative one.
        assert_eq!(send_back(0, 0, 0), SendBack::DeadLetter);
        assert_eq!(send_back(0, -1, 0), SendBack::DeadLetter);
        assert_eq!(
            send_back(i32::MAX - 1, i32::MAX, 0),
            SendBack::Retry {
                delay_level: i32::MAX
            }
        );
    }

    #[test]
    fn plain_sends_to_the_retry_topic() {
        assert!(!retry_send_goes_to_dead_letters(16, 16));
        assert!(retry_send_goes_to_dead_letters(17, 16));
        assert!(retry_send_goes_to_dead_letters(3, 2));
    }
}
