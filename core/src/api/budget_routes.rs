//! The budget routes: `GET .../budgets` (the list) and `.../budgets/<name>`: `GET` (detail), `PUT`
//! (define over REST), `POST` (a balance action, as for a user), `DELETE`.

use super::handlers::Call;
use super::*;
use crate::budgets;

/// `GET .../budgets`.
pub(super) fn list(c: &mut Call<'_>) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let budgets = budgets::list(c.config, c.store, c.now)?;
    Ok(Response::json(200, &json!({ "budgets": budgets })))
}

/// `.../budgets/<name>` by method.
pub(super) fn budget(c: &mut Call<'_>, method: &str, name: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    match method {
        "GET" => Ok(Response::json(
            200,
            &budgets::detail(c.config, c.store, name, c.now)?,
        )),
        "PUT" => {
            budgets::validate_name("name", name)?;
            let def = budgets::from_body(&c.body, &c.config.accelerators)?;
            Ok(Response::json(
                200,
                &budgets::define(c.config, c.store, name, &def, c.now)?,
            ))
        }
        "DELETE" => Ok(Response::json(
            200,
            &budgets::delete(c.config, c.store, name, c.now)?,
        )),
        _ => {
            let body = admin_body(&c.body)?;
            Ok(Response::json(
                200,
                &budgets::change(c.config, c.store, name, body, &c.caller.name, c.now)?,
            ))
        }
    }
}
