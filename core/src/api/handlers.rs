//! One function per route: what a request that passed routing and authorisation does. Each reads
//! its query or body strictly (the first problem, named by field, is the 400) and answers JSON.

use super::reach::Reach;
use super::*;
use crate::engine_call::EngineCall;
use crate::staff_allowance::Target;

/// A routed, authorised request: its parsed query and body, and what the engine works with.
pub(super) struct Call<'a, 's> {
    pub config: &'a Config,
    /// The engine call in progress: its store and what it observed and noted.
    pub tx: &'a mut EngineCall<'s>,
    pub caller: &'a Caller,
    pub query: Vec<(String, String)>,
    pub body: Value,
    pub now: Timestamp,
    /// A refresh with a run id commits this many users per call (0: all at once).
    pub chunk_users: u32,
    /// Set when a chunked refresh has more to do (the host commits and calls again).
    pub more: bool,
}

/// Answers a routed, authorised call.
pub(super) fn answer(route: Route<'_>, method: &str, c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    match route {
        Route::ListUsers => list_users(c),
        Route::User(name) if method == "GET" => user_detail(c, name),
        Route::User(name) => change_user(c, name),
        Route::Batch => batch(c),
        Route::Refresh => refresh(c),
        Route::Cleanup => cleanup(c),
        Route::Expire => expire(c),
        Route::Ledger => ledger(c),
        Route::Me => {
            no_query(&c.query)?;
            Ok(Response::json(
                200,
                &reads::me(c.config, c.tx.store(), &c.caller.name, c.now, true)?,
            ))
        }
        Route::Rates => {
            no_query(&c.query)?;
            Ok(Response::json(200, &reads::rates(c.config)))
        }
        Route::Accelerators => group_routes::accelerators(c),
        Route::Sessions if method == "GET" => list_sessions(c),
        Route::Sessions => start_session(c),
        Route::Session(id) => get_session(c, id),
        Route::EndById(id) => end_by_id(c, id),
        Route::EndByServer => end_by_server(c),
        Route::OpenApi => Ok(openapi_response()),
        Route::Groups => group_routes::list(c),
        Route::Group(name) => group_routes::group(c, method, name),
        Route::MyTransactions => me_routes::transactions(c),
        Route::MySessions => me_routes::sessions(c),
        Route::MyUsage => usage_routes::mine(c),
        Route::Usage => usage_routes::report(c),
        Route::Memberships if method == "GET" => group_routes::list_memberships(c),
        Route::Memberships => group_routes::memberships(c),
        Route::Budgets => budget_routes::list(c),
        Route::Budget(name) => budget_routes::budget(c, method, name),
        Route::Extend(id) => event_routes::extend(c, id),
        Route::MyEvents => event_routes::mine(c),
        Route::MyStatus => status_route::status(c),
        Route::Events => event_routes::all(c),
        Route::Webhooks => event_routes::status(c),
        Route::Redeliver(name) => event_routes::redeliver(c, name),
        Route::Deliveries(name) => event_routes::deliveries(c, name),
        Route::MyRights => {
            // What the caller may do, for pages that show only the actions they may take.
            no_query(&c.query)?;
            Ok(Response::json(
                200,
                &json!({
                    "username": c.caller.name.to_lowercase(),
                    "quota_admin": c.caller.is_quota_admin(),
                    "manages": c.caller.managed_groups(),
                    "staff_allowances": match Reach::of(c.caller).allowances(c.config, c.now) {
                        Some(mut a) => a.views(c.tx.store())?,
                        None => Vec::new(),
                    },
                }),
            ))
        }
        Route::MyRequests if method == "GET" => credit_request_routes::mine(c),
        Route::MyRequests => credit_request_routes::ask(c),
        Route::Requests => credit_request_routes::list(c),
        Route::Request(id) if method == "GET" => credit_request_routes::show(c, id),
        Route::Request(id) => credit_request_routes::decide(c, id),
    }
}

/// The OpenAPI document, as served to anyone.
pub(super) fn openapi_response() -> Response {
    Response {
        status: 200,
        body: OPENAPI_JSON.to_string(),
    }
}

fn list_users(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let after = q.take("after");
    let limit = q.int("limit", 1, limits::USERS_PAGE_MAX as i64)?;
    q.finish()?;
    let reach = Reach::of(c.caller);
    if after.is_none() && limit.is_none() {
        // The spec's shape: every user at once (course staff: their groups' members).
        let users = match reach.groups() {
            None => reads::list_users(c.tx.store(), c.now)?,
            Some(g) => reads::list_members(c.tx.store(), g, c.now)?,
        };
        return Ok(Response::json(200, &Listing::all("users", &users)));
    }
    let limit = limit.map_or(limits::USERS_PAGE_MAX, |n| n as usize);
    let (users, next) = match reach.groups() {
        None => reads::users_page(c.tx.store(), after.as_deref(), limit, c.now)?,
        Some(g) => reads::members_page(c.tx.store(), g, after.as_deref(), limit, c.now)?,
    };
    Ok(Response::json(
        200,
        &Listing::paged("users", &users, "next_after", next),
    ))
}

fn user_detail(c: &mut Call<'_, '_>, name: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let own = normalize_username("username", name).is_ok_and(|n| n == c.caller.name.to_lowercase());
    if !own {
        Reach::of(c.caller).user(c.tx.store(), name)?;
    }
    Ok(Response::json(
        200,
        &reads::user_detail(c.tx.store(), name, c.now)?,
    ))
}

fn change_user(c: &mut Call<'_, '_>, name: &str) -> Result<Response, QuotaError> {
    let (action, description, expires_at) = admin_body(&c.body)?;
    let reach = Reach::of(c.caller);
    if let AdminAction::SetUnlimited(_) = action {
        reach.admin_only("make a user unlimited")?;
    }
    reach.change_of(c.tx.store(), name)?;
    if let Some(mut allowed) = reach.allowances(c.config, c.now) {
        let added = admin::addition_to_user(c.tx, name, action, c.now)?;
        allowed.admit(c.tx.store(), Target::User(name), added)?;
    }
    let r = AdminRequest {
        username: name.to_string(),
        action,
        description,
        expires_at,
    };
    Ok(Response::json(
        200,
        &admin::admin_update(c.tx, &r, &c.caller.name, c.now)?,
    ))
}

fn batch(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let entries = batch_body(&c.body)?;
    // Course staff: every entry within their groups (never their own) and their allowances, or
    // nothing is written.
    let reach = Reach::of(c.caller);
    let mut allowed = reach.allowances(c.config, c.now);
    for e in entries.iter().flatten() {
        if e.unlimited.is_some() {
            reach.admin_only("make a user unlimited")?;
        }
        reach.change_of(c.tx.store(), &e.username)?;
        if let (Some(allowed), Some(amount)) = (allowed.as_mut(), e.amount) {
            let added = admin::addition_to_user(c.tx, &e.username, AdminAction::Set(amount), c.now)?;
            allowed.admit(c.tx.store(), Target::User(&e.username), added)?;
        }
    }
    Ok(Response::json(
        200,
        &admin::batch(c.tx, &entries, &c.caller.name, c.now)?,
    ))
}

/// Keys only a refresh body has: with any of them, `POST .../quota/refresh` is surely a refresh.
const REFRESH_ONLY_KEYS: [&str; 6] = [
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
fn refresh_not_ambiguous(tx: &mut EngineCall<'_>, body: &Value) -> Result<(), QuotaError> {
    let specific = REFRESH_ONLY_KEYS.iter().any(|k| body.get(k).is_some());
    if specific || tx.get_user("refresh")?.is_none() {
        return Ok(());
    }
    Err(QuotaError::Conflict(
        "Ambiguous request: a user named `refresh` exists, so this body could mean that user's quota \
         or a refresh of every user. To refresh, add `rule_name` (or `run_id`) to the body; to change \
         the user `refresh`, send it to /admin/api/quota/users/refresh. Nothing was changed."
            .to_string(),
    ))
}

fn refresh(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let r = refresh_body(&c.body)?;
    refresh_not_ambiguous(c.tx, &c.body)?;
    match refresh::refresh_step(c.config, c.tx, &r, c.now, c.chunk_users)? {
        Step::Done(result) => Ok(Response::json(200, &result)),
        Step::More => {
            c.more = true;
            Ok(Response::error(202, "refresh in progress"))
        }
    }
}

fn cleanup(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let f = Fields::new("", Some(&c.body), true);
    first_problem(f.finish())?;
    let cleaned = sessions::cleanup_stale(c.tx, c.now)?;
    Ok(Response::json(
        200,
        &json!({ "cleaned": cleaned.len(), "sessions": cleaned }),
    ))
}

/// The sweep: every expiry due by now written off, each dated at its expiry.
fn expire(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let mut f = Fields::new("", Some(&c.body), true);
    // `{"in_chunks": true}`: at most one chunk of accounts per call (each call its own
    // transaction, so locks are held briefly), the answer saying whether `more` remain.
    let in_chunks = f.opt_bool("in_chunks").unwrap_or(false);
    first_problem(f.finish())?;
    let limit = in_chunks.then_some(limits::SWEEP_CHUNK_GRANTS);
    let swept = crate::grants::sweep(c.tx, c.now, limit)?;
    let told = crate::events::sweep::tell(c.config, c.tx, c.now, limit)?;
    // The check that no budget's running total outlives a sweep wrong (a write no trigger saw).
    let mut repaired = Vec::new();
    for d in c.tx.store().repair_budget_holds()? {
        repaired.push(
            json!({"budget": d.budget, "kept": crate::Milli(d.kept), "summed": crate::Milli(d.summed)}),
        );
        c.tx.observe(crate::observations::Observation::HoldsRepaired {
            budget: d.budget,
            kept: d.kept,
            summed: d.summed,
        });
    }
    let mut answer = json!({
        "grants_expired": swept.grants_expired,
        "credits_expired": swept.credits_expired,
        "warnings": told.warnings,
        "events_purged": told.events_purged,
        "holds_repaired": repaired,
    });
    if let Some(more) = swept.more {
        answer["more"] = json!(more || told.more);
    }
    Ok(Response::json(200, &answer))
}

fn ledger(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let username = q.take("username");
    let budget = q.take("budget");
    let after_id = q.int("after_id", 0, limits::JSON_INT_ABS_MAX)?.unwrap_or(0);
    let limit = q
        .int("limit", 1, limits::LEDGER_PAGE_MAX as i64)?
        .unwrap_or(limits::LEDGER_PAGE_MAX as i64);
    let range = usage_routes::ledger_range(&mut q)?;
    q.finish()?;
    let reach = Reach::of(c.caller);
    match (&username, &budget) {
        (_, Some(b)) => reach.budget(c.config, c.tx.store(), b)?,
        (Some(u), None) => reach.user(c.tx.store(), u)?,
        (None, None) => reach.admin_only("read the whole ledger (give username= or budget=)")?,
    }
    let txs = reads::ledger(
        c.tx.store(),
        username.as_deref(),
        budget.as_deref(),
        range,
        after_id,
        limit as usize,
    )?;
    let next = if txs.len() == limit as usize {
        txs.last().map(|t| t.id)
    } else {
        None
    };
    Ok(Response::json(
        200,
        &Listing::paged("transactions", &txs, "next_after_id", next),
    ))
}

fn list_sessions(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
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
    let after_id = q.int("after_id", 0, limits::JSON_INT_ABS_MAX)?.unwrap_or(0);
    let limit = q
        .int("limit", 1, limits::SESSIONS_LIST_MAX as i64)?
        .unwrap_or(limits::SESSIONS_LIST_MAX as i64);
    q.finish()?;
    let reach = Reach::of(c.caller);
    if let Some(u) = &username {
        reach.user(c.tx.store(), u)?;
    }
    let (mut list, next) = reads::list_sessions(
        c.tx.store(),
        username.as_deref(),
        status,
        after_id,
        limit as usize,
    )?;
    if username.is_none() && reach.groups().is_some() {
        // Course staff see their members' sessions; the page's cursor stays the unfiltered one.
        let mut kept = Vec::with_capacity(list.len());
        for s in list {
            if reach.has_user(c.tx.store(), &s.0.start.username)? {
                kept.push(s);
            }
        }
        list = kept;
    }
    Ok(Response::json(
        200,
        &Listing::paged("sessions", &list, "next_after_id", next),
    ))
}

fn start_session(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let start = start_body(&c.body).inspect_err(|_| {
        // A start attempt the gate never saw: still a decision (invalid) to count.
        c.tx.observe(crate::observations::Observation::Gate {
            result: crate::observations::GateResult::Invalid,
            resource_type: "other".into(),
        })
    })?;
    match gate::check_start(c.config, c.tx, &start, c.now)? {
        StartDecision::Allowed(s) => Ok(Response::json(201, &s)),
        // The spec's message, and when a scheduled top-up would let this start through.
        StartDecision::Refused(r) => Ok(Response::json(
            403,
            &json!({ "error": r.message, "next_refresh": r.next_refresh }),
        )),
        StartDecision::Forbidden(message) => Ok(Response::error(403, &message)),
    }
}

fn get_session(c: &mut Call<'_, '_>, id: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let id = session_id(id)?;
    let s =
        c.tx.get_session(id)?
            .ok_or_else(|| QuotaError::NotFound(format!("Session {id} not found")))?;
    Reach::of(c.caller).user(c.tx.store(), &s.username)?;
    Ok(Response::json(200, &sessions::SessionView::from(&s)))
}

fn end_by_id(c: &mut Call<'_, '_>, id: &str) -> Result<Response, QuotaError> {
    let id = session_id(id)?;
    let (ended_at, outcome, _) = end_body(&c.body, false)?;
    let r = EndRequest {
        target: EndTarget::Id(id),
        ended_at,
        outcome,
    };
    Ok(Response::json(200, &sessions::end_session(c.tx, &r, c.now)?))
}

fn end_by_server(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let (ended_at, outcome, target) = end_body(&c.body, true)?;
    let r = EndRequest {
        target: target.unwrap_or(EndTarget::Id(0)),
        ended_at,
        outcome,
    };
    Ok(Response::json(200, &sessions::end_session(c.tx, &r, c.now)?))
}
