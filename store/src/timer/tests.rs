use super::*;
use crate::timer::log::magic;

fn config(dir: &Path) -> TimerStoreConfig {
    TimerStoreConfig {
        root_dir: dir.to_path_buf(),
        precision_ms: 1000,
        log_file_size: 52 * 10 + 16,
        log_resident_tail: 0,
    }
}

fn offsets(units: &[Unit]) -> Vec<i64> {
    units.iter().map(|u| u.offset_py).collect()
}

#[test]
fn units_of_a_tick_walk_back_from_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, recovered) = TimerStore::open(&config(dir.path())).unwrap();
    assert!(recovered.checkpoint.is_none());
    for i in 0..25 {
        let slot = if i % 2 == 0 { 5_000 } else { 7_000 };
        store
            .add(slot, 1_000, i * 100, 90, magic::DEFAULT, 0)
            .unwrap();
    }
    assert_eq!(store.count(5_000), 13);
    assert_eq!(store.newest(6_000), None);
    let start = store.newest(5_000).unwrap();
    let (first, next) = store.walk(5_000, start, 5);
    assert_eq!(offsets(&first), vec![2400, 2200, 2000, 1800, 1600]);
    let (rest, end) = store.walk(5_000, next.unwrap(), 100);
    assert_eq!(rest.len(), 8);
    assert_eq!(end, None);
    assert_eq!(rest.last().unwrap().offset_py, 0);
}

#[test]
fn reopen_after_flush_keeps_slots_and_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut store, _) = TimerStore::open(&config(dir.path())).unwrap();
        store.add(9_000, 1_000, 42, 90, magic::DEFAULT, 0).unwrap();
        store.flush(3_000, 7, 1_234).unwrap();
        // Added after the checkpoint: recovery reports it as already in the log.
        store.add(9_000, 1_000, 43, 90, magic::DEFAULT, 0).unwrap();
    }
    let (store, recovered) = TimerStore::open(&config(dir.path())).unwrap();
    let cp = recovered.checkpoint.unwrap();
    assert_eq!(
        (cp.last_read_time_ms, cp.last_timer_queue_offset),
        (3_000, 7)
    );
    assert_eq!(cp.last_timer_log_flush_pos, 52);
    assert_eq!(recovered.already_in_log, HashSet::from([43]));
    let (units, _) = store.walk(9_000, store.newest(9_000).unwrap(), 10);
    assert_eq!(offsets(&units), vec![43, 42]);
}

#[test]
fn a_torn_unit_is_cut_and_the_wheel_repaired() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut store, _) = TimerStore::open(&config(dir.path())).unwrap();
        for i in 0..3 {
            store.add(4_000, 1_000, i, 90, magic::DEFAULT, 0).unwrap();
        }
    }
    // A crash tore the third unit, and the wheel never saw the second (its slot write was lost).
    let log_file = log_dir(dir.path()).join(format!("{:020}", 0));
    let mut bytes = std::fs::read(&log_file).unwrap();
    bytes[104..130].fill(0);
    std::fs::write(&log_file, &bytes).unwrap();
    {
        let mut wheel = std::fs::read(wheel_path(dir.path())).unwrap();
        let at = 4 * wheel::SLOT_SIZE;
        wheel[at + 16..at + 24].copy_from_slice(&0i64.to_be_bytes());
        std::fs::write(wheel_path(dir.path()), &wheel).unwrap();
    }
    let (mut store, recovered) = TimerStore::open(&config(dir.path())).unwrap();
    assert_eq!(recovered.log_end, 104);
    let (units, _) = store.walk(4_000, store.newest(4_000).unwrap(), 10);
    assert_eq!(offsets(&units), vec![1, 0]);
    // Appends continue where the valid log ends.
    store.add(4_000, 1_000, 9, 90, magic::DEFAULT, 0).unwrap();
    assert_eq!(store.log_end(), 156);
}

#[test]
fn a_wheel_of_another_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(wheel_path(dir.path()), [0u8; 64]).unwrap();
    let err = TimerStore::open(&config(dir.path())).err().unwrap();
    assert!(err.to_string().contains("timerwheel"), "{err}");
}
