//! What a verb shows: a JSON document for scripts and a text form (usually a table) for people.

use comfy_table::{presets, ContentArrangement, Table};
use serde_json::Value;

pub struct Shown {
    pub json: Value,
    pub text: String,
}

impl Shown {
    pub fn new(json: Value, text: String) -> Shown {
        Shown { json, text }
    }

    pub fn print(&self, json: bool) {
        use std::io::Write;
        let text = if json {
            // Serializing a Value cannot fail.
            serde_json::to_string_pretty(&self.json).unwrap_or_default()
        } else {
            self.text.trim_end().to_string()
        };
        if !text.is_empty() {
            // A closed pipe (`| head`) is the reader's choice, not a failure worth a panic.
            let _ = writeln!(std::io::stdout().lock(), "{text}");
        }
    }
}

/// A table with a header row and columns separated by spaces, like mqadmin's printf output (so
/// that `awk` still works on it).
pub fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    for row in rows {
        table.add_row(row);
    }
    // comfy-table pads every line to the table's width; trailing blanks are noise.
    table
        .lines()
        .map(|line| line.trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A store timestamp (ms since the epoch) as UTC `YYYY-MM-DD HH:MM:SS.mmm`, or `-` for 0.
pub fn time(ms: i64) -> String {
    if ms <= 0 {
        return "-".to_string();
    }
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        ms.rem_euclid(1000)
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc() {
        assert_eq!(time(0), "-");
        assert_eq!(time(1), "1970-01-01 00:00:00.001");
        assert_eq!(time(951_782_400_000), "2000-02-29 00:00:00.000");
        assert_eq!(time(1_796_259_723_456), "2026-12-03 01:02:03.456");
    }

    #[test]
    fn tables_align_columns_without_trailing_blanks() {
        let text = table(
            &["Topic", "Queues"],
            vec![
                vec!["a".into(), "8".into()],
                vec!["longer".into(), "16".into()],
            ],
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines.iter().all(|l| !l.ends_with(' ')), "{text}");
        assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), ["a", "8"]);
    }
}
