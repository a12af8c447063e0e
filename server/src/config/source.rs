//! Reading a config file — TOML when the name ends in `.toml`, Java properties otherwise — into
//! `key = value` settings with their line numbers, and applying them.

use std::path::Path;

use toml::de::{DeTable, DeValue};

use super::properties::{self, Entry};
use super::{set_one, ConfigError, Location, Settings};

/// Applies every setting of the file at `path` to `settings`, stopping at the first error.
pub(crate) fn apply_file<S: Settings>(settings: &mut S, path: &Path) -> Result<(), ConfigError> {
    let text = read_text(path)?;
    let at = |line| Location::File {
        path: path.to_owned(),
        line,
    };
    let entries = if path.extension().is_some_and(|ext| ext == "toml") {
        toml_entries(&text).map_err(|(line, message)| ConfigError::Syntax {
            at: at(line),
            message,
        })?
    } else {
        properties::parse(&text).map_err(|(line, message)| ConfigError::Syntax {
            at: at(line),
            message,
        })?
    };
    for entry in entries {
        set_one(settings, &entry.key, &entry.value, Some(at(entry.line)))?;
    }
    Ok(())
}

/// The file as text: UTF-8, or else ISO-8859-1, which is how Java's `Properties.load` reads bytes.
pub(crate) fn read_text(path: &Path) -> Result<String, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|e| e.into_bytes().into_iter().map(char::from).collect()))
}

/// Top-level `key = value` pairs in file order, each scalar rendered as the text a properties
/// file would hold, so that both formats go through the same value parsers.
fn toml_entries(text: &str) -> Result<Vec<Entry>, properties::SyntaxError> {
    let table = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(text, span.start));
        (line, e.message().to_owned())
    })?;
    let mut entries = Vec::new();
    for (key, value) in table.get_ref() {
        let line = line_of(text, key.span().start);
        let value =
            match value.get_ref() {
                DeValue::String(s) => s.to_string(),
                DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix())
                    .map_err(|_| (line, format!("{}: integer out of range", key.get_ref())))?
                    .to_string(),
                DeValue::Float(f) => f.as_str().to_owned(),
                DeValue::Boolean(b) => b.to_string(),
                DeValue::Table(_) if key.get_ref() == "tls" => return Err((
                    line,
                    "tls.* settings must be quoted in TOML (\"tls.server.mode\" = \"enforcing\"); \
                     unquoted, TOML reads tls.server.mode as a table"
                        .to_string(),
                )),
                DeValue::Table(_) => {
                    return Err((
                        line,
                        format!(
                            "[{}]: settings are not grouped in tables; write Java's keys \
                         (such as listenPort = 10911) at the top level",
                            key.get_ref()
                        ),
                    ))
                }
                DeValue::Datetime(_) | DeValue::Array(_) => {
                    return Err((
                        line,
                        format!(
                            "{}: expected a string, an integer or a boolean",
                            key.get_ref()
                        ),
                    ))
                }
            };
        entries.push(Entry {
            line,
            key: key.get_ref().to_string(),
            value: value.trim().to_owned(),
        });
    }
    entries.sort_by_key(|entry| entry.line);
    Ok(entries)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(usize, String, String)> {
        toml_entries(text)
            .unwrap()
            .into_iter()
            .map(|e| (e.line, e.key, e.value))
            .collect()
    }

    #[test]
    fn toml_scalars_become_text_in_file_order() {
        let text = "# c\nlistenPort = 10_911\nbrokerName = \"broker-a\"\n\nautoCreateTopicEnable = false\nmask = 0x1F\n";
        assert_eq!(
            pairs(text),
            vec![
                (2, "listenPort".into(), "10911".into()),
                (3, "brokerName".into(), "broker-a".into()),
                (5, "autoCreateTopicEnable".into(), "false".into()),
                (6, "mask".into(), "31".into()),
            ]
        );
    }

    #[test]
    fn toml_tables_and_arrays_are_refused_with_their_line() {
        let err = toml_entries("a = 1\n[broker]\nlistenPort = 1\n").unwrap_err();
        assert_eq!(err.0, 2);
        assert!(err.1.contains("top level"), "{}", err.1);
        let err = toml_entries("a = 1\nb = [1, 2]\n").unwrap_err();
        assert_eq!(err.0, 2);
    }

    #[test]
    fn toml_tls_keys_are_quoted() {
        let pairs = pairs("\"tls.server.mode\" = \"enforcing\"\n");
        assert_eq!(
            pairs,
            vec![(1, "tls.server.mode".into(), "enforcing".into())]
        );
        let err = toml_entries("tls.server.mode = \"enforcing\"\n").unwrap_err();
        assert!(err.1.contains("quoted"), "{}", err.1);
    }

    #[test]
    fn toml_syntax_error_has_a_line() {
        let err = toml_entries("a = 1\nb = \"unterminated\n").unwrap_err();
        assert_eq!(err.0, 2, "{}", err.1);
    }
}
