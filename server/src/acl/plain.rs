//! `plain_acl.yml` as Java's `PlainPermissionManager` reads it, and the decision of
//! `PlainPermissionManager.validate` for one request.
//!
//! ```yaml
//! globalWhiteRemoteAddresses:
//!   - 10.10.103.*
//! accounts:
//!   - accessKey: RocketMQ
//!     secretKey: 12345678
//!     whiteRemoteAddress:
//!     admin: false
//!     defaultTopicPerm: DENY
//!     defaultGroupPerm: SUB
//!     topicPerms:
//!       - topicA=DENY
//!       - topicB=PUB|SUB
//!     groupPerms:
//!       - groupA=DENY
//! ```
//!
//! Unknown keys (`dataVersion`, …) are ignored, scalars may be written as numbers or booleans
//! (Java converts through JSON), and an account whose keys are 6 characters or shorter is an
//! error, as in Java.

use std::collections::HashMap;
use std::net::IpAddr;

use serde::Deserialize;
use skiff_model::acl::{perm, AccessRequest, RETRY_GROUP_TOPIC_PREFIX};

use super::address::AddressRule;
use super::signature;

/// Java's `TopicValidator.RMQ_SYS_TRACE_TOPIC`: publishing traces skips the permission check.
const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// A YAML scalar as Java's JSON conversion sees it: any of them reads as a string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Scalar {
    fn text(self) -> String {
        match self {
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Str(s) => s,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FileModel {
    global_white_remote_addresses: Option<Vec<Option<Scalar>>>,
    accounts: Option<Vec<AccountModel>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct AccountModel {
    access_key: Option<Scalar>,
    secret_key: Option<Scalar>,
    white_remote_address: Option<Scalar>,
    admin: Option<Scalar>,
    default_topic_perm: Option<Scalar>,
    default_group_perm: Option<Scalar>,
    topic_perms: Option<Vec<Option<Scalar>>>,
    group_perms: Option<Vec<Option<Scalar>>>,
}

/// One account of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub access_key: String,
    pub secret_key: String,
    pub white_remote_address: AddressRule,
    pub admin: bool,
    pub default_topic_perm: u8,
    pub default_group_perm: u8,
    /// Topics by name, groups as `%RETRY%<group>`.
    pub perms: HashMap<String, u8>,
}

/// The whole file, ready for decisions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlainAcl {
    pub global_white_remote_addresses: Vec<AddressRule>,
    pub accounts: HashMap<String, Account>,
}

/// Java's `Permission.parsePermFromString`: anything unknown (or missing) denies.
pub fn parse_perm(text: Option<&str>) -> u8 {
    match text.map(str::trim) {
        Some("PUB") => perm::PUB,
        Some("SUB") => perm::SUB,
        Some("PUB|SUB") | Some("SUB|PUB") => perm::PUB | perm::SUB,
        _ => perm::DENY,
    }
}

/// Java's `Permission.checkPermission`.
pub fn check_permission(needed: u8, owned: u8) -> bool {
    if owned & perm::DENY != 0 {
        return false;
    }
    if needed & perm::ANY != 0 {
        return owned & (perm::PUB | perm::SUB) != 0;
    }
    needed & owned != 0
}

impl PlainAcl {
    /// Reads the text of a `plain_acl.yml`. `Err` says what is wrong (Java's text where it has
    /// one); an empty file has no accounts, as in Java.
    pub fn parse(text: &str) -> Result<PlainAcl, String> {
        if text.trim().is_empty() {
            return Ok(PlainAcl::default());
        }
        let model: Option<FileModel> =
            serde_saphyr::from_str(text).map_err(|e| format!("not valid YAML: {e}"))?;
        let model = model.unwrap_or_default();
        let mut acl = PlainAcl::default();
        for pattern in model.global_white_remote_addresses.unwrap_or_default() {
            let pattern = pattern.map(Scalar::text).unwrap_or_default();
            acl.global_white_remote_addresses
                .push(AddressRule::parse(&pattern)?);
        }
        for a in model.accounts.unwrap_or_default() {
            let account = build_account(a)?;
            // Java keeps the first definition of an access key.
            acl.accounts
                .entry(account.access_key.clone())
                .or_insert(account);
        }
        Ok(acl)
    }

    /// `PlainPermissionManager.validate`: `Err` is the AclException message.
    pub fn validate(&self, peer: IpAddr, req: &AccessRequest) -> Result<(), String> {
        if let Some(why) = &req.unreadable {
            return Err(why.clone());
        }
        if self
            .global_white_remote_addresses
            .iter()
            .any(|r| r.matches(peer))
        {
            return Ok(());
        }
        let Some(key) = &req.access_key else {
            return Err("No accessKey is configured".into());
        };
        let Some(owned) = self.accounts.get(key) else {
            return Err(format!("No acl config for {key}"));
        };
        if owned.white_remote_address.matches(peer) {
            return Ok(());
        }
        let expected = signature::sign(&req.signed, &owned.secret_key);
        if req.signature.as_deref() != Some(expected.as_str()) {
            return Err(format!("Check signature failed for accessKey={key}"));
        }
        if req
            .resources
            .iter()
            .any(|(r, p)| r == TRACE_TOPIC && *p == perm::PUB)
        {
            return Ok(());
        }
        check_perm(req, owned)
    }
}

/// `PlainPermissionManager.checkPerm`.
fn check_perm(req: &AccessRequest, owned: &Account) -> Result<(), String> {
    if req.admin && !owned.admin {
        return Err(format!(
            "Need admin permission for request code={}, but accessKey={} is not",
            req.code, owned.access_key
        ));
    }
    if owned.admin && owned.perms.is_empty() {
        // Java: an admin without topicPerms and groupPerms may use every resource.
        return Ok(());
    }
    for (resource, needed) in &req.resources {
        let group = resource.strip_prefix(RETRY_GROUP_TOPIC_PREFIX);
        let owned_perm = owned
            .perms
            .get(resource)
            .copied()
            .unwrap_or(if group.is_some() {
                owned.default_group_perm
            } else {
                owned.default_topic_perm
            });
        if !check_permission(*needed, owned_perm) {
            let what = match group {
                Some(g) => format!("group:{g}"),
                None => format!("topic:{resource}"),
            };
            return Err(format!("No default permission for {what}"));
        }
    }
    Ok(())
}

fn build_account(a: AccountModel) -> Result<Account, String> {
    let access_key = a.access_key.map(Scalar::text);
    let secret_key = a.secret_key.map(Scalar::text);
    let (Some(access_key), Some(secret_key)) = (access_key.clone(), secret_key.clone()) else {
        return Err(short_keys(access_key.as_deref(), secret_key.as_deref()));
    };
    // Java's AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH (6), compared with `<=`.
    if access_key.chars().count() <= 6 || secret_key.chars().count() <= 6 {
        return Err(short_keys(Some(&access_key), Some(&secret_key)));
    }
    let white = a.white_remote_address.map(Scalar::text).unwrap_or_default();
    let admin = a
        .admin
        .map(Scalar::text)
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("true"));
    let mut perms = HashMap::new();
    for (list, is_topic) in [(a.group_perms, false), (a.topic_perms, true)] {
        for item in list.unwrap_or_default() {
            let item = item.map(Scalar::text).unwrap_or_default();
            let parts: Vec<&str> = item.split('=').filter(|s| !s.is_empty()).collect();
            let [name, p] = parts[..] else {
                return Err(format!(
                    "Parse resource permission failed for {}:{item}",
                    if is_topic { "topic" } else { "group" }
                ));
            };
            let name = name.trim();
            let key = if is_topic {
                name.to_string()
            } else {
                format!("{RETRY_GROUP_TOPIC_PREFIX}{name}")
            };
            perms.insert(key, parse_perm(Some(p)));
        }
    }
    Ok(Account {
        white_remote_address: AddressRule::parse(&white)?,
        admin,
        default_topic_perm: parse_perm(a.default_topic_perm.map(Scalar::text).as_deref()),
        default_group_perm: parse_perm(a.default_group_perm.map(Scalar::text).as_deref()),
        perms,
        access_key,
        secret_key,
    })
}

fn short_keys(access_key: Option<&str>, secret_key: Option<&str>) -> String {
    format!(
        "The accessKey={} and secretKey={} cannot be null and length should longer than 6",
        access_key.unwrap_or("null"),
        secret_key.map_or("null", |_| "***")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// The distribution's `conf/plain_acl.yml` of Apache RocketMQ 4.9.
    const DISTRIBUTION: &str = "\
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
";

    fn local() -> IpAddr {
        "127.0.0.1".parse().unwrap()
    }

    fn signed_request(key: &str, secret: &str, resources: &[(&str, u8)]) -> AccessRequest {
        let signed = vec![Bytes::from(format!("{key}x")), Bytes::from_static(b"body")];
        AccessRequest {
            code: 10,
            access_key: Some(key.into()),
            signature: Some(signature::sign(&signed, secret)),
            signed,
            resources: resources.iter().map(|(r, p)| (r.to_string(), *p)).collect(),
            ..AccessRequest::default()
        }
    }

    #[test]
    fn reads_the_distribution_file() {
        let acl = PlainAcl::parse(DISTRIBUTION).unwrap();
        assert_eq!(acl.global_white_remote_addresses.len(), 2);
        let a = &acl.accounts["RocketMQ"];
        assert_eq!(a.secret_key, "12345678");
        assert!(!a.admin);
        assert_eq!(a.white_remote_address, AddressRule::Nothing);
        assert_eq!(a.default_topic_perm, perm::DENY);
        assert_eq!(a.default_group_perm, perm::SUB);
        assert_eq!(a.perms["topicB"], perm::PUB | perm::SUB);
        assert_eq!(a.perms["%RETRY%groupA"], perm::DENY);
        assert!(acl.accounts["rocketmq2"].admin);
        assert!(acl.global_white_remote_addresses[1].matches("192.168.0.9".parse().unwrap()));
    }

    #[test]
    fn empty_or_commented_files_have_no_accounts() {
        assert_eq!(PlainAcl::parse("").unwrap(), PlainAcl::default());
        assert_eq!(PlainAcl::parse("# nothing\n").unwrap(), PlainAcl::default());
        assert!(PlainAcl::parse("accounts: [").is_err());
        assert!(PlainAcl::parse("accounts: 5").is_err());
    }

    #[test]
    fn short_keys_and_bad_perms_are_errors_as_in_java() {
        let e = PlainAcl::parse("accounts:\n  - accessKey: abc\n    secretKey: 12345678\n")
            .unwrap_err();
        assert!(
            e.contains("cannot be null and length should longer than 6"),
            "{e}"
        );
        let e = PlainAcl::parse(
            "accounts:\n  - accessKey: abcdefg\n    secretKey: 12345678\n    topicPerms: [topicA]\n",
        )
        .unwrap_err();
        assert_eq!(e, "Parse resource permission failed for topic:topicA");
        let e = PlainAcl::parse(
            "accounts:\n  - accessKey: abcdefg\n    secretKey: 1234567\n    whiteRemoteAddress: 1.2.3\n",
        )
        .unwrap_err();
        assert!(e.contains("Netaddress"), "{e}");
    }

    #[test]
    fn decisions_follow_plain_permission_manager() {
        let acl = PlainAcl::parse(DISTRIBUTION).unwrap();
        let ok = |r: &AccessRequest| acl.validate(local(), r);
        // Right key, right secret, allowed topic.
        assert_eq!(
            ok(&signed_request(
                "RocketMQ",
                "12345678",
                &[("topicB", perm::PUB)]
            )),
            Ok(())
        );
        // Wrong secret.
        assert_eq!(
            ok(&signed_request(
                "RocketMQ",
                "wrong-secret",
                &[("topicB", perm::PUB)]
            )),
            Err("Check signature failed for accessKey=RocketMQ".into())
        );
        // No credentials; unknown key.
        assert_eq!(
            ok(&AccessRequest::default()),
            Err("No accessKey is configured".into())
        );
        assert_eq!(
            ok(&signed_request("nobody-here", "12345678", &[])),
            Err("No acl config for nobody-here".into())
        );
        // Denied topic, SUB-only topic, default DENY topic, denied group, default group SUB.
        let no = |res: &[(&str, u8)]| ok(&signed_request("RocketMQ", "12345678", res));
        assert_eq!(
            no(&[("topicA", perm::SUB)]),
            Err("No default permission for topic:topicA".into())
        );
        assert_eq!(
            no(&[("topicC", perm::PUB)]),
            Err("No default permission for topic:topicC".into())
        );
        assert_eq!(no(&[("topicC", perm::SUB)]), Ok(()));
        assert_eq!(
            no(&[("other", perm::SUB)]),
            Err("No default permission for topic:other".into())
        );
        assert_eq!(
            no(&[("%RETRY%groupA", perm::SUB)]),
            Err("No default permission for group:groupA".into())
        );
        assert_eq!(no(&[("%RETRY%anyGroup", perm::SUB)]), Ok(()));
        assert_eq!(no(&[("topicB", perm::ANY)]), Ok(()));
        // Trace publishing is never refused by permissions.
        assert_eq!(no(&[("RMQ_SYS_TRACE_TOPIC", perm::PUB)]), Ok(()));
        // Admin codes.
        let mut admin = signed_request("RocketMQ", "12345678", &[]);
        admin.admin = true;
        admin.code = 17;
        assert_eq!(
            ok(&admin),
            Err("Need admin permission for request code=17, but accessKey=RocketMQ is not".into())
        );
        let mut admin = signed_request("rocketmq2", "12345678", &[("anything", perm::PUB)]);
        admin.admin = true;
        assert_eq!(
            ok(&admin),
            Ok(()),
            "an admin with no perms may do everything"
        );
        // Whitelisted addresses pass without any signature.
        assert_eq!(
            acl.validate("10.10.103.5".parse().unwrap(), &AccessRequest::default()),
            Ok(())
        );
        let mut unsigned = signed_request("rocketmq2", "12345678", &[]);
        unsigned.signature = None;
        assert_eq!(
            acl.validate("192.168.1.3".parse().unwrap(), &unsigned),
            Ok(())
        );
        assert!(acl.validate(local(), &unsigned).is_err());
    }

    #[test]
    fn permission_bits_match_java() {
        assert_eq!(parse_perm(Some(" SUB|PUB ")), perm::PUB | perm::SUB);
        assert_eq!(parse_perm(Some("pub")), perm::DENY);
        assert_eq!(parse_perm(None), perm::DENY);
        assert!(!check_permission(perm::PUB, perm::DENY | perm::PUB));
        assert!(check_permission(perm::ANY, perm::SUB));
        assert!(!check_permission(perm::PUB, perm::SUB));
    }
}
