//! Memberships over SQL: their statements and `GroupStore`, with a page of a group snapshot in a
//! few set-based statements (issue 36): the users with groups in one upsert that changes only what
//! differs, those without in one update, and the index of members by group rewritten for the users
//! that changed, instead of a statement or three per user.

use std::collections::{BTreeMap, BTreeSet};

use quota_core::store::{GroupStore, Membership};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::rows::{all, first, group_text, limit, membership, two_texts};
use super::sql::Sql;
use crate::sql_json::{Cell, Columns, Params};

const GET_MEMBERSHIP: Sql = same!(concat!(
    "SELECT ",
    membership_columns!(),
    " FROM memberships WHERE username = $1"
));
/// Inserts a user's groups (`$2`, the names joined by newlines), or replaces them when they
/// differ: changes no row when they are the same.
const PUT_MEMBERSHIP: Sql = same!(
    "INSERT INTO memberships (username, group_names, since) VALUES ($1, $2, $3)
         ON CONFLICT (username) DO UPDATE SET group_names = excluded.group_names, since = excluded.since
         WHERE memberships.group_names <> excluded.group_names"
);
/// Empties a user's groups when they have any: changes no row otherwise.
const CLEAR_MEMBERSHIP: Sql = same!(
    "UPDATE memberships SET group_names = '', since = $2
         WHERE username = $1 AND group_names <> ''"
);
/// A page of a snapshot at once: `$1` a JSON array of `[username, names joined by newlines]`, `$2`
/// the time; inserts or replaces only what differs and answers the usernames it changed.
const PUT_MEMBERSHIPS: Sql = each!(
    // `WHERE true`: an upsert's SELECT needs a WHERE clause (SQLite's parsing ambiguity).
    sqlite: "INSERT INTO memberships (username, group_names, since)
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?2 FROM json_each(?1) WHERE true
         ON CONFLICT (username) DO UPDATE SET group_names = excluded.group_names, since = excluded.since
         WHERE memberships.group_names <> excluded.group_names
         RETURNING username",
    postgres: "INSERT INTO memberships (username, group_names, since)
         SELECT e->>0, e->>1, $2::bigint FROM jsonb_array_elements($1::text::jsonb) e
         ON CONFLICT (username) DO UPDATE SET group_names = excluded.group_names, since = excluded.since
         WHERE memberships.group_names <> excluded.group_names
         RETURNING username",
);
/// Empties the groups of the usernames in `$1` (a JSON array) that have any; answers them.
const CLEAR_MEMBERSHIPS: Sql = each!(
    sqlite: "UPDATE memberships SET group_names = '', since = ?2
         WHERE username IN (SELECT value FROM json_each(?1)) AND group_names <> '' RETURNING username",
    postgres: "UPDATE memberships SET group_names = '', since = $2
         WHERE username = ANY (ARRAY(SELECT jsonb_array_elements_text($1::text::jsonb)))
         AND group_names <> '' RETURNING username",
);
/// The index rows of the usernames in `$1` (a JSON array).
const DELETE_GROUP_MEMBERS_OF: Sql = each!(
    sqlite: "DELETE FROM group_members WHERE username IN (SELECT value FROM json_each(?1))",
    // `IN (SELECT ...)`, a hashed set: with `= ANY (ARRAY(...))` each row of the index (its key is
    // the group's name first, so every row is read) was compared with the whole page of names,
    // and a first snapshot of 100,000 users took 87 s in a hub.
    postgres: "DELETE FROM group_members
         WHERE username IN (SELECT jsonb_array_elements_text($1::text::jsonb))",
);
/// The index of members by group, kept with `memberships` in the same transaction.
const DELETE_GROUP_MEMBERS: Sql = same!("DELETE FROM group_members WHERE username = $1");
const INSERT_GROUP_MEMBER: Sql = same!("INSERT INTO group_members (group_name, username) VALUES ($1, $2)");
const SCAN_MEMBERSHIPS_FIRST: Sql = same!(concat!(
    "SELECT ",
    membership_columns!(),
    " FROM memberships ORDER BY username LIMIT $1"
));
const SCAN_MEMBERSHIPS_AFTER: Sql = same!(concat!(
    "SELECT ",
    membership_columns!(),
    " FROM memberships WHERE username > $1 ORDER BY username LIMIT $2"
));
/// The memberships of usernames from `$1` to `$2`, both included.
const MEMBERSHIPS_BETWEEN: Sql = same!(concat!(
    "SELECT ",
    membership_columns!(),
    " FROM memberships WHERE username >= $1 AND username <= $2 ORDER BY username"
));
/// (username, group) of the users from `$2` to `$3` in one of the groups `$1` (a JSON list).
const GROUP_MEMBERS_BETWEEN: Sql = each!(
    sqlite: "SELECT username, group_name FROM group_members
         WHERE group_name IN (SELECT value FROM json_each(?1)) AND username >= ?2 AND username <= ?3
         ORDER BY username",
    postgres: "SELECT username, group_name FROM group_members
         WHERE group_name = ANY (ARRAY(SELECT jsonb_array_elements_text($1::text::jsonb)))
         AND username >= $2 AND username <= $3 ORDER BY username",
);
/// Members of group `$1` after username `$2`, at most `$3`.
const SCAN_GROUP: Sql = same!(
    "SELECT username FROM group_members WHERE group_name = $1 AND username > $2
         ORDER BY username LIMIT $3"
);
const GROUP_COUNTS: Sql =
    same!("SELECT group_name, COUNT(*) FROM group_members GROUP BY group_name ORDER BY group_name");

fn json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError(e.to_string()))
}

fn username(row: &mut [Cell]) -> Result<String, StoreError> {
    Columns::new(row, "memberships", 1)?.text(0)
}

impl GroupStore for SqlStore {
    fn get_membership(&mut self, username: &str) -> Result<Option<Membership>, StoreError> {
        let rows = self.query(&GET_MEMBERSHIP, Params::new().text(username))?;
        Ok(first(rows, membership)?.map(|(_, m)| m))
    }

    fn put_membership(
        &mut self,
        username: &str,
        groups: &BTreeSet<String>,
        since: Timestamp,
    ) -> Result<bool, StoreError> {
        // One statement that writes only a change: the gate's report of unchanged groups reads one
        // row and writes none.
        let changed = if groups.is_empty() {
            let p = Params::new().text(username).int(since.seconds())?;
            self.execute(&CLEAR_MEMBERSHIP, p)?
        } else {
            let p = Params::new()
                .text(username)
                .text(&group_text(groups))
                .int(since.seconds())?;
            self.execute(&PUT_MEMBERSHIP, p)?
        };
        if changed == 0 {
            return Ok(false);
        }
        // Changed: the index of members by group follows.
        self.execute(&DELETE_GROUP_MEMBERS, Params::new().text(username))?;
        if !groups.is_empty() {
            let mut rows = Params::new();
            for g in groups {
                rows.begin_row();
                rows.push_text(g);
                rows.push_text(username);
                rows.end_row();
            }
            self.execute_many(&INSERT_GROUP_MEMBER, rows)?;
        }
        Ok(true)
    }

    fn put_memberships(
        &mut self,
        users: &[(&str, &BTreeSet<String>)],
        since: Timestamp,
    ) -> Result<u64, StoreError> {
        let groups: BTreeMap<&str, &BTreeSet<String>> = users.iter().copied().collect();
        let (full, empty): (Vec<_>, Vec<_>) = users.iter().partition(|(_, g)| !g.is_empty());
        let mut changed: Vec<String> = Vec::new();
        if !full.is_empty() {
            let rows: Vec<(&str, String)> = full.iter().map(|(u, g)| (*u, group_text(g))).collect();
            let p = Params::new().text(&json(&rows)?).int(since.seconds())?;
            changed.extend(all(self.query(&PUT_MEMBERSHIPS, p)?, username)?);
        }
        if !empty.is_empty() {
            let names: Vec<&str> = empty.iter().map(|(u, _)| *u).collect();
            let p = Params::new().text(&json(&names)?).int(since.seconds())?;
            changed.extend(all(self.query(&CLEAR_MEMBERSHIPS, p)?, username)?);
        }
        if changed.is_empty() {
            return Ok(0);
        }
        // The index of members by group follows, for the users that changed.
        self.query(&DELETE_GROUP_MEMBERS_OF, Params::new().text(&json(&changed)?))?;
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
            self.execute_many(&INSERT_GROUP_MEMBER, rows)?;
        }
        Ok(changed.len() as u64)
    }

    fn scan_memberships(
        &mut self,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<(String, Membership)>, StoreError> {
        let rows = match after {
            Some(a) => self.query(&SCAN_MEMBERSHIPS_AFTER, Params::new().text(a).int(limit(n))?)?,
            None => self.query(&SCAN_MEMBERSHIPS_FIRST, Params::new().int(limit(n))?)?,
        };
        all(rows, membership)
    }

    fn memberships_between(
        &mut self,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, Membership)>, StoreError> {
        let p = Params::new().text(first).text(last);
        all(self.query(&MEMBERSHIPS_BETWEEN, p)?, membership)
    }

    fn group_members_between(
        &mut self,
        groups: &BTreeSet<String>,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let p = Params::new().text(&json(groups)?).text(first).text(last);
        all(self.query(&GROUP_MEMBERS_BETWEEN, p)?, two_texts)
    }

    fn scan_group(&mut self, group: &str, after: &str, n: usize) -> Result<Vec<String>, StoreError> {
        let p = Params::new().text(group).text(after).int(limit(n))?;
        all(self.query(&SCAN_GROUP, p)?, |r| {
            Columns::new(r, "group_members", 1)?.text(0)
        })
    }

    fn group_counts(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        all(self.query(&GROUP_COUNTS, Params::new())?, |r| {
            let mut c = Columns::new(r, "group_members", 2)?;
            let n = c.int(1)?;
            Ok((c.text(0)?, u64::try_from(n).unwrap_or(0)))
        })
    }
}
