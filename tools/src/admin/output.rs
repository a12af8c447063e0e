//! What a verb shows: a JSON document for scripts and a text form (usually a table) for people.

use comfy_table::{presets, ContentArrangement, Table};
use serde_json::Value;
use skiff_model::calendar::{civil_from_days, days_from_civil};

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

/// A time given on the command line: ms since the epoch, or a UTC date and time as [`time`]
/// prints it (`2026-12-02 04:00:00`, `2026-12-02T04:00:00.250Z`; seconds and ms optional).
pub fn parse_time(text: &str) -> Result<i64, String> {
    if let Ok(ms) = text.parse::<i64>() {
        return if ms >= 0 {
            Ok(ms)
        } else {
            Err(format!("{text:?} is before 1970"))
        };
    }
    let bad = || {
        format!(
            "{text:?} is not a time: give ms since the epoch or a UTC time such as \
             2026-12-02T04:00:00Z"
        )
    };
    let trimmed = text.trim_end_matches('Z');
    let (date, clock) = trimmed.split_once(['T', ' ']).unwrap_or((trimmed, "00:00"));
    let date: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let (clock, millis) = clock.split_once('.').unwrap_or((clock, "0"));
    let clock: Vec<i64> = clock
        .split(':')
        .map(|p| p.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let millis: i64 = format!("{millis:0<3}")
        .get(..3)
        .and_then(|m| m.parse().ok())
        .ok_or_else(bad)?;
    let ([y, m, d], [hh, mm, rest @ ..]) = (date.as_slice(), clock.as_slice()) else {
        return Err(bad());
    };
    let ss = rest.first().copied().unwrap_or(0);
    if rest.len() > 1
        || !(1970..=9999).contains(y)
        || !(1..=12).contains(m)
        || !(1..=31).contains(d)
        || !(0..24).contains(hh)
        || !(0..60).contains(mm)
        || !(0..60).contains(&ss)
    {
        return Err(bad());
    }
    // Checked above to fit.
    let (month, day) = (*m as u32, *d as u32);
    let days = days_from_civil(*y, month, day);
    if civil_from_days(days) != (*y, month, day) {
        return Err(bad());
    }
    Ok((((days * 24 + hh) * 60 + mm) * 60 + ss) * 1000 + millis)
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
    fn times_are_read_back_as_printed() {
        for ms in [1, 951_782_400_000, 1_796_259_723_456] {
            assert_eq!(parse_time(&time(ms)), Ok(ms));
        }
        assert_eq!(
            parse_time("2026-12-03T01:02:03.456Z"),
            Ok(1_796_259_723_456)
        );
        assert_eq!(parse_time("2026-12-03T01:02Z"), Ok(1_796_259_720_000));
        assert_eq!(parse_time("2026-12-03"), Ok(1_796_256_000_000));
        assert_eq!(parse_time("1796259723456"), Ok(1_796_259_723_456));
        for bad in [
            "-1",
            "2026-02-30",
            "2026-13-01",
            "2026-12-03T25:00",
            "yesterday",
            "1:2:3:4",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
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
