//! A user's own history (`{base}/api/quota/me/transactions`, `.../me/sessions`): the caller's rows
//! only, newest first, paged by id (`?limit=&after=`).

use super::handlers::Call;
use super::*;
use crate::history;

/// `?limit=` (1 to `max`, default `max`) and `?after=` (an id: only older rows).
fn page_query(c: &Call<'_, '_>, max: usize) -> Result<(Option<i64>, usize), QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let after = q.int("after", 1, limits::JSON_INT_ABS_MAX)?;
    let limit = q.int("limit", 1, max as i64)?.map_or(max, |n| n as usize);
    q.finish()?;
    Ok((after, limit))
}

pub(super) fn transactions(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let (after, limit) = page_query(c, limits::LEDGER_PAGE_MAX)?;
    let (rows, next) = history::transactions(c.tx.store(), &c.caller.name, after, limit)?;
    Ok(Response::json(
        200,
        &Listing::paged("transactions", &rows, "next_after", next),
    ))
}

pub(super) fn sessions(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let (after, limit) = page_query(c, limits::SESSIONS_LIST_MAX)?;
    let (rows, next) = history::sessions(c.tx.store(), &c.caller.name, after, limit, c.now)?;
    Ok(Response::json(
        200,
        &Listing::paged("sessions", &rows, "next_after", next),
    ))
}
