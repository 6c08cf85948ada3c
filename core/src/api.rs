//! The HTTP-shaped front door shared by every host: routing, authorisation, strict request bodies
//! and the exact JSON of every response. A host authenticates the token, strips its base URL, and
//! hands the rest here, so every host serves identical routes and bytes.

use serde::Serialize;
use serde_json::{json, Value};

use crate::admin::{self, AdminAction, AdminRequest, BatchEntry, BatchItem, RejectedEntry};
use crate::config::Config;
use crate::error::{QuotaError, StoreError};
use crate::gate::{self, StartDecision, StartRequest};
use crate::json::{kind, Fields};
use crate::limits;
use crate::names::normalize_username;
use crate::reads;
use crate::refresh::{self, RefreshRequest, Step};
use crate::sessions::{self, EndRequest, EndTarget, Outcome};
use crate::store::{SessionStatus, Store};
use crate::time::Timestamp;

mod bodies;
mod query;

pub use bodies::refresh_request_from_json;
use bodies::*;
use query::*;

/// Largest accepted request body, in bytes.
pub use crate::limits::body_bytes_max;

pub const scope_sessions: &str = "quota:sessions";
pub const scope_refresh: &str = "quota:refresh";
pub const scope_admin: &str = "quota:admin";

/// Who is calling, as the host authenticated them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    /// An admin user may do everything.
    pub admin: bool,
    /// Service-token scopes: `quota:sessions`, `quota:refresh`, `quota:admin`.
    pub scopes: Vec<String>,
}

impl Caller {
    fn has(&self, scope: &str) -> bool {
        self.admin || self.scopes.iter().any(|s| s == scope)
    }
}

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
pub const openapi_json: &str = include_str!("api/openapi.json");

/// Who may call a route.
#[derive(Clone, Copy)]
enum Access<'p> {
    /// Anyone, without a token.
    Public,
    Authenticated,
    /// The named user themself, or an admin.
    SelfOrAdmin(&'p str),
    Admin,
    Sessions,
    Refresh,
}

enum Route<'p> {
    ListUsers,
    User(&'p str),
    Batch,
    Refresh,
    Cleanup,
    Ledger,
    Me,
    Rates,
    Accelerators,
    Sessions,
    Session(&'p str),
    EndById(&'p str),
    EndByServer,
    OpenApi,
}

fn route<'p>(segs: &[&'p str]) -> Option<Route<'p>> {
    Some(match segs {
        ["admin", "api", "quota"] | ["admin", "api", "quota", "users"] => Route::ListUsers,
        ["admin", "api", "quota", "batch"] => Route::Batch,
        ["admin", "api", "quota", "refresh"] => Route::Refresh,
        ["admin", "api", "quota", "cleanup"] => Route::Cleanup,
        ["admin", "api", "quota", "transactions"] => Route::Ledger,
        ["admin", "api", "quota", "users", name] | ["admin", "api", "quota", name] => Route::User(name),
        ["api", "quota", "me"] => Route::Me,
        ["api", "quota", "rates"] => Route::Rates,
        ["api", "accelerators"] => Route::Accelerators,
        ["api", "quota", "sessions"] => Route::Sessions,
        ["api", "quota", "sessions", "end"] => Route::EndByServer,
        ["api", "quota", "openapi.json"] => Route::OpenApi,
        ["api", "quota", "sessions", id, "end"] => Route::EndById(id),
        ["api", "quota", "sessions", id] => Route::Session(id),
        _ => return None,
    })
}

/// The route `path` (below the base URL) names, as a template whose variable parts read `{name}`
/// and `{id}`: a bounded set of labels for a host's request metrics. `None`: no route.
pub fn route_template(path: &str) -> Option<&'static str> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    Some(match route(&segs)? {
        Route::ListUsers => "/admin/api/quota/users",
        Route::User(_) => "/admin/api/quota/users/{name}",
        Route::Batch => "/admin/api/quota/batch",
        Route::Refresh => "/admin/api/quota/refresh",
        Route::Cleanup => "/admin/api/quota/cleanup",
        Route::Ledger => "/admin/api/quota/transactions",
        Route::Me => "/api/quota/me",
        Route::Rates => "/api/quota/rates",
        Route::Accelerators => "/api/accelerators",
        Route::Sessions => "/api/quota/sessions",
        Route::Session(_) => "/api/quota/sessions/{id}",
        Route::EndById(_) => "/api/quota/sessions/{id}/end",
        Route::EndByServer => "/api/quota/sessions/end",
        Route::OpenApi => "/api/quota/openapi.json",
    })
}

/// Answers one request. `Err` only for storage failures: the host rolls back and answers 500.
pub fn handle_request(
    config: &Config,
    store: &mut dyn Store,
    req: &Request<'_>,
    now: Timestamp,
) -> Result<Response, StoreError> {
    match handle_request_step(config, store, req, now, 0)? {
        Step::Done(r) => Ok(r),
        Step::More => Err(StoreError("an unlimited refresh call stopped early".into())),
    }
}

/// [`handle_request`], with a refresh that has a `run_id` committed in chunks of `chunk_users`
/// users (0: all at once; see [`refresh::refresh_step`]): on `More`, the host commits and sends the
/// same request again, until `Done` carries the response. Every other route answers at once.
pub fn handle_request_step(
    config: &Config,
    store: &mut dyn Store,
    req: &Request<'_>,
    now: Timestamp,
    chunk_users: u32,
) -> Result<Step<Response>, StoreError> {
    let mut more = false;
    let answer = dispatch(config, store, req, now, chunk_users, &mut more);
    if more && answer.is_ok() {
        return Ok(Step::More);
    }
    match answer {
        Ok(r) => Ok(Step::Done(r)),
        Err(QuotaError::Store(e)) => Err(e),
        Err(e) => Ok(Step::Done(Response::from_error(&e))),
    }
}

/// Keys only a refresh body has: with any of them, `POST .../quota/refresh` is surely a refresh.
const refresh_only_keys: [&str; 6] = [
    "rule_name",
    "targets",
    "max_balance",
    "min_balance",
    "run_id",
    "dry_run",
];

/// `POST /admin/api/quota/<name>` sets or adds to user `<name>` (the original's admin page sends
/// `{"action": "set", "amount": n}` there), and `/admin/api/quota/refresh` is the refresh route with
/// the same minimal body. When a user named `refresh` exists, such a body is refused: it may have
/// been meant for that user, and as a refresh it would change every balance.
fn refresh_not_ambiguous(store: &mut dyn Store, body: &Value) -> Result<(), QuotaError> {
    let specific = refresh_only_keys.iter().any(|k| body.get(k).is_some());
    if specific || store.get_user("refresh")?.is_none() {
        return Ok(());
    }
    Err(QuotaError::Conflict(
        "Ambiguous request: a user named `refresh` exists, so this body could mean that user's quota \
         or a refresh of every user. To refresh, add `rule_name` (or `run_id`) to the body; to change \
         the user `refresh`, send it to /admin/api/quota/users/refresh. Nothing was changed."
            .to_string(),
    ))
}

/// The methods a route answers, and who may call it with `method`.
fn access<'p>(route: &Route<'p>, method: &str) -> (&'static [&'static str], Access<'p>) {
    match route {
        Route::ListUsers | Route::Ledger => (&["GET"], Access::Admin),
        Route::User(name) => (
            &["GET", "POST"],
            if method == "GET" {
                Access::SelfOrAdmin(name)
            } else {
                Access::Admin
            },
        ),
        Route::Batch | Route::Cleanup => (&["POST"], Access::Admin),
        Route::Refresh => (&["POST"], Access::Refresh),
        Route::Me | Route::Rates | Route::Accelerators => (&["GET"], Access::Authenticated),
        Route::Sessions => (
            &["GET", "POST"],
            if method == "GET" {
                Access::Admin
            } else {
                Access::Sessions
            },
        ),
        Route::Session(_) => (&["GET"], Access::Admin),
        Route::EndById(_) | Route::EndByServer => (&["POST"], Access::Sessions),
        Route::OpenApi => (&["GET"], Access::Public),
    }
}

/// The methods the route `path` (below the base URL) answers; `None`: no route.
pub fn route_methods(path: &str) -> Option<&'static [&'static str]> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    route(&segs).map(|r| access(&r, "GET").0)
}

fn openapi_response() -> Response {
    Response {
        status: 200,
        body: openapi_json.to_string(),
    }
}

fn dispatch(
    config: &Config,
    store: &mut dyn Store,
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
        return Ok(openapi_response());
    }
    let Some(caller) = req.caller else {
        return Ok(Response::error(
            401,
            "Authentication required: send `Authorization: token <token>`",
        ));
    };
    let permitted = match access {
        Access::Public | Access::Authenticated => true,
        Access::SelfOrAdmin(name) => {
            caller.has(scope_admin)
                || normalize_username("username", name).is_ok_and(|n| n == caller.name.to_lowercase())
        }
        Access::Admin => caller.has(scope_admin),
        Access::Sessions => caller.has(scope_sessions),
        Access::Refresh => caller.has(scope_refresh) || caller.has(scope_admin),
    };
    if !permitted {
        return Ok(Response::error(
            403,
            "Forbidden: this token may not use this route",
        ));
    }
    if req.body.len() > body_bytes_max {
        return Ok(Response::error(
            413,
            &format!("body: larger than {body_bytes_max} bytes"),
        ));
    }
    let query = parse_query(req.query)?;
    let body = if req.method == "POST" {
        parse_body(req.body)?
    } else {
        Value::Null
    };

    match route {
        Route::ListUsers => {
            let mut q = QueryFields::new(&query);
            let after = q.take("after");
            let limit = q.int("limit", 1, limits::users_page_max as i64)?;
            q.finish()?;
            if after.is_none() && limit.is_none() {
                // The spec's shape: every user at once.
                let users = reads::list_users(store)?;
                return Ok(Response::json(200, &json!({ "users": users })));
            }
            let limit = limit.map_or(limits::users_page_max, |n| n as usize);
            let (users, next) = reads::users_page(store, after.as_deref(), limit)?;
            Ok(Response::json(
                200,
                &json!({ "users": users, "next_after": next }),
            ))
        }
        Route::User(name) if req.method == "GET" => {
            no_query(&query)?;
            Ok(Response::json(200, &reads::user_detail(store, name)?))
        }
        Route::User(name) => {
            let (action, description) = admin_body(&body)?;
            let r = AdminRequest {
                username: name.to_string(),
                action,
                description,
            };
            Ok(Response::json(
                200,
                &admin::admin_update(store, &r, &caller.name, now)?,
            ))
        }
        Route::Batch => {
            let entries = batch_body(&body)?;
            Ok(Response::json(
                200,
                &admin::batch(store, &entries, &caller.name, now)?,
            ))
        }
        Route::Refresh => {
            let r = refresh_body(&body)?;
            refresh_not_ambiguous(store, &body)?;
            match refresh::refresh_step(store, &r, now, chunk_users)? {
                Step::Done(result) => Ok(Response::json(200, &result)),
                Step::More => {
                    *more = true;
                    Ok(Response::error(202, "refresh in progress"))
                }
            }
        }
        Route::Cleanup => {
            let f = Fields::new("", Some(&body), true);
            first_problem(f.finish())?;
            let cleaned = sessions::cleanup_stale(store, now)?;
            Ok(Response::json(
                200,
                &json!({ "cleaned": cleaned.len(), "sessions": cleaned }),
            ))
        }
        Route::Ledger => {
            let mut q = QueryFields::new(&query);
            let username = q.take("username");
            let after_id = q.int("after_id", 0, limits::json_int_abs_max)?.unwrap_or(0);
            let limit = q
                .int("limit", 1, limits::ledger_page_max as i64)?
                .unwrap_or(limits::ledger_page_max as i64);
            q.finish()?;
            let txs = reads::ledger(store, username.as_deref(), after_id, limit as usize)?;
            let next = if txs.len() == limit as usize {
                txs.last().map(|t| t.id)
            } else {
                None
            };
            Ok(Response::json(
                200,
                &json!({ "transactions": txs, "next_after_id": next }),
            ))
        }
        Route::Me => {
            no_query(&query)?;
            Ok(Response::json(200, &reads::me(config, store, &caller.name)?))
        }
        Route::Rates => {
            no_query(&query)?;
            Ok(Response::json(200, &reads::rates(config)))
        }
        Route::Accelerators => {
            no_query(&query)?;
            Ok(Response::json(200, &reads::accelerators(config)))
        }
        Route::Sessions if req.method == "GET" => {
            let mut q = QueryFields::new(&query);
            let username = q.take("username");
            let status = match q.take("status") {
                None => None,
                Some(s) => Some(SessionStatus::parse(&s).ok_or_else(|| {
                    QuotaError::invalid(
                        "status",
                        format!("must be active, completed, failed or cleaned_up, got `{s}`"),
                    )
                })?),
            };
            let after_id = q.int("after_id", 0, limits::json_int_abs_max)?.unwrap_or(0);
            let limit = q
                .int("limit", 1, limits::sessions_list_max as i64)?
                .unwrap_or(limits::sessions_list_max as i64);
            q.finish()?;
            let (list, next) =
                reads::list_sessions(store, username.as_deref(), status, after_id, limit as usize)?;
            Ok(Response::json(
                200,
                &json!({ "sessions": list, "next_after_id": next }),
            ))
        }
        Route::Sessions => {
            let start = start_body(&body).inspect_err(|_| {
                // A start attempt the gate never saw: still a decision (invalid) to count.
                crate::events::record(crate::events::Event::Gate {
                    result: crate::events::GateResult::Invalid,
                    resource_type: "other".into(),
                })
            })?;
            match gate::check_start(config, store, &start, now)? {
                StartDecision::Allowed(s) => Ok(Response::json(201, &s)),
                StartDecision::Refused(r) => Ok(Response::error(403, &r.message)),
            }
        }
        Route::Session(id) => {
            no_query(&query)?;
            let id = session_id(id)?;
            let s = store
                .get_session(id)?
                .ok_or_else(|| QuotaError::NotFound(format!("Session {id} not found")))?;
            Ok(Response::json(200, &sessions::SessionView::from(&s)))
        }
        Route::EndById(id) => {
            let id = session_id(id)?;
            let (ended_at, outcome, _) = end_body(&body, false)?;
            let r = EndRequest {
                target: EndTarget::Id(id),
                ended_at,
                outcome,
            };
            Ok(Response::json(200, &sessions::end_session(store, &r, now)?))
        }
        Route::EndByServer => {
            let (ended_at, outcome, target) = end_body(&body, true)?;
            let r = EndRequest {
                target: target.unwrap_or(EndTarget::Id(0)),
                ended_at,
                outcome,
            };
            Ok(Response::json(200, &sessions::end_session(store, &r, now)?))
        }
        Route::OpenApi => Ok(openapi_response()),
    }
}
