//! `GET {base}/healthz` and `GET {base}/readyz`, for Kubernetes' probes: unauthenticated, cheap,
//! and left out of the access log unless `--log-probes`.
//!
//! - `healthz`: the process answers HTTP. Nothing else is checked: a liveness probe that looked at
//!   the database would restart every replica when the database is down, which fixes nothing.
//! - `readyz`: a reader answers a read transaction within [`ready_check_ms`], in which the engine's
//!   migration finds the database at the schema version this binary writes; and on SQLite no
//!   other process holds the file's write lock (writes would wait for it, then fail with 503):
//!   tried without waiting while this server's writer is idle, else read from the writer's last
//!   outcome. Anything else is 503 with the reason (the database is down
//!   or locked, or holds another schema version). The check never changes the database: a
//!   database at another version is rolled back, and the write lock is only tried, not kept.

use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use quota_host::{HostError, SqlError};

use crate::engine::pool::{Kind, Pool};

/// Below the base URL.
pub const HEALTHZ_PATH: &str = "/healthz";
pub const READYZ_PATH: &str = "/readyz";
/// How long `readyz` waits for the database (Kubernetes' probe timeout defaults to 1 s; the
/// chart gives it 3 s).
pub const READY_CHECK_MS: u64 = 2000;

pub fn is_probe(path: &str) -> bool {
    path == HEALTHZ_PATH || path == READYZ_PATH
}

fn body(status: StatusCode, value: serde_json::Value) -> Response {
    let mut text = value.to_string();
    text.push('\n');
    (
        status,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        text,
    )
        .into_response()
}

/// The answer for a probe path (below the base), or None for any other path.
pub async fn answer(pool: &Pool, method: &str, path: &str) -> Option<Response> {
    if !is_probe(path) {
        return None;
    }
    if method != "GET" && method != "HEAD" {
        let mut r = body(
            StatusCode::METHOD_NOT_ALLOWED,
            serde_json::json!({"error": "GET only"}),
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Some(r);
    }
    if path == HEALTHZ_PATH {
        return Some(body(StatusCode::OK, serde_json::json!({"status": "ok"})));
    }
    Some(match ready(pool).await {
        Ok(version) => body(
            StatusCode::OK,
            serde_json::json!({"status": "ready", "schema_version": version}),
        ),
        Err(reason) => body(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({"status": "not ready", "error": reason}),
        ),
    })
}

/// The schema version, or why the server cannot serve now.
async fn ready(pool: &Pool) -> Result<u32, String> {
    let check = pool.run_in_tx(Kind::Read, |tx| {
        let m = tx.migrate()?;
        if m.from_version == m.to_version {
            Ok(m.to_version)
        } else {
            // An error rolls the transaction back: whatever the migration's steps did is undone.
            Err(HostError::Storage(SqlError::Other(format!(
                "the database has schema version {}, this server writes version {}",
                m.from_version, m.to_version
            ))))
        }
    });
    let deadline = Duration::from_millis(READY_CHECK_MS);
    let version = match tokio::time::timeout(deadline, check).await {
        Err(_) => {
            return Err(format!(
                "the database did not answer a read within {READY_CHECK_MS} ms (locked, or unreachable)"
            ))
        }
        Ok(Err(e)) => return Err(e),
        Ok(Ok(Err(e))) if e.is_transient(&pool.contract) => {
            return Err("the database is locked by another process".into())
        }
        Ok(Ok(Err(HostError::Storage(SqlError::Other(m))))) => return Err(m),
        Ok(Ok(Err(e))) => return Err(e.to_string()),
        Ok(Ok(Ok(version))) => version,
    };
    // Another process's write lock. While this server's writer works it holds the lock itself,
    // so a try says nothing; then the writer's last outcome does (a write that failed for the
    // lock, with none committed since). An idle writer lets the lock be tried without waiting.
    let locked = "another process holds the database's write lock: writes wait for it, then fail with 503";
    let load = &pool.write_load;
    let moves = load.moves();
    if load.now() != (0, 0) {
        return if load.locked_out() {
            Err(locked.into())
        } else {
            Ok(version)
        };
    }
    let free = pool.run(Kind::Read, |w| w.db().write_lock_free());
    match tokio::time::timeout(deadline, free).await {
        Ok(Ok(Ok(true))) => {
            load.lock_seen_free();
            Ok(version)
        }
        // Locked by another process only if this server's writer stayed idle throughout the try
        // (a job it took and finished meanwhile may have been the holder).
        Ok(Ok(Ok(false))) if (load.now() == (0, 0) && load.moves() == moves) || load.locked_out() => {
            Err(locked.into())
        }
        Ok(Ok(Err(e))) => Err(e.to_string()),
        _ => Ok(version),
    }
}
