//! Request and response codes (`RequestCode`, `ResponseCode` in Apache RocketMQ) that Skiff speaks.

use skiff_model::command::ErrorKind;

/// Declares a table of codes once: a constant for each, `ALL` with Java's names, and `name`.
macro_rules! code_table {
    ($(#[$doc:meta])* $module:ident, $java:literal, $($name:ident = $code:literal,)*) => {
        $(#[$doc])*
        pub mod $module {
            $(pub const $name: i32 = $code;)*

            #[doc = concat!("Every code Skiff speaks, with its name in Java's `", $java, "`.")]
            pub const ALL: &[(i32, &str)] = &[$(($code, stringify!($name)),)*];

            #[doc = concat!("The name of `code` in Java's `", $java, "`, if Skiff speaks it.")]
            pub fn name(code: i32) -> Option<&'static str> {
                ALL.iter().find(|(c, _)| *c == code).map(|(_, name)| *name)
            }
        }
    };
}

code_table! {
    /// Request codes.
    request, "RequestCode",
    SEND_MESSAGE = 10,
    PULL_MESSAGE = 11,
    QUERY_MESSAGE = 12,
    QUERY_CONSUMER_OFFSET = 14,
    UPDATE_CONSUMER_OFFSET = 15,
    UPDATE_AND_CREATE_TOPIC = 17,
    GET_ALL_TOPIC_CONFIG = 21,
    GET_BROKER_RUNTIME_INFO = 28,
    SEARCH_OFFSET_BY_TIMESTAMP = 29,
    GET_MAX_OFFSET = 30,
    GET_MIN_OFFSET = 31,
    GET_EARLIEST_MSG_STORETIME = 32,
    VIEW_MESSAGE_BY_ID = 33,
    HEART_BEAT = 34,
    UNREGISTER_CLIENT = 35,
    CONSUMER_SEND_MSG_BACK = 36,
    END_TRANSACTION = 37,
    GET_CONSUMER_LIST_BY_GROUP = 38,
    CHECK_TRANSACTION_STATE = 39,
    NOTIFY_CONSUMER_IDS_CHANGED = 40,
    RESET_CONSUMER_CLIENT_OFFSET = 220,
    LOCK_BATCH_MQ = 41,
    UNLOCK_BATCH_MQ = 42,
    CHECK_CLIENT_CONFIG = 46,
    GET_ALL_CONSUMER_OFFSET = 43,
    GET_ALL_DELAY_OFFSET = 45,
    GET_TIMER_CHECK_POINT = 60,
    GET_TIMER_METRICS = 61,
    REGISTER_BROKER = 103,
    UNREGISTER_BROKER = 104,
    GET_ROUTEINFO_BY_TOPIC = 105,
    GET_BROKER_CLUSTER_INFO = 106,
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200,
    GET_TOPIC_STATS_INFO = 202,
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206,
    GET_CONSUME_STATS = 208,
    DELETE_TOPIC_IN_BROKER = 215,
    DELETE_TOPIC_IN_NAMESRV = 216,
    SEND_MESSAGE_V2 = 310,
    SEND_BATCH_MESSAGE = 320,
    GET_TOPIC_CONFIG = 351,
    LITE_PULL_MESSAGE = 361,
    QUERY_ASSIGNMENT = 400,
    SET_MESSAGE_REQUEST_MODE = 401,
    GET_ALL_MESSAGE_REQUEST_MODE = 402,
    POP_MESSAGE = 200050,
    ACK_MESSAGE = 200051,
    PEEK_MESSAGE = 200052,
    CHANGE_MESSAGE_INVISIBLETIME = 200053,
    NOTIFICATION = 200054,
    BATCH_ACK_MESSAGE = 200151,
    PUT_KV_CONFIG = 100,
    GET_KV_CONFIG = 101,
    DELETE_KV_CONFIG = 102,
    WIPE_WRITE_PERM_OF_BROKER = 205,
    GET_KVLIST_BY_NAMESPACE = 219,
    QUERY_TOPIC_CONSUME_BY_WHO = 300,
    ADD_WRITE_PERM_OF_BROKER = 327,
    GET_BROKER_HA_STATUS = 907,
    GET_BROKER_CONFIG = 26,
    GET_NAMESRV_CONFIG = 319,
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201,
    DELETE_SUBSCRIPTIONGROUP = 207,
    GET_CONSUMER_CONNECTION_LIST = 203,
    GET_PRODUCER_CONNECTION_LIST = 204,
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304,
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305,
    GET_CONSUMER_RUNNING_INFO = 307,
    VIEW_BROKER_STATS_DATA = 315,
    INVOKE_BROKER_TO_RESET_OFFSET = 222,
    GET_BROKER_CONSUME_STATS = 317,
    GET_ALL_PRODUCER_INFO = 328,
    CONSUME_MESSAGE_DIRECTLY = 309,
    QUERY_CONSUME_QUEUE = 321,
    GET_CONSUMER_STATUS_FROM_CLIENT = 221,
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223,
    CLONE_GROUP_OFFSET = 314,
    UPDATE_BROKER_CONFIG = 25,
    UPDATE_NAMESRV_CONFIG = 318,
    CLEAN_UNUSED_TOPIC = 316,
    CLEAN_EXPIRED_CONSUMEQUEUE = 306,
    UPDATE_AND_CREATE_TOPIC_LIST = 18,
    UPDATE_AND_CREATE_STATIC_TOPIC = 513,
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST = 225,
    DELETE_EXPIRED_COMMITLOG = 329,
    EXPORT_ROCKSDB_CONFIG_TO_JSON = 355,
    CHECK_ROCKSDB_CQ_WRITE_PROGRESS = 354,
    RESET_MASTER_FLUSH_OFFSET = 908,
    UPDATE_COLD_DATA_FLOW_CTR_CONFIG = 2001,
    REMOVE_COLD_DATA_FLOW_CTR_CONFIG = 2002,
    GET_COLD_DATA_FLOW_CTR_INFO = 2003,
    SET_COMMITLOG_READ_MODE = 2004,
    POP_ROLLBACK = 200056,
    AUTH_CREATE_USER = 3001,
    AUTH_UPDATE_USER = 3002,
    AUTH_DELETE_USER = 3003,
    AUTH_GET_USER = 3004,
    AUTH_LIST_USER = 3005,
    AUTH_CREATE_ACL = 3006,
    AUTH_UPDATE_ACL = 3007,
    AUTH_DELETE_ACL = 3008,
    AUTH_GET_ACL = 3009,
    AUTH_LIST_ACL = 3010,
}

code_table! {
    /// Response codes.
    response, "ResponseCode",
    SUCCESS = 0,
    SYSTEM_ERROR = 1,
    SYSTEM_BUSY = 2,
    REQUEST_CODE_NOT_SUPPORTED = 3,
    FLUSH_DISK_TIMEOUT = 10,
    SLAVE_NOT_AVAILABLE = 11,
    FLUSH_SLAVE_TIMEOUT = 12,
    MESSAGE_ILLEGAL = 13,
    SERVICE_NOT_AVAILABLE = 14,
    VERSION_NOT_SUPPORTED = 15,
    NO_PERMISSION = 16,
    TOPIC_NOT_EXIST = 17,
    TOPIC_EXIST_ALREADY = 18,
    PULL_NOT_FOUND = 19,
    PULL_RETRY_IMMEDIATELY = 20,
    PULL_OFFSET_MOVED = 21,
    QUERY_NOT_FOUND = 22,
    SUBSCRIPTION_PARSE_FAILED = 23,
    SUBSCRIPTION_NOT_EXIST = 24,
    SUBSCRIPTION_NOT_LATEST = 25,
    SUBSCRIPTION_GROUP_NOT_EXIST = 26,
    FILTER_DATA_NOT_EXIST = 27,
    INVALID_PARAMETER = 29,
    CONSUMER_NOT_ONLINE = 206,
    CONSUME_MSG_TIMEOUT = 207,
    FLOW_CONTROL = 215,
    ILLEGAL_OPERATION = 604,
    NOT_LEADER_FOR_QUEUE = 501,
    NO_MESSAGE = 208,
    POLLING_FULL = 209,
    POLLING_TIMEOUT = 210,
}

const ERRORS: [(ErrorKind, i32); 24] = [
    (ErrorKind::SystemError, response::SYSTEM_ERROR),
    (ErrorKind::SystemBusy, response::SYSTEM_BUSY),
    (
        ErrorKind::RequestNotSupported,
        response::REQUEST_CODE_NOT_SUPPORTED,
    ),
    (ErrorKind::TopicNotExist, response::TOPIC_NOT_EXIST),
    (ErrorKind::TopicExistAlready, response::TOPIC_EXIST_ALREADY),
    (ErrorKind::MessageIllegal, response::MESSAGE_ILLEGAL),
    (
        ErrorKind::ServiceNotAvailable,
        response::SERVICE_NOT_AVAILABLE,
    ),
    (ErrorKind::NoPermission, response::NO_PERMISSION),
    (ErrorKind::QueryNotFound, response::QUERY_NOT_FOUND),
    (
        ErrorKind::SubscriptionParseFailed,
        response::SUBSCRIPTION_PARSE_FAILED,
    ),
    (
        ErrorKind::SubscriptionNotExist,
        response::SUBSCRIPTION_NOT_EXIST,
    ),
    (
        ErrorKind::SubscriptionNotLatest,
        response::SUBSCRIPTION_NOT_LATEST,
    ),
    (
        ErrorKind::SubscriptionGroupNotExist,
        response::SUBSCRIPTION_GROUP_NOT_EXIST,
    ),
    (
        ErrorKind::FilterDataNotExist,
        response::FILTER_DATA_NOT_EXIST,
    ),
    (ErrorKind::InvalidParameter, response::INVALID_PARAMETER),
    (ErrorKind::ConsumerNotOnline, response::CONSUMER_NOT_ONLINE),
    (ErrorKind::FlowControl, response::FLOW_CONTROL),
    (
        ErrorKind::VersionNotSupported,
        response::VERSION_NOT_SUPPORTED,
    ),
    (ErrorKind::IllegalOperation, response::ILLEGAL_OPERATION),
    (ErrorKind::NotLeaderForQueue, response::NOT_LEADER_FOR_QUEUE),
    (ErrorKind::NoMessage, response::NO_MESSAGE),
    (ErrorKind::PollingTimeout, response::POLLING_TIMEOUT),
    (
        ErrorKind::ConsumeMessageTimeout,
        response::CONSUME_MSG_TIMEOUT,
    ),
    (ErrorKind::SlaveNotAvailable, response::SLAVE_NOT_AVAILABLE),
];

/// The response code Java uses for `kind`.
pub fn error_code(kind: ErrorKind) -> i32 {
    ERRORS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(response::SYSTEM_ERROR, |(_, code)| *code)
}

/// The error kind of a failure response code; codes Skiff does not model read as system errors.
pub fn error_kind(code: i32) -> ErrorKind {
    ERRORS
        .iter()
        .find(|(_, c)| *c == code)
        .map_or(ErrorKind::SystemError, |(kind, _)| *kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_codes_are_declared_once_each_with_its_java_name() {
        let mut codes: Vec<i32> = request::ALL.iter().map(|(code, _)| *code).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(
            codes.len(),
            request::ALL.len(),
            "a request code declared twice"
        );
        assert_eq!(
            request::name(request::SEND_MESSAGE_V2),
            Some("SEND_MESSAGE_V2")
        );
        assert_eq!(request::name(200_151), Some("BATCH_ACK_MESSAGE"));
        assert_eq!(request::name(4242), None);
    }

    #[test]
    fn every_error_kind_has_its_own_code() {
        for (kind, code) in ERRORS {
            assert_eq!(error_code(kind), code);
            assert_eq!(error_kind(code), kind);
        }
        assert_eq!(error_kind(4242), ErrorKind::SystemError);
    }
}
