//! The HTTP front: strips the base URL, authenticates the token, reads the body (at most 1 MiB),
//! and hands the request to the engine's `handle-request` on a worker. GETs go to the readers, in
//! a read transaction; everything else to the writer. The engine owns routing, authorisation and
//! every response body; this module only adds 404 outside the base URL and the Idempotency-Key.

mod body;
pub mod health;
pub mod pages;
mod respond;
pub mod routes;
mod scrape;

use body::read_body;
use respond::{error, json, with_allow};

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use quota_core::limits::BODY_BYTES_MAX;
use quota_core::refresh::Step;
use quota_core::Timestamp;
use quota_host::{HostError, Tx};

use crate::app::App;
use crate::engine::pool::Kind;
use crate::log::info;
use crate::metrics;
use crate::storage::host_tables::{self, IdempotencyKey, IdempotencyRecord};
use crate::tokens;

/// Longest `Idempotency-Key` accepted.
const IDEMPOTENCY_KEY_CHARS_MAX: usize = 255;

pub fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(app)
}

/// `/hub/` -> `/hub`; `/` -> ``.
pub fn normalise_base(base: &str) -> String {
    let b = base.trim().trim_end_matches('/');
    if b.is_empty() {
        String::new()
    } else if b.starts_with('/') {
        b.to_string()
    } else {
        format!("/{b}")
    }
}

fn header_str<'h>(h: &'h HeaderMap, name: &str) -> Option<&'h str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The query string's keys without their values (a value may be a secret someone put there).
fn query_keys(query: &str) -> String {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| format!("{}=", p.split('=').next().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("&")
}

/// The request's id: the client's `X-Request-Id` when it is a sane one (a proxy's, to follow one
/// request through both logs), else a new random one; sent back in `X-Request-Id`.
fn request_id(req: &Request) -> String {
    let given = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            (1..=64).contains(&v.len())
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        });
    match given {
        Some(v) => v.to_string(),
        None => {
            let mut r = [0u8; 8];
            let _ = getrandom::fill(&mut r);
            r.iter().map(|b| format!("{b:02x}")).collect()
        }
    }
}

/// Answers one request and writes its access log line: method, path (query keys only), status,
/// duration, the caller's name and the request id; never the token or the body. A 5xx is logged
/// at ERROR (an operator's alerting on log levels sees it), the rest at INFO.
async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let started = std::time::Instant::now();
    let request_id = request_id(&req);
    let method = req.method().to_string();
    let path = match req.uri().query() {
        Some(q) => format!("{}?{}", req.uri().path(), query_keys(q)),
        None => req.uri().path().to_string(),
    };
    let route = app
        .metrics
        .as_ref()
        .map(|_| routes::route_label(&app.base, req.uri().path()));
    let req_path = req.uri().path().to_string();
    let caller = Arc::new(std::sync::OnceLock::new());
    let mut response = answer(app.clone(), req, caller.clone()).await;
    if let Ok(v) = axum::http::HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", v);
    }
    let elapsed = started.elapsed();
    if let (Some(m), Some(route)) = (&app.metrics, route) {
        m.request(route, &method, response.status().as_u16(), elapsed.as_secs_f64());
    }
    let probe = req_path
        .strip_prefix(app.base.as_str())
        .is_some_and(crate::http::health::is_probe);
    let status = response.status().as_u16();
    if probe && !app.log_probes && status < 500 {
        return response;
    }
    let who = caller.get().map_or("-", String::as_str);
    let ms = elapsed.as_secs_f64() * 1000.0;
    if status >= 500 {
        tracing::error!(target: "access", method = %method, path = %path, status, duration_ms = ms, caller = who, request_id = %request_id);
    } else {
        tracing::info!(target: "access", method = %method, path = %path, status, duration_ms = ms, caller = who, request_id = %request_id);
    }
    response
}

async fn answer(app: Arc<App>, req: Request, caller_name: Arc<std::sync::OnceLock<String>>) -> Response {
    let (parts, body) = req.into_parts();
    // What the client sent is read before any answer: a response that leaves the body unread makes
    // the server close the connection, and a client reusing it from its pool then finds it gone
    // ("peer disconnected", seen in CI after the metrics' 405 and after a refused Idempotency-Key).
    let body = read_body(Body::new(body), app.limits.body_read_timeout).await;
    let full_path = parts.uri.path();
    let Some(path) = full_path
        .strip_prefix(app.base.as_str())
        .filter(|p| p.starts_with('/'))
    else {
        return error(
            404,
            &format!("No route for {full_path} (routes are under {}/)", app.base),
        );
    };
    if let Some(probe) = crate::http::health::answer(&app.pool, parts.method.as_str(), path).await {
        return probe;
    }
    if let Some(page) = crate::http::pages::answer(parts.method.as_str(), path, &app.base) {
        return page;
    }
    let path = path.to_string();
    let allow = quota_core::api::route_methods(&path).unwrap_or(&[]);
    let query = parts.uri.query().unwrap_or("").to_string();
    let method = parts.method.as_str().to_string();
    let headers = parts.headers;

    let now = match (app.test_clock, header_str(&headers, "x-quota-test-now")) {
        (true, Some(t)) => match Timestamp::parse(t) {
            Ok(t) => t,
            Err(e) => return error(400, &format!("X-Quota-Test-Now: {e}")),
        },
        _ => app.clock.now(),
    };
    let secret = tokens::from_header(header_str(&headers, "authorization")).map(str::to_string);
    if path == metrics::METRICS_PATH {
        return match &app.metrics {
            Some(m) => scrape::scrape(&app, m, &method, secret, now, caller_name).await,
            None => error(404, "Metrics are off on this server (--no-metrics)"),
        };
    }
    let idempotency = match header_str(&headers, "idempotency-key") {
        Some(k) if method == "POST" => {
            let k = k.trim();
            if k.is_empty() || k.len() > IDEMPOTENCY_KEY_CHARS_MAX {
                return error(
                    400,
                    &format!("Idempotency-Key: must be 1 to {IDEMPOTENCY_KEY_CHARS_MAX} characters"),
                );
            }
            Some(k.to_string())
        }
        _ => None,
    };

    // The engine answers 413 after routing and authorisation, so for an oversized body a stand-in
    // one byte over the limit carries the fact.
    let body = match body {
        Ok(Some(b)) => match String::from_utf8(b) {
            Ok(s) => s,
            Err(_) => return error(400, "body: not valid UTF-8"),
        },
        Ok(None) => " ".repeat(BODY_BYTES_MAX + 1),
        Err(e) => return error(400, &format!("body: could not be read: {e}")),
    };

    let kind = if method == "GET" { Kind::Read } else { Kind::Write };
    let call = Call {
        secret,
        method,
        path,
        query,
        body,
        idempotency,
        caller_name,
    };
    let usage = app.token_use.clone();
    // A refresh with a run id is committed a chunk of users per transaction, each its own job.
    let answer = app
        .pool
        .run_in_tx_steps(kind, move |tx| answer_call(tx, &call, now, &usage))
        .await;
    match answer {
        Ok(Ok(r)) => with_allow(json(r.status, r.body), allow),
        Ok(Err(e)) => {
            info!("request failed: {e}");
            failure(&app.pool.contract, &e)
        }
        Err(e) => {
            info!("request failed: {e}");
            error(500, "Internal error (see the server log)")
        }
    }
}

/// A call that failed: a storage failure is answered as the hosting contract says (busy and
/// conflicts that outlasted their retries: 503, retry later), anything else 500.
fn failure(contract: &quota_host::HostingContract, e: &HostError) -> Response {
    match e {
        HostError::Storage(s) => {
            let h = contract.handling(s.kind());
            if h.transient {
                error(h.http_status, "The database is busy; retry")
            } else {
                error(h.http_status, "Internal error (see the server log)")
            }
        }
        _ => error(500, "Internal error (see the server log)"),
    }
}

/// A request as the pool's jobs need it (each chunk of a refresh is a job of its own).
struct Call {
    secret: Option<String>,
    method: String,
    path: String,
    query: String,
    body: String,
    idempotency: Option<String>,
    /// Who the token stood for, for the access log.
    caller_name: Arc<std::sync::OnceLock<String>>,
}

/// Authenticates and answers `call` in the worker's transaction (on the writer, perhaps shared with
/// other requests: shared commit): the whole answer, or (a refresh with a run id) its next chunk.
fn answer_call(
    tx: &mut Tx<'_>,
    call: &Call,
    now: Timestamp,
    usage: &tokens::Usage,
) -> Result<Step<quota_core::Response>, HostError> {
    let (caller, token_hash) = match &call.secret {
        Some(s) => match tokens::authenticate(tx, s, now)? {
            Some((caller, hash)) => {
                usage.note(&hash, now);
                let _ = call.caller_name.set(caller.name.clone());
                (Some(caller), Some(hash))
            }
            None => (None, None),
        },
        None => (None, None),
    };
    let request = quota_core::Request {
        method: &call.method,
        path: &call.path,
        query: &call.query,
        body: &call.body,
        caller: caller.as_ref(),
    };
    // Scoped to the token (its hash), as Stripe scopes a key to the API key: a narrower token of
    // the same user never replays a wider one's answer.
    let once = match (&call.idempotency, &token_hash) {
        (Some(k), Some(hash)) => Some((
            IdempotencyKey {
                token: hash.clone(),
                method: call.method.clone(),
                path: call.path.clone(),
                key: k.clone(),
            },
            tokens::sha256_hex(call.body.as_bytes()),
        )),
        _ => None,
    };
    let read_only = call.method == "GET" && once.is_none();
    let chunk = if read_only { 0 } else { tx.refresh_chunk_users() };
    answer_once(tx, &request, now, once.as_ref(), chunk)
}

/// Answers a request in the caller's transaction. With an idempotency key, the first completed
/// response is recorded in that same transaction, and a repeat with the same body hash replays it
/// without calling the engine (another body: 409).
fn answer_once(
    tx: &mut Tx<'_>,
    request: &quota_core::Request<'_>,
    now: Timestamp,
    once: Option<&(IdempotencyKey, String)>,
    chunk_users: u32,
) -> Result<Step<quota_core::Response>, HostError> {
    if let Some((key, body_hash)) = once {
        match host_tables::get_idempotent(tx, key)? {
            Some(first) if &first.body_hash == body_hash => {
                return Ok(Step::Done(quota_core::Response {
                    status: first.status,
                    body: first.body,
                }))
            }
            Some(_) => {
                return Ok(Step::Done(quota_core::Response {
                    status: 409,
                    body: serde_json::json!({
                        "error": "Idempotency-Key: already used with a different body"
                    })
                    .to_string(),
                }))
            }
            None => {}
        }
    }
    let r = match tx.handle_request_step(request, now, chunk_users)? {
        Step::Done(r) => r,
        Step::More => return Ok(Step::More),
    };
    if let Some((key, body_hash)) = once {
        let record = IdempotencyRecord {
            body_hash: body_hash.clone(),
            status: r.status,
            body: r.body.clone(),
            created_at: now,
        };
        host_tables::put_idempotent(tx, key, &record)?;
    }
    Ok(Step::Done(r))
}
