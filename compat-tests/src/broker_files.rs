//! Reads what a broker of either kind persisted under `<storePathRootDir>/config/`. Both write
//! these files the way Java's fastjson does, with map keys that are numbers left unquoted
//! (`{"offsetTable":{"T@g":{0:12,1:0}}}`), which is not JSON; the few values the tests need are
//! picked out by hand.

use std::collections::BTreeMap;

/// The committed offsets of `topic@group` in the text of a `consumerOffset.json`, by queue id;
/// `None` if the entry is absent or unreadable.
pub fn committed_offsets(text: &str, topic_at_group: &str) -> Option<BTreeMap<u32, i64>> {
    let key = format!("\"{topic_at_group}\"");
    let rest = &text[text.find(&key)? + key.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let inner = rest.strip_prefix('{')?;
    let inner = &inner[..inner.find('}')?];
    let mut offsets = BTreeMap::new();
    for entry in inner.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (queue, offset) = entry.split_once(':')?;
        let queue = queue.trim().trim_matches('"').parse().ok()?;
        offsets.insert(queue, offset.trim().parse().ok()?);
    }
    Some(offsets)
}

/// JSON from fastjson's text: quotes the bare integer object keys it writes (`{0:"a",1:"b"}` → `{"0":"a","1":"b"}`),
/// outside strings.
pub fn quote_int_keys(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    let mut in_str = false;
    let mut escaped = false;
    let chars: Vec<char> = json.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        if c == '"' {
            in_str = true;
            out.push(c);
            i += 1;
            continue;
        }
        if (c == '{' || c == ',') && i + 1 < chars.len() {
            out.push(c);
            let mut j = i + 1;
            while j < chars.len() && chars[j].is_ascii_whitespace() {
                j += 1;
            }
            let start = j;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '-') {
                j += 1;
            }
            if j > start && j < chars.len() && chars[j] == ':' {
                out.push('"');
                out.extend(&chars[start..j]);
                out.push('"');
                i = j;
                continue;
            }
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_bare_integer_keys_only_outside_strings() {
        assert_eq!(
            quote_int_keys(r#"{"a":{0:"x,1:y",1:"z"},"b":[1,2]}"#),
            r#"{"a":{"0":"x,1:y","1":"z"},"b":[1,2]}"#
        );
    }

    #[test]
    fn reads_fastjson_offsets_with_unquoted_or_quoted_keys() {
        let pretty = "{\n\t\"offsetTable\":{\n\t\t\"T@g\":{0:12,1:0\n\t\t},\"U@g\":{3:4}\n\t}\n}";
        assert_eq!(
            committed_offsets(pretty, "T@g").unwrap(),
            BTreeMap::from([(0, 12), (1, 0)])
        );
        assert_eq!(
            committed_offsets(r#"{"offsetTable":{"U@g":{"3":4}}}"#, "U@g").unwrap(),
            BTreeMap::from([(3, 4)])
        );
        assert_eq!(committed_offsets(pretty, "V@g"), None);
        assert_eq!(committed_offsets(r#"{"T@g":{0:x}}"#, "T@g"), None);
    }
}
