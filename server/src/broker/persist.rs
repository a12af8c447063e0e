//! The broker's JSON config files under `<storePathRootDir>/config/`, written the way Apache
//! RocketMQ writes them (`MixAll.string2File`): the new content goes to `<name>.tmp`, the current
//! file is kept as `<name>.bak`, then the temporary file replaces it. Reading falls back to the
//! `.bak` copy when the main file is missing or unreadable, so a crash mid-write loses nothing.
//!
//! Files written by the Java broker use fastjson's dialect (bare integer keys), so they are read
//! with the lenient parser from `skiff-protocol`.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::warn;

/// Where the broker keeps `topics.json`, `subscriptionGroup.json` and `consumerOffset.json`.
pub fn config_dir(store_root: &Path) -> PathBuf {
    store_root.join("config")
}

/// Reads and parses `path`, or its `.bak` copy. `None` if neither exists or parses.
pub fn load<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let backup = with_suffix(path, ".bak");
    for candidate in [path, backup.as_path()] {
        let text = match fs::read_to_string(candidate) {
            Ok(text) if !text.trim().is_empty() => text,
            Ok(_) => continue,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                warn!(file = %candidate.display(), %err, "cannot read config file");
                continue;
            }
        };
        // Files Skiff wrote are plain JSON: the direct parse is several times faster (100,000
        // topics). fastjson's dialect (bare integer keys, nulls) falls back to the lenient parser.
        if let Ok(value) = serde_json::from_str(&text) {
            return Some(value);
        }
        match skiff_protocol::fastjson::from_str(&text) {
            Ok(value) => return Some(value),
            Err(err) => {
                warn!(file = %candidate.display(), %err, "config file is unreadable; trying its backup");
            }
        }
    }
    None
}

/// Replaces `path` with `content`, keeping the previous version as `<path>.bak`. Blocks (fsync):
/// call it from a blocking thread, or better give the file a [`super::config_file::ConfigFile`].
/// The broker's own files all have one; rarely written state files (the Kafka producer id
/// blocks) use this.
pub fn store(path: &Path, content: &str) -> std::io::Result<()> {
    store_with(&skiff_store::fs::RealFs, path, content)
}

/// [`store`] through a given file system (tests inject faults). The temporary file has a name
/// of its own (`<name>.tmp.<pid>.<n>`), so two writers can never write through one file; a
/// failed write removes it and leaves the main file as it was.
pub fn store_with(
    file_system: &dyn skiff_store::fs::FileSystem,
    path: &Path,
    content: &str,
) -> std::io::Result<()> {
    static NEXT_TMP: AtomicU64 = AtomicU64::new(0);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let n = NEXT_TMP.fetch_add(1, Ordering::Relaxed);
    let tmp = with_suffix(path, &format!(".tmp.{}.{n}", std::process::id()));
    if let Err(e) = file_system.write_synced(&tmp, content.as_bytes()) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    let result = (|| {
        if path.exists() {
            fs::copy(path, with_suffix(path, ".bak"))?;
        }
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_a_backup_and_reads_it_when_the_main_file_is_torn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/topics.json");
        store(&path, r#"{"v":1}"#).unwrap();
        store(&path, r#"{"v":2}"#).unwrap();
        let load_value = |p: &Path| load::<serde_json::Value>(p);
        assert_eq!(load_value(&path).unwrap()["v"], 2);
        fs::write(&path, "{\"v\":").unwrap();
        assert_eq!(load_value(&path).unwrap()["v"], 1);
        fs::remove_file(&path).unwrap();
        fs::remove_file(with_suffix(&path, ".bak")).unwrap();
        assert!(load_value(&path).is_none());
    }

    #[test]
    fn reads_fastjson_bare_integer_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("consumerOffset.json");
        fs::write(
            &path,
            "{\n\t\"offsetTable\":{\n\t\t\"T@g\":{0:12,1:0\n\t\t}\n\t}\n}",
        )
        .unwrap();
        let value: serde_json::Value = load(&path).unwrap();
        assert_eq!(value["offsetTable"]["T@g"]["0"], 12);
    }
}
