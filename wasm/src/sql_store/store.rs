//! `quota_core::Store` over the host's SQL bridge: every query of the engine, once, for every host.

use quota_core::store::{
    AccountKey, BudgetChange, BudgetRow, BudgetUsage, Change, Grant, LedgerPage, Membership, NewGrant,
    NewSession, RefreshRun, Session, SessionPage, SessionStatus, Store, Transaction, Usage, UsageKey,
    UserRecord,
};
use quota_core::store::{EventPage, NewEvent, StoredEvent, WebhookRow};
use quota_core::{StoreError, Timestamp};

use crate::bindings::sql as host;
use crate::dialect;
use crate::sql_json::{Cell, Columns, Params};

use super::bridge::{err, execute_many, query, SqlStore};
use super::bulk::{record_changes_set_based, set_based_rows_min};
use super::rows::{
    account_columns, all, budget, budget_params, budget_usage, day_usage, first, grant, group_text, limit,
    membership, name_and_int, named_grant, session, transaction, transaction_params, two_texts, user,
    user_params, user_usage_row,
};

impl Store for SqlStore {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        first(query(self.d.get_user, Params::new().text(username))?, user)
    }

    fn put_user(&mut self, u: &UserRecord) -> Result<(), StoreError> {
        let mut p = Params::new();
        user_params(&mut p, u)?;
        self.write_users(&format!("[{}]", p.finish()), 1)
    }

    fn scan_users(&mut self, after: Option<&str>, n: usize) -> Result<Vec<UserRecord>, StoreError> {
        let rows = match after {
            Some(a) => query(self.d.scan_users_after, Params::new().text(a).int(limit(n))?)?,
            None => query(self.d.scan_users_first, Params::new().int(limit(n))?)?,
        };
        all(rows, user)
    }

    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError> {
        // Set-based statements for pages of a refresh only: for a few rows (a session's charge)
        // PostgreSQL's plan for the join reads the whole table, and under SERIALIZABLE that read
        // conflicts with every concurrent writer (measured: 8 writers ending sessions).
        if let Some(bulk) = self
            .d
            .bulk
            .as_ref()
            .filter(|_| changes.len() >= set_based_rows_min)
        {
            return record_changes_set_based(bulk, changes);
        }
        // Bulk statements: every user row, then the audit rows in blocks of
        // `transaction_block_rows`, then the rest one by one (ids follow the order given).
        let mut users = Params::new();
        for c in changes {
            users.begin_row();
            user_params(&mut users, &c.user)?;
            users.end_row();
        }
        self.write_users(&users.finish(), changes.len())?;
        let blocks = changes.len() / dialect::transaction_block_rows * dialect::transaction_block_rows;
        if blocks > 0 {
            let mut entries = Params::new();
            for block in changes[..blocks].chunks(dialect::transaction_block_rows) {
                entries.begin_row();
                for c in block {
                    transaction_params(&mut entries, &c.entry)?;
                }
                entries.end_row();
            }
            execute_many(self.d.insert_transaction_block, entries)?;
        }
        if blocks < changes.len() {
            let mut entries = Params::new();
            for c in &changes[blocks..] {
                entries.begin_row();
                transaction_params(&mut entries, &c.entry)?;
                entries.end_row();
            }
            execute_many(self.d.insert_transaction, entries)?;
        }
        Ok(())
    }

    fn recent_transactions(&mut self, username: &str, n: usize) -> Result<Vec<Transaction>, StoreError> {
        let p = Params::new().text(username).int(limit(n))?;
        all(query(self.d.recent_transactions, p)?, transaction)
    }

    fn scan_transactions(&mut self, page: &LedgerPage<'_>) -> Result<Vec<Transaction>, StoreError> {
        let (username, since, until) = (page.username, page.since, page.until);
        let (after_id, n) = (page.after_id, page.limit);
        let bound = |t: Timestamp| {
            t.seconds()
                .clamp(-crate::sql_json::json_int_max, crate::sql_json::json_int_max)
        };
        let p = Params::new()
            .int(after_id)?
            .opt_text(username)
            .int(limit(n))?
            .int(bound(since))?
            .int(bound(until))?
            .opt_text(page.budget);
        all(query(self.d.scan_transactions, p)?, transaction)
    }

    fn insert_session(&mut self, s: &NewSession) -> Result<i64, StoreError> {
        let p = Params::new()
            .text(&s.username)
            .text(&s.server_name)
            .text(&s.resource_type)
            .int(s.rate.raw())?
            .int(s.runtime_minutes)?
            .int(s.estimated_cost.raw())?
            .int(s.start_time.seconds())?
            .flag(s.billable)
            .opt_text(s.budget.as_deref())
            .opt_int(s.warn_at.map(Timestamp::seconds))?;
        let rows = query(self.d.insert_session, p)?;
        rows.first()
            .and_then(|r| r.first())
            .and_then(Cell::as_int)
            .ok_or_else(|| StoreError("inserting a session returned no id".into()))
    }

    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError> {
        first(query(self.d.get_session, Params::new().int(id)?)?, session)
    }

    fn update_session(&mut self, s: &Session) -> Result<(), StoreError> {
        let p = Params::new()
            .int(s.id)?
            .text(s.status.as_str())
            .opt_int(s.end_time.map(Timestamp::seconds))?
            .opt_int(s.duration_minutes)?
            .int(s.cost)?;
        // One parameter row, through `execute-many`, which reports the rows changed.
        let row = format!("[{}]", p.finish());
        if host::execute_many(self.d.update_session, &row).map_err(err)? != 1 {
            return Err(StoreError(format!("session {} does not exist", s.id)));
        }
        Ok(())
    }

    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError> {
        let rows = query(self.d.active_sessions, Params::new().text(username))?;
        let mut list = all(rows, session)?;
        list.sort_unstable_by_key(|s| s.id);
        Ok(list)
    }

    fn session_and_user(&mut self, id: i64) -> Result<Option<(Session, Option<UserRecord>)>, StoreError> {
        super::gate::session_and_user(self.d, id)
    }

    fn gate_state(
        &mut self,
        username: &str,
        with_groups: bool,
    ) -> Result<quota_core::store::GateState, StoreError> {
        super::gate::gate_state(self.d, username, with_groups)
    }

    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError> {
        all(
            query(self.d.stale_sessions, Params::new().int(cutoff.seconds())?)?,
            session,
        )
    }

    fn scan_sessions(&mut self, page: &SessionPage<'_>) -> Result<Vec<Session>, StoreError> {
        let (username, status, after_id, n) = (page.username, page.status, page.after_id, page.limit);
        let p = Params::new()
            .int(after_id)?
            .opt_text(username)
            .opt_text(status.map(SessionStatus::as_str))
            .int(limit(n))?;
        all(query(self.d.scan_sessions, p)?, session)
    }

    fn user_transactions(
        &mut self,
        username: &str,
        before: Option<i64>,
        n: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        let p = Params::new()
            .text(username)
            .int(before.unwrap_or(quota_core::limits::json_int_abs_max))?
            .int(limit(n))?;
        all(query(self.d.user_transactions, p)?, transaction)
    }

    fn user_sessions(
        &mut self,
        username: &str,
        before: Option<i64>,
        n: usize,
    ) -> Result<Vec<Session>, StoreError> {
        let p = Params::new()
            .text(username)
            .int(before.unwrap_or(quota_core::limits::json_int_abs_max))?
            .int(limit(n))?;
        all(query(self.d.user_sessions, p)?, session)
    }

    fn get_membership(&mut self, username: &str) -> Result<Option<Membership>, StoreError> {
        let rows = query(self.d.get_membership, Params::new().text(username))?;
        Ok(first(rows, membership)?.map(|(_, m)| m))
    }

    fn put_membership(
        &mut self,
        username: &str,
        groups: &std::collections::BTreeSet<String>,
        since: Timestamp,
    ) -> Result<bool, StoreError> {
        // One statement that writes only a change: the gate's report of unchanged groups reads one
        // row and writes none.
        let row = if groups.is_empty() {
            let p = Params::new().text(username).int(since.seconds())?;
            host::execute_many(self.d.clear_membership, &format!("[{}]", p.finish()))
        } else {
            let p = Params::new()
                .text(username)
                .text(&group_text(groups))
                .int(since.seconds())?;
            host::execute_many(self.d.put_membership, &format!("[{}]", p.finish()))
        };
        if row.map_err(err)? == 0 {
            return Ok(false);
        }
        // Changed: the index of members by group follows.
        let p = Params::new().text(username);
        host::execute_many(self.d.delete_group_members, &format!("[{}]", p.finish())).map_err(err)?;
        if !groups.is_empty() {
            let mut rows = Params::new();
            for g in groups {
                rows.begin_row();
                rows.push_text(g);
                rows.push_text(username);
                rows.end_row();
            }
            execute_many(self.d.insert_group_member, rows)?;
        }
        Ok(true)
    }

    fn put_memberships(
        &mut self,
        users: &[(&str, &std::collections::BTreeSet<String>)],
        since: Timestamp,
    ) -> Result<u64, StoreError> {
        super::memberships::put_memberships(self.d, users, since)
    }

    fn scan_memberships(
        &mut self,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<(String, Membership)>, StoreError> {
        let rows = match after {
            Some(a) => query(
                self.d.scan_memberships_after,
                Params::new().text(a).int(limit(n))?,
            )?,
            None => query(self.d.scan_memberships_first, Params::new().int(limit(n))?)?,
        };
        all(rows, membership)
    }

    fn memberships_between(
        &mut self,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, Membership)>, StoreError> {
        all(
            query(self.d.memberships_between, Params::new().text(first).text(last))?,
            membership,
        )
    }

    fn group_members_between(
        &mut self,
        groups: &std::collections::BTreeSet<String>,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let names = serde_json::to_string(groups).map_err(|e| StoreError(e.to_string()))?;
        let rows = query(
            self.d.group_members_between,
            Params::new().text(&names).text(first).text(last),
        )?;
        all(rows, two_texts)
    }

    fn scan_group(&mut self, group: &str, after: &str, n: usize) -> Result<Vec<String>, StoreError> {
        let rows = query(
            self.d.scan_group,
            Params::new().text(group).text(after).int(limit(n))?,
        )?;
        all(rows, |r| Columns::new(r, "group_members", 1)?.text(0))
    }

    fn group_counts(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        all(query(self.d.group_counts, Params::new())?, |r| {
            let mut c = Columns::new(r, "group_members", 2)?;
            let n = c.int(1)?;
            Ok((c.text(0)?, u64::try_from(n).unwrap_or(0)))
        })
    }

    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError> {
        let rows = query(self.d.get_refresh_run, Params::new().text(run_id))?;
        first(rows, |row| {
            let mut c = Columns::new(row, "refresh_runs", 4)?;
            Ok(RefreshRun {
                run_id: c.text(0)?,
                params: c.text(1)?,
                result: c.text(2)?,
                created_at: Timestamp(c.int(3)?),
            })
        })
    }

    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError> {
        let p = Params::new()
            .text(&run.run_id)
            .text(&run.params)
            .text(&run.result)
            .int(run.created_at.seconds())?;
        query(self.d.put_refresh_run, p).map(|_| ())
    }
    fn record_usage(&mut self, key: &UsageKey<'_>, u: &Usage) -> Result<(), StoreError> {
        let (username, day, resource_type) = (key.username, key.day, key.resource_type);
        let sums =
            |p: Params| -> Result<Params, StoreError> { p.int(u.credits)?.int(u.minutes)?.int(u.sessions) };
        // One statement: the day's sum of all users follows by trigger (schema 8).
        query(
            self.d.record_user_usage_day,
            sums(Params::new().text(username).int(day)?.text(resource_type))?,
        )?;
        if !key.budget.is_empty() {
            query(
                self.d.record_budget_usage_day,
                sums(
                    Params::new()
                        .text(key.budget)
                        .text(username)
                        .int(day)?
                        .text(resource_type),
                )?,
            )?;
        }
        Ok(())
    }

    fn usage_by_day(&mut self, first: i64, last: i64) -> Result<Vec<(i64, String, Usage)>, StoreError> {
        let p = Params::new().int(first)?.int(last)?;
        all(query(self.d.usage_by_day, p)?, day_usage)
    }

    fn usage_by_user(
        &mut self,
        first: i64,
        last: i64,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError> {
        let p = Params::new().int(first)?.int(last)?;
        let rows = match after {
            Some(a) => query(self.d.usage_by_user_after, p.text(a).int(limit(n))?)?,
            None => query(self.d.usage_by_user_first, p.int(limit(n))?)?,
        };
        all(rows, user_usage_row)
    }

    fn usage_top_users(
        &mut self,
        first: i64,
        last: i64,
        n: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError> {
        let p = Params::new().int(first)?.int(last)?.int(limit(n))?;
        all(query(self.d.usage_top_users, p)?, user_usage_row)
    }

    fn user_usage(
        &mut self,
        username: &str,
        first: i64,
        last: i64,
    ) -> Result<Vec<(i64, String, Usage)>, StoreError> {
        let p = Params::new().text(username).int(first)?.int(last)?;
        all(query(self.d.user_usage, p)?, day_usage)
    }

    fn account_grants(&mut self, account: &AccountKey) -> Result<Vec<Grant>, StoreError> {
        let (username, budget) = account_columns(account);
        let p = Params::new().text(username).text(budget);
        all(query(self.d.account_grants, p)?, grant)
    }

    fn insert_grant(&mut self, account: &AccountKey, g: &NewGrant) -> Result<i64, StoreError> {
        let (username, budget) = account_columns(account);
        let p = Params::new()
            .text(username)
            .text(budget)
            .int(g.amount)?
            .int(g.granted_at.seconds())?
            .int(g.expires_at.seconds())?;
        query(self.d.insert_grant, p)?
            .first()
            .and_then(|r| r.first())
            .and_then(Cell::as_int)
            .ok_or_else(|| StoreError("insert_grant returned no id".into()))
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
        execute_many(self.d.set_grant_remaining, rows).map(drop)
    }

    fn due_user_credit_between(
        &mut self,
        first: &str,
        last: &str,
        now: Timestamp,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let p = Params::new().text(first).text(last).int(now.seconds())?;
        all(query(self.d.due_user_credit_between, p)?, name_and_int)
    }

    fn due_user_grants(&mut self, now: Timestamp, n: usize) -> Result<Vec<(String, Grant)>, StoreError> {
        let p = Params::new().int(now.seconds())?.int(limit(n))?;
        all(query(self.d.due_user_grants, p)?, named_grant)
    }

    fn due_budgets(&mut self, now: Timestamp) -> Result<Vec<String>, StoreError> {
        let rows = query(self.d.due_budgets, Params::new().int(now.seconds())?)?;
        all(rows, |r| Columns::new(r, "grants", 1)?.text(0))
    }

    fn users_named(&mut self, names: &[String]) -> Result<Vec<UserRecord>, StoreError> {
        let list = serde_json::to_string(names).map_err(|e| StoreError(e.to_string()))?;
        all(query(self.d.users_named, Params::new().text(&list))?, user)
    }

    fn zero_grants(&mut self, ids: &[i64]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let list = serde_json::to_string(ids).map_err(|e| StoreError(e.to_string()))?;
        query(self.d.zero_grants, Params::new().text(&list)).map(drop)
    }

    fn user_grants_between(
        &mut self,
        first_name: &str,
        last_name: &str,
    ) -> Result<Vec<(String, Grant)>, StoreError> {
        let p = Params::new().text(first_name).text(last_name);
        all(query(self.d.user_grants_between, p)?, named_grant)
    }

    fn get_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError> {
        first(query(self.d.get_budget, Params::new().text(name))?, budget)
    }

    fn lock_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError> {
        first(query(self.d.lock_budget, Params::new().text(name))?, budget)
    }

    fn put_budget(&mut self, b: &BudgetRow) -> Result<(), StoreError> {
        self.write_budget(b)
    }

    fn delete_budget(&mut self, name: &str) -> Result<(), StoreError> {
        query(self.d.delete_budget_grants, Params::new().text(name))?;
        query(self.d.delete_budget, Params::new().text(name)).map(drop)
    }

    fn budgets(&mut self) -> Result<Vec<BudgetRow>, StoreError> {
        all(query(self.d.budgets, Params::new())?, budget)
    }

    fn record_budget_change(&mut self, c: &BudgetChange) -> Result<(), StoreError> {
        self.write_budget(&c.budget)?;
        let mut entries = Params::new();
        entries.begin_row();
        transaction_params(&mut entries, &c.entry)?;
        entries.end_row();
        execute_many(self.d.insert_transaction, entries).map(drop)
    }

    fn budget_sessions(&mut self, name: &str) -> Result<Vec<Session>, StoreError> {
        all(query(self.d.budget_sessions, Params::new().text(name))?, session)
    }

    fn budget_held(&mut self, name: &str, username: Option<&str>) -> Result<i64, StoreError> {
        let rows = match username {
            None => query(self.d.budget_held, Params::new().text(name))?,
            Some(u) => query(self.d.budget_member_held, Params::new().text(name).text(u))?,
        };
        rows.first()
            .and_then(|r| r.first())
            .and_then(Cell::as_int)
            .ok_or_else(|| StoreError("budget_held returned no sum".into()))
    }

    fn budget_spent(
        &mut self,
        name: &str,
        since: Timestamp,
        username: Option<&str>,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let p = Params::new().text(name).int(since.seconds())?;
        let rows = match username {
            None => query(self.d.budget_spent, p)?,
            Some(u) => query(self.d.budget_member_spent, p.text(u))?,
        };
        all(rows, name_and_int)
    }

    fn recent_budget_transactions(&mut self, name: &str, n: usize) -> Result<Vec<Transaction>, StoreError> {
        let p = Params::new().text(name).int(limit(n))?;
        all(query(self.d.recent_budget_transactions, p)?, transaction)
    }

    fn budget_usage(
        &mut self,
        first_day: i64,
        last_day: i64,
        name: Option<&str>,
    ) -> Result<Vec<BudgetUsage>, StoreError> {
        let p = Params::new().int(first_day)?.int(last_day)?.opt_text(name);
        all(query(self.d.budget_usage, p)?, budget_usage)
    }

    fn insert_events(&mut self, events: &[NewEvent]) -> Result<(), StoreError> {
        self.feed_insert_events(events)
    }

    fn scan_events(&mut self, page: &EventPage<'_>) -> Result<Vec<StoredEvent>, StoreError> {
        self.feed_scan(page)
    }

    fn last_event_id(&mut self) -> Result<i64, StoreError> {
        self.feed_last_id()
    }

    fn count_events(&mut self, after: i64, kinds: &str) -> Result<u64, StoreError> {
        self.feed_count(after, kinds)
    }

    fn purge_events(&mut self, before: Timestamp, n: usize) -> Result<u64, StoreError> {
        self.feed_purge(before, n)
    }

    fn sessions_to_warn(
        &mut self,
        now: Timestamp,
        n: usize,
    ) -> Result<Vec<(Session, Option<i64>)>, StoreError> {
        self.feed_sessions_to_warn(now, n)
    }

    fn set_session_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        self.feed_set_session_warning(id, warned_mark, warn_at)
    }

    fn extend_session(&mut self, session: &Session, warned_mark: Option<i64>) -> Result<(), StoreError> {
        self.feed_extend_session(session, warned_mark)
    }

    fn session_warned_mark(&mut self, id: i64) -> Result<Option<i64>, StoreError> {
        self.feed_session_mark(id)
    }

    fn arm_grant_warnings(&mut self, lead_seconds: i64) -> Result<(), StoreError> {
        self.feed_arm_grants(lead_seconds)
    }

    fn grants_to_warn(
        &mut self,
        now: Timestamp,
        n: usize,
    ) -> Result<Vec<(AccountKey, Grant, Option<i64>)>, StoreError> {
        self.feed_grants_to_warn(now, n)
    }

    fn set_grant_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Timestamp,
    ) -> Result<(), StoreError> {
        self.feed_set_grant_warning(id, warned_mark, warn_at)
    }

    fn get_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError> {
        self.feed_webhook(name, false)
    }

    fn lock_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError> {
        self.feed_webhook(name, true)
    }

    fn put_webhook(&mut self, row: &WebhookRow) -> Result<(), StoreError> {
        self.feed_put_webhook(row)
    }

    fn add_webhook_failure(
        &mut self,
        name: &str,
        event_id: i64,
        error: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        self.feed_add_failure(name, event_id, error, at)
    }

    fn count_webhook_failures(&mut self, name: &str) -> Result<u64, StoreError> {
        self.feed_count_failures(name)
    }

    fn drop_webhook_failures(&mut self, name: &str, from_id: i64) -> Result<(), StoreError> {
        self.feed_drop_failures(name, from_id)
    }
}

impl SqlStore {
    fn write_budget(&mut self, b: &BudgetRow) -> Result<(), StoreError> {
        let mut p = Params::new();
        p.begin_row();
        budget_params(&mut p, b)?;
        p.end_row();
        execute_many(self.d.put_budget, p).map(drop)
    }
}
