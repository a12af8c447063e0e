//! TLS (issue 8, item 5): the official Java clients with `-Dtls.enable=true` send and consume
//! through a broker and a name server that serve TLS on their usual ports, with a certificate
//! made at test time (`openssl`) and given as Java's `tls.server.*` settings (system properties
//! for Apache's JVMs, config keys for Skiff). The clients trust any certificate
//! (`tls.test.mode.enable=true`, their default).
//!
//! - `enforcing`: plain remoting is closed on both ports; TLS is served on both.
//! - `permissive`: both are served on each port; the key is an encrypted PKCS#8 file
//!   (`tls.server.keyPassword`; a plain one against Apache 4.9, which cannot read it).

use std::path::PathBuf;
use std::time::Duration;

use skiff_compat_tests::remoting::{self, code, Conn};
use skiff_compat_tests::settings::{self, TargetKind};
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

/// Whether a request over a fresh connection (TLS or plain) gets a remoting answer: cluster info
/// from the name server, a heartbeat from the broker (the probe's requests).
fn answered(addr: &str, request: i32, tls: bool) -> bool {
    let conn = if tls {
        Conn::connect_tls(addr, WAIT)
    } else {
        Conn::connect(addr, WAIT)
    };
    let Ok(mut conn) = conn else { return false };
    let body = match request {
        code::HEART_BEAT => remoting::empty_heartbeat(),
        _ => Vec::new(),
    };
    conn.call(request, 7, &[], &body, WAIT)
        .is_ok_and(|reply| reply.code() == 0)
}

fn ports(target: &Target) -> [(String, i32); 2] {
    [
        (target.namesrv(), code::GET_BROKER_CLUSTER_INFO),
        (target.broker(), code::HEART_BEAT),
    ]
}

#[test]
fn enforcing() {
    let target = start("tls-enforcing", "enforcing", None);
    for (addr, request) in ports(&target) {
        assert!(answered(&addr, request, true), "{addr}: TLS is served");
        assert!(
            !answered(&addr, request, false),
            "{addr}: plain remoting is closed"
        );
    }
    run_for_all_clients(&target, "producer", &[]);
    run_for_all_clients(&target, "tag-filter", &[]);
    let _ = std::fs::remove_dir_all(cert_dir("tls-enforcing"));
}

#[test]
fn permissive() {
    // Apache 4.9's Netty cannot read PBES2-encrypted keys ("PBES2 SecretKeyFactory not
    // available"); 5.3.3's can.
    let apache_49 = settings::target_kind().unwrap() == TargetKind::Apache
        && settings::apache_version().starts_with("4.");
    let password = (!apache_49).then_some("skiff-test-only");
    let target = start("tls-permissive", "permissive", password);
    for (addr, request) in ports(&target) {
        assert!(answered(&addr, request, true), "{addr}: TLS is served");
        assert!(
            answered(&addr, request, false),
            "{addr}: plain remoting is served"
        );
    }
    run_for_all_clients(&target, "producer", &[]);
    let _ = std::fs::remove_dir_all(cert_dir("tls-permissive"));
}
