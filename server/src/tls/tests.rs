//! The listener's TLS modes, with a certificate made for the test and rustls on the client side.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use skiff_model::command::{ErrorKind, Reply, Request};

use super::*;
use crate::net::{self, Handled, Limits, RequestContext, Service};
use crate::remoting_client::RemotingClient;

/// Answers every request with the same recognisable error.
struct Answer;

const REMARK: &str = "answered over the test listener";

impl Service for Answer {
    fn handle(self: Arc<Self>, _ctx: &RequestContext, _request: Request) -> Handled {
        Handled::Now(Reply::error(ErrorKind::SystemError, REMARK))
    }
}

struct Listener {
    addr: String,
    shutdown: tokio_util::sync::CancellationToken,
    _dir: tempfile::TempDir,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A PEM certificate and PKCS#8 key for `localhost`, written to `dir`.
fn write_cert(dir: &Path) -> (PathBuf, PathBuf) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

fn config(mode: TlsMode, dir: &Path) -> TlsConfig {
    let (cert, key) = write_cert(dir);
    TlsConfig {
        server_mode: mode,
        test_mode_enable: false,
        config_file: dir.join("no-tls.properties"),
        server_cert_path: Some(cert),
        server_key_path: Some(key),
        ..TlsConfig::default()
    }
}

async fn listen(mode: TlsMode, handshake: Duration) -> Listener {
    let dir = tempfile::tempdir().unwrap();
    let config = config(mode, dir.path());
    listen_with(config, handshake, dir).await
}

async fn listen_with(config: TlsConfig, handshake: Duration, dir: tempfile::TempDir) -> Listener {
    let tls = ServerTls::from_config(&config, "test").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let limits = Limits {
        handshake_timeout: handshake,
        idle_timeout: Duration::from_secs(30),
        ..Limits::new(1024 * 1024)
    };
    tokio::spawn(net::serve(
        listener,
        Arc::new(Answer),
        limits,
        tls,
        shutdown.clone(),
    ));
    Listener {
        addr,
        shutdown,
        _dir: dir,
    }
}

const WAIT: Duration = Duration::from_secs(5);

/// Whether a request over a fresh (TLS or plain) connection gets the service's answer.
async fn served(addr: &str, tls: bool) -> bool {
    let Ok(client) = RemotingClient::connect_with(addr, WAIT, tls).await else {
        return false;
    };
    matches!(
        client.invoke(&Request::GetBrokerClusterInfo, WAIT).await,
        Ok(Reply::Error(e)) if e.message == REMARK
    )
}

/// Sends `bytes` on a plain socket and reports whether the server closed it within `within`.
fn closed_after(addr: &str, bytes: &[u8], within: Duration) -> bool {
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket.write_all(bytes).unwrap();
    socket.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 64];
    // EOF (or a reset) = closed; a timeout = still open.
    loop {
        match socket.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

#[tokio::test]
async fn permissive_serves_tls_and_plain_on_one_port() {
    let listener = listen(TlsMode::Permissive, HANDSHAKE_TIMEOUT).await;
    assert!(served(&listener.addr, true).await);
    assert!(served(&listener.addr, false).await);
}

#[tokio::test]
async fn enforcing_serves_tls_and_closes_plain() {
    let listener = listen(TlsMode::Enforcing, HANDSHAKE_TIMEOUT).await;
    assert!(served(&listener.addr, true).await);
    assert!(!served(&listener.addr, false).await);
    let addr = listener.addr.clone();
    let garbage = tokio::task::spawn_blocking(move || closed_after(&addr, b"\xff\x00", WAIT));
    assert!(garbage.await.unwrap(), "a garbage first byte is closed");
}

#[tokio::test]
async fn disabled_closes_tls() {
    let listener = listen(TlsMode::Disabled, HANDSHAKE_TIMEOUT).await;
    assert!(!served(&listener.addr, true).await);
    assert!(served(&listener.addr, false).await);
}

#[tokio::test]
async fn stalled_handshake_is_reaped() {
    let handshake = Duration::from_millis(300);
    for mode in [TlsMode::Permissive, TlsMode::Enforcing] {
        let listener = listen(mode, handshake).await;
        let addr = listener.addr.clone();
        let started = Instant::now();
        // A TLS record header, then nothing more.
        let closed = tokio::task::spawn_blocking(move || {
            closed_after(&addr, &[0x16, 0x03, 0x01], Duration::from_secs(5))
        });
        assert!(closed.await.unwrap(), "{mode}: stalled handshake closed");
        assert!(started.elapsed() < Duration::from_secs(4), "{mode}");
        // The listener still serves.
        assert!(served(&listener.addr, true).await, "{mode}");
    }
    // Enforcing: silence before the handshake counts as a stalled handshake.
    let listener = listen(TlsMode::Enforcing, handshake).await;
    let addr = listener.addr.clone();
    let closed =
        tokio::task::spawn_blocking(move || closed_after(&addr, &[], Duration::from_secs(5)));
    assert!(
        closed.await.unwrap(),
        "enforcing: a silent connection is closed"
    );
}

#[tokio::test]
async fn empty_and_one_byte_connections_leave_the_listener_serving() {
    for mode in [TlsMode::Permissive, TlsMode::Enforcing] {
        let listener = listen(mode, Duration::from_millis(300)).await;
        for bytes in [&b""[..], &[0x16][..], &[0x00][..]] {
            let socket = std::net::TcpStream::connect(&listener.addr).unwrap();
            (&socket).write_all(bytes).unwrap();
            drop(socket);
        }
        assert!(served(&listener.addr, true).await, "{mode}");
    }
}

#[test]
fn encrypted_pkcs8_key_is_read_with_its_password() {
    use pkcs8::der::pem::LineEnding;
    use pkcs8::pkcs5::pbes2::Parameters;
    let dir = tempfile::tempdir().unwrap();
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let der = generated.signing_key.serialize_der();
    let plain = pkcs8::PrivateKeyInfo::try_from(der.as_slice()).unwrap();
    // What `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes: PBES2, PBKDF2-SHA256, AES-256-CBC.
    let params = Parameters::pbkdf2_sha256_aes256cbc(2048, &[7; 16], &[9; 16]).unwrap();
    let encrypted = plain
        .encrypt_with_params(params, b"s3cret")
        .unwrap()
        .to_pem("ENCRYPTED PRIVATE KEY", LineEnding::LF)
        .unwrap();
    let key = dir.path().join("server.key");
    std::fs::write(&key, encrypted.as_bytes()).unwrap();
    let cert = dir.path().join("server.pem");
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    let mut tls = TlsConfig {
        test_mode_enable: false,
        config_file: dir.path().join("none"),
        server_cert_path: Some(cert),
        server_key_path: Some(key),
        ..TlsConfig::default()
    };
    let err = ServerTls::from_config(&tls, "test")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("tls.server.keyPassword"), "{err}");
    tls.server_key_password = Some(Secret("wrong".into()));
    let err = ServerTls::from_config(&tls, "test")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("tls.server.keyPassword"), "{err}");
    tls.server_key_password = Some(Secret("s3cret".into()));
    ServerTls::from_config(&tls, "test").unwrap();
}

#[test]
fn certificate_errors_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut tls = config(TlsMode::Enforcing, dir.path());
    tls.server_key_path = Some(dir.path().join("missing.key"));
    let err = ServerTls::from_config(&tls, "test")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("tls.server.keyPath"), "{err}");
    tls.server_key_path = None;
    let err = ServerTls::from_config(&tls, "test")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("tls.server.keyPath"), "{err}");
    let tls = TlsConfig {
        test_mode_enable: false,
        config_file: dir.path().join("none"),
        ..TlsConfig::default()
    };
    let err = ServerTls::from_config(&tls, "test")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("tls.server.certPath"), "{err}");
    // Test mode without files: a generated certificate, as Java's test mode.
    let tls = TlsConfig {
        config_file: dir.path().join("none"),
        ..TlsConfig::default()
    };
    assert_eq!(
        ServerTls::from_config(&tls, "test").unwrap().mode(),
        TlsMode::Permissive
    );
}

type ClientCert = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// A CA written to `dir/ca.pem`, and a client certificate it signed.
fn client_pki(dir: &Path) -> (PathBuf, ClientCert) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let ca_path = dir.join("ca.pem");
    std::fs::write(&ca_path, ca.pem()).unwrap();
    let mut params = CertificateParams::new(vec!["client".to_string()]).unwrap();
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &*ca).unwrap();
    let key = PrivateKeyDer::Pkcs8(key.serialize_der().into());
    (ca_path, (vec![cert.der().clone()], key))
}

fn dup(cert: &ClientCert) -> ClientCert {
    (cert.0.clone(), cert.1.clone_key())
}

/// A certificate no CA of the test signed.
fn stranger() -> ClientCert {
    let generated = rcgen::generate_simple_self_signed(vec!["stranger".to_string()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(generated.signing_key.serialize_der().into());
    (vec![generated.cert.der().clone()], key)
}

/// Whether a request over TLS, presenting `cert` if any, is answered. (With TLS 1.3 a refused
/// client certificate shows only after the client's side of the handshake, hence the request.)
async fn served_with(addr: &str, cert: Option<ClientCert>) -> bool {
    use futures::{SinkExt, StreamExt};
    use skiff_protocol::remoting::{self, RemotingCodec};
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate { mandatory: false }));
    let config = match cert {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).unwrap(),
        None => builder.with_no_client_auth(),
    };
    let attempt = async {
        let stream = TcpStream::connect(addr).await.ok()?;
        let name = ServerName::try_from("localhost").unwrap();
        let tls = TlsConnector::from(Arc::new(config))
            .connect(name, stream)
            .await
            .ok()?;
        let mut framed = tokio_util::codec::Framed::new(tls, RemotingCodec::new(1024 * 1024));
        let request = remoting::encode_request(&Request::GetBrokerClusterInfo, 1, false);
        framed.send(request).await.ok()?;
        let reply = framed.next().await?.ok()?;
        Some(reply.remark.as_deref() == Some(REMARK))
    };
    tokio::time::timeout(WAIT, attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

#[tokio::test]
async fn client_certificates_as_need_client_auth_and_auth_client_say() {
    let pki = tempfile::tempdir().unwrap();
    let (ca, signed) = client_pki(pki.path());
    let scratch = || tempfile::tempdir().unwrap();

    // require, authClient=false (Java's default): any certificate, but one is needed.
    let mut tls = config(TlsMode::Enforcing, pki.path());
    tls.server_need_client_auth = ClientAuth::Require;
    let listener = listen_with(tls.clone(), HANDSHAKE_TIMEOUT, scratch()).await;
    assert!(
        !served_with(&listener.addr, None).await,
        "require: no certificate"
    );
    assert!(
        served_with(&listener.addr, Some(stranger())).await,
        "require: any certificate"
    );
    assert!(served_with(&listener.addr, Some(dup(&signed))).await);

    // require, authClient=true: only certificates the trusted CA signed.
    let mut verified = tls;
    verified.server_auth_client = true;
    verified.server_trust_cert_path = Some(ca);
    let listener = listen_with(verified.clone(), HANDSHAKE_TIMEOUT, scratch()).await;
    assert!(!served_with(&listener.addr, None).await);
    assert!(
        !served_with(&listener.addr, Some(stranger())).await,
        "untrusted CA"
    );
    assert!(
        served_with(&listener.addr, Some(dup(&signed))).await,
        "trusted CA"
    );

    // optional, authClient=true: none is fine, a wrong one is not.
    let mut optional = verified.clone();
    optional.server_need_client_auth = ClientAuth::Optional;
    let listener = listen_with(optional, HANDSHAKE_TIMEOUT, scratch()).await;
    assert!(
        served_with(&listener.addr, None).await,
        "optional: no certificate"
    );
    assert!(served_with(&listener.addr, Some(signed)).await);
    assert!(!served_with(&listener.addr, Some(stranger())).await);

    // authClient=true needs somewhere to find the CA.
    let mut missing = verified;
    missing.server_trust_cert_path = None;
    let err = ServerTls::from_config(&missing, "test")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("tls.server.trustCertPath"), "{err}");
}
