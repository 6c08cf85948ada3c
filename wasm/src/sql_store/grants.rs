//! Dated grants and their warnings over SQL: their statements and `GrantStore`.

use quota_core::store::{AccountKey, Grant, GrantStore, NewGrant};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::rows::{account_columns, all, grant, limit, name_and_int, named_grant};
use super::sql::Sql;
use crate::sql_json::{Cell, Columns, Params};

/// (grant id, amount, remaining, granted at, expires at) of the account (`$1` username, `$2`
/// budget, `''` for none) with credit left, by id.
const ACCOUNT_GRANTS: Sql = same!(
    "SELECT grant_id, amount, remaining, granted_at, expires_at FROM grants
         WHERE username = $1 AND budget = $2 AND remaining > 0 ORDER BY grant_id"
);
/// (username, budget, amount, granted at, expires at); answers the new grant's id.
const INSERT_GRANT: Sql = same!(
    "INSERT INTO grants (username, budget, amount, remaining, granted_at, expires_at)
         VALUES ($1, $2, $3, $3, $4, $5) RETURNING grant_id"
);
/// (grant id, remaining).
const SET_GRANT_REMAINING: Sql = same!("UPDATE grants SET remaining = $2 WHERE grant_id = $1");
/// Sets the remaining credit of the grants in `$1` (a JSON list of ids) to 0.
const ZERO_GRANTS: Sql = each!(
    sqlite: "UPDATE grants SET remaining = 0 WHERE grant_id IN (SELECT value FROM json_each(?1))",
    postgres: "UPDATE grants SET remaining = 0
         WHERE grant_id = ANY (ARRAY(SELECT (jsonb_array_elements_text($1::text::jsonb))::bigint))",
);
/// (username, credit due) of users from `$1` to `$2` with personal grants due by `$3`.
const DUE_USER_CREDIT_BETWEEN: Sql = same!(
    "SELECT username, SUM(remaining)::bigint FROM grants WHERE budget = ''
         AND remaining > 0 AND expires_at <= $3 AND username >= $1 AND username <= $2 GROUP BY username
         ORDER BY username"
);
/// (username, grant id, amount, remaining, granted at, expires at) of up to `$2` personal grants
/// due by `$1` with credit left, by expiry, then id (the due index's own order).
const DUE_USER_GRANTS: Sql = same!(
    "SELECT username, grant_id, amount, remaining, granted_at, expires_at FROM grants
         WHERE budget = '' AND remaining > 0 AND expires_at <= $1 ORDER BY expires_at, grant_id LIMIT $2"
);
/// The same of the personal grants holding credit of the users from `$1` to `$2`.
const USER_GRANTS_BETWEEN: Sql = same!(
    "SELECT username, grant_id, amount, remaining, granted_at, expires_at FROM grants
         WHERE budget = '' AND remaining > 0 AND username >= $1 AND username <= $2
         ORDER BY username, grant_id"
);
/// Up to `$3` budgets named after `$2` (`''`: from the first) with a grant due by `$1`, by name.
/// Budgets' grants have an empty username: the held index finds them without the users' grants.
const DUE_BUDGETS: Sql = same!(
    "SELECT DISTINCT budget FROM grants WHERE username = '' AND budget > $2 AND remaining > 0
         AND expires_at <= $1 ORDER BY budget LIMIT $3"
);
/// Gives grants with credit and no warning time one `$1` seconds before their expiry.
const ARM_GRANT_WARNINGS: Sql =
    same!("UPDATE grants SET warn_at = expires_at - $1 WHERE warn_at IS NULL AND remaining > 0");
/// (username, budget, grant id, amount, remaining, granted at, expires at, warned mark) of at most
/// `$2` grants with credit whose warning time came by `$1`, not yet expired.
const GRANTS_TO_WARN: Sql = same!(
    "SELECT username, budget, grant_id, amount, remaining, granted_at, expires_at, warned_mark
         FROM grants WHERE remaining > 0 AND warn_at <= $1 AND expires_at > $1 ORDER BY warn_at, grant_id
         LIMIT $2"
);
/// (grant id, warned mark, warn at).
const SET_GRANT_WARNING: Sql = same!("UPDATE grants SET warned_mark = $2, warn_at = $3 WHERE grant_id = $1");

impl GrantStore for SqlStore {
    fn account_grants(&mut self, account: &AccountKey) -> Result<Vec<Grant>, StoreError> {
        let (username, budget) = account_columns(account);
        let p = Params::new().text(username).text(budget);
        all(self.query(&ACCOUNT_GRANTS, p)?, grant)
    }

    fn insert_grant(&mut self, account: &AccountKey, g: &NewGrant) -> Result<i64, StoreError> {
        let (username, budget) = account_columns(account);
        let p = Params::new()
            .text(username)
            .text(budget)
            .int(g.amount)?
            .int(g.granted_at.seconds())?
            .int(g.expires_at.seconds())?;
        self.one_int(&INSERT_GRANT, p, "insert_grant")
    }

    fn set_grants_remaining(&mut self, changes: &[(i64, i64)]) -> Result<(), StoreError> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut rows = Params::new();
        for (id, remaining) in changes {
            rows.begin_row();
            rows.push_int(*id)?;
            rows.push_int(*remaining)?;
            rows.end_row();
        }
        self.execute_many(&SET_GRANT_REMAINING, rows).map(drop)
    }

    fn zero_grants(&mut self, ids: &[i64]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let list = serde_json::to_string(ids).map_err(|e| StoreError(e.to_string()))?;
        self.query(&ZERO_GRANTS, Params::new().text(&list)).map(drop)
    }

    fn due_user_credit_between(
        &mut self,
        first: &str,
        last: &str,
        now: Timestamp,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let p = Params::new().text(first).text(last).int(now.seconds())?;
        all(self.query(&DUE_USER_CREDIT_BETWEEN, p)?, name_and_int)
    }

    fn due_user_grants(&mut self, now: Timestamp, n: usize) -> Result<Vec<(String, Grant)>, StoreError> {
        let p = Params::new().int(now.seconds())?.int(limit(n))?;
        all(self.query(&DUE_USER_GRANTS, p)?, named_grant)
    }

    fn user_grants_between(&mut self, first: &str, last: &str) -> Result<Vec<(String, Grant)>, StoreError> {
        let p = Params::new().text(first).text(last);
        all(self.query(&USER_GRANTS_BETWEEN, p)?, named_grant)
    }

    fn due_budgets(
        &mut self,
        now: Timestamp,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<String>, StoreError> {
        // Every budget's name is not empty, so `''` starts from the first.
        let p = Params::new()
            .int(now.seconds())?
            .text(after.unwrap_or(""))
            .int(limit(n))?;
        all(self.query(&DUE_BUDGETS, p)?, |r| {
            Columns::new(r, "grants", 1)?.text(0)
        })
    }

    fn arm_grant_warnings(&mut self, lead_seconds: i64) -> Result<(), StoreError> {
        self.execute(&ARM_GRANT_WARNINGS, Params::new().int(lead_seconds)?)
            .map(drop)
    }

    fn grants_to_warn(
        &mut self,
        now: Timestamp,
        n: usize,
    ) -> Result<Vec<(AccountKey, Grant, Option<i64>)>, StoreError> {
        let rows = self.query(&GRANTS_TO_WARN, Params::new().int(now.seconds())?.int(limit(n))?)?;
        all(rows, |r: &mut [Cell]| {
            let mut c = Columns::new(r, "grants", 8)?;
            let (username, budget) = (c.text(0)?, c.text(1)?);
            let account = if budget.is_empty() {
                AccountKey::User(username)
            } else {
                AccountKey::Budget(budget)
            };
            let g = Grant {
                grant_id: c.int(2)?,
                amount: c.int(3)?,
                remaining: c.int(4)?,
                granted_at: Timestamp(c.int(5)?),
                expires_at: Timestamp(c.int(6)?),
            };
            Ok((account, g, c.opt_int(7)?))
        })
    }

    fn set_grant_warning(&mut self, id: i64, mark: Option<i64>, at: Timestamp) -> Result<(), StoreError> {
        let p = Params::new().int(id)?.opt_int(mark)?.int(at.seconds())?;
        self.execute(&SET_GRANT_WARNING, p).map(drop)
    }
}
