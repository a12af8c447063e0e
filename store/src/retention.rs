//! Deleting old data and watching the disk (Java's `CleanCommitLogService`,
//! `CleanConsumeQueueService` and the disk-full check), every `clean_resource_interval_ms`.
//!
//! * CommitLog segments older than `file_reserved_time_hours` go at the `delete_when` hours, or at
//!   any hour once the disk is fuller than `disk_max_used_space_ratio` or an operator asked
//!   (`MessageStore::delete_expired_files_manually`, the next 20 rounds); past
//!   `disk_space_clean_forcibly_ratio` the oldest go whatever their age.
//! * ConsumeQueue and index files entirely below the CommitLog's new min offset follow, and
//!   queue min offsets move (a pull below them gets `OffsetTooSmall`).
//! * Past `disk_space_warning_level_ratio` the store refuses puts until space frees up.

use std::sync::Arc;
use std::time::Duration;

use crate::local_time;
use crate::message_store::Shared;

/// Used shares of the CommitLog and ConsumeQueue disks.
struct DiskUsage {
    physic: f64,
    logics: f64,
}

pub(crate) struct Retention {
    last_physical_min: i64,
}

impl Retention {
    pub(crate) fn new() -> Self {
        Retention {
            last_physical_min: -1,
        }
    }

    /// One round: disk check, segment deletion, queue and index follow-up.
    pub(crate) fn tick(&mut self, shared: &Shared) {
        let config = shared.retention.read().clone();
        let disk = DiskUsage {
            physic: shared.env.disk.used_ratio(&shared.config.commit_log_dir()),
            logics: shared
                .env
                .disk
                .used_ratio(&shared.config.consume_queue_dir()),
        };
        let warning = (f64::from(config.disk_space_warning_level_ratio) / 100.0).clamp(0.35, 0.90);
        let forcibly =
            (f64::from(config.disk_space_clean_forcibly_ratio) / 100.0).clamp(0.30, 0.85);
        let max_used = f64::from(config.disk_max_used_space_ratio.clamp(10, 95)) / 100.0;

        let full = disk.physic > warning || disk.logics > warning;
        if shared.set_disk_full(full) != full {
            if full {
                tracing::error!(
                    commit_log = disk.physic,
                    consume_queue = disk.logics,
                    "disk nearly full; refusing puts"
                );
            } else {
                tracing::info!(
                    commit_log = disk.physic,
                    consume_queue = disk.logics,
                    "disk space ok again; taking puts"
                );
            }
        }
        let clean_now = disk.physic > forcibly || disk.logics > forcibly;
        let space_to_delete = clean_now
            || disk.physic < 0.0
            || disk.physic > max_used
            || disk.logics < 0.0
            || disk.logics > max_used;
        let now = shared.env.clock.now_ms();
        let manual = shared
            .manual_delete_rounds
            .fetch_update(
                std::sync::atomic::Ordering::AcqRel,
                std::sync::atomic::Ordering::Acquire,
                |n| n.checked_sub(1),
            )
            .is_ok();
        if is_time_to_delete(&config.delete_when, now) || space_to_delete || manual {
            let reserved_ms = config.file_reserved_time_hours as i64 * 3_600_000;
            let at_once = config.clean_file_forcibly_enable && clean_now;
            match shared.commit_log.delete_expired(
                now,
                reserved_ms,
                at_once,
                config.delete_file_batch_max,
            ) {
                Ok(0) if space_to_delete => {
                    tracing::warn!("disk space will be full soon, but no segment could be deleted")
                }
                Ok(0) => {}
                Ok(count) => tracing::info!(count, at_once, "deleted expired commit log segments"),
                Err(e) => tracing::error!(error = %e, "deleting commit log segments failed"),
            }
        }
        let min = shared.commit_log.min_offset();
        if min > self.last_physical_min {
            self.last_physical_min = min;
            for queue in shared.queues.all() {
                if let Err(e) = queue.delete_expired(min) {
                    tracing::warn!(topic = queue.topic(), queue_id = queue.queue_id(), error = %e, "deleting consume queue files failed");
                }
            }
            if let Some(index) = &shared.index {
                index.delete_expired(min);
            }
        }
    }
}

/// Whether the local hour is one of `delete_when`'s (`"04"`, `"04;16"`; `UtilAll.isItTimeToDo`).
fn is_time_to_delete(delete_when: &str, now: i64) -> bool {
    let hour = local_time::hour(now);
    delete_when
        .split(';')
        .filter_map(|h| h.trim().parse::<i32>().ok())
        .any(|h| h == hour)
}

/// The retention thread.
pub(crate) fn run_retention(shared: Arc<Shared>) {
    let interval = Duration::from_millis(shared.config.clean_resource_interval_ms);
    let mut retention = Retention::new();
    while shared.retention_waker.wait(interval) {
        retention.tick(&shared);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_when_lists_local_hours() {
        let now = 1_700_000_000_000;
        let hour = local_time::hour(now);
        assert!(is_time_to_delete(&format!("{hour:02}"), now));
        assert!(is_time_to_delete(&format!("99;{hour}"), now));
        assert!(!is_time_to_delete(&format!("{}", (hour + 1) % 24), now));
        assert!(!is_time_to_delete("x", now));
    }
}
