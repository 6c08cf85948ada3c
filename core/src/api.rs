//! The HTTP-shaped front door shared by every host: routing, authorisation, strict request bodies
//! and the exact JSON of every response. A host authenticates the token, strips its base URL, and
//! hands the rest here, so every host serves identical routes and bytes.

use serde::Serialize;
use serde_json::{json, Value};

use crate::admin::{self, AdminAction, AdminRequest, BatchEntry, BatchItem, RejectedEntry};
use crate::config::Config;
use crate::engine_call::EngineCall;
use crate::error::{QuotaError, StoreError};
use crate::gate::{self, StartDecision, StartRequest};
use crate::groups::MemberChange;
use crate::json::{kind, Fields};
use crate::limits;
use crate::names::normalize_username;
use crate::observations::Observed;
use crate::reads;
use crate::refresh::{self, RefreshRequest, Step};
use crate::sessions::{self, EndRequest, EndTarget, Outcome};
use crate::store::{SessionStatus, Store};
use crate::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet};

mod bodies;
mod budget_routes;
mod caller;
mod credit_request_routes;
mod event_routes;
mod group_routes;
mod handlers;
mod listing;
mod me_routes;
mod query;
mod reach;
mod routes;
mod status_route;
mod usage_routes;

pub use bodies::refresh_request_from_json;
use bodies::*;
use listing::Listing;
use query::*;
use routes::*;
pub use routes::{route_methods, route_template};

/// Largest accepted request body, in bytes.
pub use crate::limits::BODY_BYTES_MAX;

pub use caller::*;

/// An authenticated (or not: `caller: None`) request, with the base URL already stripped.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub method: &'a str,
    /// Path below the base URL, e.g. `/api/quota/me`; percent-encoded as received.
    pub path: &'a str,
    /// Query string without `?`.
    pub query: &'a str,
    pub body: &'a str,
    pub caller: Option<&'a Caller>,
}

/// Status and JSON body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

impl Response {
    fn json<T: Serialize>(status: u16, v: &T) -> Response {
        // Serialising our own plain structs cannot fail; fall back to a 500 body regardless.
        match serde_json::to_string(v) {
            Ok(body) => Response { status, body },
            Err(e) => Response::error(500, &format!("response encoding: {e}")),
        }
    }

    pub fn error(status: u16, message: &str) -> Response {
        Response {
            status,
            body: json!({ "error": message }).to_string(),
        }
    }

    fn from_error(e: &QuotaError) -> Response {
        Response::error(e.status(), &e.to_string())
    }
}

/// The OpenAPI 3.1 description of every route (`GET {base}/api/quota/openapi.json`): written by
/// hand beside this route table and held to it by `tests/openapi.rs`.
pub const OPENAPI_JSON: &str = include_str!("api/openapi.json");

/// Answers one request, with what it observed. `Err` only for storage failures: the host rolls
/// back and answers 500 (or 503 for a transient kind).
pub fn handle_request(
    config: &Config,
    store: &mut dyn Store,
    req: &Request<'_>,
    now: Timestamp,
) -> Result<Observed<Response>, StoreError> {
    let step = handle_request_step(config, EngineCall::new(store), req, now, 0)?;
    match step.answer {
        Step::Done(r) => Ok(Observed {
            answer: r,
            observations: step.observations,
        }),
        Step::More => Err(StoreError("an unlimited refresh call stopped early".into())),
    }
}

/// [`handle_request`] in the engine call `tx`, with a refresh that has a `run_id` committed in
/// chunks of `chunk_users` users (0: all at once; see [`refresh::refresh_step`]): on `More`, the
/// host commits and sends the same request again, until `Done` carries the response. Every other
/// route answers at once.
pub fn handle_request_step(
    config: &Config,
    mut tx: EngineCall<'_>,
    req: &Request<'_>,
    now: Timestamp,
    chunk_users: u32,
) -> Result<Observed<Step<Response>>, StoreError> {
    let mut more = false;
    let answer = dispatch(config, &mut tx, req, now, chunk_users, &mut more);
    // The call's events, in its transaction: only for a call that did what it answers.
    let done = if answer.as_ref().is_ok_and(|r| r.status < 400 || r.status == 403) {
        tx.finish(config, answer, now)?
    } else {
        tx.without_writing(answer)
    };
    let answer = match done.answer {
        // A chunk with more to do has observed nothing yet: a refresh observes its end.
        Ok(_) if more => {
            debug_assert!(
                done.observations.is_empty(),
                "a refresh chunk observed before its end"
            );
            Step::More
        }
        Ok(r) => Step::Done(r),
        Err(QuotaError::Store(e)) => return Err(e),
        Err(e) => Step::Done(Response::from_error(&e)),
    };
    Ok(Observed {
        answer,
        observations: done.observations,
    })
}

/// Routing, method, authentication, authorisation and size checks, in that order, then the route's
/// handler with the parsed query and body.
fn dispatch(
    config: &Config,
    tx: &mut EngineCall<'_>,
    req: &Request<'_>,
    now: Timestamp,
    chunk_users: u32,
    more: &mut bool,
) -> Result<Response, QuotaError> {
    let raw_segs: Vec<&str> = req.path.split('/').filter(|s| !s.is_empty()).collect();
    let decoded: Vec<String> = match raw_segs.iter().map(|s| percent_decode(s, false)).collect() {
        Some(d) => d,
        None => return Ok(Response::error(400, "path: invalid percent-encoding")),
    };
    let segs: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let Some(route) = route(&segs) else {
        return Ok(Response::error(404, &format!("No route for {}", req.path)));
    };
    let (allowed, access) = access(&route, req.method);
    if !allowed.contains(&req.method) {
        return Ok(Response::error(
            405,
            &format!("Method {} not allowed; use {}", req.method, allowed.join(" or ")),
        ));
    }
    if let Access::Public = access {
        no_query(&parse_query(req.query)?)?;
        return Ok(handlers::openapi_response());
    }
    let Some(caller) = req.caller else {
        return Ok(Response::error(
            401,
            "Authentication required: send `Authorization: token <token>`",
        ));
    };
    if !permitted(access, caller) {
        return Ok(Response::error(
            403,
            "Forbidden: this token may not use this route",
        ));
    }
    if req.body.len() > BODY_BYTES_MAX {
        return Ok(Response::error(
            413,
            &format!("body: larger than {BODY_BYTES_MAX} bytes"),
        ));
    }
    let mut call = handlers::Call {
        config,
        tx,
        caller,
        query: parse_query(req.query)?,
        body: if req.method == "POST" || req.method == "PUT" {
            parse_body(req.body)?
        } else {
            Value::Null
        },
        now,
        chunk_users,
        more: false,
    };
    let answer = handlers::answer(route, req.method, &mut call);
    *more = call.more;
    answer
}
