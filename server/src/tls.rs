//! TLS on the remoting port, as Java's `NettyRemotingServer` offers it: one port for TLS and plain
//! remoting, told apart by the first byte a client sends (`0x16`, a TLS handshake record, as
//! Java's `TlsModeHandler` checks; a remoting frame starts with its length, whose first byte is 0
//! for any frame under 16 MiB). `tls.server.mode` picks what is accepted ([`TlsMode`]).
//!
//! Certificates come from the files Java's `tls.server.*` settings name ([`TlsConfig`]). With
//! none configured and `tls.test.mode.enable` on (Java's default), the server serves a certificate
//! it generates at start, as Java's test mode does; Java's clients trust any server certificate in
//! their own test mode (also their default).
//!
//! The broker's connections to name servers use TLS when `useTLS` / `tls.enable` say so
//! ([`TlsConfig::client_uses_tls`]); like Java's clients in their default test mode, they do not
//! verify the server's certificate (the link is encrypted, not authenticated).
//!
//! This module knows sockets and certificates, not the remoting protocol: `crate::net` hands it
//! each accepted connection and serves what comes back.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, pki_types};
use tokio_rustls::{TlsAcceptor, TlsConnector};
use tracing::{debug, info};

use crate::config::{ClientAuth, Secret, TlsConfig, TlsMode};
use pki_types::pem::PemObject;
use pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// The first byte of a TLS handshake record (a ClientHello), Java's `HANDSHAKE_MAGIC_CODE`.
const HANDSHAKE_RECORD: u8 = 0x16;

/// Netty's `SslHandler` default: a handshake not done by then is closed.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// What a listener accepts, and the TLS server configuration when it accepts TLS.
pub struct ServerTls {
    mode: TlsMode,
    acceptor: Option<TlsAcceptor>,
}

/// An accepted connection, ready for remoting frames.
pub enum Accepted {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl ServerTls {
    /// Plain remoting only, without looking at the first byte.
    pub fn disabled() -> Arc<ServerTls> {
        Arc::new(ServerTls {
            mode: TlsMode::Disabled,
            acceptor: None,
        })
    }

    /// Reads `tls.config.file` and the certificate files; errors name the setting to fix.
    /// `role` ("broker", "name server") goes into the log.
    pub fn from_config(config: &TlsConfig, role: &str) -> anyhow::Result<Arc<ServerTls>> {
        if config.server_mode == TlsMode::Disabled {
            info!("{role}: TLS disabled (tls.server.mode=disabled): plain remoting only");
            return Ok(ServerTls::disabled());
        }
        let config = config.with_config_file()?;
        let server_config = server_config(&config, role)?;
        info!(
            "{role}: tls.server.mode={}: {}",
            config.server_mode,
            match config.server_mode {
                TlsMode::Enforcing => "TLS only, plain connections are closed",
                _ => "TLS and plain remoting on the same port",
            }
        );
        Ok(Arc::new(ServerTls {
            mode: config.server_mode,
            acceptor: Some(TlsAcceptor::from(Arc::new(server_config))),
        }))
    }

    pub fn mode(&self) -> TlsMode {
        self.mode
    }

    /// Tells TLS from plain by the first byte and completes a TLS handshake; `None` = closed.
    /// A peer silent before its first byte is given `idle` (as any idle connection), a started
    /// handshake `handshake`.
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        idle: Duration,
        handshake: Duration,
    ) -> Option<Accepted> {
        let Some(acceptor) = &self.acceptor else {
            return Some(Accepted::Plain(stream));
        };
        // Enforcing: everything before the handshake ends counts as the handshake.
        let first_wait = match self.mode {
            TlsMode::Enforcing => handshake,
            _ => idle,
        };
        let mut first = [0u8; 1];
        match tokio::time::timeout(first_wait, stream.peek(&mut first)).await {
            Ok(Ok(1..)) => {}
            Ok(Ok(0)) | Ok(Err(_)) => return None,
            Err(_) => {
                info!(%peer, wait = ?first_wait, "closing a connection that sent nothing");
                return None;
            }
        }
        if first[0] != HANDSHAKE_RECORD {
            if self.mode == TlsMode::Enforcing {
                info!(%peer, "closing a plain (non-TLS) connection: tls.server.mode=enforcing");
                return None;
            }
            return Some(Accepted::Plain(stream));
        }
        match tokio::time::timeout(handshake, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => {
                debug!(%peer, "TLS handshake done");
                Some(Accepted::Tls(Box::new(tls)))
            }
            Ok(Err(err)) => {
                info!(%peer, %err, "closing a connection: TLS handshake failed");
                None
            }
            Err(_) => {
                info!(%peer, timeout = ?handshake, "closing a connection: TLS handshake not done in time");
                None
            }
        }
    }
}

fn server_config(config: &TlsConfig, role: &str) -> anyhow::Result<rustls::ServerConfig> {
    let (certs, key) = certified_key(config, role)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS: the crypto provider offers no protocol version")?;
    let builder = match config.server_need_client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        auth => builder.with_client_cert_verifier(client_verifier(config, auth)?),
    };
    builder.with_single_cert(certs, key).map_err(|err| {
        anyhow!(
            "tls.server.keyPath: the key does not fit tls.server.certPath or is not usable: {err}"
        )
    })
}

type CertifiedKey = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn certified_key(config: &TlsConfig, role: &str) -> anyhow::Result<CertifiedKey> {
    match (&config.server_cert_path, &config.server_key_path) {
        (Some(cert), Some(key)) => Ok((
            load_certs(cert, "tls.server.certPath")?,
            load_key(key, config.server_key_password.as_ref())?,
        )),
        (Some(_), None) => bail!("tls.server.certPath is set but tls.server.keyPath is not"),
        (None, Some(_)) => bail!("tls.server.keyPath is set but tls.server.certPath is not"),
        (None, None) if config.test_mode_enable => {
            info!(
                "{role}: TLS clients get a self-signed certificate made at start \
                 (tls.test.mode.enable=true, as in Java); set tls.server.certPath and \
                 tls.server.keyPath to serve your own"
            );
            let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
                .context("TLS: cannot generate the test-mode certificate")?;
            let key = PrivateKeyDer::Pkcs8(generated.signing_key.serialize_der().into());
            Ok((vec![generated.cert.der().clone()], key))
        }
        (None, None) => bail!(
            "tls.server.certPath and tls.server.keyPath are not set (and tls.test.mode.enable \
             is false): give the certificate files, or set tls.server.mode=disabled"
        ),
    }
}

fn load_certs(path: &Path, key: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|err| {
            anyhow!(
                "{key}: cannot read PEM certificates from {}: {err}",
                path.display()
            )
        })?;
    if certs.is_empty() {
        bail!("{key}: no PEM certificate in {}", path.display());
    }
    Ok(certs)
}

fn load_key(path: &Path, password: Option<&Secret>) -> anyhow::Result<PrivateKeyDer<'static>> {
    let pem = std::fs::read(path)
        .with_context(|| format!("tls.server.keyPath: cannot read {}", path.display()))?;
    let text = String::from_utf8_lossy(&pem);
    const ENCRYPTED_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const ENCRYPTED_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    if let Some(begin) = text.find(ENCRYPTED_BEGIN) {
        let Some(password) = password else {
            bail!(
                "tls.server.keyPath: {} is an encrypted PKCS#8 key: set tls.server.keyPassword",
                path.display()
            );
        };
        let end = text[begin..]
            .find(ENCRYPTED_END)
            .map(|end| begin + end + ENCRYPTED_END.len())
            .ok_or_else(|| anyhow!("tls.server.keyPath: {} is cut short", path.display()))?;
        let (_, document) = pkcs8::Document::from_pem(&text[begin..end])
            .map_err(|err| anyhow!("tls.server.keyPath: {}: bad PEM: {err}", path.display()))?;
        let info =
            pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes()).map_err(|err| {
                anyhow!(
                    "tls.server.keyPath: {}: bad encrypted key: {err}",
                    path.display()
                )
            })?;
        let plain = info.decrypt(password.0.as_bytes()).map_err(|err| {
            anyhow!(
                "tls.server.keyPassword: cannot decrypt {} ({err}): wrong password, or a cipher \
                 other than PBES2 with AES",
                path.display()
            )
        })?;
        return Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()));
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|err| {
        anyhow!(
            "tls.server.keyPath: no private key in {} ({err}): expected a PEM PKCS#8, PKCS#1 or \
             SEC1 key",
            path.display()
        )
    })
}

fn client_verifier(
    config: &TlsConfig,
    auth: ClientAuth,
) -> anyhow::Result<Arc<dyn ClientCertVerifier>> {
    let mandatory = auth == ClientAuth::Require;
    if !config.server_auth_client {
        // Java's server then trusts any client certificate (`InsecureTrustManagerFactory`).
        if config.server_trust_cert_path.is_some() {
            tracing::warn!(
                "tls.server.trustCertPath is not used while tls.server.authClient is false \
                 (as in Java): any client certificate is accepted"
            );
        }
        return Ok(Arc::new(AnyCertificate { mandatory }));
    }
    let Some(path) = &config.server_trust_cert_path else {
        bail!("tls.server.authClient is true but tls.server.trustCertPath is not set");
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in load_certs(path, "tls.server.trustCertPath")? {
        roots
            .add(cert)
            .map_err(|err| anyhow!("tls.server.trustCertPath: {}: {err}", path.display()))?;
    }
    let builder =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
    let builder = if mandatory {
        builder
    } else {
        builder.allow_unauthenticated()
    };
    builder
        .build()
        .map_err(|err| anyhow!("tls.server.trustCertPath: {err}"))
}

/// Accepts any certificate while still checking that the peer holds its key: Java's
/// `InsecureTrustManagerFactory`, for the server's clients and the broker's name servers.
#[derive(Debug)]
struct AnyCertificate {
    mandatory: bool,
}

impl AnyCertificate {
    fn tls12(
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

    fn tls13(
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

    fn schemes() -> Vec<SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl ClientCertVerifier for AnyCertificate {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Self::tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Self::tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        Self::schemes()
    }
}

impl ServerCertVerifier for AnyCertificate {
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
        Self::tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Self::tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        Self::schemes()
    }
}

/// A TLS client connection to `addr` (`host:port`) that trusts any server certificate.
pub(crate) async fn connect(
    stream: TcpStream,
    addr: &str,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    static CONNECTOR: OnceLock<Result<TlsConnector, String>> = OnceLock::new();
    let connector = CONNECTOR
        .get_or_init(|| {
            let config = rustls::ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map_err(|err| err.to_string())?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate { mandatory: false }))
                .with_no_client_auth();
            Ok(TlsConnector::from(Arc::new(config)))
        })
        .as_ref()
        .map_err(|err| std::io::Error::other(err.clone()))?;
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    let name = ServerName::try_from(host.trim_matches(['[', ']']).to_string())
        .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
    connector.connect(name, stream).await
}

#[cfg(test)]
mod tests;
