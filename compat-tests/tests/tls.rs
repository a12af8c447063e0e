//! TLS (issue 8, item 5): the official Java clients with `-Dtls.enable=true` send and consume
//! through a broker and a name server that serve TLS on their usual ports, with a certificate
//! made at test time (`openssl`) and given as Java's `tls.server.*` settings (system properties
//! for Apache's JVMs, config keys for Skiff). The clients trust any certificate
//! (`tls.test.mode.enable=true`, their default).
//!
//! - `enforcing`: plain remoting is closed on both ports; TLS is served on both.
//! - `permissive`: both are served on each port; the key is an encrypted PKCS#8 file
//!   (`tls.server.keyPassword`).

use std::path::PathBuf;
use std::time::Duration;

use skiff_compat_tests::remoting::{self, code, Conn};
use skiff_compat_tests::suite::run_for_all_clients;
use skiff_compat_tests::target::{FlushDisk, Options, Target};
use skiff_compat_tests::tls::{TestCert, TlsOptions};

const WAIT: Duration = Duration::from_secs(5);

fn cert_dir(label: &str) -> PathBuf {
    std::env::temp_dir()
        .join("skiff-compat-tls")
        .join(format!("{}-{label}", std::process::id()))
}

fn start(label: &str, mode: &'static str, password: Option<&str>) -> Target {
    let dir = cert_dir(label);
    let cert = TestCert::generate(&dir, password).expect("openssl makes a test certificate");
    let mut opts = Options::new(FlushDisk::Async).unwrap();
    opts.tls = Some(TlsOptions { mode, cert });
    Target::start_with(label, opts).unwrap()
}

/// Whether a heartbeat over a fresh connection (TLS or plain) gets a remoting answer (the name
/// server answers REQUEST_CODE_NOT_SUPPORTED, which is an answer too).
fn heartbeat(addr: &str, tls: bool) -> bool {
    let conn = if tls {
        Conn::connect_tls(addr, WAIT)
    } else {
        Conn::connect(addr, WAIT)
    };
    let Ok(mut conn) = conn else { return false };
    conn.call(code::HEART_BEAT, 7, &[], &remoting::empty_heartbeat(), WAIT)
        .is_ok()
}

#[test]
fn enforcing() {
    let target = start("tls-enforcing", "enforcing", None);
    for addr in [target.namesrv(), target.broker()] {
        assert!(heartbeat(&addr, true), "{addr}: TLS is served");
        assert!(!heartbeat(&addr, false), "{addr}: plain remoting is closed");
    }
    run_for_all_clients(&target, "producer", &[]);
    run_for_all_clients(&target, "tag-filter", &[]);
    let _ = std::fs::remove_dir_all(cert_dir("tls-enforcing"));
}

#[test]
fn permissive() {
    let target = start("tls-permissive", "permissive", Some("skiff-test-only"));
    for addr in [target.namesrv(), target.broker()] {
        assert!(heartbeat(&addr, true), "{addr}: TLS is served");
        assert!(heartbeat(&addr, false), "{addr}: plain remoting is served");
    }
    run_for_all_clients(&target, "producer", &[]);
    let _ = std::fs::remove_dir_all(cert_dir("tls-permissive"));
}
