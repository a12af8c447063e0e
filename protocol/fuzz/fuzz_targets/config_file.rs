//! Feeds arbitrary text to the broker and name server config readers, as a hand-edited or
//! truncated `broker.conf` / `broker.toml` would be. Reading must end in settings or a
//! `ConfigError`, never a panic; a config that validates must also survive `validate` again.
//!
//! Input layout: the first byte picks the format (even: Java properties, odd: TOML), the rest is
//! the file's bytes.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use skiff_server::config::{BrokerConfig, NamesrvConfig};

/// One scratch directory per fuzzing process, in memory when the machine has /dev/shm.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = std::path::Path::new("/dev/shm");
        let base = if base.is_dir() { base.to_path_buf() } else { std::env::temp_dir() };
        let dir = base.join(format!("skiff-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let [format, text @ ..] = data else {
        return;
    };
    let name = if format % 2 == 0 { "broker.conf" } else { "broker.toml" };
    let path = scratch().join(name);
    std::fs::write(&path, text).expect("scratch file");
    let mut broker = BrokerConfig::default();
    if broker.apply_file(&path).is_ok() && broker.validate().is_ok() {
        assert!(broker.validate().is_ok());
    }
    let mut namesrv = NamesrvConfig::default();
    let _ = namesrv.apply_file(&path);
});
