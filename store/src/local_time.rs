//! Local wall-clock fields, which Java uses for IndexFile names and `deleteWhen` hours.

/// Year, month (1-12), day, hour, minute, second of `ms` since the epoch, in local time.
fn fields(ms: i64) -> [i32; 6] {
    let seconds = ms.div_euclid(1000) as libc::time_t;
    // SAFETY: `tm` is plain data; localtime_r only writes into it.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&seconds, &mut tm).is_null() {
            return [1970, 1, 1, 0, 0, 0];
        }
        tm
    };
    [
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
    ]
}

/// The local hour (0-23).
pub(crate) fn hour(ms: i64) -> i32 {
    fields(ms)[3]
}

/// `yyyyMMddHHmmssSSS` (`UtilAll.timeMillisToHumanString`).
pub(crate) fn human(ms: i64) -> String {
    let [year, month, day, hour, minute, second] = fields(ms);
    format!(
        "{year:04}{month:02}{day:02}{hour:02}{minute:02}{second:02}{:03}",
        ms.rem_euclid(1000)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_java() {
        let name = human(1_700_000_000_123);
        assert_eq!(name.len(), 17);
        assert!(name.ends_with("123"));
        assert!(name.starts_with("2023111"), "{name}");
        assert!((0..24).contains(&hour(1_700_000_000_123)));
    }
}
