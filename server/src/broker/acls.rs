//! ACL 2.0 access control lists (Apache RocketMQ 5.3's `AuthorizationMetadataManagerImpl`): per
//! subject (`User:alice`), policies (`Custom`, `Default`) of entries — a resource (`*`,
//! `Topic:orders`, `Group:billing-*`), actions, source addresses and a decision — managed with the
//! AUTH_*_ACL codes (`mqadmin createAcl`, `getAcl`, ...) and kept in `config/acls.json` (Java keeps
//! them in RocksDB under `config/acls`).
//!
//! They are stored and shown as Java does, so an operator can set them up before authorization is
//! turned on; Skiff does not enforce them yet (it refuses `authorizationEnabled=true`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use skiff_model::admin::{AclInfo, PolicyEntryInfo, PolicyInfo};
use skiff_model::command::{ErrorKind, Reply};

use super::auth::{AuthError, UserStore};
use super::config_file::ConfigFile;
use super::persist;
use crate::config::BrokerConfig;

/// Java's `Action` names, in its order.
const ACTIONS: [&str; 10] = [
    "Unknown", "All", "Any", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List",
];
/// Java's `ResourceType` names that a resource key may start with.
const RESOURCE_TYPES: [&str; 6] = ["Unknown", "Any", "Cluster", "Namespace", "Topic", "Group"];

/// Java's name for `name` among `names`, any case.
fn canonical(names: &[&'static str], name: &str) -> Option<&'static str> {
    names.iter().copied().find(|n| n.eq_ignore_ascii_case(name))
}

/// A resource of an entry (`Resource`): `*`, `Type:*`, `Type:prefix*` or `Type:name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Resource {
    /// Java's type name (`Topic`), `Any` for `*`.
    resource_type: String,
    /// `None` for `*` and `Type:*`.
    name: Option<String>,
    prefixed: bool,
}

impl Resource {
    /// `Resource.of`: `None` for a blank key or an unknown type.
    fn parse(key: &str) -> Option<Resource> {
        if key.trim().is_empty() {
            return None;
        }
        if key == "*" {
            return Some(Resource {
                resource_type: "Any".into(),
                name: None,
                prefixed: false,
            });
        }
        let (type_name, name) = key.split_once(':').unwrap_or((key, ""));
        let resource_type = canonical(&RESOURCE_TYPES, type_name)?.to_string();
        Some(if name == "*" {
            Resource {
                resource_type,
                name: None,
                prefixed: false,
            }
        } else if let Some(at) = name.find('*') {
            Resource {
                resource_type,
                name: Some(name[..at].to_string()),
                prefixed: true,
            }
        } else {
            Resource {
                resource_type,
                name: Some(name.to_string()),
                prefixed: false,
            }
        })
    }

    /// `getResourceKey`.
    fn key(&self) -> String {
        if self.resource_type == "Any" {
            return "*".into();
        }
        match (&self.name, self.prefixed) {
            (None, _) => format!("{}:*", self.resource_type),
            (Some(name), true) => format!("{}:{name}*", self.resource_type),
            (Some(name), false) => format!("{}:{name}", self.resource_type),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    resource: Resource,
    actions: Vec<String>,
    source_ips: Vec<String>,
    /// `Allow` or `Deny`.
    decision: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Policy {
    /// `Custom` or `Default`.
    policy_type: String,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Acl {
    policies: Vec<Policy>,
}

#[derive(Default, Serialize, Deserialize)]
struct AclsFile {
    /// By subject key (`User:alice`).
    acls: BTreeMap<String, Acl>,
}

/// `Subject.of`: `User:<name>` (the type in any case) → `User:<name>`.
fn subject_key(subject: &str) -> Option<String> {
    let (kind, name) = subject.split_once(':')?;
    kind.eq_ignore_ascii_case("User")
        .then(|| format!("User:{name}"))
}

fn denied(why: impl Into<String>) -> Reply {
    AuthError::Denied(why.into()).into()
}

/// `IPAddressUtils.isValidIPOrCidr`: an address, or `address/prefix` within its family's width.
fn is_ip_or_cidr(text: &str) -> bool {
    match text.split_once('/') {
        None => text.parse::<IpAddr>().is_ok(),
        Some((addr, prefix)) => match (addr.parse::<IpAddr>(), prefix.parse::<u8>()) {
            (Ok(IpAddr::V4(_)), Ok(p)) => p <= 32,
            (Ok(IpAddr::V6(_)), Ok(p)) => p <= 128,
            _ => false,
        },
    }
}

/// `AclConverter.convertAcl` then `AuthorizationMetadataManagerImpl.validate` and `initAcl`.
fn convert(info: &AclInfo) -> Result<Vec<Policy>, Reply> {
    let mut policies = Vec::new();
    for policy in info.policies.iter().flatten() {
        let Some(entries) = policy.entries.as_ref().filter(|e| !e.is_empty()) else {
            continue;
        };
        let policy_type = policy
            .policy_type
            .as_deref()
            .and_then(|t| canonical(&["Custom", "Default"], t))
            .unwrap_or("Custom");
        let mut converted = Vec::new();
        for entry in entries {
            let resource = entry.resource.as_deref().and_then(Resource::parse);
            let Some(actions) = &entry.actions else {
                // Java's converter fails on the missing list before validating.
                return Err(AuthError::System.into());
            };
            let actions: Vec<String> = actions
                .iter()
                .filter_map(|a| canonical(&ACTIONS, a.trim()))
                .map(str::to_string)
                .collect();
            let Some(resource) = resource else {
                return Err(denied("The resource is null."));
            };
            if actions.is_empty() {
                return Err(denied("The actions is empty."));
            }
            if actions.iter().any(|a| a == "Any") {
                return Err(denied("The actions can not be Any."));
            }
            let source_ips = entry.source_ips.clone().unwrap_or_default();
            for ip in &source_ips {
                if ip.trim().is_empty() {
                    return Err(denied("The source ip is empty."));
                }
                if !is_ip_or_cidr(ip) {
                    return Err(denied("The source ip is invalid."));
                }
            }
            let Some(decision) = entry
                .decision
                .as_deref()
                .and_then(|d| canonical(&["Allow", "Deny"], d))
            else {
                return Err(denied("The decision is null or illegal."));
            };
            converted.push(Entry {
                resource,
                actions,
                source_ips,
                decision: decision.to_string(),
            });
        }
        policies.push(Policy {
            policy_type: policy_type.to_string(),
            entries: converted,
        });
    }
    if policies.is_empty() {
        return Err(denied("The policies is empty."));
    }
    Ok(policies)
}

/// `Acl.updatePolicy`: an entry of a resource the policy has replaces that entry's actions,
/// addresses and decision; others are added.
fn merge(old: &mut Acl, new: Vec<Policy>) {
    for policy in new {
        match old
            .policies
            .iter_mut()
            .find(|p| p.policy_type == policy.policy_type)
        {
            None => old.policies.push(policy),
            Some(existing) => {
                for entry in policy.entries {
                    match existing
                        .entries
                        .iter_mut()
                        .find(|e| e.resource == entry.resource)
                    {
                        Some(e) => *e = entry,
                        None => existing.entries.push(entry),
                    }
                }
            }
        }
    }
}

fn info(subject: &str, acl: &Acl) -> AclInfo {
    AclInfo {
        subject: Some(subject.to_string()),
        policies: Some(
            acl.policies
                .iter()
                .map(|p| PolicyInfo {
                    policy_type: Some(p.policy_type.clone()),
                    entries: Some(
                        p.entries
                            .iter()
                            .map(|e| PolicyEntryInfo {
                                resource: Some(e.resource.key()),
                                actions: Some(e.actions.clone()),
                                source_ips: (!e.source_ips.is_empty())
                                    .then(|| e.source_ips.clone()),
                                decision: Some(e.decision.clone()),
                            })
                            .collect(),
                    ),
                })
                .collect(),
        ),
    }
}

/// The ACLs (Java's authorization metadata), and the writer of their file.
pub(crate) struct AclStore {
    acls: Arc<RwLock<AclsFile>>,
    file: ConfigFile,
}

impl AclStore {
    /// Loads `config/acls.json` when the broker has an ACL store
    /// (`authorizationMetadataProvider`).
    pub(crate) fn open(config: &BrokerConfig) -> Option<AclStore> {
        config.authorization_metadata_provider.as_ref()?;
        let path = persist::config_dir(&config.store_path_root_dir).join("acls.json");
        let loaded: AclsFile = persist::load(&path).unwrap_or_default();
        let acls = Arc::new(RwLock::new(loaded));
        let file = ConfigFile::spawn(path, skiff_store::fs::real(), {
            let acls = acls.clone();
            move || serde_json::to_string_pretty(&*acls.read()).expect("ACLs serialize")
        });
        Some(AclStore { acls, file })
    }

    /// AUTH_CREATE_ACL and AUTH_UPDATE_ACL (the same in Java): the subject must be a user.
    pub(crate) fn create(
        &self,
        users: &UserStore,
        header_subject: &str,
        acl: Option<AclInfo>,
    ) -> Result<(), Reply> {
        let Some(acl) = acl.filter(|a| a.policies.as_ref().is_some_and(|p| !p.is_empty())) else {
            return Err(Reply::error(
                ErrorKind::SystemError,
                "org.apache.rocketmq.auth.authorization.exception.AuthorizationException: The body of acl is null",
            ));
        };
        let subject = acl
            .subject
            .as_deref()
            .and_then(subject_key)
            .or_else(|| subject_key(header_subject));
        let Some(subject) = subject else {
            return Err(AuthError::System.into());
        };
        let policies = convert(&acl)?;
        let username = &subject["User:".len()..];
        if !users.exists(username) {
            return Err(denied(format!("The subject of {subject} is not exist.")));
        }
        let mut acls = self.acls.write();
        match acls.acls.get_mut(&subject) {
            None => {
                acls.acls.insert(subject, Acl { policies });
            }
            Some(old) => merge(old, policies),
        }
        drop(acls);
        self.file.request();
        Ok(())
    }

    /// AUTH_DELETE_ACL: one resource's entry of one policy type (`Custom` by default), or the
    /// whole ACL without a resource (or with one that does not parse, as in Java).
    pub(crate) fn delete(
        &self,
        users: &UserStore,
        subject: &str,
        policy_type: Option<&str>,
        resource: Option<&str>,
    ) -> Result<(), Reply> {
        let Some(subject) = subject_key(subject) else {
            return Err(denied("The subject is null."));
        };
        let policy_type = policy_type
            .and_then(|t| canonical(&["Custom", "Default"], t))
            .unwrap_or("Custom");
        if !users.exists(&subject["User:".len()..]) {
            return Err(denied("The subject is not exist."));
        }
        let mut acls = self.acls.write();
        let Some(acl) = acls.acls.get_mut(&subject) else {
            return Err(denied("The acl is not exist."));
        };
        let resource = resource.and_then(Resource::parse);
        if let Some(resource) = &resource {
            if let Some(policy) = acl
                .policies
                .iter_mut()
                .find(|p| p.policy_type == policy_type)
            {
                policy.entries.retain(|e| &e.resource != resource);
            }
            acl.policies.retain(|p| !p.entries.is_empty());
        }
        if resource.is_none() || acl.policies.is_empty() {
            acls.acls.remove(&subject);
        }
        drop(acls);
        self.file.request();
        Ok(())
    }

    /// AUTH_GET_ACL: `None` when the user has no ACL.
    pub(crate) fn get(
        &self,
        users: &UserStore,
        subject: Option<&str>,
    ) -> Result<Option<AclInfo>, Reply> {
        let Some(subject) = subject.and_then(subject_key) else {
            return Err(AuthError::System.into());
        };
        if !users.exists(&subject["User:".len()..]) {
            return Err(denied("The subject is not exist."));
        }
        Ok(self
            .acls
            .read()
            .acls
            .get(&subject)
            .map(|acl| info(&subject, acl)))
    }

    /// AUTH_LIST_ACL, with Java's filters: subjects containing `subject_filter`; entries whose
    /// resource contains `resource_filter`, unless the subject itself contains it.
    pub(crate) fn list(
        &self,
        subject_filter: Option<&str>,
        resource_filter: Option<&str>,
    ) -> Vec<AclInfo> {
        let subject_filter = subject_filter.filter(|f| !f.trim().is_empty());
        let resource_filter = resource_filter.filter(|f| !f.trim().is_empty());
        let acls = self.acls.read();
        let mut listed = Vec::new();
        for (subject, acl) in &acls.acls {
            if subject_filter.is_some_and(|f| !subject.contains(f)) {
                continue;
            }
            let mut acl = acl.clone();
            if let Some(filter) = resource_filter {
                if !subject.contains(filter) {
                    for policy in &mut acl.policies {
                        policy.entries.retain(|e| e.resource.key().contains(filter));
                    }
                    acl.policies.retain(|p| !p.entries.is_empty());
                }
            }
            if !acl.policies.is_empty() {
                listed.push(info(subject, &acl));
            }
        }
        listed
    }

    /// Forgets a deleted user's ACL (Java's `deleteUser` removes it too).
    pub(crate) fn remove_user(&self, username: &str) {
        if self
            .acls
            .write()
            .acls
            .remove(&format!("User:{username}"))
            .is_some()
        {
            self.file.request();
        }
    }

    /// Waits until the ACL file holds every change so far. Blocks.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        self.file.flush(timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skiff_model::admin::UserInfo;

    fn config(dir: &std::path::Path) -> BrokerConfig {
        BrokerConfig {
            store_path_root_dir: dir.to_path_buf(),
            authentication_metadata_provider: Some(
                super::super::LOCAL_AUTHENTICATION_METADATA_PROVIDER.into(),
            ),
            authorization_metadata_provider: Some(
                super::super::LOCAL_AUTHORIZATION_METADATA_PROVIDER.into(),
            ),
            ..BrokerConfig::default()
        }
    }

    fn entry(resource: &str, actions: &[&str], ips: &[&str], decision: &str) -> PolicyEntryInfo {
        PolicyEntryInfo {
            resource: Some(resource.into()),
            actions: Some(actions.iter().map(|a| a.to_string()).collect()),
            source_ips: (!ips.is_empty()).then(|| ips.iter().map(|i| i.to_string()).collect()),
            decision: Some(decision.into()),
        }
    }

    fn acl(subject: &str, entries: Vec<PolicyEntryInfo>) -> AclInfo {
        AclInfo {
            subject: Some(subject.into()),
            policies: Some(vec![PolicyInfo {
                policy_type: None,
                entries: Some(entries),
            }]),
        }
    }

    fn remark(reply: Reply) -> (ErrorKind, String) {
        match reply {
            Reply::Error(e) => (e.kind, e.message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn resource_keys_parse_as_java_parses_them() {
        for (key, shown) in [
            ("*", Some("*")),
            ("topic:orders", Some("Topic:orders")),
            ("Group:*", Some("Group:*")),
            ("Group:bill*ing*", Some("Group:bill*")),
            ("Cluster:DefaultCluster", Some("Cluster:DefaultCluster")),
            ("Queue:q", None),
            ("", None),
        ] {
            assert_eq!(
                Resource::parse(key).map(|r| r.key()).as_deref(),
                shown,
                "{key}"
            );
        }
        assert!(is_ip_or_cidr("10.0.0.0/8") && is_ip_or_cidr("::1") && is_ip_or_cidr("fe80::/64"));
        assert!(!is_ip_or_cidr("10.0.0.0/33") && !is_ip_or_cidr("10.0.0.*"));
    }

    #[test]
    fn acls_are_created_merged_listed_and_deleted_as_java_does() {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path());
        let users = UserStore::open(&config).unwrap().unwrap();
        let acls = AclStore::open(&config).unwrap();
        let nobody = acls
            .create(
                &users,
                "",
                Some(acl(
                    "User:alice",
                    vec![entry("Topic:t", &["Pub"], &[], "Allow")],
                )),
            )
            .unwrap_err();
        assert_eq!(
            remark(nobody),
            (
                ErrorKind::NoPermission,
                "The subject of User:alice is not exist.".into()
            )
        );
        users
            .create(
                None,
                UserInfo {
                    username: "alice".into(),
                    password: Some("pw".into()),
                    ..UserInfo::default()
                },
            )
            .unwrap();
        for (bad, why) in [
            (
                entry("Queue:q", &["Pub"], &[], "Allow"),
                "The resource is null.",
            ),
            (
                entry("Topic:t", &["Fly"], &[], "Allow"),
                "The actions is empty.",
            ),
            (
                entry("Topic:t", &["Any"], &[], "Allow"),
                "The actions can not be Any.",
            ),
            (
                entry("Topic:t", &["Pub"], &["10.0.0.*"], "Allow"),
                "The source ip is invalid.",
            ),
            (
                entry("Topic:t", &["Pub"], &[], "Maybe"),
                "The decision is null or illegal.",
            ),
        ] {
            let refused = acls
                .create(&users, "", Some(acl("User:alice", vec![bad])))
                .unwrap_err();
            assert_eq!(remark(refused), (ErrorKind::NoPermission, why.into()));
        }
        let body_less = acls.create(&users, "User:alice", None).unwrap_err();
        assert_eq!(remark(body_less).0, ErrorKind::SystemError);

        acls.create(
            &users,
            "",
            Some(acl(
                "user:alice",
                vec![
                    entry("Topic:t", &["pub", "Sub"], &["10.0.0.0/8"], "allow"),
                    entry("Group:g*", &["Sub"], &[], "Allow"),
                ],
            )),
        )
        .unwrap();
        // The same resource again changes that entry; a new one is added.
        acls.create(
            &users,
            "User:alice",
            Some(AclInfo {
                subject: None,
                ..acl(
                    "",
                    vec![
                        entry("Topic:t", &["Sub"], &[], "Deny"),
                        entry("*", &["Get"], &[], "Allow"),
                    ],
                )
            }),
        )
        .unwrap();
        let got = acls.get(&users, Some("User:alice")).unwrap().unwrap();
        let entries = got.policies.unwrap()[0].entries.clone().unwrap();
        assert_eq!(
            entries,
            vec![
                entry("Topic:t", &["Sub"], &[], "Deny"),
                entry("Group:g*", &["Sub"], &[], "Allow"),
                entry("*", &["Get"], &[], "Allow"),
            ]
        );
        assert_eq!(
            acls.list(Some("ali"), Some("Group"))[0].subject.as_deref(),
            Some("User:alice")
        );
        let filtered = acls.list(None, Some("Group"));
        assert_eq!(
            filtered[0].policies.as_ref().unwrap()[0]
                .entries
                .as_ref()
                .unwrap()
                .len(),
            1
        );
        assert!(acls.list(Some("bob"), None).is_empty());

        acls.delete(&users, "User:alice", None, Some("Group:g*"))
            .unwrap();
        acls.delete(&users, "User:alice", None, Some("Topic:absent"))
            .unwrap();
        assert_eq!(
            acls.list(None, None)[0].policies.as_ref().unwrap()[0]
                .entries
                .as_ref()
                .unwrap()
                .len(),
            2
        );
        acls.delete(&users, "User:alice", None, None).unwrap();
        assert_eq!(acls.get(&users, Some("User:alice")).unwrap(), None);
        let gone = acls.delete(&users, "User:alice", None, None).unwrap_err();
        assert_eq!(remark(gone).1, "The acl is not exist.");
        assert_eq!(
            remark(acls.get(&users, Some("User:bob")).unwrap_err()).1,
            "The subject is not exist."
        );
    }
}
