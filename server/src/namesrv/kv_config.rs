//! The name server's key-value configuration (`KVConfigManager`): namespaces of string keys, as
//! `mqadmin updateKvConfig` writes them and clients read them (`ORDER_TOPIC_CONFIG` holds the
//! broker list of ordered topics). Held in memory: Skiff's name server keeps no files, so the
//! table starts empty after a restart (Java persists it to `kvConfig.json`).

use std::collections::{BTreeMap, HashMap};

use parking_lot::RwLock;
use skiff_model::admin::AdminReply;
use skiff_model::command::{ErrorKind, Reply};
use tracing::info;

#[derive(Default)]
pub struct KvConfigManager {
    namespaces: RwLock<HashMap<String, BTreeMap<String, String>>>,
}

impl KvConfigManager {
    pub fn put(&self, namespace: &str, key: &str, value: &str) -> Reply {
        let previous = self
            .namespaces
            .write()
            .entry(namespace.to_string())
            .or_default()
            .insert(key.to_string(), value.to_string());
        info!(
            namespace,
            key,
            value,
            updated = previous.is_some(),
            "kv config set"
        );
        Reply::Success
    }

    /// Java's QUERY_NOT_FOUND answer when the key is not set.
    pub fn get(&self, namespace: &str, key: &str) -> Reply {
        match self
            .namespaces
            .read()
            .get(namespace)
            .and_then(|table| table.get(key))
        {
            Some(value) => Reply::Admin(AdminReply::KvValue(value.clone())),
            None => Reply::error(
                ErrorKind::QueryNotFound,
                format!("No config item, Namespace: {namespace} Key: {key}"),
            ),
        }
    }

    /// Removing an absent key succeeds; the namespace stays (empty), as in Java.
    pub fn delete(&self, namespace: &str, key: &str) -> Reply {
        if let Some(table) = self.namespaces.write().get_mut(namespace) {
            if table.remove(key).is_some() {
                info!(namespace, key, "kv config deleted");
            }
        }
        Reply::Success
    }

    pub fn list(&self, namespace: &str) -> Reply {
        match self.namespaces.read().get(namespace) {
            Some(table) => Reply::Admin(AdminReply::KvList(table.clone())),
            None => Reply::error(
                ErrorKind::QueryNotFound,
                format!("No config item, Namespace: {namespace}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_list_delete() {
        let kv = KvConfigManager::default();
        assert_eq!(
            kv.get("ns", "k"),
            Reply::error(
                ErrorKind::QueryNotFound,
                "No config item, Namespace: ns Key: k"
            )
        );
        assert_eq!(kv.put("ns", "k", "v1"), Reply::Success);
        assert_eq!(kv.put("ns", "k", "v2"), Reply::Success);
        kv.put("ns", "j", "x");
        assert_eq!(
            kv.get("ns", "k"),
            Reply::Admin(AdminReply::KvValue("v2".into()))
        );
        let expected: BTreeMap<String, String> = [("j", "x"), ("k", "v2")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(kv.list("ns"), Reply::Admin(AdminReply::KvList(expected)));
        assert_eq!(kv.delete("ns", "k"), Reply::Success);
        assert_eq!(kv.delete("ns", "absent"), Reply::Success);
        assert_eq!(kv.delete("other", "k"), Reply::Success);
        assert!(matches!(kv.get("ns", "k"), Reply::Error(_)));
        assert_eq!(
            kv.list("other"),
            Reply::error(ErrorKind::QueryNotFound, "No config item, Namespace: other")
        );
    }
}
