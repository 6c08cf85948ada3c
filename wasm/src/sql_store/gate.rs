//! The one reads of the spawn gate and of a session's end (issue 36), each a single statement where
//! they took two or three (each a crossing of the host boundary). The gate's: a user's record, stored
//! groups and active sessions, a row per active session (or one row with the session's columns
//! null), the user's and the groups' columns repeated on each. The end's: a session and its user.

use quota_core::store::{GateState, Session, UserRecord};
use quota_core::StoreError;

use super::bridge::query;
use super::rows::{membership_text, session, user};
use crate::dialect::{self, Dialect};
use crate::sql_json::{Cell, Params};

const user_columns: usize = dialect::user_column_count;
const groups_columns: usize = dialect::membership_column_count;

/// [`quota_core::store::Store::gate_state`] over SQL.
pub(super) fn gate_state(d: &Dialect, username: &str, with_groups: bool) -> Result<GateState, StoreError> {
    let rows = query(d.gate_state, Params::new().text(username))?;
    let mut out = GateState::default();
    for (i, mut row) in rows.into_iter().enumerate() {
        let expected = user_columns + groups_columns + dialect::session_column_count;
        if row.len() != expected {
            return Err(StoreError(format!(
                "gate state: a row has {} columns, expected {expected}",
                row.len()
            )));
        }
        let (u, rest) = row.split_at_mut(user_columns);
        let (g, s) = rest.split_at_mut(groups_columns);
        if i == 0 {
            if !matches!(u[0], Cell::Null) {
                out.user = Some(user(u)?);
            }
            if with_groups && !matches!(g[0], Cell::Null) {
                out.groups = Some(membership_text(g)?);
            }
        }
        if !matches!(s[0], Cell::Null) {
            out.active.push(session(s)?);
        }
    }
    out.active.sort_unstable_by_key(|s| s.id);
    Ok(out)
}

/// [`quota_core::store::Store::session_and_user`] over SQL.
pub(super) fn session_and_user(
    d: &Dialect,
    id: i64,
) -> Result<Option<(Session, Option<UserRecord>)>, StoreError> {
    let Some(mut row) = query(d.session_and_user, Params::new().int(id)?)?
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    let expected = dialect::session_column_count + user_columns;
    if row.len() != expected {
        return Err(StoreError(format!(
            "a session and its user: a row has {} columns, expected {expected}",
            row.len()
        )));
    }
    let (s, u) = row.split_at_mut(dialect::session_column_count);
    let user = if matches!(u[0], Cell::Null) {
        None
    } else {
        Some(user(u)?)
    };
    Ok(Some((session(s)?, user)))
}
