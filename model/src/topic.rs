//! Topic and group names: what is legal, and the names RocketMQ reserves.

/// Template topic brokers auto-create new topics from (`TBW102`).
pub const AUTO_CREATE_TOPIC_KEY: &str = "TBW102";
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
pub const BENCHMARK_TOPIC: &str = "BenchmarkTest";
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
/// `TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC` (a system topic name in Java 5.3.3).
pub const ROCKSDB_OFFSET_TOPIC: &str = "CHECKPOINT_TOPIC";
pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";

/// Longest ordinary topic name.
pub const TOPIC_MAX_LENGTH: usize = 127;
/// Longest retry or DLQ topic name (`%RETRY%` + group).
pub const RETRY_OR_DLQ_TOPIC_MAX_LENGTH: usize = 255;
/// Longest group name (it is embedded in retry and DLQ topic names).
pub const GROUP_MAX_LENGTH: usize = 120;

/// Topics clients may not send to directly (`TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`).
const NOT_ALLOWED_SEND: &[&str] = &[
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT,
];

/// Topics the broker owns (`TopicValidator.SYSTEM_TOPIC_SET`, plus the `rmq_sys_` prefix).
const SYSTEM_TOPICS: &[&str] = &[
    AUTO_CREATE_TOPIC_KEY,
    SCHEDULE_TOPIC,
    BENCHMARK_TOPIC,
    TRANS_HALF_TOPIC,
    TRACE_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT,
    ROCKSDB_OFFSET_TOPIC,
];

/// Only `^[%|a-zA-Z0-9_-]+$` is allowed in topic and group names.
fn has_illegal_char(name: &str) -> bool {
    !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
}

/// Checks a topic name as `TopicValidator.validateTopic` does; the error is Java's remark.
pub fn validate_topic(topic: &str) -> Result<(), String> {
    if topic.trim().is_empty() {
        return Err("The specified topic is blank.".to_string());
    }
    if has_illegal_char(topic) {
        return Err(format!(
            "The specified topic: {topic}, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    let len = topic.chars().count();
    if is_retry_topic(topic) || is_dlq_topic(topic) {
        if len > RETRY_OR_DLQ_TOPIC_MAX_LENGTH {
            return Err(format!(
                "The specified topic is DLQ or Retry topic: {topic}, and it's longer than topic max length: {RETRY_OR_DLQ_TOPIC_MAX_LENGTH}"
            ));
        }
    } else if len > TOPIC_MAX_LENGTH {
        return Err(format!(
            "The specified topic: {topic}, is longer than topic max length: {TOPIC_MAX_LENGTH}"
        ));
    }
    Ok(())
}

/// Checks a group name as `TopicValidator.validateGroup` does.
pub fn validate_group(group: &str) -> Result<(), String> {
    if group.trim().is_empty() {
        return Err("The specified group is blank.".to_string());
    }
    if has_illegal_char(group) {
        return Err(format!(
            "The specified group: {group}, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    if group.chars().count() > GROUP_MAX_LENGTH {
        return Err(format!(
            "The specified group: {group}, is longer than group max length: {GROUP_MAX_LENGTH}"
        ));
    }
    Ok(())
}

/// Whether clients are refused when sending to `topic` directly.
pub fn is_not_allowed_send_topic(topic: &str) -> bool {
    NOT_ALLOWED_SEND.contains(&topic)
}

/// The fixed system topics (`TopicValidator.SYSTEM_TOPIC_SET` before a broker adds its own).
pub fn system_topic_set() -> &'static [&'static str] {
    SYSTEM_TOPICS
}

/// Whether `topic` belongs to the broker rather than to users.
pub fn is_system_topic(topic: &str) -> bool {
    SYSTEM_TOPICS.contains(&topic) || topic.starts_with(SYSTEM_TOPIC_PREFIX)
}

pub fn is_retry_topic(topic: &str) -> bool {
    topic.starts_with(RETRY_GROUP_TOPIC_PREFIX)
}

pub fn is_dlq_topic(topic: &str) -> bool {
    topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
}

/// `%RETRY%<group>`: where a clustering group's failed messages come back.
pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}")
}

/// `%DLQ%<group>`: where messages go after too many retries.
pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_GROUP_TOPIC_PREFIX}{group}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_rules_match_java() {
        assert!(validate_topic("TopicTest").is_ok());
        assert!(validate_topic("%RETRY%group_1-a|b").is_ok());
        assert!(validate_topic("").is_err());
        assert!(validate_topic("   ").is_err());
        assert!(validate_topic("bad topic").is_err());
        assert!(validate_topic("bad/topic").is_err());
        assert!(validate_topic("中文").is_err());
        assert!(validate_topic(&"t".repeat(127)).is_ok());
        assert!(validate_topic(&"t".repeat(128)).is_err());
        assert!(validate_topic(&format!("%RETRY%{}", "g".repeat(200))).is_ok());
        assert!(validate_topic(&format!("%DLQ%{}", "g".repeat(251))).is_err());
    }

    #[test]
    fn reserved_names() {
        assert!(is_not_allowed_send_topic(SCHEDULE_TOPIC));
        assert!(!is_not_allowed_send_topic(AUTO_CREATE_TOPIC_KEY));
        assert!(is_system_topic("rmq_sys_wheel_timer"));
        assert!(is_system_topic(AUTO_CREATE_TOPIC_KEY));
        assert!(!is_system_topic("TopicTest"));
        assert_eq!(retry_topic("g"), "%RETRY%g");
        assert_eq!(dlq_topic("g"), "%DLQ%g");
    }

    #[test]
    fn group_rules_match_java() {
        assert!(validate_group("please_rename_unique_group_name").is_ok());
        assert!(validate_group(&"g".repeat(121)).is_err());
        assert!(validate_group("a b").is_err());
    }
}
