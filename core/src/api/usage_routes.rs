//! Usage reports (`{base}/admin/api/quota/usage`), a user's own usage (`{base}/api/quota/me/usage`)
//! and the ledger's date range (`?from=&to=` on `{base}/admin/api/quota/transactions`).

use super::handlers::Call;
use super::*;
use crate::usage::{self, Days, GroupBy, Order};

/// `?from=&to=` of the ledger: UTC days, both included, each optional (the ledger is paged, so
/// its range is not bounded). Everything when neither is given.
pub(super) fn ledger_range(q: &mut QueryFields<'_>) -> Result<(Timestamp, Timestamp), QuotaError> {
    let from = q.take("from").map(|t| usage::parse_day("from", &t)).transpose()?;
    let to = q.take("to").map(|t| usage::parse_day("to", &t)).transpose()?;
    if let (Some(f), Some(t)) = (from, to) {
        if t < f {
            return Err(QuotaError::invalid("to", "must not be before `from`"));
        }
    }
    let since = from.map_or(Timestamp(limits::TIMESTAMP_SECONDS_MIN), |d| {
        Timestamp(d * usage::DAY_SECONDS)
    });
    let until = to.map_or(Timestamp(limits::TIMESTAMP_SECONDS_MAX + 1), |d| {
        Timestamp((d + 1) * usage::DAY_SECONDS)
    });
    Ok((since, until))
}

/// `GET /admin/api/quota/usage?from=&to=&group_by=user|resource|day|budget&order=key|credits&limit=&after=&budget=`.
pub(super) fn report(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let from = q.take("from");
    let to = q.take("to");
    let group_by = q.take("group_by");
    let order = q.take("order");
    let after = q.take("after");
    let budget = q.take("budget");
    let group = q.take("group");
    let limit = q
        .int("limit", 1, limits::USAGE_PAGE_MAX as i64)?
        .map_or(limits::USAGE_PAGE_MAX, |n| n as usize);
    q.finish()?;
    // Course staff: a budget their groups share, or one of their groups.
    let reach = super::reach::Reach::of(c.caller);
    match (&budget, &group) {
        (Some(_), Some(_)) => {
            return Err(QuotaError::invalid("group", "give `group` or `budget`, not both"));
        }
        (Some(b), None) => reach.budget(c.config, c.tx.store(), b)?,
        (None, Some(g)) => {
            if reach.groups().is_some_and(|mine| !mine.contains(g)) {
                return Err(QuotaError::Forbidden(format!(
                    "group {g} is not a group you manage"
                )));
            }
        }
        (None, None) => reach.admin_only("read the whole hub's usage (give budget= or group=)")?,
    }
    let days = Days::parse(from.as_deref(), to.as_deref())?;
    let group_by = GroupBy::parse(group_by.as_deref().unwrap_or("day"))?;
    let order = match order.as_deref() {
        None | Some("key") => Order::Key,
        Some("credits") => Order::Credits,
        Some(o) => {
            return Err(QuotaError::invalid(
                "order",
                format!("must be `key` or `credits`, got `{o}`"),
            ))
        }
    };
    if order == Order::Credits && after.is_some() {
        return Err(QuotaError::invalid(
            "after",
            "pages only rows ordered by key (`order=credits` answers the top `limit` rows)",
        ));
    }
    if let (GroupBy::Day, Some(a)) = (group_by, after.as_deref()) {
        usage::parse_day("after", a)?;
    }
    let report = match &group {
        Some(g) => {
            crate::group_usage::report(c.tx.store(), g, days, group_by, order, after.as_deref(), limit)?
        }
        None => usage::report(
            c.tx.store(),
            days,
            group_by,
            order,
            after.as_deref(),
            limit,
            budget.as_deref(),
        )?,
    };
    Ok(Response::json(200, &report))
}

/// `GET /api/quota/me/usage?from=&to=`: the caller's own usage by day (the last 30 days, today
/// included, when neither is given).
pub(super) fn mine(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let from = q.take("from");
    let to = q.take("to");
    q.finish()?;
    let days = match (&from, &to) {
        (None, None) => Days::ending(c.now, limits::MY_USAGE_DAYS_DEFAULT),
        _ => Days::parse(from.as_deref(), to.as_deref())?,
    };
    Ok(Response::json(
        200,
        &usage::mine(c.tx.store(), &c.caller.name, days)?,
    ))
}
