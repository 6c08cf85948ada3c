//! The server's own answers (outside the engine's): a JSON body, an error message, a 405's `Allow`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// A JSON response: the engine's bytes and a newline (so curl's output does not run into the
/// prompt; every JSON parser ignores it).
pub(super) fn json(status: u16, mut body: String) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    body.push('\n');
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub(super) fn error(status: u16, message: &str) -> Response {
    json(status, serde_json::json!({ "error": message }).to_string())
}

/// A 405 names the methods the resource answers (RFC 9110 15.5.6).
pub(super) fn with_allow(mut r: Response, methods: &[&str]) -> Response {
    if r.status() == StatusCode::METHOD_NOT_ALLOWED {
        if let Ok(v) = HeaderValue::from_str(&methods.join(", ")) {
            r.headers_mut().insert(header::ALLOW, v);
        }
    }
    r
}
