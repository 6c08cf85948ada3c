//! Extension, events and webhooks (credit model 2): `POST .../sessions/<id>/extend`, the two event
//! reads, the webhooks' status, redelivery and the hosts' delivery steps.

use super::handlers::Call;
use super::*;
use crate::events::{self, webhooks};
use crate::extend::{self, Asker, Extended};
use crate::store::{EventFilter, EventKind, EventPage};

/// `POST {base}/api/quota/sessions/<id>/extend` `{"minutes": m}`.
pub(super) fn extend(c: &mut Call<'_, '_>, id: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let id = session_id(id)?;
    let mut f = Fields::new("", Some(&c.body), false);
    let minutes = f.req_int("minutes", i64::MIN, i64::MAX);
    first_problem(f.finish())?;
    let minutes = minutes.unwrap_or(0);
    let asker = Asker {
        name: &c.caller.name,
        any_session: c.caller.has(SCOPE_SESSIONS) || c.caller.has(SCOPE_ADMIN),
    };
    match extend::extend(c.config, c.tx.store(), &asker, id, minutes, c.now)? {
        Extended::Done(view) => Ok(Response::json(200, &view)),
        Extended::Refused(message) => Ok(Response::error(403, &message)),
    }
}

/// `?after=` (an id: only newer events) and `?limit=`.
fn page(q: &mut QueryFields<'_>) -> Result<(i64, usize), QuotaError> {
    let after = q.int("after", 0, limits::JSON_INT_ABS_MAX)?.unwrap_or(0);
    let limit = q
        .int("limit", 1, limits::EVENTS_PAGE_MAX as i64)?
        .map_or(limits::EVENTS_PAGE_MAX, |n| n as usize);
    Ok((after, limit))
}

fn answer(events: &[crate::store::StoredEvent]) -> Response {
    let list: Vec<Value> = events.iter().map(events::event_json).collect();
    Response::json(200, &json!({ "events": list }))
}

/// `GET {base}/api/quota/me/events`: the caller's own, and their budgets' own.
pub(super) fn mine(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let (after, limit) = page(&mut q)?;
    q.finish()?;
    Ok(answer(&my_events(c, after, limit)?))
}

/// The caller's own events and their budgets' own after id `after`, at most `limit`, in id order.
pub(super) fn my_events(
    c: &mut Call<'_, '_>,
    after: i64,
    limit: usize,
) -> Result<Vec<crate::store::StoredEvent>, QuotaError> {
    let username = normalize_username("username", &c.caller.name)?;
    let mut budgets = Vec::new();
    if !c.config.budgets.is_empty() || !c.tx.scan_budgets(None, 1)?.is_empty() {
        let groups = crate::groups::of(c.tx.store(), &username)?;
        for (b, _) in crate::budgets::all(c.config, c.tx.store())? {
            if b.def.is_member(&username, &groups) {
                budgets.push(b.name.clone());
            }
        }
    }
    let filter = EventFilter::Mine {
        username: &username,
        budgets: &budgets,
    };
    Ok(c.tx.scan_events(&EventPage { after, limit, filter })?)
}

/// `GET {base}/admin/api/quota/events?after=&kind=&username=&budget=&limit=`.
pub(super) fn all(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let (after, limit) = page(&mut q)?;
    let kind = match q.take("kind") {
        None => None,
        Some(k) => Some(EventKind::parse(&k).ok_or_else(|| {
            QuotaError::invalid(
                "kind",
                format!(
                    "`{k}` is not an event kind (one of {})",
                    EventKind::ALL.map(EventKind::as_str).join(", ")
                ),
            )
        })?),
    };
    let username = q
        .take("username")
        .map(|u| normalize_username("username", &u))
        .transpose()?;
    let budget = q.take("budget");
    q.finish()?;
    let filter = EventFilter::Admin {
        kind,
        username: username.as_deref(),
        budget: budget.as_deref(),
    };
    Ok(answer(&c.tx.scan_events(&EventPage { after, limit, filter })?))
}

/// `GET {base}/admin/api/quota/webhooks`.
pub(super) fn status(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    Ok(Response::json(200, &webhooks::status(c.config, c.tx.store())?))
}

/// `POST {base}/admin/api/quota/webhooks/<name>/redeliver` `{"from_id": n}`.
pub(super) fn redeliver(c: &mut Call<'_, '_>, name: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let mut f = Fields::new("", Some(&c.body), false);
    let from_id = f.req_int("from_id", 1, limits::JSON_INT_ABS_MAX);
    first_problem(f.finish())?;
    let from_id = from_id.unwrap_or(1);
    Ok(Response::json(
        200,
        &webhooks::redeliver(c.config, c.tx.store(), name, from_id)?,
    ))
}

/// `POST {base}/admin/api/quota/webhooks/<name>/deliveries`: a host's delivery step.
pub(super) fn deliveries(c: &mut Call<'_, '_>, name: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let mut f = Fields::new("", Some(&c.body), false);
    let holder = f.req_str("holder").map(str::to_string);
    let delivered_through = f.opt_int("delivered_through", 0, limits::JSON_INT_ABS_MAX);
    let limit = f.opt_int("limit", 1, limits::DELIVERY_BATCH_MAX as i64);
    let release = f.opt_bool("release").unwrap_or(false);
    let failed_path = f.path_of("failed");
    let failed = f.raw("failed");
    let mut problems = f.finish();
    let failed = failed.and_then(|v| {
        let mut g = Fields::new(&failed_path, Some(v), false);
        let id = g.req_int("event_id", 1, limits::JSON_INT_ABS_MAX);
        let error = g.req_str("error").map(str::to_string);
        problems.extend(g.finish());
        Some((id?, error?))
    });
    if let Some(h) = &holder {
        if h.is_empty() || h.chars().count() > limits::RULE_NAME_CHARS_MAX {
            problems.push(QuotaError::invalid(
                "holder",
                format!("must be 1 to {} characters", limits::RULE_NAME_CHARS_MAX),
            ));
        }
    }
    first_problem(problems)?;
    let s = webhooks::Step {
        holder: holder.unwrap_or_default(),
        delivered_through,
        failed,
        limit: limit.map_or(100, |n| n as usize),
        release,
    };
    Ok(Response::json(
        200,
        &webhooks::step(c.config, c.tx.store(), name, &s, c.now)?,
    ))
}
