//! What the store asks of its surroundings, behind traits so tests can fake them: the time (store
//! timestamps, flush and retention schedules), disk usage (retention, disk-full refusal) and the
//! file operations that can fail ([`crate::fs::FileSystem`]: allocation, msync).

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}

/// The used share (0.0–1.0) of the disk partition holding a path, or -1.0 if unknown
/// (`UtilAll.getDiskPartitionSpaceUsedPercent`).
pub trait DiskProbe: Send + Sync {
    fn used_ratio(&self, path: &Path) -> f64;
}

/// Asks the file system (`statvfs`), rounding up to whole percents as Java does.
#[derive(Debug, Default, Clone, Copy)]
pub struct StatvfsDisk;

impl DiskProbe for StatvfsDisk {
    fn used_ratio(&self, path: &Path) -> f64 {
        let Ok(stat) = rustix::fs::statvfs(path) else {
            return -1.0;
        };
        let total = stat.f_blocks.saturating_mul(stat.f_frsize);
        if total == 0 {
            return -1.0;
        }
        let free = stat.f_bfree.saturating_mul(stat.f_frsize);
        let usable = stat.f_bavail.saturating_mul(stat.f_frsize);
        let used = total.saturating_sub(free);
        let entire = used + usable;
        if entire == 0 {
            return -1.0;
        }
        let round = u64::from(used * 100 % entire != 0);
        (used * 100 / entire + round) as f64 / 100.0
    }
}

/// The store's surroundings.
#[derive(Clone)]
pub struct StoreEnv {
    pub clock: Arc<dyn Clock>,
    pub disk: Arc<dyn DiskProbe>,
    pub fs: crate::fs::Fs,
}

impl Default for StoreEnv {
    fn default() -> Self {
        StoreEnv {
            clock: Arc::new(SystemClock),
            disk: Arc::new(StatvfsDisk),
            fs: crate::fs::real(),
        }
    }
}

impl std::fmt::Debug for StoreEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreEnv").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_disk_has_a_ratio() {
        let ratio = StatvfsDisk.used_ratio(Path::new("/"));
        assert!((0.0..=1.0).contains(&ratio), "{ratio}");
        assert!(SystemClock.now_ms() > 1_600_000_000_000);
    }
}
