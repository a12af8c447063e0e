//! A reader for Java `.properties` files (`broker.conf`, `namesrv.properties`), following
//! `java.util.Properties.load`: `#`/`!` comments, `key=value`, `key: value` and `key value`,
//! backslash line continuations and escapes (`\t`, `\n`, `\uXXXX`, ...). Values are trimmed at both
//! ends, as RocketMQ's `MixAll.properties2Object` trims string settings.

/// One `key = value` setting and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub line: usize,
    pub key: String,
    pub value: String,
}

/// A syntax error: the 1-based line and what is wrong.
pub(crate) type SyntaxError = (usize, String);

pub(crate) fn parse(text: &str) -> Result<Vec<Entry>, SyntaxError> {
    let lines = natural_lines(text);
    let mut entries = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line_no = i + 1;
        let first = trim_start(lines[i]);
        i += 1;
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        // Join continuation lines: an odd number of trailing backslashes escapes the line end,
        // and the next line's leading whitespace is dropped.
        let mut logical = first.to_owned();
        while ends_with_odd_backslashes(&logical) {
            logical.pop();
            match lines.get(i) {
                Some(next) => {
                    logical.push_str(trim_start(next));
                    i += 1;
                }
                None => break,
            }
        }
        let (key, value) = split_key_value(&logical);
        let key = unescape(key).map_err(|e| (line_no, e))?;
        let value = unescape(value).map_err(|e| (line_no, e))?;
        entries.push(Entry {
            line: line_no,
            key: key.trim().to_owned(),
            value: value.trim().to_owned(),
        });
    }
    Ok(entries)
}

/// Lines ended by `\n`, `\r\n` or `\r`, as Java's `LineReader` sees them.
pub(crate) fn natural_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find(['\n', '\r']) {
            Some(end) => {
                lines.push(&rest[..end]);
                let skip = if rest[end..].starts_with("\r\n") {
                    2
                } else {
                    1
                };
                rest = &rest[end + skip..];
            }
            None => {
                lines.push(rest);
                rest = "";
            }
        }
    }
    lines
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

fn trim_start(line: &str) -> &str {
    line.trim_start_matches(is_blank)
}

pub(crate) fn ends_with_odd_backslashes(line: &str) -> bool {
    line.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or blank (blanks around the separator belong to it).
/// Both halves are still escaped.
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (pos, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' {
            return (&line[..pos], trim_start(&line[pos + 1..]));
        } else if is_blank(c) {
            let rest = trim_start(&line[pos..]);
            let rest = rest
                .strip_prefix(['=', ':'])
                .map(trim_start)
                .unwrap_or(rest);
            return (&line[..pos], rest);
        }
    }
    (line, "")
}

fn unescape(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let unit = hex4(&mut chars)?;
                out.push(utf16_char(unit, &mut chars)?);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

fn hex4(chars: &mut std::str::Chars<'_>) -> Result<u16, String> {
    let digits: String = chars.by_ref().take(4).collect();
    if digits.len() == 4 && digits.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(u16::from_str_radix(&digits, 16).expect("four hex digits fit in u16"))
    } else {
        Err(format!("malformed \\uXXXX escape: \\u{digits}"))
    }
}

/// Decodes one UTF-16 unit, reading a following `\uXXXX` low surrogate when `unit` is a high one
/// (Java strings are UTF-16, so characters beyond U+FFFF are written as a pair).
fn utf16_char(unit: u16, chars: &mut std::str::Chars<'_>) -> Result<char, String> {
    if !(0xD800..0xDC00).contains(&unit) {
        return Ok(char::from_u32(unit.into()).unwrap_or(char::REPLACEMENT_CHARACTER));
    }
    let mut ahead = chars.clone();
    if ahead.next() == Some('\\') && ahead.next() == Some('u') {
        let low = hex4(&mut ahead)?;
        if (0xDC00..0xE000).contains(&low) {
            *chars = ahead;
            let decoded = char::decode_utf16([unit, low]).next();
            return Ok(decoded
                .and_then(Result::ok)
                .unwrap_or(char::REPLACEMENT_CHARACTER));
        }
    }
    Ok(char::REPLACEMENT_CHARACTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(usize, String, String)> {
        parse(text)
            .unwrap()
            .into_iter()
            .map(|e| (e.line, e.key, e.value))
            .collect()
    }

    fn entry(line: usize, key: &str, value: &str) -> (usize, String, String) {
        (line, key.to_owned(), value.to_owned())
    }

    #[test]
    fn separators_comments_and_blank_lines() {
        let text = "# comment\n! also a comment\n\n  a=1\nb: 2\nc 3\nd = 4 \ne\n  f\t=\t6\n";
        assert_eq!(
            pairs(text),
            vec![
                entry(4, "a", "1"),
                entry(5, "b", "2"),
                entry(6, "c", "3"),
                entry(7, "d", "4"),
                entry(8, "e", ""),
                entry(9, "f", "6"),
            ]
        );
    }

    #[test]
    fn value_keeps_later_separators() {
        assert_eq!(
            pairs("namesrvAddr=127.0.0.1:9876;127.0.0.2:9876\nk = = x"),
            vec![
                entry(1, "namesrvAddr", "127.0.0.1:9876;127.0.0.2:9876"),
                entry(2, "k", "= x"),
            ]
        );
    }

    #[test]
    fn continuation_lines() {
        let text = "a = one, \\\n     two\nb = x\\\\\nc = y\\\n";
        assert_eq!(
            pairs(text),
            vec![
                entry(1, "a", "one, two"),
                entry(3, "b", "x\\"),
                entry(4, "c", "y"),
            ]
        );
    }

    #[test]
    fn comment_line_does_not_continue() {
        assert_eq!(pairs("# a \\\nb=1"), vec![entry(2, "b", "1")]);
    }

    #[test]
    fn line_endings() {
        assert_eq!(
            pairs("a=1\r\nb=2\rc=3"),
            vec![entry(1, "a", "1"), entry(2, "b", "2"), entry(3, "c", "3")]
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(
            pairs(r"key\ with\=odd\:chars = tab\tnew\nA\u00e9\uD83D\uDE00\q"),
            vec![entry(1, "key with=odd:chars", "tab\tnew\nAé😀q")]
        );
    }

    #[test]
    fn malformed_unicode_escape_names_the_line() {
        let err = parse("a=1\nb=\\u12x4").unwrap_err();
        assert_eq!(err.0, 2);
        assert!(err.1.contains("\\uXXXX"), "{}", err.1);
    }
}
