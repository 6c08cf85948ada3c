//! A page of a group snapshot in a few set-based statements (issue 36): the users with groups in
//! one upsert that changes only what differs, those without in one update, and the index of members
//! by group rewritten for the users that changed, instead of a statement or three per user.

use std::collections::{BTreeMap, BTreeSet};

use quota_core::{StoreError, Timestamp};

use super::bridge::{execute_many, query};
use super::rows::{all, group_text};
use crate::dialect::Dialect;
use crate::sql_json::{Cell, Columns, Params};

fn json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError(e.to_string()))
}

fn username(row: &mut [Cell]) -> Result<String, StoreError> {
    Columns::new(row, "memberships", 1)?.text(0)
}

/// [`quota_core::store::Store::put_memberships`] over SQL: returns how many users changed.
pub(super) fn put_memberships(
    d: &Dialect,
    users: &[(&str, &BTreeSet<String>)],
    since: Timestamp,
) -> Result<u64, StoreError> {
    let groups: BTreeMap<&str, &BTreeSet<String>> = users.iter().copied().collect();
    let (full, empty): (Vec<_>, Vec<_>) = users.iter().partition(|(_, g)| !g.is_empty());
    let mut changed: Vec<String> = Vec::new();
    if !full.is_empty() {
        let rows: Vec<(&str, String)> = full.iter().map(|(u, g)| (*u, group_text(g))).collect();
        let p = Params::new().text(&json(&rows)?).int(since.seconds())?;
        changed.extend(all(query(d.put_memberships, p)?, username)?);
    }
    if !empty.is_empty() {
        let names: Vec<&str> = empty.iter().map(|(u, _)| *u).collect();
        let p = Params::new().text(&json(&names)?).int(since.seconds())?;
        changed.extend(all(query(d.clear_memberships, p)?, username)?);
    }
    if changed.is_empty() {
        return Ok(0);
    }
    // The index of members by group follows, for the users that changed.
    query(d.delete_group_members_of, Params::new().text(&json(&changed)?))?;
    let mut rows = Params::new();
    let mut any = false;
    for u in &changed {
        for g in groups.get(u.as_str()).copied().into_iter().flatten() {
            rows.begin_row();
            rows.push_text(g);
            rows.push_text(u);
            rows.end_row();
            any = true;
        }
    }
    if any {
        execute_many(d.insert_group_member, rows)?;
    }
    Ok(changed.len() as u64)
}
