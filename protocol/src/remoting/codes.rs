//! Request and response codes (`RequestCode`, `ResponseCode` in Apache RocketMQ) that Skiff speaks.

use skiff_model::command::ErrorKind;

/// Request codes.
pub mod request {
    pub const SEND_MESSAGE: i32 = 10;
    pub const PULL_MESSAGE: i32 = 11;
    pub const QUERY_MESSAGE: i32 = 12;
    pub const QUERY_CONSUMER_OFFSET: i32 = 14;
    pub const UPDATE_CONSUMER_OFFSET: i32 = 15;
    pub const UPDATE_AND_CREATE_TOPIC: i32 = 17;
    pub const GET_ALL_TOPIC_CONFIG: i32 = 21;
    pub const GET_BROKER_RUNTIME_INFO: i32 = 28;
    pub const SEARCH_OFFSET_BY_TIMESTAMP: i32 = 29;
    pub const GET_MAX_OFFSET: i32 = 30;
    pub const GET_MIN_OFFSET: i32 = 31;
    pub const GET_EARLIEST_MSG_STORETIME: i32 = 32;
    pub const VIEW_MESSAGE_BY_ID: i32 = 33;
    pub const HEART_BEAT: i32 = 34;
    pub const UNREGISTER_CLIENT: i32 = 35;
    pub const CONSUMER_SEND_MSG_BACK: i32 = 36;
    pub const END_TRANSACTION: i32 = 37;
    pub const GET_CONSUMER_LIST_BY_GROUP: i32 = 38;
    pub const CHECK_TRANSACTION_STATE: i32 = 39;
    pub const NOTIFY_CONSUMER_IDS_CHANGED: i32 = 40;
    pub const RESET_CONSUMER_CLIENT_OFFSET: i32 = 220;
    pub const LOCK_BATCH_MQ: i32 = 41;
    pub const UNLOCK_BATCH_MQ: i32 = 42;
    pub const CHECK_CLIENT_CONFIG: i32 = 46;
    pub const REGISTER_BROKER: i32 = 103;
    pub const UNREGISTER_BROKER: i32 = 104;
    pub const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
    pub const GET_BROKER_CLUSTER_INFO: i32 = 106;
    pub const UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: i32 = 200;
    pub const GET_TOPIC_STATS_INFO: i32 = 202;
    pub const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: i32 = 206;
    pub const GET_CONSUME_STATS: i32 = 208;
    pub const DELETE_TOPIC_IN_BROKER: i32 = 215;
    pub const DELETE_TOPIC_IN_NAMESRV: i32 = 216;
    pub const SEND_MESSAGE_V2: i32 = 310;
    pub const SEND_BATCH_MESSAGE: i32 = 320;
    pub const GET_TOPIC_CONFIG: i32 = 351;
    pub const LITE_PULL_MESSAGE: i32 = 361;
    pub const QUERY_ASSIGNMENT: i32 = 400;
    pub const SET_MESSAGE_REQUEST_MODE: i32 = 401;
    pub const POP_MESSAGE: i32 = 200050;
    pub const ACK_MESSAGE: i32 = 200051;
    pub const PEEK_MESSAGE: i32 = 200052;
    pub const CHANGE_MESSAGE_INVISIBLETIME: i32 = 200053;
    pub const NOTIFICATION: i32 = 200054;
    pub const BATCH_ACK_MESSAGE: i32 = 200151;
    pub const PUT_KV_CONFIG: i32 = 100;
    pub const GET_KV_CONFIG: i32 = 101;
    pub const DELETE_KV_CONFIG: i32 = 102;
    pub const WIPE_WRITE_PERM_OF_BROKER: i32 = 205;
    pub const GET_KVLIST_BY_NAMESPACE: i32 = 219;
    pub const QUERY_TOPIC_CONSUME_BY_WHO: i32 = 300;
    pub const ADD_WRITE_PERM_OF_BROKER: i32 = 327;
    pub const GET_BROKER_HA_STATUS: i32 = 907;
    pub const GET_BROKER_CONFIG: i32 = 26;
    pub const GET_NAMESRV_CONFIG: i32 = 319;
    pub const GET_ALL_SUBSCRIPTIONGROUP_CONFIG: i32 = 201;
    pub const DELETE_SUBSCRIPTIONGROUP: i32 = 207;
    pub const GET_CONSUMER_CONNECTION_LIST: i32 = 203;
    pub const GET_PRODUCER_CONNECTION_LIST: i32 = 204;
    pub const GET_SYSTEM_TOPIC_LIST_FROM_NS: i32 = 304;
    pub const GET_SYSTEM_TOPIC_LIST_FROM_BROKER: i32 = 305;
    pub const GET_CONSUMER_RUNNING_INFO: i32 = 307;
    pub const VIEW_BROKER_STATS_DATA: i32 = 315;
    pub const INVOKE_BROKER_TO_RESET_OFFSET: i32 = 222;
    pub const GET_BROKER_CONSUME_STATS: i32 = 317;
    pub const GET_ALL_PRODUCER_INFO: i32 = 328;
    pub const CONSUME_MESSAGE_DIRECTLY: i32 = 309;
    pub const QUERY_CONSUME_QUEUE: i32 = 321;
    pub const GET_CONSUMER_STATUS_FROM_CLIENT: i32 = 221;
    pub const INVOKE_BROKER_TO_GET_CONSUMER_STATUS: i32 = 223;
    pub const CLONE_GROUP_OFFSET: i32 = 314;
    pub const UPDATE_BROKER_CONFIG: i32 = 25;
    pub const UPDATE_NAMESRV_CONFIG: i32 = 318;
    pub const CLEAN_UNUSED_TOPIC: i32 = 316;
    pub const CLEAN_EXPIRED_CONSUMEQUEUE: i32 = 306;
    pub const UPDATE_AND_CREATE_TOPIC_LIST: i32 = 18;
    pub const UPDATE_AND_CREATE_STATIC_TOPIC: i32 = 513;
    pub const UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: i32 = 225;
    pub const DELETE_EXPIRED_COMMITLOG: i32 = 329;
    pub const EXPORT_ROCKSDB_CONFIG_TO_JSON: i32 = 355;
    pub const CHECK_ROCKSDB_CQ_WRITE_PROGRESS: i32 = 354;
    pub const RESET_MASTER_FLUSH_OFFSET: i32 = 908;
    pub const UPDATE_COLD_DATA_FLOW_CTR_CONFIG: i32 = 2001;
    pub const REMOVE_COLD_DATA_FLOW_CTR_CONFIG: i32 = 2002;
    pub const GET_COLD_DATA_FLOW_CTR_INFO: i32 = 2003;
    pub const SET_COMMITLOG_READ_MODE: i32 = 2004;
    pub const POP_ROLLBACK: i32 = 200056;
    pub const AUTH_CREATE_USER: i32 = 3001;
    pub const AUTH_UPDATE_USER: i32 = 3002;
    pub const AUTH_DELETE_USER: i32 = 3003;
    pub const AUTH_GET_USER: i32 = 3004;
    pub const AUTH_LIST_USER: i32 = 3005;
    pub const AUTH_CREATE_ACL: i32 = 3006;
    pub const AUTH_UPDATE_ACL: i32 = 3007;
    pub const AUTH_DELETE_ACL: i32 = 3008;
    pub const AUTH_GET_ACL: i32 = 3009;
    pub const AUTH_LIST_ACL: i32 = 3010;
}

/// Response codes.
pub mod response {
    pub const SUCCESS: i32 = 0;
    pub const SYSTEM_ERROR: i32 = 1;
    pub const SYSTEM_BUSY: i32 = 2;
    pub const REQUEST_CODE_NOT_SUPPORTED: i32 = 3;
    pub const FLUSH_DISK_TIMEOUT: i32 = 10;
    pub const SLAVE_NOT_AVAILABLE: i32 = 11;
    pub const FLUSH_SLAVE_TIMEOUT: i32 = 12;
    pub const MESSAGE_ILLEGAL: i32 = 13;
    pub const SERVICE_NOT_AVAILABLE: i32 = 14;
    pub const VERSION_NOT_SUPPORTED: i32 = 15;
    pub const NO_PERMISSION: i32 = 16;
    pub const TOPIC_NOT_EXIST: i32 = 17;
    pub const TOPIC_EXIST_ALREADY: i32 = 18;
    pub const PULL_NOT_FOUND: i32 = 19;
    pub const PULL_RETRY_IMMEDIATELY: i32 = 20;
    pub const PULL_OFFSET_MOVED: i32 = 21;
    pub const QUERY_NOT_FOUND: i32 = 22;
    pub const SUBSCRIPTION_PARSE_FAILED: i32 = 23;
    pub const SUBSCRIPTION_NOT_EXIST: i32 = 24;
    pub const SUBSCRIPTION_NOT_LATEST: i32 = 25;
    pub const SUBSCRIPTION_GROUP_NOT_EXIST: i32 = 26;
    pub const FILTER_DATA_NOT_EXIST: i32 = 27;
    pub const INVALID_PARAMETER: i32 = 29;
    pub const CONSUMER_NOT_ONLINE: i32 = 206;
    pub const CONSUME_MSG_TIMEOUT: i32 = 207;
    pub const FLOW_CONTROL: i32 = 215;
    pub const ILLEGAL_OPERATION: i32 = 604;
    pub const NOT_LEADER_FOR_QUEUE: i32 = 501;
    pub const NO_MESSAGE: i32 = 208;
    pub const POLLING_FULL: i32 = 209;
    pub const POLLING_TIMEOUT: i32 = 210;
}

const ERRORS: [(ErrorKind, i32); 23] = [
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
    fn every_error_kind_has_its_own_code() {
        for (kind, code) in ERRORS {
            assert_eq!(error_code(kind), code);
            assert_eq!(error_kind(code), kind);
        }
        assert_eq!(error_kind(4242), ErrorKind::SystemError);
    }
}
