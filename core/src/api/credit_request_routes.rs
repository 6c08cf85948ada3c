//! The credit request routes: `.../api/quota/me/requests` (a user asks, and reads their own) and
//! `.../admin/api/quota/requests[/<id>]` (the queue, one request, a decision), course staff kept
//! to their groups' members and the budgets those groups share.

use super::handlers::Call;
use super::reach::Reach;
use super::*;
use crate::credit_requests::{self, Ask, Decision};
use crate::staff_allowance::Target;
use crate::store::{CreditRequest, RequestPage, RequestStatus};

/// `?after_id=&limit=` of the request lists.
fn page(q: &mut QueryFields) -> Result<(i64, usize), QuotaError> {
    let after_id = q.int("after_id", 0, limits::JSON_INT_ABS_MAX)?.unwrap_or(0);
    let limit = q
        .int("limit", 1, limits::REQUESTS_PAGE_MAX as i64)?
        .map_or(limits::REQUESTS_PAGE_MAX, |n| n as usize);
    Ok((after_id, limit))
}

fn listing(rows: &[CreditRequest], next: Option<i64>) -> Response {
    Response::json(200, &json!({ "requests": rows, "next_after_id": next }))
}

/// `GET .../me/requests?after_id=&limit=`: the caller's requests, oldest first.
pub(super) fn mine(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let (after_id, limit) = page(&mut q)?;
    q.finish()?;
    let username = normalize_username("username", &c.caller.name)?;
    let rows = c.tx.scan_requests(&RequestPage {
        status: None,
        username: Some(&username),
        budget: None,
        after_id,
        limit: limit + 1,
    })?;
    Ok(paged(rows, limit))
}

fn paged(mut rows: Vec<CreditRequest>, limit: usize) -> Response {
    let next = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|r| r.id)
    } else {
        None
    };
    listing(&rows, next)
}

/// `POST .../me/requests` `{amount, budget?, reason}`: 201 with the request.
pub(super) fn ask(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let mut f = Fields::new("", Some(&c.body), false);
    let amount = f.req_int("amount", i64::MIN, i64::MAX);
    let budget = f.opt_str("budget").map(str::to_string);
    let reason = f.req_str("reason").map(str::to_string);
    first_problem(f.finish())?;
    let ask = Ask {
        amount: amount.unwrap_or(0),
        budget,
        reason: reason.unwrap_or_default(),
    };
    let r = credit_requests::create(c.config, c.tx, &c.caller.name, &ask, c.now)?;
    Ok(Response::json(201, &r))
}

/// A request the caller may see and decide, or the 403 (course staff outside their groups).
fn reachable(c: &mut Call<'_, '_>, id: &str) -> Result<CreditRequest, QuotaError> {
    let id =
        session_id(id).map_err(|_| QuotaError::invalid("id", format!("must be a request id, got `{id}`")))?;
    let r = credit_requests::get(c.tx, id)?;
    let reach = Reach::of(c.caller);
    match &r.budget {
        Some(b) => reach.budget(c.config, c.tx.store(), b)?,
        None => reach.user(c.tx.store(), &r.username)?,
    }
    Ok(r)
}

/// `GET .../admin/api/quota/requests/<id>`.
pub(super) fn show(c: &mut Call<'_, '_>, id: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let r = reachable(c, id)?;
    Ok(Response::json(200, &r))
}

/// `GET .../admin/api/quota/requests?status=&group=&budget=&after_id=&limit=`: oldest first;
/// `group=`: requests of that group's members for their own credit; course staff see only theirs.
pub(super) fn list(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let status = match q.take("status") {
        None => None,
        Some(s) => Some(RequestStatus::parse(&s).ok_or_else(|| {
            QuotaError::invalid(
                "status",
                format!("must be pending, approved or denied, got `{s}`"),
            )
        })?),
    };
    let group = q.take("group");
    let budget = q.take("budget");
    let (after_id, limit) = page(&mut q)?;
    q.finish()?;
    let reach = Reach::of(c.caller);
    if let Some(b) = &budget {
        reach.budget(c.config, c.tx.store(), b)?;
    }
    if let (Some(g), Some(mine)) = (&group, reach.groups()) {
        if !mine.contains(g) {
            return Err(QuotaError::Forbidden(format!(
                "group {g} is not a group you manage"
            )));
        }
    }
    // One page of stored rows, filtered: the cursor is the last row read, so a page may hold fewer.
    let rows = c.tx.scan_requests(&RequestPage {
        status,
        username: None,
        budget: budget.as_deref(),
        after_id,
        limit: limit + 1,
    })?;
    let more = rows.len() > limit;
    let last_read = rows.get(limit.min(rows.len()).saturating_sub(1)).map(|r| r.id);
    let mut kept = Vec::new();
    for r in rows.into_iter().take(limit) {
        let in_group = match &group {
            None => true,
            Some(g) => r.budget.is_none() && crate::groups::of(c.tx.store(), &r.username)?.contains(g),
        };
        let reached = match &r.budget {
            Some(b) => reach.has_budget(c.config, c.tx.store(), b)?,
            None => reach.has_user(c.tx.store(), &r.username)?,
        };
        if in_group && reached {
            kept.push(r);
        }
    }
    Ok(listing(&kept, if more { last_read } else { None }))
}

/// `POST .../admin/api/quota/requests/<id>` `{"action": "approve", "amount"?, "expires_at"?,
/// "note"?}` or `{"action": "deny", "note"}`.
pub(super) fn decide(c: &mut Call<'_, '_>, id: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let mut f = Fields::new("", Some(&c.body), false);
    let action = f.req_str("action").map(str::to_string);
    let amount = f.opt_int("amount", i64::MIN, i64::MAX);
    let note = f.opt_str("note").map(str::to_string);
    let expires_at = opt_expires_at(&mut f);
    first_problem(f.finish())?;
    let decision = match action.as_deref() {
        Some("approve") => Decision::Approve {
            amount,
            expires_at,
            note,
        },
        Some("deny") => {
            if amount.is_some() || expires_at.is_some() {
                return Err(QuotaError::invalid("action", "a denial takes only a `note`"));
            }
            let Some(note) = note else {
                return Err(QuotaError::invalid(
                    "note",
                    "is required to deny (tell the user why)",
                ));
            };
            Decision::Deny { note }
        }
        Some(a) => {
            return Err(QuotaError::invalid(
                "action",
                format!("must be `approve` or `deny`, got `{a}`"),
            ))
        }
        None => return Err(QuotaError::invalid("action", "is required (`approve` or `deny`)")),
    };
    let r = reachable(c, id)?;
    let reach = Reach::of(c.caller);
    reach.decide_request_of(&r.username)?;
    if let (Some(mut allowed), Decision::Approve { amount, .. }) =
        (reach.allowances(c.config, c.now), &decision)
    {
        // Checked on a pending request only: a decided one is the 409 `decide` answers.
        if r.status == RequestStatus::Pending {
            let target = match &r.budget {
                Some(b) => Target::Budget(b),
                None => Target::User(&r.username),
            };
            allowed.admit(c.tx.store(), target, amount.unwrap_or(r.amount).min(r.amount))?;
        }
    }
    let r = credit_requests::decide(c.config, c.tx, r, &decision, &c.caller.name, c.now)?;
    Ok(Response::json(200, &r))
}
