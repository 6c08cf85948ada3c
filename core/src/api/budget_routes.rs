//! The budget routes: `GET .../budgets` (the list) and `.../budgets/<name>`: `GET` (detail), `PUT`
//! (define over REST), `POST` (a balance action, as for a user), `DELETE`.

use super::handlers::Call;
use super::reach::Reach;
use super::*;
use crate::budgets;
use crate::staff_allowance::Target;

/// `GET .../budgets`: every budget (the first shape), or a page with `after` or `limit`.
pub(super) fn list(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let after = q.take("after");
    let limit = q.int("limit", 1, limits::BUDGETS_MAX as i64)?;
    q.finish()?;
    // Course staff: the budgets their groups share.
    let reach = Reach::of(c.caller);
    let groups = reach.groups();
    if after.is_none() && limit.is_none() {
        let (budgets, _) = budgets::list(c.config, c.tx.store(), c.now, None, usize::MAX, groups)?;
        return Ok(Response::json(200, &json!({ "budgets": budgets })));
    }
    let limit = limit.map_or(limits::BUDGETS_MAX, |n| n as usize);
    let (budgets, next) = budgets::list(c.config, c.tx.store(), c.now, after.as_deref(), limit, groups)?;
    Ok(Response::json(
        200,
        &json!({ "budgets": budgets, "next_after": next }),
    ))
}

/// `.../budgets/<name>` by method.
pub(super) fn budget(c: &mut Call<'_, '_>, method: &str, name: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    if method == "GET" || method == "POST" {
        // Course staff: a budget their groups share (defining and deleting are a quota admin's).
        Reach::of(c.caller).budget(c.config, c.tx.store(), name)?;
    }
    match method {
        "GET" => Ok(Response::json(
            200,
            &budgets::detail(c.config, c.tx.store(), name, c.now)?,
        )),
        "PUT" => {
            budgets::validate_name("name", name)?;
            let def = budgets::from_body(&c.body, &c.config.accelerators)?;
            Ok(Response::json(
                200,
                &budgets::define(c.config, c.tx.store(), name, &def, c.now)?,
            ))
        }
        "DELETE" => Ok(Response::json(
            200,
            &budgets::delete(c.config, c.tx, name, c.now)?,
        )),
        _ => {
            let body = admin_body(&c.body)?;
            if let Some(mut allowed) = Reach::of(c.caller).allowances(c.config, c.now) {
                if let Some(b) = budgets::find(c.config, c.tx.store(), name)? {
                    let acct = budgets::account(c.tx.store(), &b.name, "", c.now)?;
                    let added = crate::admin::addition(c.tx, &acct, body.0, c.now)?;
                    allowed.admit(c.tx.store(), Target::Budget(name), added)?;
                }
            }
            Ok(Response::json(
                200,
                &budgets::change(c.config, c.tx, name, body, &c.caller.name, c.now)?,
            ))
        }
    }
}
