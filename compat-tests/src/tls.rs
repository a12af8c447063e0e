//! TLS for the harness: a throw-away certificate made with the `openssl` CLI at test time (no key
//! is ever committed), the settings that give it to either kind of broker (Java's `tls.server.*`
//! names: system properties for Apache's JVMs, config keys for Skiff), the Java client's
//! `-Dtls.enable=true`, and a rustls client for the readiness probe.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use anyhow::{bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A self-signed certificate for `localhost` and its key, as PEM files.
#[derive(Debug, Clone)]
pub struct TestCert {
    pub cert: PathBuf,
    /// PKCS#8; encrypted (PBES2, AES-256-CBC) when `password` is set.
    pub key: PathBuf,
    pub password: Option<String>,
}

impl TestCert {
    /// Makes an RSA certificate in `dir` with `openssl`, the way an operator would.
    pub fn generate(dir: &Path, password: Option<&str>) -> Result<TestCert> {
        std::fs::create_dir_all(dir)?;
        let cert = dir.join("server.pem");
        let plain_key = dir.join("server-plain.key");
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-keyout",
            path(&plain_key)?,
            "-out",
            path(&cert)?,
        ])?;
        let key = match password {
            None => plain_key,
            Some(password) => {
                let key = dir.join("server.key");
                openssl(&[
                    "pkcs8",
                    "-topk8",
                    "-v2",
                    "aes-256-cbc",
                    "-in",
                    path(&plain_key)?,
                    "-out",
                    path(&key)?,
                    "-passout",
                    &format!("pass:{password}"),
                ])?;
                std::fs::remove_file(&plain_key)?;
                key
            }
        };
        Ok(TestCert {
            cert,
            key,
            password: password.map(str::to_string),
        })
    }
}

fn path(p: &Path) -> Result<&str> {
    p.to_str()
        .with_context(|| format!("{} is not UTF-8", p.display()))
}

fn openssl(args: &[&str]) -> Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .context("run openssl (is the openssl CLI installed?)")?;
    if !out.status.success() {
        bail!(
            "openssl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// TLS on a target's listeners.
#[derive(Debug, Clone)]
pub struct TlsOptions {
    /// `tls.server.mode`: `permissive` or `enforcing`.
    pub mode: &'static str,
    pub cert: TestCert,
}

impl TlsOptions {
    /// Java's `tls.server.*` settings for this certificate. Test mode is off, or Java would serve
    /// a certificate of its own; `tls.config.file` points nowhere so that the machine's
    /// `/etc/rocketmq/tls.properties` plays no part.
    pub fn server_settings(&self, dir: &Path) -> Vec<(&'static str, String)> {
        let mut settings = vec![
            ("tls.server.mode", self.mode.to_string()),
            ("tls.test.mode.enable", "false".to_string()),
            ("tls.server.certPath", self.cert.cert.display().to_string()),
            ("tls.server.keyPath", self.cert.key.display().to_string()),
            (
                "tls.config.file",
                dir.join("no-tls.properties").display().to_string(),
            ),
        ];
        if let Some(password) = &self.cert.password {
            settings.push(("tls.server.keyPassword", password.clone()));
        }
        settings
    }

    /// The same settings as JVM system properties (how Apache's broker and name server read them).
    pub fn jvm_args(&self, dir: &Path) -> Vec<String> {
        self.server_settings(dir)
            .into_iter()
            .map(|(k, v)| format!("-D{k}={v}"))
            .collect()
    }

    /// What the Java client needs: TLS on all its connections, trusting any server certificate
    /// (`tls.test.mode.enable`, the client's default, said explicitly).
    pub fn client_jvm_args(&self, dir: &Path) -> Vec<String> {
        vec![
            "-Dtls.enable=true".to_string(),
            "-Dtls.test.mode.enable=true".to_string(),
            format!(
                "-Dtls.config.file={}",
                dir.join("no-tls.properties").display()
            ),
        ]
    }

    /// Whether plain connections are refused (the probe must use TLS).
    pub fn enforcing(&self) -> bool {
        self.mode == "enforcing"
    }
}

fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// A client configuration that accepts any server certificate but checks the handshake.
pub fn client_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let config = rustls::ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .expect("ring offers TLS 1.2 and 1.3")
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyServer))
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

#[derive(Debug)]
struct AnyServer;

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &provider().signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
