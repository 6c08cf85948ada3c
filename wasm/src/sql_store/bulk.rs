//! Many changes in one statement each: the user rows and the audit rows of a large batch as one
//! JSON parameter, for the dialects that have set-based statements.

use quota_core::store::Change;
use quota_core::StoreError;

use super::bridge::execute_many;
use super::rows::{transaction_params, user_params};
use crate::dialect;
use crate::sql_json::Params;

/// From how many changes on the set-based statements are used (when the dialect has them).
pub(super) const set_based_rows_min: usize = 64;

/// One parameter row holding `json` as text (the rows of a set-based statement).
fn one_json_param(json: &str) -> Params {
    let mut p = Params::new();
    p.begin_row();
    let mut p = p.text(json);
    p.end_row();
    p
}

/// [`Store::record_changes`] with the dialect's set-based statements: the user rows in one UPDATE
/// (and one INSERT for those that did not exist), the audit rows in one INSERT, ids in order.
pub(super) fn record_changes_set_based(bulk: &dialect::Bulk, changes: &[Change]) -> Result<(), StoreError> {
    let mut users = Params::new();
    let mut entries = Params::new();
    // One row per user, its last state: a set-based UPDATE applies one source row per target row
    // (which one is unspecified when several match), and a sweep changes one user several times.
    let mut seen = std::collections::HashSet::new();
    let last: Vec<&Change> = changes
        .iter()
        .rev()
        .filter(|c| seen.insert(c.user.username.as_str()))
        .collect();
    for c in last.iter().rev() {
        users.begin_row();
        user_params(&mut users, &c.user)?;
        users.end_row();
    }
    for c in changes {
        entries.begin_row();
        transaction_params(&mut entries, &c.entry)?;
        entries.end_row();
    }
    let users = users.finish();
    let changed = execute_many(bulk.update_users, one_json_param(&users))?;
    if changed < last.len() as u64 {
        execute_many(bulk.insert_missing_users, one_json_param(&users))?;
    }
    execute_many(bulk.insert_transactions, one_json_param(&entries.finish()))?;
    Ok(())
}
