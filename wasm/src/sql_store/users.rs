//! Users and the ledger over SQL: their statements and `UserStore`.

use quota_core::store::{Change, LedgerPage, Transaction, UserRecord, UserStore};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::rows::{all, first, limit, transaction, transaction_params, user, user_params};
use super::sql::{Dialect, Sql};
use crate::sql_json::Params;

const GET_USER: Sql = same!(concat!(
    "SELECT ",
    user_columns!(),
    " FROM users WHERE username = $1"
));
// A user row is written as UPDATE, then INSERT for the rows that did not exist: nearly every write
// changes an existing user, and SQLite's `INSERT ... ON CONFLICT DO UPDATE` tries the insert first
// (measured slower on the spawn and billing paths).
const UPDATE_USER: Sql =
    same!("UPDATE users SET balance = $2, unlimited = $3, updated_at = $4 WHERE username = $1");
/// Inserts a user row unless one exists (after `UPDATE_USER` changed fewer rows than it was given).
const INSERT_MISSING_USER: Sql = each!(
    sqlite: "INSERT OR IGNORE INTO users (username, balance, unlimited, updated_at)
         VALUES (?1, ?2, ?3, ?4)",
    postgres: "INSERT INTO users (username, balance, unlimited, updated_at)
         VALUES ($1, $2, $3, $4) ON CONFLICT (username) DO NOTHING",
);
// Two statements, not `$1 IS NULL OR username > $1`: the OR makes SQLite scan from the first row
// for every page instead of seeking the primary key.
const SCAN_USERS_FIRST: Sql = same!(concat!(
    "SELECT ",
    user_columns!(),
    " FROM users ORDER BY username LIMIT $1"
));
const SCAN_USERS_AFTER: Sql = same!(concat!(
    "SELECT ",
    user_columns!(),
    " FROM users WHERE username > $1 ORDER BY username LIMIT $2"
));
/// The users named in `$1` (a JSON list of names).
const USERS_NAMED: Sql = each!(
    sqlite: concat!(
        "SELECT ",
        user_columns!(),
        " FROM users WHERE username IN (SELECT value FROM json_each(?1)) ORDER BY username"
    ),
    postgres: concat!(
        "SELECT ",
        user_columns!(),
        " FROM users WHERE username = ANY (ARRAY(SELECT jsonb_array_elements_text($1::text::jsonb))) ORDER BY username"
    ),
);
const INSERT_TRANSACTION: Sql = same!(
    "INSERT INTO transactions (username, amount, transaction_type, resource_type,
         description, balance_before, balance_after, created_at, created_by, budget, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
);
/// Rows per `INSERT_TRANSACTION_BLOCK` (a refresh writes 1,000 audit rows per page; measured with
/// 100,000 rows: 16 per statement halves the time SQLite spends on them, more gains little).
const TRANSACTION_BLOCK_ROWS: usize = 16;
/// `INSERT_TRANSACTION` for [`TRANSACTION_BLOCK_ROWS`] rows at once (parameters row after row):
/// one statement execution, and one update of the id sequence, per block instead of per row.
const INSERT_TRANSACTION_BLOCK: Sql = same!(concat!(
    "INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
         balance_before, balance_after, created_at, created_by, budget, expires_at) VALUES ",
    "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11),($12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22),($23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33),($34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44),($45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55),($56, $57, $58, $59, $60, $61, $62, $63, $64, $65, $66),($67, $68, $69, $70, $71, $72, $73, $74, $75, $76, $77),($78, $79, $80, $81, $82, $83, $84, $85, $86, $87, $88),($89, $90, $91, $92, $93, $94, $95, $96, $97, $98, $99),($100, $101, $102, $103, $104, $105, $106, $107, $108, $109, $110),($111, $112, $113, $114, $115, $116, $117, $118, $119, $120, $121),($122, $123, $124, $125, $126, $127, $128, $129, $130, $131, $132),($133, $134, $135, $136, $137, $138, $139, $140, $141, $142, $143),($144, $145, $146, $147, $148, $149, $150, $151, $152, $153, $154),($155, $156, $157, $158, $159, $160, $161, $162, $163, $164, $165),($166, $167, $168, $169, $170, $171, $172, $173, $174, $175, $176)"
));
const RECENT_TRANSACTIONS: Sql = same!(concat!(
    "SELECT ",
    transaction_columns!(),
    " FROM transactions WHERE username = $1 AND budget IS NULL
         ORDER BY created_at DESC, id DESC LIMIT $2"
));
const SCAN_TRANSACTIONS: Sql = same!(concat!(
    "SELECT ",
    transaction_columns!(),
    " FROM transactions WHERE id > $1
         AND (($6::text IS NULL AND ($2::text IS NULL OR (username = $2 AND budget IS NULL)))
              OR (budget = $6 AND ($2::text IS NULL OR username = $2)))
         AND created_at >= $4 AND created_at < $5 ORDER BY id LIMIT $3"
));
/// A user's transactions with `id < $2`, newest first, at most `$3`.
const USER_TRANSACTIONS: Sql = same!(concat!(
    "SELECT ",
    transaction_columns!(),
    " FROM transactions WHERE username = $1 AND budget IS NULL AND id < $2 ORDER BY id DESC LIMIT $3"
));
/// What `$1` added in `[$3, $4)` to the personal accounts of group `$2`'s members now: the group's
/// members (its primary key), each member's month of the ledger (`transactions_by_user`).
const ADDED_TO_MEMBERS: Sql = same!(
    "SELECT COALESCE(SUM(t.amount), 0)::bigint FROM group_members m
         JOIN transactions t ON t.username = m.username AND t.created_at >= $3 AND t.created_at < $4
         WHERE m.group_name = $2 AND t.budget IS NULL AND t.created_by = $1 AND t.amount > 0"
);
/// What `$1` added in `[$3, $4)` to budget `$2`'s own account (`transactions_by_budget`).
const ADDED_TO_BUDGET: Sql = same!(
    "SELECT COALESCE(SUM(amount), 0)::bigint FROM transactions
         WHERE budget = $2 AND created_at >= $3 AND created_at < $4 AND username = ''
         AND created_by = $1 AND amount > 0"
);

/// Set-based forms of the bulk writes, each taking all rows at once as one JSON text parameter
/// (`[[...], ...]`, the rows `UPDATE_USER` and `INSERT_TRANSACTION` take): one statement per page
/// of a refresh instead of one per row. PostgreSQL parses and runs each statement on its own, so
/// 1,000 single-row UPDATEs cost far more than one UPDATE of 1,000 rows (measured: refresh of
/// 100,000 users, host-shim/benches/postgres.rs); SQLite runs the row-by-row statements in-process.
struct SetBased {
    update_users: &'static str,
    insert_missing_users: &'static str,
    /// Ids follow the order of the rows.
    insert_transactions: &'static str,
}

const POSTGRES_SET_BASED: SetBased = SetBased {
    update_users: "UPDATE users AS u SET balance = (e->>1)::bigint, unlimited = (e->>2)::bigint,
             updated_at = (e->>3)::bigint
             FROM jsonb_array_elements($1::text::jsonb) AS e WHERE u.username = e->>0",
    insert_missing_users: "INSERT INTO users (username, balance, unlimited, updated_at)
             SELECT e->>0, (e->>1)::bigint, (e->>2)::bigint, (e->>3)::bigint
             FROM jsonb_array_elements($1::text::jsonb) AS e ON CONFLICT (username) DO NOTHING",
    insert_transactions: "INSERT INTO transactions (username, amount, transaction_type,
             resource_type, description, balance_before, balance_after, created_at, created_by,
             budget, expires_at)
             SELECT e->>0, (e->>1)::bigint, e->>2, e->>3, e->>4, (e->>5)::bigint, (e->>6)::bigint,
             (e->>7)::bigint, e->>8, e->>9, (e->>10)::bigint
             FROM jsonb_array_elements($1::text::jsonb) WITH ORDINALITY AS r(e, n) ORDER BY n",
};

fn set_based(d: Dialect) -> Option<&'static SetBased> {
    match d {
        Dialect::Postgres => Some(&POSTGRES_SET_BASED),
        Dialect::Sqlite => None,
    }
}

/// From how many changes on the set-based statements are used (when the dialect has them): for a
/// few rows (a session's charge) PostgreSQL's plan for the join reads the whole table, and under
/// SERIALIZABLE that read conflicts with every concurrent writer (measured: 8 writers ending
/// sessions).
const SET_BASED_ROWS_MIN: usize = 64;

impl UserStore for SqlStore {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        first(self.query(&GET_USER, Params::new().text(username))?, user)
    }

    fn put_user(&mut self, u: &UserRecord) -> Result<(), StoreError> {
        let mut p = Params::new();
        user_params(&mut p, u)?;
        self.write_users(&format!("[{}]", p.finish()), 1)
    }

    fn scan_users(&mut self, after: Option<&str>, n: usize) -> Result<Vec<UserRecord>, StoreError> {
        let rows = match after {
            Some(a) => self.query(&SCAN_USERS_AFTER, Params::new().text(a).int(limit(n))?)?,
            None => self.query(&SCAN_USERS_FIRST, Params::new().int(limit(n))?)?,
        };
        all(rows, user)
    }

    fn users_named(&mut self, names: &[String]) -> Result<Vec<UserRecord>, StoreError> {
        let list = serde_json::to_string(names).map_err(|e| StoreError(e.to_string()))?;
        all(self.query(&USERS_NAMED, Params::new().text(&list))?, user)
    }

    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError> {
        if let Some(bulk) = set_based(self.d).filter(|_| changes.len() >= SET_BASED_ROWS_MIN) {
            return self.record_changes_set_based(bulk, changes);
        }
        // Bulk statements: every user row, then the audit rows in blocks of
        // `TRANSACTION_BLOCK_ROWS`, then the rest one by one (ids follow the order given).
        let mut users = Params::new();
        for c in changes {
            users.begin_row();
            user_params(&mut users, &c.user)?;
            users.end_row();
        }
        self.write_users(&users.finish(), changes.len())?;
        let blocks = changes.len() / TRANSACTION_BLOCK_ROWS * TRANSACTION_BLOCK_ROWS;
        if blocks > 0 {
            let mut entries = Params::new();
            for block in changes[..blocks].chunks(TRANSACTION_BLOCK_ROWS) {
                entries.begin_row();
                for c in block {
                    transaction_params(&mut entries, &c.entry)?;
                }
                entries.end_row();
            }
            self.execute_many(&INSERT_TRANSACTION_BLOCK, entries)?;
        }
        if blocks < changes.len() {
            self.insert_transactions(changes[blocks..].iter().map(|c| &c.entry))?;
        }
        Ok(())
    }

    fn recent_transactions(&mut self, username: &str, n: usize) -> Result<Vec<Transaction>, StoreError> {
        let p = Params::new().text(username).int(limit(n))?;
        all(self.query(&RECENT_TRANSACTIONS, p)?, transaction)
    }

    fn scan_transactions(&mut self, page: &LedgerPage<'_>) -> Result<Vec<Transaction>, StoreError> {
        let bound = |t: Timestamp| {
            t.seconds()
                .clamp(-crate::sql_json::JSON_INT_MAX, crate::sql_json::JSON_INT_MAX)
        };
        let p = Params::new()
            .int(page.after_id)?
            .opt_text(page.username)
            .int(limit(page.limit))?
            .int(bound(page.since))?
            .int(bound(page.until))?
            .opt_text(page.budget);
        all(self.query(&SCAN_TRANSACTIONS, p)?, transaction)
    }

    fn user_transactions(
        &mut self,
        username: &str,
        before: Option<i64>,
        n: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        let p = Params::new()
            .text(username)
            .int(before.unwrap_or(quota_core::limits::JSON_INT_ABS_MAX))?
            .int(limit(n))?;
        all(self.query(&USER_TRANSACTIONS, p)?, transaction)
    }

    fn added_to_members(
        &mut self,
        created_by: &str,
        group: &str,
        from: Timestamp,
        until: Timestamp,
    ) -> Result<i64, StoreError> {
        let p = Params::new()
            .text(created_by)
            .text(group)
            .int(from.seconds())?
            .int(until.seconds())?;
        self.one_int(&ADDED_TO_MEMBERS, p, "added_to_members")
    }

    fn added_to_budget(
        &mut self,
        created_by: &str,
        budget: &str,
        from: Timestamp,
        until: Timestamp,
    ) -> Result<i64, StoreError> {
        let p = Params::new()
            .text(created_by)
            .text(budget)
            .int(from.seconds())?
            .int(until.seconds())?;
        self.one_int(&ADDED_TO_BUDGET, p, "added_to_budget")
    }
}

impl SqlStore {
    /// Writes user rows: one UPDATE per row, then, if some did not exist, an INSERT that skips the
    /// ones that do. `rows` is a JSON array of `count` rows of `user_params`.
    fn write_users(&self, rows: &str, count: usize) -> Result<(), StoreError> {
        let changed =
            crate::bindings::sql::execute_many(self.sql(&UPDATE_USER), rows).map_err(super::bridge::err)?;
        if changed < count as u64 {
            crate::bindings::sql::execute_many(self.sql(&INSERT_MISSING_USER), rows)
                .map_err(super::bridge::err)?;
        }
        Ok(())
    }

    /// Appends audit rows one statement each (ids in this order): a budget's change, the rest of
    /// a batch after its blocks.
    pub(super) fn insert_transactions<'a>(
        &self,
        entries: impl Iterator<Item = &'a quota_core::store::NewTransaction>,
    ) -> Result<(), StoreError> {
        let mut rows = Params::new();
        for e in entries {
            rows.begin_row();
            transaction_params(&mut rows, e)?;
            rows.end_row();
        }
        self.execute_many(&INSERT_TRANSACTION, rows).map(drop)
    }

    /// [`UserStore::record_changes`] with the dialect's set-based statements: the user rows in one
    /// UPDATE (and one INSERT for those that did not exist), the audit rows in one INSERT, ids in
    /// order.
    fn record_changes_set_based(&self, bulk: &SetBased, changes: &[Change]) -> Result<(), StoreError> {
        let mut users = Params::new();
        let mut entries = Params::new();
        // One row per user, its last state: a set-based UPDATE applies one source row per target
        // row (which one is unspecified when several match), and a sweep changes one user several
        // times.
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
        let one = |json: &str| {
            let mut p = Params::new();
            p.begin_row();
            let mut p = p.text(json);
            p.end_row();
            p
        };
        let changed = super::bridge::execute_many(bulk.update_users, one(&users))?;
        if changed < last.len() as u64 {
            super::bridge::execute_many(bulk.insert_missing_users, one(&users))?;
        }
        super::bridge::execute_many(bulk.insert_transactions, one(&entries.finish()))?;
        Ok(())
    }
}
