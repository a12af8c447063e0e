//! The metrics port's HTTP server (`metricsPromExporterHost:metricsPromExporterPort`): HTTP/1.1
//! by hyper. `GET /metrics` for Prometheus scrapers; the web console ([`super::console`]):
//! `GET /` (a redirect), `GET /console/` and its assets, `GET /api/...` and the two write actions
//! `POST /api/topics` and `POST /api/reset-offset`.
//!
//! Bounded against bad or slow clients: at most [`MAX_CONNECTIONS`] at once (more are closed on
//! accept), the request head must arrive within [`HEADER_TIMEOUT`] and fit hyper's read buffer
//! ([`MAX_HEAD_BYTES`]), a request body at most [`MAX_BODY_BYTES`], and a connection lives at
//! most [`CONNECTION_LIFETIME`]. Rendering walks the broker's tables and reads the store, so it
//! runs on a blocking thread.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, ALLOW, AUTHORIZATION, CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE,
    LOCATION, X_CONTENT_TYPE_OPTIONS,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::console;
use super::metrics::BrokerMetrics;
use super::BrokerState;

const MAX_CONNECTIONS: usize = 16;
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_HEAD_BYTES: usize = 16 * 1024;
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
const MAX_BODY_BYTES: usize = 8 * 1024;

/// Serves `metrics` and the console of `state` on `listener` until `shutdown`.
pub(super) async fn serve(
    listener: TcpListener,
    metrics: Arc<BrokerMetrics>,
    state: Arc<BrokerState>,
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
        let state = state.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |request| {
                let metrics = metrics.clone();
                let state = state.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(request, metrics, state).await) }
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

async fn answer(
    request: Request<Incoming>,
    metrics: Arc<BrokerMetrics>,
    state: Arc<BrokerState>,
) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let is_get = request.method() == Method::GET || request.method() == Method::HEAD;
    if let Some(api) = path.strip_prefix("/api/") {
        let api = api.to_string();
        if request.method() == Method::POST {
            return write(request, &api, state).await;
        }
        if !is_get {
            return not_allowed("GET, HEAD, POST");
        }
        if api == "cluster" {
            return json(console::cluster(&state).await);
        }
        let query = console::Query::parse(request.uri().query());
        return match tokio::task::spawn_blocking(move || console::get(&state, &api, &query)).await {
            Ok(answer) => json(answer),
            Err(error) => {
                warn!(%error, "web console: an API call failed");
                plain(StatusCode::INTERNAL_SERVER_ERROR, "the API call failed\n")
            }
        };
    }
    let asset = match path.as_str() {
        "/" | "/console" => {
            let mut response = plain(StatusCode::FOUND, "the console is at /console/\n");
            response
                .headers_mut()
                .insert(LOCATION, HeaderValue::from_static("/console/"));
            return response;
        }
        "/console/" | "/console/index.html" => {
            Some((console::INDEX_HTML, "text/html; charset=utf-8"))
        }
        "/console/console.js" => Some((console::CONSOLE_JS, "text/javascript; charset=utf-8")),
        "/console/console.css" => Some((console::CONSOLE_CSS, "text/css; charset=utf-8")),
        "/metrics" => None,
        _ => {
            return plain(
                StatusCode::NOT_FOUND,
                "not found: metrics are at /metrics, the web console at /console/\n",
            )
        }
    };
    if !is_get {
        return not_allowed("GET, HEAD");
    }
    if let Some((text, content_type)) = asset {
        let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        // Only the console's own script and styles run; no other site may frame it.
        headers.insert(
            CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
            ),
        );
        headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        return response;
    }
    match tokio::task::spawn_blocking(move || metrics.render()).await {
        Ok(text) => {
            let mut response = Response::new(Full::new(Bytes::from(text)));
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(
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

/// `POST /api/...`: checked (ACL admin, JSON) before the body is even read, run off the runtime.
async fn write(
    request: Request<Incoming>,
    api: &str,
    state: Arc<BrokerState>,
) -> Response<Full<Bytes>> {
    let authorization = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let json_content = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    // Refusals need no body: answer them before reading one.
    let account = match console::check_write(&state, api, authorization.as_deref(), json_content) {
        Ok(account) => account,
        Err(refused) => return json(refused),
    };
    let body = match Limited::new(request.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large\n"),
    };
    let parsed = match console::parse_write(api, &body) {
        Ok(parsed) => parsed,
        Err(refused) => return json(refused),
    };
    let api = api.to_string();
    let handled = {
        let state = state.clone();
        tokio::task::spawn_blocking(move || console::run_write(&state, parsed)).await
    };
    let reply = match handled {
        Ok(crate::net::Handled::Now(reply)) => reply,
        Ok(crate::net::Handled::Later(future)) => future.await,
        Err(error) => {
            warn!(%error, "web console: a write failed");
            return plain(StatusCode::INTERNAL_SERVER_ERROR, "the write failed\n");
        }
    };
    let answer = console::write_answer(reply);
    tracing::info!(%account, api = %api, status = answer.status, "web console write");
    json(answer)
}

fn json(answer: console::ApiAnswer) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(&answer.body).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

fn not_allowed(allow: &'static str) -> Response<Full<Bytes>> {
    let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response
}
