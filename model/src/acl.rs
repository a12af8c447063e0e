//! What an access check needs to know about one request, whatever the transport: the caller's
//! credentials, the bytes its signature covers, the topics and groups it touches with the
//! permission each needs, and whether it is an administrative request.
//!
//! The codec fills an [`AccessRequest`] from the frame (RocketMQ remoting: the `AccessKey`,
//! `Signature` and `SecurityToken` header fields of `AclClientRPCHook`); the server decides.

use bytes::Bytes;

/// Permission bits, as Java's `org.apache.rocketmq.acl.common.Permission` numbers them.
pub mod perm {
    pub const DENY: u8 = 1;
    /// Needed: either PUB or SUB will do.
    pub const ANY: u8 = 1 << 1;
    pub const PUB: u8 = 1 << 2;
    pub const SUB: u8 = 1 << 3;
}

/// Java's `MixAll.RETRY_GROUP_TOPIC_PREFIX`: a consumer group is checked as its retry topic.
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";

/// One request as the access check sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccessRequest {
    /// The transport's request code, for messages (`request code=17`).
    pub code: i32,
    /// Only admin accounts may make it (creating or deleting topics and groups, broker config).
    pub admin: bool,
    pub access_key: Option<String>,
    pub signature: Option<String>,
    pub security_token: Option<String>,
    /// The signed bytes, in order (the concatenation is what the HMAC covers).
    pub signed: Vec<Bytes>,
    /// Resources (topic names; groups as `%RETRY%<group>`) and the permission each needs. A
    /// resource named twice keeps the last permission, as Java's map does.
    pub resources: Vec<(String, u8)>,
    /// The request could not be read for the check (Java's AclException from `parse`).
    pub unreadable: Option<String>,
}

impl AccessRequest {
    /// Records that `resource` needs `needed` (replacing an earlier need of the same resource).
    pub fn need(&mut self, resource: &str, needed: u8) {
        match self.resources.iter_mut().find(|(r, _)| r == resource) {
            Some((_, p)) => *p = needed,
            None => self.resources.push((resource.to_string(), needed)),
        }
    }

    /// Records that consumer `group` needs `needed` (checked as its retry topic).
    pub fn need_group(&mut self, group: &str, needed: u8) {
        self.need(&format!("{RETRY_GROUP_TOPIC_PREFIX}{group}"), needed);
    }
}
