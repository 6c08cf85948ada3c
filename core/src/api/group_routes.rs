//! The group routes (`{base}/admin/api/quota/groups[/<name>]`, `.../memberships`) and the
//! accelerator list as one user may start them.

use super::handlers::Call;
use super::*;
use crate::groups;

/// `GET .../groups`: every group with members or settings.
pub(super) fn list(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let groups = groups::list(&c.config.groups, c.tx.store())?;
    Ok(Response::json(200, &json!({ "groups": groups })))
}

/// `GET` (members and settings), `PUT` (`{"members": [...]}`: exactly these), `POST` (`{"add":
/// [...], "remove": [...]}`) and `DELETE` (everyone leaves it) of one group.
pub(super) fn group(c: &mut Call<'_, '_>, method: &str, name: &str) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let changes = match method {
        "GET" => {
            return Ok(Response::json(
                200,
                &groups::show(&c.config.groups, c.tx.store(), name)?,
            ))
        }
        "DELETE" => vec![MemberChange::Set(BTreeSet::new())],
        _ => {
            // Validate the name before the body, so a bad name is named first.
            groups::validate_group("name", name)?;
            members_body(&c.body, method == "PUT")?
        }
    };
    let mut result: Option<groups::Changed> = None;
    for change in &changes {
        let r = groups::change_members(c.tx.store(), name, change, c.now)?;
        result = Some(match result {
            None => r,
            Some(prev) => groups::Changed {
                added: prev.added + r.added,
                removed: prev.removed + r.removed,
                ..r
            },
        });
    }
    Ok(Response::json(200, &result))
}

/// `PUT .../memberships`: the host's view of many users' groups at once (`complete`: of everyone).
pub(super) fn memberships(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    no_query(&c.query)?;
    let (users, complete) = memberships_body(&c.body)?;
    Ok(Response::json(
        200,
        &groups::replace(c.tx.store(), &users, complete, c.now)?,
    ))
}

/// `GET .../memberships?after=&limit=`: users' groups by username, a page at a time (a user whose
/// groups were all removed is listed with none).
pub(super) fn list_memberships(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let after = q.take("after");
    let limit = q
        .int("limit", 1, limits::USERS_PAGE_MAX as i64)?
        .map_or(limits::USERS_PAGE_MAX, |n| n as usize);
    q.finish()?;
    let mut page = c.tx.scan_memberships(after.as_deref(), limit + 1)?;
    let next = if page.len() > limit {
        page.truncate(limit);
        page.last().map(|(u, _)| u.clone())
    } else {
        None
    };
    let rows: Vec<MembershipRow> = page
        .iter()
        .map(|(username, m)| MembershipRow {
            username,
            groups: &m.groups,
            since: m.since,
        })
        .collect();
    Ok(Response::json(
        200,
        &Listing::paged("memberships", &rows, "next_after", next),
    ))
}

/// A row of the memberships list.
#[derive(Serialize)]
struct MembershipRow<'a> {
    username: &'a str,
    groups: &'a BTreeSet<String>,
    since: Timestamp,
}

/// `GET /api/accelerators`: the accelerators the caller (or, for an admin or the hub, `?username=`)
/// may start: restricted ones only for members of their groups.
pub(super) fn accelerators(c: &mut Call<'_, '_>) -> Result<Response, QuotaError> {
    let mut q = QueryFields::new(&c.query);
    let asked = q.take("username");
    q.finish()?;
    let username = match asked {
        Some(u) => {
            let u = normalize_username("username", &u)?;
            let own = u == c.caller.name.to_lowercase();
            if !own && !c.caller.has(SCOPE_ADMIN) && !c.caller.has(SCOPE_SESSIONS) {
                return Ok(Response::error(
                    403,
                    "Forbidden: only an admin or the hub may ask for another user's accelerators",
                ));
            }
            u
        }
        None => c.caller.name.to_lowercase(),
    };
    if c.config.groups.restricted.is_empty() {
        return Ok(Response::json(200, &reads::accelerators(c.config)));
    }
    let mine = groups::of(c.tx.store(), &username)?;
    Ok(Response::json(200, &reads::accelerators_for(c.config, &mine)))
}
