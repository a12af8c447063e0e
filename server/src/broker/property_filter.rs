//! SQL92 subscriptions (`enablePropertyFilter`): CHECK_CLIENT_CONFIG, which the Java client sends
//! at start for every non-TAG subscription, and the broker-side evaluation of pulls.
//!
//! Expressions are compiled once ([`SelectorCache`]) and evaluated over each record's properties
//! (user properties and `TAGS`) after the ConsumeQueue has been read. What Java answers:
//! * CHECK_CLIENT_CONFIG: SUCCESS for TAG; SYSTEM_ERROR `The broker does not support consumer to
//!   filter message by SQL92` when `enablePropertyFilter` is off; SUBSCRIPTION_PARSE_FAILED with
//!   the parser's text for a bad expression.
//! * A pull over a heartbeat subscription whose expression does not compile:
//!   FILTER_DATA_NOT_EXIST. A pull carrying its own subscription (lite pull, pull consumers): a
//!   bad expression is SUBSCRIPTION_PARSE_FAILED `parse the consumer's subscription failed`
//!   (Java answers that for an empty one and, for a bad one, serves every message unfiltered;
//!   Skiff refuses instead). Then, as in Java, SYSTEM_ERROR when `enablePropertyFilter` is off.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use skiff_model::command::{CheckClientConfig, ErrorKind, Reply};
use skiff_model::consumer::EXPRESSION_TYPE_TAG;
use skiff_model::filter::{FilterError, Selector};
use skiff_model::message::Properties;
use skiff_model::record::Record;

use super::BrokerState;

/// `ExpressionType.isTagType`.
pub(super) fn is_tag_type(expression_type: &str) -> bool {
    expression_type.is_empty() || expression_type == EXPRESSION_TYPE_TAG
}

/// Whether Skiff can compile this expression type (`FilterFactory` knows SQL92 only).
fn is_sql92(expression_type: &str) -> bool {
    expression_type == skiff_model::consumer::EXPRESSION_TYPE_SQL92
}

/// Compiled expressions by their text (Java's `SelectorParser` caches 100).
#[derive(Default)]
pub(crate) struct SelectorCache {
    compiled: Mutex<HashMap<String, Result<Arc<Selector>, FilterError>>>,
}

/// More distinct expressions than this and the cache starts over.
const CACHE_CAPACITY: usize = 1024;

impl SelectorCache {
    pub(super) fn compile(&self, expression: &str) -> Result<Arc<Selector>, FilterError> {
        if let Some(done) = self.compiled.lock().get(expression) {
            return done.clone();
        }
        // Compile outside the lock; a duplicate compile of the same text is harmless.
        let result = Selector::parse(expression).map(Arc::new);
        let mut compiled = self.compiled.lock();
        if compiled.len() >= CACHE_CAPACITY {
            compiled.clear();
        }
        compiled.insert(expression.to_string(), result.clone());
        result
    }
}

/// The remark Java gives when `enablePropertyFilter` is off.
pub(super) fn not_supported(expression_type: &str) -> Reply {
    Reply::error(
        ErrorKind::SystemError,
        format!("The broker does not support consumer to filter message by {expression_type}"),
    )
}

/// CHECK_CLIENT_CONFIG (`ClientManageProcessor.checkClientConfig`).
pub(super) fn check_client_config(state: &BrokerState, check: &CheckClientConfig) -> Reply {
    let Some(subscription) = &check.subscription_data else {
        return Reply::Success;
    };
    if is_tag_type(&subscription.expression_type) {
        return Reply::Success;
    }
    if !state.config.enable_property_filter {
        return not_supported(&subscription.expression_type);
    }
    if !is_sql92(&subscription.expression_type) {
        return Reply::error(
            ErrorKind::SubscriptionParseFailed,
            format!(
                "unknown expression type {}; the broker filters by TAG or SQL92",
                subscription.expression_type
            ),
        );
    }
    match state.selectors.compile(&subscription.sub_string) {
        Ok(_) => Reply::Success,
        Err(error) => {
            tracing::warn!(client = ?check.client_id, group = ?check.group,
                           expression = %subscription.sub_string, %error,
                           "client filters by SQL92, but its expression does not compile");
            Reply::error(ErrorKind::SubscriptionParseFailed, error.message)
        }
    }
}

/// Keeps the records whose properties match (`ExpressionMessageFilter.isMatchedByCommitLog`);
/// a record that does not decode is kept, for the client to judge.
pub(super) fn retain_matching(selector: &Selector, messages: &mut Vec<Bytes>) {
    messages.retain(|record| match Record::decode(record, false) {
        // The names the expression asks for are looked up in the record's bytes: no map per
        // record. Only invalid UTF-8 takes the decoder's replacing path.
        Ok(record) => match std::str::from_utf8(record.properties) {
            Ok(text) => selector.matches_properties(|name| Properties::find(text, name)),
            Err(_) => {
                let properties = record.parsed_properties();
                selector.matches_properties(|name| properties.get(name))
            }
        },
        Err(_) => true,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_returns_what_the_parser_said() {
        let cache = SelectorCache::default();
        assert!(cache.compile("a > 1").is_ok());
        assert!(cache.compile("a > 1").is_ok());
        let error = cache.compile("a >").unwrap_err();
        assert_eq!(cache.compile("a >").unwrap_err(), error);
        for i in 0..(CACHE_CAPACITY + 10) {
            assert!(cache.compile(&format!("a = {i}")).is_ok());
        }
        assert!(cache.compiled.lock().len() <= CACHE_CAPACITY);
    }

    fn record(properties: &str) -> Bytes {
        let host: std::net::SocketAddr = "127.0.0.1:10911".parse().unwrap();
        let fields = skiff_model::record::RecordFields {
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: 0,
            born_timestamp: 1,
            born_host: host,
            store_timestamp: 2,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: b"body",
            topic: "T",
            properties,
        };
        let mut out = bytes::BytesMut::new();
        fields.encode(&mut out).unwrap();
        out.freeze()
    }

    #[test]
    fn records_are_kept_by_their_properties_and_tags() {
        let selector = Selector::parse("TAGS = 'A' AND price > 10").unwrap();
        let mut messages = vec![
            record("TAGS\u{1}A\u{2}price\u{1}12\u{2}"),
            record("TAGS\u{1}B\u{2}price\u{1}12\u{2}"),
            record("TAGS\u{1}A\u{2}price\u{1}x\u{2}"),
            record("TAGS\u{1}A\u{2}"),
            Bytes::from_static(b"not a record"),
        ];
        let kept = [messages[0].clone(), messages[4].clone()];
        retain_matching(&selector, &mut messages);
        assert_eq!(messages, kept);
    }

    #[test]
    fn tag_types_are_javas() {
        assert!(is_tag_type("") && is_tag_type("TAG"));
        assert!(!is_tag_type("SQL92") && !is_tag_type("tag"));
    }
}
