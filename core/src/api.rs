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
use crate::refresh::{self, RefreshRequest};
use crate::sessions::{self, EndRequest, EndTarget, Outcome};
use crate::store::{SessionStatus, Store};
use crate::time::Timestamp;

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

/// Who may call a route.
#[derive(Clone, Copy)]
enum Access<'p> {
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
        ["api", "quota", "sessions", id, "end"] => Route::EndById(id),
        ["api", "quota", "sessions", id] => Route::Session(id),
        _ => return None,
    })
}

/// Answers one request. `Err` only for storage failures: the host rolls back and answers 500.
pub fn handle_request(
    config: &Config,
    store: &mut dyn Store,
    req: &Request<'_>,
    now: Timestamp,
) -> Result<Response, StoreError> {
    match dispatch(config, store, req, now) {
        Ok(r) => Ok(r),
        Err(QuotaError::Store(e)) => Err(e),
        Err(e) => Ok(Response::from_error(&e)),
    }
}

fn dispatch(
    config: &Config,
    store: &mut dyn Store,
    req: &Request<'_>,
    now: Timestamp,
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
    let (allowed, access): (&[&str], Access) = match &route {
        Route::ListUsers | Route::Ledger => (&["GET"], Access::Admin),
        Route::User(name) => (
            &["GET", "POST"],
            if req.method == "GET" {
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
            if req.method == "GET" {
                Access::Admin
            } else {
                Access::Sessions
            },
        ),
        Route::Session(_) => (&["GET"], Access::Admin),
        Route::EndById(_) | Route::EndByServer => (&["POST"], Access::Sessions),
    };
    if !allowed.contains(&req.method) {
        return Ok(Response::error(
            405,
            &format!("Method {} not allowed; use {}", req.method, allowed.join(" or ")),
        ));
    }
    let Some(caller) = req.caller else {
        return Ok(Response::error(
            401,
            "Authentication required: send `Authorization: token <token>`",
        ));
    };
    let permitted = match access {
        Access::Authenticated => true,
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
            no_query(&query)?;
            let users = reads::list_users(store)?;
            Ok(Response::json(200, &json!({ "users": users })))
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
            Ok(Response::json(200, &refresh::refresh(store, &r, now)?))
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
            let after_id = q.int("after_id", 0, i64::MAX)?.unwrap_or(0);
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
            let after_id = q.int("after_id", 0, i64::MAX)?.unwrap_or(0);
            q.finish()?;
            let list = reads::list_sessions(store, username.as_deref(), status, after_id)?;
            Ok(Response::json(200, &json!({ "sessions": list })))
        }
        Route::Sessions => {
            let start = start_body(&body)?;
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
    }
}

fn first_problem(problems: Vec<QuotaError>) -> Result<(), QuotaError> {
    match problems.into_iter().next() {
        Some(p) => Err(p),
        None => Ok(()),
    }
}

fn parse_body(body: &str) -> Result<Value, QuotaError> {
    if body.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    let v: Value = serde_json::from_str(body)
        .map_err(|e| QuotaError::invalid("body", format!("malformed JSON: {e}")))?;
    if !v.is_object() {
        return Err(QuotaError::invalid(
            "body",
            format!("must be a JSON object, got {}", kind(&v)),
        ));
    }
    Ok(v)
}

fn session_id(text: &str) -> Result<i64, QuotaError> {
    match text.parse::<i64>() {
        Ok(id) if id > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(id),
        _ => Err(QuotaError::NotFound(format!("Session {text} not found"))),
    }
}

fn timestamp(f: &mut Fields<'_>, key: &'static str) -> Option<Timestamp> {
    let text = f.opt_str(key)?;
    match Timestamp::parse(text) {
        Ok(t) => Some(t),
        Err(e) => {
            f.problem(key, e);
            None
        }
    }
}

fn start_body(body: &Value) -> Result<StartRequest, QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let username = f.req_str("username");
    let resource = f.opt_str("resource_type").map(str::to_string);
    let runtime = f.req_int("runtime_minutes", i64::MIN, i64::MAX);
    let server_name = f.opt_str("server_name").unwrap_or("").to_string();
    let started_at = timestamp(&mut f, "started_at");
    first_problem(f.finish())?;
    Ok(StartRequest {
        username: username.unwrap_or_default().to_string(),
        resource,
        runtime_minutes: runtime.unwrap_or_default(),
        server_name,
        started_at,
    })
}

fn end_body(
    body: &Value,
    by_server: bool,
) -> Result<(Option<Timestamp>, Outcome, Option<EndTarget>), QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let ended_at = timestamp(&mut f, "ended_at");
    let outcome = match f.opt_str("outcome") {
        None | Some("completed") => Outcome::Completed,
        Some("failed") => Outcome::Failed,
        Some(other) => {
            f.problem(
                "outcome",
                format!("must be `completed` or `failed`, got `{other}`"),
            );
            Outcome::Completed
        }
    };
    let target = if by_server {
        let username = f.req_str("username").unwrap_or_default().to_string();
        let server_name = f.opt_str("server_name").unwrap_or("").to_string();
        Some(EndTarget::Server {
            username,
            server_name,
        })
    } else {
        None
    };
    first_problem(f.finish())?;
    Ok((ended_at, outcome, target))
}

fn admin_body(body: &Value) -> Result<(AdminAction, Option<String>), QuotaError> {
    let present = |k: &str| body.get(k).is_some_and(|v| !v.is_null());
    let mut f = Fields::new("", Some(body), false);
    let action = f.req_str("action");
    let description = f.opt_str("description").map(str::to_string);
    let amount = f.opt_int("amount", i64::MIN, i64::MAX);
    let unlimited = f.opt_bool("unlimited");
    let parsed = match action {
        Some(a @ ("set" | "add" | "deduct")) => {
            if present("unlimited") {
                f.problem(
                    "unlimited",
                    format!("is only used with action `set_unlimited`, not `{a}`"),
                );
            }
            if !present("amount") {
                f.problem("amount", format!("is required for action `{a}`"));
            }
            amount.map(|n| match a {
                "set" => AdminAction::Set(n),
                "add" => AdminAction::Add(n),
                _ => AdminAction::Deduct(n),
            })
        }
        Some("set_unlimited") => {
            if present("amount") {
                f.problem("amount", "is not used with action `set_unlimited`");
            }
            if !present("unlimited") {
                f.problem(
                    "unlimited",
                    "is required for action `set_unlimited` (true or false)",
                );
            }
            unlimited.map(AdminAction::SetUnlimited)
        }
        Some(other) => {
            f.problem(
                "action",
                format!("must be one of set, add, deduct, set_unlimited, got `{other}`"),
            );
            None
        }
        None => None,
    };
    first_problem(f.finish())?;
    let action = parsed.ok_or_else(|| QuotaError::invalid("action", "is required"))?;
    Ok((action, description))
}

fn batch_body(body: &Value) -> Result<Vec<BatchItem>, QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let users = f.raw("users");
    first_problem(f.finish())?;
    let list = match users {
        Some(Value::Array(l)) => l,
        Some(other) => {
            return Err(QuotaError::invalid(
                "users",
                format!("must be a list, got {}", kind(other)),
            ))
        }
        None => return Err(QuotaError::invalid("users", "is required")),
    };
    if list.len() > limits::batch_users_max {
        return Err(QuotaError::invalid(
            "users",
            format!("must have at most {} entries", limits::batch_users_max),
        ));
    }
    // A malformed entry is a per-user failure, not a structural one: the others still apply.
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let mut e = Fields::new(&format!("users[{i}]"), Some(entry), false);
            let username = e.req_str("username").map(str::to_string);
            let amount = e.opt_int("amount", i64::MIN, i64::MAX);
            let unlimited = e.opt_bool("unlimited");
            match (e.finish().into_iter().next(), username) {
                (None, Some(username)) => Ok(BatchEntry {
                    username,
                    amount,
                    unlimited,
                }),
                (problem, username) => Err(RejectedEntry {
                    username: username.unwrap_or_default(),
                    error: problem.unwrap_or_else(|| {
                        QuotaError::invalid(format!("users[{i}].username"), "is required")
                    }),
                }),
            }
        })
        .collect())
}

/// Parses a refresh REST body (`{action, amount, rule_name?, max_balance?, min_balance?, targets?,
/// run_id?, dry_run?}`), strictly.
pub fn refresh_request_from_json(body: &str) -> Result<RefreshRequest, QuotaError> {
    refresh_body(&parse_body(body)?)
}

fn refresh_body(body: &Value) -> Result<RefreshRequest, QuotaError> {
    let mut f = Fields::new("", Some(body), false);
    let mut target_problems = Vec::new();
    let params = refresh::params_from_body(&mut f, &mut target_problems);
    let run_id = f.opt_str("run_id").map(str::to_string);
    let dry_run = f.opt_bool("dry_run").unwrap_or(false);
    let mut problems = f.finish();
    problems.extend(target_problems);
    first_problem(problems)?;
    let params = params.ok_or_else(|| QuotaError::invalid("body", "action and amount are required"))?;
    Ok(RefreshRequest {
        params,
        run_id,
        dry_run,
    })
}

/// Decodes `%XX` escapes (and `+` as space in queries). `None` when the result is not UTF-8.
fn percent_decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let v = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                out.push(v);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn parse_query(q: &str) -> Result<Vec<(String, String)>, QuotaError> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match (percent_decode(k, true), percent_decode(v, true)) {
                (Some(k), Some(v)) => Ok((k, v)),
                _ => Err(QuotaError::invalid("query", "invalid percent-encoding")),
            }
        })
        .collect()
}

fn no_query(q: &[(String, String)]) -> Result<(), QuotaError> {
    QueryFields::new(q).finish()
}

/// Reads query parameters strictly: unknown or repeated parameters are refused.
struct QueryFields<'q> {
    pairs: &'q [(String, String)],
    taken: Vec<&'q str>,
}

impl<'q> QueryFields<'q> {
    fn new(pairs: &'q [(String, String)]) -> Self {
        QueryFields {
            pairs,
            taken: Vec::new(),
        }
    }

    fn take(&mut self, key: &'q str) -> Option<String> {
        self.taken.push(key);
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    }

    fn int(&mut self, key: &'q str, min: i64, max: i64) -> Result<Option<i64>, QuotaError> {
        let Some(v) = self.take(key) else { return Ok(None) };
        match v.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(QuotaError::invalid(
                key,
                format!("must be an integer from {min} to {max}, got `{v}`"),
            )),
        }
    }

    fn finish(self) -> Result<(), QuotaError> {
        for (i, (k, _)) in self.pairs.iter().enumerate() {
            if !self.taken.contains(&k.as_str()) {
                return Err(QuotaError::invalid(k, "unknown query parameter"));
            }
            if self.pairs[..i].iter().any(|(p, _)| p == k) {
                return Err(QuotaError::invalid(k, "given more than once"));
            }
        }
        Ok(())
    }
}
