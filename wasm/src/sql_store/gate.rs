//! The spawn gate's one read (issue 36): a user's record, stored groups and active sessions in a
//! single statement, where it took three (each a crossing of the host boundary): a row per active
//! session (or one row with the session's columns null), the user's and the groups' columns
//! repeated on each.

use quota_core::store::GateState;
use quota_core::StoreError;

use super::bridge::query;
use super::rows::{membership, session, user};
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
                out.groups = Some(membership(g)?.1);
            }
        }
        if !matches!(s[0], Cell::Null) {
            out.active.push(session(s)?);
        }
    }
    out.active.sort_unstable_by_key(|s| s.id);
    Ok(out)
}
