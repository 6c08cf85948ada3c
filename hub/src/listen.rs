//! The accept loop: HTTP/1.1 connections with named limits, so idle, silent or half-sent
//! connections cannot use up the server's open files and stop it answering anyone.
//!
//! - `connections_max`: connections served at once; at the cap the server stops accepting (new
//!   ones wait in the kernel's backlog) until one closes. Keep it below the open-file limit
//!   (`ulimit -n`) with room for the database and logs.
//! - `header_read_timeout`: a request's head (request line and headers) must arrive within this,
//!   counted from when the server starts waiting for it: for a new connection from its accept, for
//!   a kept-alive one from the end of the previous response. So it is also the idle keep-alive
//!   timeout: a connection silent for this long is closed.
//! - `body_read_timeout` (in `server`): the longest silence in the middle of a request body.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::log::info;

/// The connection limits (see the module's documentation).
#[derive(Clone, Copy, Debug)]
pub struct ConnLimits {
    pub connections_max: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
}

/// How long the server waits for connections in flight to finish after a stop signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` until `stop` resolves, then lets the requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnLimits,
    stop: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.connections_max));
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    let mut full_reported = false;
    loop {
        if slots.available_permits() == 0 && !full_reported {
            info!(
                "{} connections open (--connections-max): new ones wait until one closes",
                limits.connections_max
            );
            full_reported = true;
        }
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
            () = &mut stop => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, most likely: wait for connections to close.
                    info!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        full_reported = false;
        let _ = stream.set_nodelay(true);
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            // A client may shut down its writing side after a whole request (`nc -N`, health
            // checkers) and still wait for the answer.
            .half_close(true)
            .keep_alive(true);
        let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        info!("stopping: connections still open after {SHUTDOWN_GRACE:?} were closed");
    }
}
