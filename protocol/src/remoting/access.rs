//! A request frame → [`AccessRequest`]: what ACL 1.0 (`PlainAccessResource.parse` of Apache
//! RocketMQ's `rocketmq-acl`, 4.9 to 5.2) reads from it.
//!
//! The signed content is what `AclClientRPCHook` signs: the values of every header field sorted
//! by name, except `Signature` (and `_UNIQUE_KEY_QUERY` from clients older than 4.9.4, which
//! added it after signing), then the body.

use bytes::Bytes;
use skiff_model::acl::{perm, AccessRequest, RETRY_GROUP_TOPIC_PREFIX};
use skiff_model::consumer::HeartbeatData;

use super::codes::request as code;
use super::command::RemotingCommand;
use crate::fastjson;

/// Header field names of `SessionCredentials`.
pub const ACCESS_KEY: &str = "AccessKey";
pub const SIGNATURE: &str = "Signature";
pub const SECURITY_TOKEN: &str = "SecurityToken";

const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";
/// `MQVersion.Version.V4_9_3`: up to this client version `_UNIQUE_KEY_QUERY` is not signed.
const V4_9_3: i32 = 400;

/// Broker codes only an admin account may call (Java's `Permission.ADMIN_CODE`).
/// Java 5 added list forms of the two creations and static topics (there is no ACL 1.0 there);
/// they are admin codes here too, or they would be a way around the single ones.
const BROKER_ADMIN_CODES: [i32; 8] = [
    code::UPDATE_AND_CREATE_TOPIC,
    code::UPDATE_AND_CREATE_TOPIC_LIST,
    code::UPDATE_AND_CREATE_STATIC_TOPIC,
    25, // UPDATE_BROKER_CONFIG
    code::DELETE_TOPIC_IN_BROKER,
    code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
    207, // DELETE_SUBSCRIPTIONGROUP
];

/// Name-server codes that change routes or configuration. Java's name server checks no ACL at
/// all; Skiff's, with ACL on, lets only admin accounts (or whitelisted addresses) make them, so
/// that nobody can register a fake broker or wipe a broker's write permission.
const NAMESRV_ADMIN_CODES: [i32; 9] = [
    100, // PUT_KV_CONFIG
    102, // DELETE_KV_CONFIG
    code::REGISTER_BROKER,
    code::UNREGISTER_BROKER,
    205, // WIPE_WRITE_PERM_OF_BROKER
    code::DELETE_TOPIC_IN_NAMESRV,
    217, // REGISTER_TOPIC_IN_NAMESRV
    318, // UPDATE_NAMESRV_CONFIG
    327, // ADD_WRITE_PERM_OF_BROKER
];

/// Whether only an admin account may make a request with this code.
pub fn is_admin_code(code: i32) -> bool {
    BROKER_ADMIN_CODES.contains(&code) || NAMESRV_ADMIN_CODES.contains(&code)
}

/// What the access check needs from `cmd` (a request frame).
pub fn access_request(cmd: &RemotingCommand) -> AccessRequest {
    let mut access = AccessRequest {
        code: cmd.code,
        admin: is_admin_code(cmd.code),
        ..AccessRequest::default()
    };
    let ext = &cmd.ext_fields;
    if ext.is_empty() {
        // Java: no extFields, no credentials; only a whitelisted address passes.
        return access;
    }
    access.access_key = ext.get(ACCESS_KEY).cloned();
    access.signature = ext.get(SIGNATURE).cloned();
    access.security_token = ext.get(SECURITY_TOKEN).cloned();
    let field = |name: &str| ext.get(name).map(String::as_str);
    let is_retry = |t: Option<&str>| t.is_some_and(|t| t.starts_with(RETRY_GROUP_TOPIC_PREFIX));
    match cmd.code {
        code::SEND_MESSAGE => match field("topic") {
            t if is_retry(t) => need_group(&mut access, field("group"), perm::SUB),
            t => need(&mut access, t, perm::PUB),
        },
        code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE => match field("b") {
            t if is_retry(t) => need_group(&mut access, field("a"), perm::SUB),
            t => need(&mut access, t, perm::PUB),
        },
        code::CONSUMER_SEND_MSG_BACK => need_group(&mut access, field("group"), perm::SUB),
        code::PULL_MESSAGE => {
            need(&mut access, field("topic"), perm::SUB);
            need_group(&mut access, field("consumerGroup"), perm::SUB);
        }
        code::QUERY_MESSAGE => need(&mut access, field("topic"), perm::SUB),
        code::HEART_BEAT => match fastjson::from_slice::<HeartbeatData>(&cmd.body.to_bytes()) {
            Ok(heartbeat) => {
                for consumer in &heartbeat.consumer_data_set {
                    access.need_group(&consumer.group_name, perm::SUB);
                    for sub in &consumer.subscription_data_set {
                        access.need(&sub.topic, perm::SUB);
                    }
                }
            }
            Err(e) => access.unreadable = Some(format!("malformed heartbeat body: {e}")),
        },
        code::UNREGISTER_CLIENT | code::GET_CONSUMER_LIST_BY_GROUP => {
            need_group(&mut access, field("consumerGroup"), perm::SUB)
        }
        code::UPDATE_CONSUMER_OFFSET => {
            need_group(&mut access, field("consumerGroup"), perm::SUB);
            need(&mut access, field("topic"), perm::SUB);
        }
        _ => {}
    }
    let mut names: Vec<&String> = ext
        .keys()
        .filter(|k| *k != SIGNATURE && !(*k == UNIQUE_KEY_QUERY && cmd.version <= V4_9_3))
        .collect();
    // Java sorts with a TreeMap of Strings (UTF-16 order); byte order agrees for the ASCII names
    // headers use.
    names.sort_unstable();
    let mut content = Vec::new();
    for name in names {
        content.extend_from_slice(ext[name].as_bytes());
    }
    access.signed.push(Bytes::from(content));
    access.signed.extend(cmd.body.chunks().iter().cloned());
    access
}

fn need(access: &mut AccessRequest, resource: Option<&str>, needed: u8) {
    if let Some(r) = resource {
        access.need(r, needed);
    }
}

fn need_group(access: &mut AccessRequest, group: Option<&str>, needed: u8) {
    if let Some(g) = group {
        access.need_group(g, needed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remoting::Body;

    fn cmd(code: i32, fields: &[(&str, &str)], body: &[u8]) -> RemotingCommand {
        let mut c = RemotingCommand::request(code, 1);
        for (k, v) in fields {
            c.set_ext(*k, v);
        }
        c.body = Body::from(body.to_vec());
        c
    }

    fn signed(a: &AccessRequest) -> Vec<u8> {
        a.signed.concat()
    }

    #[test]
    fn content_is_sorted_values_without_the_signature_then_the_body() {
        let c = cmd(
            code::SEND_MESSAGE_V2,
            &[
                ("b", "TopicA"),
                ("a", "pg"),
                (ACCESS_KEY, "rocketmq2"),
                (SIGNATURE, "sig"),
            ],
            b"hello",
        );
        let a = access_request(&c);
        // "AccessKey" < "a" < "b" in byte order, as in Java's TreeMap.
        assert_eq!(signed(&a), b"rocketmq2pgTopicAhello");
        assert_eq!(a.access_key.as_deref(), Some("rocketmq2"));
        assert_eq!(a.signature.as_deref(), Some("sig"));
        assert_eq!(a.resources, vec![("TopicA".to_string(), perm::PUB)]);
        assert!(!a.admin);
    }

    #[test]
    fn a_send_to_a_retry_topic_needs_sub_on_the_group() {
        let c = cmd(
            code::SEND_MESSAGE_V2,
            &[("b", "%RETRY%g1"), ("a", "g1"), (ACCESS_KEY, "k")],
            b"",
        );
        assert_eq!(
            access_request(&c).resources,
            vec![("%RETRY%g1".to_string(), perm::SUB)]
        );
    }

    #[test]
    fn pull_needs_sub_on_topic_and_group() {
        let c = cmd(
            code::PULL_MESSAGE,
            &[("topic", "T"), ("consumerGroup", "G"), (ACCESS_KEY, "k")],
            b"",
        );
        assert_eq!(
            access_request(&c).resources,
            vec![
                ("T".to_string(), perm::SUB),
                ("%RETRY%G".to_string(), perm::SUB)
            ]
        );
    }

    #[test]
    fn heartbeat_needs_sub_on_every_consumer_group_and_topic() {
        let body = br#"{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T","subString":"*"}]}],"producerDataSet":[]}"#;
        let a = access_request(&cmd(code::HEART_BEAT, &[(ACCESS_KEY, "k")], body));
        assert_eq!(
            a.resources,
            vec![
                ("%RETRY%G".to_string(), perm::SUB),
                ("T".to_string(), perm::SUB)
            ]
        );
        let bad = access_request(&cmd(code::HEART_BEAT, &[(ACCESS_KEY, "k")], b"{"));
        assert!(bad.unreadable.is_some());
    }

    #[test]
    fn unique_key_flag_is_signed_only_by_clients_from_4_9_4() {
        let mut c = cmd(
            code::QUERY_MESSAGE,
            &[
                ("topic", "T"),
                (UNIQUE_KEY_QUERY, "true"),
                (ACCESS_KEY, "k"),
            ],
            b"",
        );
        c.version = V4_9_3;
        assert_eq!(signed(&access_request(&c)), b"kT");
        c.version = V4_9_3 + 1;
        assert_eq!(signed(&access_request(&c)), b"ktrueT");
    }

    #[test]
    fn admin_codes_and_frames_without_fields() {
        let a = access_request(&cmd(code::DELETE_TOPIC_IN_BROKER, &[], b""));
        assert!(a.admin);
        assert!(a.access_key.is_none());
        assert!(a.signed.is_empty());
        assert!(is_admin_code(code::REGISTER_BROKER));
        assert!(!is_admin_code(code::GET_ROUTEINFO_BY_TOPIC));
    }
}
