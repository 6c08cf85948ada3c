//! `GET {base}/api/quota/me/status?server=&events_after=`: everything a user's running server shows
//! them about its quota in one read (JupyterLab's status bar polls it through the server's own
//! token): the user's quota as `/api/quota/me` answers it, the server's running session with its
//! time left and cost so far, what extending it by 30, 60 or 120 minutes would cost or why it
//! would be refused (the extension's own checks and texts), and the user's newest events.

use super::event_routes::my_events;
use super::handlers::Call;
use super::*;
use crate::events;
use crate::extend;
use crate::names::validate_server_name;

#[derive(Serialize)]
struct Choice {
    minutes: i64,
    cost: crate::milli::Milli,
    /// Why it would be refused now; null: allowed.
    refusal: Option<String>,
}

pub(super) fn status(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let server = q.take("server").unwrap_or_default();
    let after = q.int("events_after", 0, limits::JSON_INT_ABS_MAX)?;
    q.finish()?;
    let server = validate_server_name("server", &server)?;
    let me = reads::me(c.config, c.tx.store(), &c.caller.name, c.now, true)?;
    let username = normalize_username("username", &c.caller.name)?;
    let running = sessions::find_active(c.tx, &username, &server)?;
    let (mut seconds_left, mut cost_so_far, mut choices) = (Value::Null, Value::Null, Vec::new());
    if let Some(s) = &running {
        let ends = events::sweep::ends_at(s);
        seconds_left = json!((ends.seconds() - c.now.seconds()).max(0));
        let free = !s.billable || (s.budget.is_none() && me.unlimited);
        let minutes = sessions::billed_minutes(c.now.seconds() - s.start_time.seconds());
        cost_so_far = json!(if free {
            0
        } else {
            sessions::session_cost(s, minutes)?
        });
        for minutes in limits::EXTEND_CHOICES {
            let (cost, refusal) = extend::quote(c.config, c.tx.store(), s, minutes, c.now)?;
            choices.push(Choice {
                minutes,
                cost,
                refusal,
            });
        }
    }
    let events: Vec<Value> = match after {
        None => Vec::new(),
        Some(after) => {
            let mut list = my_events(c, after, limits::EVENTS_PAGE_MAX)?;
            let skip = list.len().saturating_sub(crate::limits::STATUS_EVENTS_MAX);
            list.drain(..skip);
            list.iter().map(events::event_json).collect()
        }
    };
    let session = running.as_ref().map(crate::sessions::SessionView::from);
    Ok(Response::json(
        200,
        &json!({
            "me": me,
            "server_name": server,
            "session": session,
            "seconds_left": seconds_left,
            "cost_so_far": cost_so_far,
            "extend": choices,
            "events": events,
            "last_event_id": c.tx.last_event_id()?,
        }),
    ))
}
