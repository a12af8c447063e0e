//! Settings changed at runtime (UPDATE_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG) written back into
//! the config file the process started from, so that they hold after a restart: Java's
//! `Configuration.persist` rewrites its config file too (the broker's `-c` file).
//!
//! Java writes the file anew with every setting it knows, in hash order. Skiff changes only the
//! lines of the keys that changed and appends keys the file did not have: comments, order and
//! the operator's other lines stay as they were. A TOML file stays TOML, with its layout kept
//! (`toml_edit`) and each value keeping its type.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tracing::warn;

use super::properties;
use crate::broker::config_file::ConfigFile;

/// The config file of a running process and the settings changed since it started.
pub(crate) struct WriteBack {
    changed: Arc<Mutex<Vec<(String, String)>>>,
    file: ConfigFile,
}

impl WriteBack {
    /// Starts the writer of `path` (a serialized writer thread; nothing is written until a
    /// setting changes).
    pub(crate) fn spawn(path: PathBuf) -> WriteBack {
        let changed: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let is_toml = path.extension().is_some_and(|ext| ext == "toml");
        // If the file cannot be read when a change is written, the change goes into the text it
        // had at the start rather than into an empty file.
        let at_start = super::source::read_text(&path).unwrap_or_default();
        let file = ConfigFile::spawn(path.clone(), skiff_store::fs::real(), {
            let (changed, path) = (changed.clone(), path.clone());
            move || {
                let text = super::source::read_text(&path).unwrap_or_else(|err| {
                    warn!(%err, "config file unreadable; writing the changed settings into the text it had at the start");
                    at_start.clone()
                });
                let changed = changed.lock().clone();
                rewrite(&text, is_toml, &changed).unwrap_or_else(|err| {
                    warn!(file = %path.display(), %err, "config file no longer parses; the settings changed at runtime are not written into it");
                    text
                })
            }
        });
        WriteBack { changed, file }
    }

    pub(crate) fn path(&self) -> &Path {
        self.file.path()
    }

    /// Records `updates` (later values win) and asks for the file to be rewritten; returns at
    /// once.
    pub(crate) fn record(&self, updates: &[(String, String)]) {
        {
            let mut changed = self.changed.lock();
            for (key, value) in updates {
                match changed.iter_mut().find(|(k, _)| k == key) {
                    Some(entry) => entry.1 = value.clone(),
                    None => changed.push((key.clone(), value.clone())),
                }
            }
        }
        self.file.request();
    }

    /// Waits until every recorded change is in the file, or `timeout` passed; returns whether
    /// it is. Blocks: not for async workers.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        self.file.flush(timeout)
    }
}

/// `text` (a config file) with each of `updates` set: the key's line replaced, or appended.
pub(crate) fn rewrite(
    text: &str,
    is_toml: bool,
    updates: &[(String, String)],
) -> Result<String, String> {
    if is_toml {
        rewrite_toml(text, updates)
    } else {
        rewrite_properties(text, updates)
    }
}

fn rewrite_properties(text: &str, updates: &[(String, String)]) -> Result<String, String> {
    let entries =
        properties::parse(text).map_err(|(line, message)| format!("line {line}: {message}"))?;
    let lines = properties::natural_lines(text);
    // Per natural line: kept as it is (`None`), or replaced by a line or by nothing.
    let mut replaced: Vec<Option<Option<String>>> = vec![None; lines.len()];
    let mut appended = Vec::new();
    for (key, value) in updates {
        let line = format!("{}={}", escape(key, true), escape(value, false));
        let starts: Vec<usize> = entries
            .iter()
            .filter(|e| e.key == *key)
            .map(|e| e.line - 1)
            .collect();
        // Java's `Properties` keeps the last of repeated keys: that one takes the new value,
        // the earlier ones go.
        let Some((&last, earlier)) = starts.split_last() else {
            appended.push(line);
            continue;
        };
        for &start in earlier {
            for slot in &mut replaced[span(&lines, start)] {
                *slot = Some(None);
            }
        }
        let span = span(&lines, last);
        for slot in &mut replaced[span.clone()] {
            *slot = Some(None);
        }
        replaced[span.start] = Some(Some(line));
    }
    let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(text.len() + 64);
    for (line, replacement) in lines.iter().zip(replaced) {
        match replacement {
            None => out.push_str(line),
            Some(Some(new)) => out.push_str(&new),
            Some(None) => continue,
        }
        out.push_str(eol);
    }
    for line in appended {
        out.push_str(&line);
        out.push_str(eol);
    }
    Ok(out)
}

/// The natural lines of the logical line starting at `start` (backslash continuations).
fn span(lines: &[&str], start: usize) -> std::ops::Range<usize> {
    let mut end = start;
    while properties::ends_with_odd_backslashes(lines[end]) && end + 1 < lines.len() {
        end += 1;
    }
    start..end + 1
}

/// What `properties::parse` needs escaped to read the text back: backslashes and control
/// characters, a leading blank of a value, and in keys blanks, separators and a leading comment
/// mark. Nothing else, so that values read as written (`namesrvAddr=10.0.0.1:9876`), as Java's
/// `MixAll.properties2String` writes them.
fn escape(text: &str, is_key: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            ' ' if is_key || i == 0 => out.push_str("\\ "),
            '=' | ':' if is_key => {
                out.push('\\');
                out.push(c);
            }
            '#' | '!' if is_key && i == 0 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn rewrite_toml(text: &str, updates: &[(String, String)]) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    for (key, value) in updates {
        // Replaced in place, so that the key keeps its own decor (the comments above it).
        match doc.get_mut(key).and_then(toml_edit::Item::as_value_mut) {
            Some(old) => {
                let mut new = toml_value(Some(old), value);
                *new.decor_mut() = old.decor().clone();
                *old = new;
            }
            None => {
                doc.insert(key, toml_edit::Item::Value(toml_value(None, value)));
            }
        }
    }
    Ok(doc.to_string())
}

/// `value` as the type the key had in the file (a number stays a number), or for a new key the
/// type it reads as.
fn toml_value(old: Option<&toml_edit::Value>, value: &str) -> toml_edit::Value {
    // Only where the number reads back as the same text: `deleteWhen = "04"` stays a string.
    let as_int = || {
        value
            .parse::<i64>()
            .ok()
            .filter(|n| n.to_string() == value)
            .map(toml_edit::Value::from)
    };
    let as_bool = || value.parse::<bool>().ok().map(toml_edit::Value::from);
    let typed = match old {
        Some(toml_edit::Value::String(_)) => None,
        Some(toml_edit::Value::Integer(_)) => as_int(),
        Some(toml_edit::Value::Boolean(_)) => as_bool(),
        Some(_) => None,
        None => as_int().or_else(as_bool),
    };
    typed.unwrap_or_else(|| toml_edit::Value::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn properties_keep_comments_and_order() {
        let text = "# my broker\nbrokerName = broker-a\n\nlistenPort=10911\n# flush\nflushDiskType=ASYNC_FLUSH\n";
        let out = rewrite(
            text,
            false,
            &set(&[
                ("flushDiskType", "SYNC_FLUSH"),
                ("deleteWhen", "04"),
                ("brokerName", "broker-b"),
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            "# my broker\nbrokerName=broker-b\n\nlistenPort=10911\n# flush\nflushDiskType=SYNC_FLUSH\ndeleteWhen=04\n"
        );
    }

    #[test]
    fn properties_continuations_repeats_and_escapes() {
        let text =
            "a=1\nnamesrvAddr=127.0.0.1:9876;\\\n   127.0.0.2:9876\nb=2\na=3\r\nlast=no newline";
        let out = rewrite(
            text,
            false,
            &set(&[
                ("namesrvAddr", "10.0.0.1:9876"),
                ("a", " x=y#"),
                ("odd key", "v"),
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            "namesrvAddr=10.0.0.1:9876\r\nb=2\r\na=\\ x=y#\r\nlast=no newline\r\nodd\\ key=v\r\n"
        );
        // What is written reads back as the values set.
        let read: Vec<(String, String)> = properties::parse(&out)
            .unwrap()
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect();
        assert!(read.contains(&("namesrvAddr".into(), "10.0.0.1:9876".into())));
        assert!(read.contains(&("a".into(), "x=y#".into())));
        assert!(read.contains(&("odd key".into(), "v".into())));
    }

    #[test]
    fn toml_keeps_layout_and_types() {
        let text = "# broker\nbrokerName = \"broker-a\" # the group\nlistenPort = 10911\nautoCreateTopicEnable = true\n\"tls.server.mode\" = \"disabled\"\n";
        let out = rewrite(
            text,
            true,
            &set(&[
                ("listenPort", "10921"),
                ("autoCreateTopicEnable", "false"),
                ("brokerName", "broker-b"),
                ("tls.server.mode", "enforcing"),
                ("deleteWhen", "04"),
                ("brokerClusterName", "Cluster-1"),
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            "# broker\nbrokerName = \"broker-b\" # the group\nlistenPort = 10921\nautoCreateTopicEnable = false\n\"tls.server.mode\" = \"enforcing\"\ndeleteWhen = \"04\"\nbrokerClusterName = \"Cluster-1\"\n"
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused() {
        assert!(rewrite("a = \"unterminated\n", true, &set(&[("a", "b")])).is_err());
        assert!(rewrite("a=\\u12\n", false, &set(&[("a", "b")])).is_err());
    }

    #[test]
    fn the_writer_keeps_the_file_up_to_date() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broker.conf");
        std::fs::write(&path, "brokerName=broker-a\nbrokerPermission=6\n").unwrap();
        let write_back = WriteBack::spawn(path.clone());
        write_back.record(&set(&[("brokerPermission", "4")]));
        write_back.record(&set(&[("deleteWhen", "01"), ("brokerPermission", "2")]));
        assert!(write_back.flush(Duration::from_secs(5)));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "brokerName=broker-a\nbrokerPermission=2\ndeleteWhen=01\n"
        );
        // Java's `MixAll.string2File` keeps the previous file as `.bak`.
        assert!(dir.path().join("broker.conf.bak").exists());
    }
}
