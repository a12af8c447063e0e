//! The `/metrics` HTTP endpoint (`metricsPromExporterHost:metricsPromExporterPort`): HTTP/1.1
//! by hyper, `GET /metrics` only, for Prometheus scrapers.
//!
//! Bounded against bad or slow clients: at most [`MAX_CONNECTIONS`] at once (more are closed on
//! accept), the request head must arrive within [`HEADER_TIMEOUT`] and fit hyper's read buffer
//! ([`MAX_HEAD_BYTES`]), and a connection lives at most [`CONNECTION_LIFETIME`]. Rendering
//! walks the broker's tables and reads the store, so it runs on a blocking thread.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::metrics::BrokerMetrics;

const MAX_CONNECTIONS: usize = 16;
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_HEAD_BYTES: usize = 16 * 1024;
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// Serves `metrics` on `listener` until `shutdown`.
pub(super) async fn serve(
    listener: TcpListener,
    metrics: Arc<BrokerMetrics>,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // EMFILE and the like: back off instead of spinning.
                    warn!(%error, "metrics endpoint: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            debug!(%peer, "metrics endpoint: too many connections, closing");
            continue;
        };
        let metrics = metrics.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |request| {
                let metrics = metrics.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(request, metrics).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = shutdown.cancelled() => {}
                outcome = tokio::time::timeout(CONNECTION_LIFETIME, connection) => {
                    log_outcome(peer, outcome);
                }
            }
        });
    }
}

fn log_outcome(peer: SocketAddr, outcome: Result<hyper::Result<()>, tokio::time::error::Elapsed>) {
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(error)) => debug!(%peer, %error, "metrics endpoint: connection failed"),
        Err(_) => debug!(%peer, "metrics endpoint: connection closed after its lifetime"),
    }
}

async fn answer(request: Request<Incoming>, metrics: Arc<BrokerMetrics>) -> Response<Full<Bytes>> {
    if request.uri().path() != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: metrics are at /metrics\n",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
        response
            .headers_mut()
            .insert(ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match tokio::task::spawn_blocking(move || metrics.render()).await {
        Ok(text) => {
            let mut response = Response::new(Full::new(Bytes::from(text)));
            response.headers_mut().insert(
                CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(
                    prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                ),
            );
            response
        }
        Err(error) => {
            warn!(%error, "metrics endpoint: rendering failed");
            plain(StatusCode::INTERNAL_SERVER_ERROR, "rendering failed\n")
        }
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response
}
