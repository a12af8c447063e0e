//! ACL 1.0: RocketMQ's `plain_acl.yml` accounts and the signature the Java clients'
//! `AclClientRPCHook` puts on every request, checked before any handler runs (as Java's
//! `PlainAccessValidator` does in a server RPC hook), on the broker and the name server.
//!
//! The codec turns a frame into a protocol-neutral [`AccessRequest`]
//! ([`skiff_protocol::remoting::access_request`]); [`AccessControl::authorize`] decides with the
//! file's current contents. The file is polled every 500 ms on a thread of its own (Java 4.9's
//! `AclFileWatchService` looks every 5 s) and a changed file replaces the accounts at once; a
//! file that no longer parses keeps the previous accounts and logs why.
//!
//! This module knows no transport and no store: it reads one YAML file and answers yes or no.

mod address;
mod plain;
mod signature;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::RwLock;
use skiff_model::acl::AccessRequest;
use skiff_model::command::{ErrorKind, Reply};
use skiff_protocol::remoting::{self, access, RemotingCommand};
use tracing::{error, info, warn};

pub use address::AddressRule;
pub use plain::{check_permission, parse_perm, Account, PlainAcl};
pub use signature::sign;

/// How often the file is checked for changes (`FileWatchService`'s period; Java's ACL watcher
/// uses 5 s).
pub const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// What Java's remark starts with: `RemotingHelper.exceptionSimpleDesc` of the AclException.
const EXCEPTION: &str = "org.apache.rocketmq.acl.common.AclException";

/// The accounts of one `plain_acl.yml`, kept current.
pub struct AccessControl {
    path: PathBuf,
    current: RwLock<Arc<PlainAcl>>,
    /// The name server's mode: only admin requests (route changes) are checked; route queries
    /// stay open to anyone, as on Java's name server, so clients see the same errors.
    admin_only: bool,
}

/// Why the ACL file could not be used at start.
#[derive(Debug, thiserror::Error)]
pub enum AclFileError {
    #[error("aclEnable is true but the ACL file {0} cannot be read: {1} (create it, or point rocketmq.acl.plain.file at it)")]
    Read(PathBuf, std::io::Error),
    #[error("{0}: {1}")]
    Invalid(PathBuf, String),
}

impl AccessControl {
    /// Reads `path` and starts watching it for changes; the watcher ends when the returned
    /// value is dropped.
    pub fn start(path: &Path, scope: Scope) -> Result<Arc<AccessControl>, AclFileError> {
        let text = std::fs::read(path).map_err(|e| AclFileError::Read(path.to_path_buf(), e))?;
        let acl = parse_bytes(&text).map_err(|e| AclFileError::Invalid(path.to_path_buf(), e))?;
        info!(file = %path.display(), accounts = acl.accounts.len(),
              white = acl.global_white_remote_addresses.len(), "ACL on: every request must be signed by an account of the file");
        let control = Arc::new(AccessControl {
            path: path.to_path_buf(),
            current: RwLock::new(Arc::new(acl)),
            admin_only: scope == Scope::AdminOnly,
        });
        let weak = Arc::downgrade(&control);
        std::thread::Builder::new()
            .name("acl-file-watch".into())
            .spawn(move || watch(weak, text))
            .map_err(|e| AclFileError::Read(path.to_path_buf(), e))?;
        Ok(control)
    }

    /// The accounts in force.
    pub fn current(&self) -> Arc<PlainAcl> {
        self.current.read().clone()
    }

    /// Checks one request from `peer`; `Err` is the reply Java sends: SYSTEM_ERROR with the
    /// AclException as remark.
    pub fn authorize(&self, peer: IpAddr, request: &AccessRequest) -> Result<(), Reply> {
        if self.admin_only && !request.admin {
            return Ok(());
        }
        self.current()
            .validate(peer, request)
            .map_err(|why| Reply::error(ErrorKind::SystemError, refusal_remark(&why)))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Which requests a server checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The broker: every request, as Java's broker.
    Every,
    /// The name server: requests that change routes or configuration (register or unregister a
    /// broker, KV config, write permissions, topic deletion) need an admin account; route queries
    /// are answered to anyone, as Java's name server (which checks no ACL) answers them.
    AdminOnly,
}

/// What a server starts with: the file's accounts when `acl_enable`, else one warning that the
/// server is open to anyone.
pub fn start_for(
    server: &str,
    scope: Scope,
    acl_enable: bool,
    file_setting: &Path,
) -> Result<Option<Arc<AccessControl>>, AclFileError> {
    if !acl_enable {
        warn!("ACL is off: any client that reaches this {server} can administer it (create and delete topics, reset offsets, register brokers); to require signed requests set aclEnable=true and list accounts in $ROCKETMQ_HOME/conf/plain_acl.yml (or rocketmq.acl.plain.file)");
        return Ok(None);
    }
    let home = std::env::var_os("ROCKETMQ_HOME").map(PathBuf::from);
    let path = resolve_file(file_setting, home.as_deref());
    AccessControl::start(&path, scope).map(Some)
}

/// `skiff standalone` with ACL on: the `innerClientAuthenticationCredentials` JSON of the first
/// admin account (by access key) of the ACL file, with which the broker registers with the name
/// server in the same process.
pub fn standalone_credentials(file_setting: &Path) -> Result<String, String> {
    let home = std::env::var_os("ROCKETMQ_HOME").map(PathBuf::from);
    let path = resolve_file(file_setting, home.as_deref());
    let text = std::fs::read(&path).map_err(|e| AclFileError::Read(path.clone(), e).to_string())?;
    let acl = parse_bytes(&text).map_err(|e| AclFileError::Invalid(path.clone(), e).to_string())?;
    let admin = acl
        .accounts
        .values()
        .filter(|a| a.admin)
        .min_by(|a, b| a.access_key.cmp(&b.access_key))
        .ok_or_else(|| {
            format!(
                "{}: aclEnable is true but the file has no account with admin: true, which the broker \
                 needs to register with the name server; add one, or set innerClientAuthenticationCredentials",
                path.display()
            )
        })?;
    Ok(
        serde_json::json!({"accessKey": admin.access_key, "secretKey": admin.secret_key})
            .to_string(),
    )
}

/// The remark of a refusal: `org.apache.rocketmq.acl.common.AclException: <why>`.
pub fn refusal_remark(why: &str) -> String {
    format!("{EXCEPTION}: {why}")
}

fn parse_bytes(bytes: &[u8]) -> Result<PlainAcl, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    PlainAcl::parse(text)
}

/// Polls the file until the [`AccessControl`] is dropped. The content is compared, not only the
/// modification time, so two edits within the file system's time granularity are both seen.
fn watch(control: Weak<AccessControl>, mut last: Vec<u8>) {
    loop {
        std::thread::sleep(WATCH_INTERVAL);
        let Some(control) = control.upgrade() else {
            return;
        };
        let Ok(text) = std::fs::read(&control.path) else {
            // Being replaced (or removed): keep the accounts and look again.
            continue;
        };
        if text == last {
            continue;
        }
        match parse_bytes(&text) {
            Ok(acl) => {
                info!(file = %control.path.display(), accounts = acl.accounts.len(), "ACL file changed: reloaded");
                *control.current.write() = Arc::new(acl);
            }
            Err(why) => {
                error!(file = %control.path.display(), %why, "ACL file changed but cannot be used; the previous accounts stay in force");
            }
        }
        last = text;
    }
}

/// An account a Skiff server signs its own requests with (the broker's
/// `innerClientAuthenticationCredentials`, as Java 5.x writes it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Credentials {
    #[serde(rename = "accessKey")]
    pub access_key: String,
    #[serde(rename = "secretKey")]
    pub secret_key: String,
}

impl Credentials {
    pub fn parse(json: &str) -> Result<Credentials, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }
}

/// Signs a request frame as the Java clients' `AclClientRPCHook` does: adds `AccessKey`, then
/// `Signature` over the sorted header values and the body.
pub fn sign_command(frame: &mut RemotingCommand, credentials: &Credentials) {
    frame.set_ext(access::ACCESS_KEY, &credentials.access_key);
    frame.ext_fields.remove(access::SIGNATURE);
    let content = remoting::access_request(frame).signed;
    frame.set_ext(access::SIGNATURE, sign(&content, &credentials.secret_key));
}

/// Where the ACL file is: Java's system property `rocketmq.acl.plain.file` (default
/// `conf/plain_acl.yml`), relative to `$ROCKETMQ_HOME` (the current directory without it).
pub fn resolve_file(setting: &Path, rocketmq_home: Option<&Path>) -> PathBuf {
    if setting.is_absolute() {
        return setting.to_path_buf();
    }
    match rocketmq_home {
        Some(home) => home.join(setting),
        None => setting.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::time::Instant;

    fn request(key: &str, secret: &str) -> AccessRequest {
        let signed = vec![Bytes::from_static(b"content")];
        AccessRequest {
            code: 10,
            access_key: Some(key.into()),
            signature: Some(sign(&signed, secret)),
            signed,
            resources: vec![("T".into(), skiff_model::acl::perm::PUB)],
            ..AccessRequest::default()
        }
    }

    fn account(secret: &str) -> String {
        format!("accounts:\n  - accessKey: producer1\n    secretKey: {secret}\n    defaultTopicPerm: PUB\n")
    }

    #[test]
    fn a_changed_file_is_reloaded_and_a_broken_one_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain_acl.yml");
        std::fs::write(&path, account("secret-one")).unwrap();
        let control = AccessControl::start(&path, Scope::Every).unwrap();
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(control
            .authorize(peer, &request("producer1", "secret-one"))
            .is_ok());
        let Err(Reply::Error(refused)) =
            control.authorize(peer, &request("producer1", "secret-two"))
        else {
            panic!("a wrong secret must be refused");
        };
        assert_eq!(refused.kind, ErrorKind::SystemError);
        assert_eq!(
            refused.message,
            "org.apache.rocketmq.acl.common.AclException: Check signature failed for accessKey=producer1"
        );

        std::fs::write(&path, account("secret-two")).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while control
            .authorize(peer, &request("producer1", "secret-two"))
            .is_err()
        {
            assert!(Instant::now() < deadline, "the edit was not picked up");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(control
            .authorize(peer, &request("producer1", "secret-one"))
            .is_err());

        std::fs::write(&path, "accounts: [").unwrap();
        std::thread::sleep(WATCH_INTERVAL * 3);
        assert!(control
            .authorize(peer, &request("producer1", "secret-two"))
            .is_ok());
    }

    #[test]
    fn a_missing_or_invalid_file_stops_the_start_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain_acl.yml");
        let e = AccessControl::start(&path, Scope::Every)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("plain_acl.yml") && e.contains("rocketmq.acl.plain.file"),
            "{e}"
        );
        std::fs::write(&path, "accounts:\n  - accessKey: x\n").unwrap();
        let e = AccessControl::start(&path, Scope::Every)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("length should longer than 6"), "{e}");
    }

    #[test]
    fn the_file_is_found_as_java_finds_it() {
        let home = Path::new("/opt/rocketmq");
        assert_eq!(
            resolve_file(Path::new("conf/plain_acl.yml"), Some(home)),
            Path::new("/opt/rocketmq/conf/plain_acl.yml")
        );
        assert_eq!(
            resolve_file(Path::new("/etc/acl.yml"), Some(home)),
            Path::new("/etc/acl.yml")
        );
        assert_eq!(
            resolve_file(Path::new("acl.yml"), None),
            Path::new("acl.yml")
        );
    }
}
