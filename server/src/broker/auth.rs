//! ACL 2.0 authentication, as Apache RocketMQ 5.3 has it (`authenticationEnabled`): users with a
//! password, a type (super or normal) and a status (enabled or disabled), managed with the
//! AUTH_*_USER codes (`mqadmin createUser`, `getUser`, ...) and kept in `config/users.json`
//! (Java keeps them in RocksDB under `config/users`). With authentication on, every request to the
//! broker must carry the signature of a known, enabled user: the Java clients'
//! `AclClientRPCHook` with the user name as access key and the password as secret key, over the
//! same content as ACL 1.0.
//!
//! The rules and messages are Java's (`DefaultAuthenticationHandler`,
//! `AuthenticationMetadataManagerImpl`, `AdminBrokerProcessor`); this module checks and keeps
//! state, the admin handler answers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use skiff_model::acl::AccessRequest;
use skiff_model::admin::UserInfo;
use skiff_model::command::{ErrorKind, Reply};

use super::config_file::ConfigFile;
use super::persist;
use crate::acl::Credentials;
use crate::config::BrokerConfig;

/// Java's `LocalAuthenticationMetadataProvider`: the users store Skiff has (in a JSON file).
pub(crate) const LOCAL_AUTHENTICATION_METADATA_PROVIDER: &str =
    "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider";
/// Java's `LocalAuthorizationMetadataProvider` (ACLs; only its presence matters here, see
/// [`UserStore::delete`]).
pub(crate) const LOCAL_AUTHORIZATION_METADATA_PROVIDER: &str =
    "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider";

/// What a failed user operation answers (Java's `handleAuthException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthError {
    /// An `AuthenticationException`: NO_PERMISSION with its message.
    Denied(String),
    /// Anything else: SYSTEM_ERROR with Java's generic remark.
    System,
}

impl From<AuthError> for Reply {
    fn from(e: AuthError) -> Reply {
        match e {
            AuthError::Denied(why) => Reply::error(ErrorKind::NoPermission, why),
            AuthError::System => Reply::error(
                ErrorKind::SystemError,
                "An system error occurred, please try again later.",
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum UserType {
    Super,
    Normal,
}

impl UserType {
    /// `UserType.getByName`: any case; anything else is no type.
    fn parse(name: Option<&str>) -> Option<UserType> {
        match name?.to_ascii_lowercase().as_str() {
            "super" => Some(UserType::Super),
            "normal" => Some(UserType::Normal),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            UserType::Super => "Super",
            UserType::Normal => "Normal",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum UserStatus {
    Enable,
    Disable,
}

impl UserStatus {
    fn parse(name: Option<&str>) -> Option<UserStatus> {
        match name?.to_ascii_lowercase().as_str() {
            "enable" => Some(UserStatus::Enable),
            "disable" => Some(UserStatus::Disable),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            UserStatus::Enable => "enable",
            UserStatus::Disable => "disable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct User {
    username: String,
    password: String,
    user_type: UserType,
    user_status: UserStatus,
}

impl User {
    fn info(&self) -> UserInfo {
        UserInfo {
            username: self.username.clone(),
            password: Some(self.password.clone()),
            user_type: Some(self.user_type.name().to_string()),
            user_status: Some(self.user_status.name().to_string()),
        }
    }
}

#[derive(Default, Serialize, Deserialize)]
struct UsersFile {
    users: BTreeMap<String, User>,
}

/// The users (Java's authentication metadata), and the writer of their file.
pub(crate) struct UserStore {
    users: Arc<RwLock<UsersFile>>,
    file: ConfigFile,
    /// Whether `authorizationMetadataProvider` is set: Java's user deletion also removes the
    /// user's ACL there, and answers an error without one.
    acl_store: bool,
}

/// `{"username": ..., "password": ...}` of `initAuthenticationUser`.
#[derive(Deserialize)]
struct InitUser {
    username: String,
    password: String,
}

/// Why the users could not be set up at start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error("initAuthenticationUser must be a JSON object {{\"username\":\"...\",\"password\":\"...\"}}: {0}")]
    InitUser(String),
    #[error("initAuthenticationUser: {0}")]
    InvalidUser(String),
}

impl UserStore {
    /// Loads `config/users.json` when the broker has a users store
    /// (`authenticationMetadataProvider`), and adds the start-up super users that are missing
    /// (`initAuthenticationUser`, `innerClientAuthenticationCredentials`; existing ones keep
    /// their password, as in Java).
    pub(crate) fn open(config: &BrokerConfig) -> Result<Option<UserStore>, StartError> {
        if config.authentication_metadata_provider.is_none() {
            return Ok(None);
        }
        let path = persist::config_dir(&config.store_path_root_dir).join("users.json");
        let loaded: UsersFile = persist::load(&path).unwrap_or_default();
        let users = Arc::new(RwLock::new(loaded));
        let file = ConfigFile::spawn(path, skiff_store::fs::real(), {
            let users = users.clone();
            move || serde_json::to_string_pretty(&*users.read()).expect("users serialize")
        });
        let store = UserStore {
            users,
            file,
            acl_store: config.authorization_metadata_provider.is_some(),
        };
        let mut seeds = Vec::new();
        if let Some(json) = &config.init_authentication_user {
            let init: InitUser =
                serde_json::from_str(json).map_err(|e| StartError::InitUser(e.to_string()))?;
            seeds.push((init.username, init.password));
        }
        if let Some(json) = &config.inner_client_authentication_credentials {
            if let Ok(inner) = Credentials::parse(json) {
                seeds.push((inner.access_key, inner.secret_key));
            }
        }
        for (username, password) in seeds {
            if store.users.read().users.contains_key(&username) {
                continue;
            }
            let user = UserInfo {
                username,
                password: Some(password),
                user_type: Some("Super".into()),
                user_status: None,
            };
            store.insert(user).map_err(|e| match e {
                AuthError::Denied(why) => StartError::InvalidUser(why),
                AuthError::System => StartError::InvalidUser("cannot be stored".into()),
            })?;
        }
        Ok(Some(store))
    }

    pub(crate) fn exists(&self, username: &str) -> bool {
        self.users.read().users.contains_key(username)
    }

    fn find(&self, username: &str) -> Option<User> {
        self.users.read().users.get(username).cloned()
    }

    /// Whether the caller may manage super users (`isNotSuperUserLogin`, negated): an unsigned
    /// request (authentication off) may.
    fn is_super_login(&self, caller: Option<&str>) -> Result<bool, AuthError> {
        match caller.filter(|c| !c.is_empty()) {
            None => Ok(true),
            Some(name) => match self.find(name) {
                Some(user) => Ok(user.user_type == UserType::Super),
                None => Err(AuthError::Denied(format!("User:{name} is not found"))),
            },
        }
    }

    /// `AuthenticationMetadataManagerImpl.createUser` without the caller's check.
    fn insert(&self, info: UserInfo) -> Result<(), AuthError> {
        if info.username.trim().is_empty() {
            return Err(AuthError::Denied("username can not be blank".into()));
        }
        let password = info.password.filter(|p| !p.trim().is_empty());
        let Some(password) = password else {
            return Err(AuthError::Denied("password can not be blank".into()));
        };
        let mut users = self.users.write();
        if users.users.contains_key(&info.username) {
            return Err(AuthError::Denied("The user is existed".into()));
        }
        let user = User {
            username: info.username.clone(),
            password,
            user_type: UserType::parse(info.user_type.as_deref()).unwrap_or(UserType::Normal),
            user_status: UserStatus::parse(info.user_status.as_deref())
                .unwrap_or(UserStatus::Enable),
        };
        users.users.insert(info.username, user);
        drop(users);
        self.file.request();
        Ok(())
    }

    /// AUTH_CREATE_USER. The caller's check comes first, and its refusal is a SYSTEM_ERROR, as
    /// in Java.
    pub(crate) fn create(&self, caller: Option<&str>, info: UserInfo) -> Result<(), Reply> {
        if info.username.is_empty() {
            return Err(Reply::error(
                ErrorKind::InvalidParameter,
                "The username is blank",
            ));
        }
        if UserType::parse(info.user_type.as_deref()) == Some(UserType::Super)
            && !self.is_super_login(caller)?
        {
            return Err(Reply::error(
                ErrorKind::SystemError,
                "The super user can only be create by super user",
            ));
        }
        self.insert(info).map_err(Reply::from)
    }

    /// AUTH_UPDATE_USER: the password if not blank, the type and the status if given.
    pub(crate) fn update(&self, caller: Option<&str>, info: UserInfo) -> Result<(), Reply> {
        const SUPER_ONLY: &str = "The super user can only be update by super user";
        if info.username.is_empty() {
            return Err(Reply::error(
                ErrorKind::InvalidParameter,
                "The username is blank",
            ));
        }
        let user_type = UserType::parse(info.user_type.as_deref());
        if user_type == Some(UserType::Super) && !self.is_super_login(caller)? {
            return Err(Reply::error(ErrorKind::SystemError, SUPER_ONLY));
        }
        let Some(old) = self.find(&info.username) else {
            return Err(AuthError::Denied("The user is not exist".into()).into());
        };
        if old.user_type == UserType::Super && !self.is_super_login(caller)? {
            return Err(AuthError::Denied(SUPER_ONLY.into()).into());
        }
        let mut users = self.users.write();
        let Some(user) = users.users.get_mut(&info.username) else {
            return Err(AuthError::Denied("The user is not exist".into()).into());
        };
        if let Some(password) = info.password.filter(|p| !p.trim().is_empty()) {
            user.password = password;
        }
        if let Some(user_type) = user_type {
            user.user_type = user_type;
        }
        if let Some(status) = UserStatus::parse(info.user_status.as_deref()) {
            user.user_status = status;
        }
        drop(users);
        self.file.request();
        Ok(())
    }

    /// AUTH_DELETE_USER; a missing user is not an error.
    pub(crate) fn delete(&self, caller: Option<&str>, username: &str) -> Result<(), Reply> {
        if username.trim().is_empty() {
            return Err(AuthError::Denied("username can not be blank".into()).into());
        }
        let Some(old) = self.find(username) else {
            return Ok(());
        };
        if old.user_type == UserType::Super && !self.is_super_login(caller)? {
            return Err(AuthError::Denied(
                "The super user can only be update by super user".into(),
            )
            .into());
        }
        self.users.write().users.remove(username);
        self.file.request();
        if !self.acl_store {
            // Java deletes the user, then fails to delete its ACL from the missing store.
            tracing::warn!(user = username, "user deleted, but answered as an error as Java does: authorizationMetadataProvider is not set, so the user's ACL could not be removed");
            return Err(AuthError::System.into());
        }
        Ok(())
    }

    /// AUTH_GET_USER.
    pub(crate) fn get(&self, username: &str) -> Result<Option<UserInfo>, Reply> {
        if username.is_empty() {
            return Err(Reply::error(
                ErrorKind::InvalidParameter,
                "The username is blank",
            ));
        }
        Ok(self.find(username).map(|u| u.info()))
    }

    /// AUTH_LIST_USER: names containing `filter` (case-sensitive), sorted.
    pub(crate) fn list(&self, filter: Option<&str>) -> Vec<UserInfo> {
        let filter = filter.map(str::trim).filter(|f| !f.is_empty());
        self.users
            .read()
            .users
            .values()
            .filter(|u| filter.is_none_or(|f| u.username.contains(f)))
            .map(User::info)
            .collect()
    }

    /// Waits until the users file holds every change so far. Blocks: call it from a blocking
    /// thread.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        self.file.flush(timeout)
    }

    /// The check of one request (`DefaultAuthenticationHandler`); the message is the remark of
    /// Java's NO_PERMISSION answer.
    fn authenticate(&self, access: &AccessRequest) -> Result<(), String> {
        let username = access.access_key.as_deref().unwrap_or_default();
        if username.is_empty() {
            return Err("username cannot be null.".into());
        }
        // Every request comes here: read under the lock rather than copy the user out.
        let users = self.users.read();
        let Some(user) = users.users.get(username) else {
            return Err(format!("User:{username} is not found."));
        };
        if user.user_status == UserStatus::Disable {
            return Err(format!("User:{username} is disabled."));
        }
        let expected = crate::acl::sign(&access.signed, &user.password);
        match access.signature.as_deref() {
            Some(signature) if constant_time_eq(signature.as_bytes(), expected.as_bytes()) => {
                Ok(())
            }
            _ => Err("check signature failed.".into()),
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The broker's authentication (`authenticationEnabled`): every request whose code is not in
/// `authenticationWhitelist` must be signed by a known, enabled user.
pub(crate) struct Authentication {
    users: Option<Arc<UserStore>>,
    whitelist: Vec<i32>,
}

impl Authentication {
    /// `None` when authentication is off.
    pub(crate) fn new(config: &BrokerConfig, users: Option<Arc<UserStore>>) -> Option<Self> {
        config.authentication_enabled.then(|| Authentication {
            users,
            whitelist: config.authentication_whitelist_codes(),
        })
    }

    /// `Err` is Java's answer: NO_PERMISSION with the reason.
    pub(crate) fn check(&self, access: &AccessRequest) -> Result<(), Reply> {
        if self.whitelist.contains(&access.code) {
            return Ok(());
        }
        let Some(users) = &self.users else {
            return Err(Reply::error(
                ErrorKind::NoPermission,
                "The authenticationMetadataProvider is not configured",
            ));
        };
        users
            .authenticate(access)
            .map_err(|why| Reply::error(ErrorKind::NoPermission, why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn config(dir: &std::path::Path) -> BrokerConfig {
        BrokerConfig {
            store_path_root_dir: dir.to_path_buf(),
            authentication_enabled: true,
            authentication_metadata_provider: Some(LOCAL_AUTHENTICATION_METADATA_PROVIDER.into()),
            authorization_metadata_provider: Some(LOCAL_AUTHORIZATION_METADATA_PROVIDER.into()),
            init_authentication_user: Some(r#"{"username":"root","password":"root-pass"}"#.into()),
            ..BrokerConfig::default()
        }
    }

    fn info(name: &str, password: Option<&str>, user_type: Option<&str>) -> UserInfo {
        UserInfo {
            username: name.into(),
            password: password.map(Into::into),
            user_type: user_type.map(Into::into),
            user_status: None,
        }
    }

    fn signed(user: &str, password: &str, content: &'static [u8]) -> AccessRequest {
        let signed = vec![Bytes::from_static(content)];
        AccessRequest {
            code: 34,
            access_key: Some(user.into()),
            signature: Some(crate::acl::sign(&signed, password)),
            signed,
            ..AccessRequest::default()
        }
    }

    fn denied(reply: Reply) -> (ErrorKind, String) {
        match reply {
            Reply::Error(e) => (e.kind, e.message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn users_are_managed_as_java_manages_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = UserStore::open(&config(dir.path())).unwrap().unwrap();
        assert_eq!(
            store.get("root").unwrap().unwrap().user_type.as_deref(),
            Some("Super")
        );
        store
            .create(Some("root"), info("alice", Some("pw"), None))
            .unwrap();
        let alice = store.get("alice").unwrap().unwrap();
        assert_eq!(
            (alice.user_type.as_deref(), alice.user_status.as_deref()),
            (Some("Normal"), Some("enable"))
        );
        let again = store
            .create(None, info("alice", Some("x"), None))
            .unwrap_err();
        assert_eq!(
            denied(again),
            (ErrorKind::NoPermission, "The user is existed".into())
        );
        let blank = store.create(None, info("", Some("x"), None)).unwrap_err();
        assert_eq!(
            denied(blank),
            (ErrorKind::InvalidParameter, "The username is blank".into())
        );
        let no_password = store.create(None, info("bob", None, None)).unwrap_err();
        assert_eq!(
            denied(no_password),
            (ErrorKind::NoPermission, "password can not be blank".into())
        );
        // A normal user may not make super users, nor change one.
        let by_normal = store
            .create(Some("alice"), info("eve", Some("x"), Some("SUPER")))
            .unwrap_err();
        assert_eq!(
            denied(by_normal),
            (
                ErrorKind::SystemError,
                "The super user can only be create by super user".into()
            )
        );
        let on_super = store
            .update(Some("alice"), info("root", Some("new"), None))
            .unwrap_err();
        assert_eq!(
            denied(on_super).1,
            "The super user can only be update by super user"
        );
        // Status only: the password stays.
        let disable = UserInfo {
            user_status: Some("disable".into()),
            ..info("alice", None, None)
        };
        store.update(Some("root"), disable).unwrap();
        let alice = store.get("alice").unwrap().unwrap();
        assert_eq!(
            (alice.password.as_deref(), alice.user_status.as_deref()),
            (Some("pw"), Some("disable"))
        );
        let names: Vec<String> = store
            .list(Some("li"))
            .into_iter()
            .map(|u| u.username)
            .collect();
        assert_eq!(names, vec!["alice".to_string()]);
        assert_eq!(store.list(None).len(), 2);
        store.delete(Some("root"), "alice").unwrap();
        store.delete(Some("root"), "alice").unwrap();
        assert_eq!(store.get("alice").unwrap(), None);

        // Kept across a restart; the start-up user is not reset.
        store
            .update(Some("root"), info("root", Some("changed"), None))
            .unwrap();
        assert!(store.flush(Duration::from_secs(5)));
        drop(store);
        let reopened = UserStore::open(&config(dir.path())).unwrap().unwrap();
        assert_eq!(
            reopened.get("root").unwrap().unwrap().password.as_deref(),
            Some("changed")
        );
    }

    #[test]
    fn deleting_without_an_acl_store_deletes_and_answers_an_error_as_java() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            authorization_metadata_provider: None,
            ..config(dir.path())
        };
        let store = UserStore::open(&config).unwrap().unwrap();
        store.create(None, info("alice", Some("pw"), None)).unwrap();
        let (kind, _) = denied(store.delete(None, "alice").unwrap_err());
        assert_eq!(kind, ErrorKind::SystemError);
        assert_eq!(store.get("alice").unwrap(), None);
    }

    #[test]
    fn requests_are_authenticated_in_javas_order() {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path());
        let store = Arc::new(UserStore::open(&config).unwrap().unwrap());
        let auth = Authentication::new(&config, Some(store.clone())).unwrap();
        assert!(auth.check(&signed("root", "root-pass", b"x")).is_ok());
        let cases = [
            (AccessRequest::default(), "username cannot be null."),
            (signed("nobody", "x", b"x"), "User:nobody is not found."),
            (signed("root", "wrong", b"x"), "check signature failed."),
        ];
        for (request, why) in cases {
            assert_eq!(
                denied(auth.check(&request).unwrap_err()),
                (ErrorKind::NoPermission, why.to_string())
            );
        }
        store.create(None, info("alice", Some("pw"), None)).unwrap();
        let disable = UserInfo {
            user_status: Some("disable".into()),
            ..info("alice", None, None)
        };
        store.update(None, disable).unwrap();
        assert_eq!(
            denied(auth.check(&signed("alice", "pw", b"x")).unwrap_err()).1,
            "User:alice is disabled."
        );

        // A whitelisted code passes unsigned; without a users store nothing else does.
        let open = Authentication::new(
            &BrokerConfig {
                authentication_whitelist: Some("34".into()),
                authentication_metadata_provider: None,
                ..config.clone()
            },
            None,
        )
        .unwrap();
        assert!(open
            .check(&AccessRequest {
                code: 34,
                ..AccessRequest::default()
            })
            .is_ok());
        assert_eq!(
            denied(open.check(&AccessRequest::default()).unwrap_err()).1,
            "The authenticationMetadataProvider is not configured"
        );
        assert!(Authentication::new(&BrokerConfig::default(), None).is_none());
    }
}
