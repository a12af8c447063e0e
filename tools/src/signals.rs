//! Waiting for the signals that ask the process to stop: Ctrl-C (SIGINT) and SIGTERM.

/// Returns the name of the first stop signal received.
pub async fn stop_requested() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => tokio::select! {
                name = ctrl_c() => name,
                _ = terminate.recv() => "SIGTERM",
            },
            Err(err) => {
                tracing::warn!("cannot watch for SIGTERM ({err}); stop with Ctrl-C");
                ctrl_c().await
            }
        }
    }
    #[cfg(not(unix))]
    {
        ctrl_c().await
    }
}

async fn ctrl_c() -> &'static str {
    match tokio::signal::ctrl_c().await {
        Ok(()) => "Ctrl-C",
        // Without signal handling the process can still be killed; never return early.
        Err(_) => std::future::pending().await,
    }
}
