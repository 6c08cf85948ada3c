//! An in-memory `Store` for tests, benchmarks and hosts that need no persistence. Putting records
//! back after a failed call (and the active-session index that follows them) is `undo.rs`.

mod budgets;
mod feed;
mod undo;

use std::collections::BTreeMap;

use crate::error::StoreError;
use crate::store::{AccountKey, BudgetChange, BudgetRow, BudgetUsage, Grant, NewGrant};
use crate::store::{
    Change, LedgerPage, Membership, NewSession, RefreshRun, Session, SessionPage, SessionStatus, Store,
    Transaction, Usage, UsageKey, UserRecord,
};
use crate::store::{EventPage, NewEvent, StoredEvent, WebhookRow};
use crate::time::Timestamp;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemStore {
    pub users: BTreeMap<String, UserRecord>,
    pub transactions: Vec<Transaction>,
    pub sessions: BTreeMap<i64, Session>,
    /// Active session ids by username, so the gate reads one user's sessions without a scan.
    active_by_user: BTreeMap<String, Vec<i64>>,
    pub refresh_runs: BTreeMap<String, RefreshRun>,
    pub memberships: BTreeMap<String, Membership>,
    /// The running usage sums (see `usage`): by (day, resource type) and (user, day, resource type).
    pub usage_days: BTreeMap<(i64, String), Usage>,
    pub user_usage_days: BTreeMap<(String, i64, String), Usage>,
    /// Dated grants by id, each with its account.
    pub grants: BTreeMap<i64, (AccountKey, Grant)>,
    /// Budgets' rows by name, and their usage sums by (budget, user, day, resource type).
    pub budgets: BTreeMap<String, BudgetRow>,
    pub budget_usage_days: BTreeMap<(String, String, i64, String), Usage>,
    /// Events by id; what each session and grant was told (the smallest mark; a grant's next
    /// warning time); webhooks' delivery state and their failed deliveries by (webhook, event id).
    pub events: Vec<StoredEvent>,
    pub session_warned: BTreeMap<i64, i64>,
    pub grant_warn: BTreeMap<i64, (Option<i64>, Option<Timestamp>)>,
    pub webhooks: BTreeMap<String, WebhookRow>,
    pub webhook_failures: BTreeMap<(String, i64), (String, Timestamp)>,
    next_session_id: i64,
    next_grant_id: i64,
    next_event_id: i64,
}

impl MemStore {
    pub fn new() -> MemStore {
        MemStore::default()
    }
}

impl Store for MemStore {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        Ok(self.users.get(username).cloned())
    }

    fn put_user(&mut self, user: &UserRecord) -> Result<(), StoreError> {
        match self.users.get_mut(&user.username) {
            Some(existing) => existing.clone_from(user),
            None => {
                self.users.insert(user.username.clone(), user.clone());
            }
        }
        Ok(())
    }

    fn scan_users(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<UserRecord>, StoreError> {
        let iter: Box<dyn Iterator<Item = &UserRecord>> = match after {
            Some(a) => Box::new(
                self.users
                    .range::<str, _>((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded))
                    .map(|(_, u)| u),
            ),
            None => Box::new(self.users.values()),
        };
        Ok(iter.take(limit).cloned().collect())
    }

    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError> {
        for c in changes {
            self.put_user(&c.user)?;
            let id = self.transactions.len() as i64 + 1;
            self.transactions.push(c.entry.clone().with_id(id));
        }
        Ok(())
    }

    fn recent_transactions(&mut self, username: &str, limit: usize) -> Result<Vec<Transaction>, StoreError> {
        let mut out: Vec<Transaction> = self
            .transactions
            .iter()
            .filter(|t| t.username == username && t.budget.is_none())
            .cloned()
            .collect();
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        out.truncate(limit);
        Ok(out)
    }

    fn scan_transactions(&mut self, page: &LedgerPage<'_>) -> Result<Vec<Transaction>, StoreError> {
        let (username, since, until) = (page.username, page.since, page.until);
        let (after_id, limit) = (page.after_id, page.limit);
        let start = usize::try_from(after_id.max(0)).unwrap_or(usize::MAX);
        Ok(self
            .transactions
            .iter()
            .skip(start)
            .filter(|t| match (username, page.budget) {
                (u, Some(b)) => t.budget.as_deref() == Some(b) && u.is_none_or(|u| t.username == u),
                (Some(u), None) => t.budget.is_none() && t.username == u,
                (None, None) => true,
            })
            .filter(|t| since <= t.created_at && t.created_at < until)
            .take(limit)
            .cloned()
            .collect())
    }

    fn insert_session(&mut self, session: &NewSession) -> Result<i64, StoreError> {
        self.next_session_id += 1;
        let s = session.clone().with_id(self.next_session_id);
        self.reindex(&s);
        self.sessions.insert(s.id, s);
        Ok(self.next_session_id)
    }

    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError> {
        Ok(self.sessions.get(&id).cloned())
    }

    fn update_session(&mut self, session: &Session) -> Result<(), StoreError> {
        if !self.sessions.contains_key(&session.id) {
            return Err(StoreError(format!("session {} does not exist", session.id)));
        }
        self.reindex(session);
        self.sessions.insert(session.id, session.clone());
        Ok(())
    }

    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError> {
        Ok(self
            .active_by_user
            .get(username)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| self.sessions.get(id).cloned())
                    .collect()
            })
            .unwrap_or_default())
    }

    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError> {
        Ok(self
            .sessions
            .values()
            .filter(|s| s.status == SessionStatus::Active && s.start_time < cutoff)
            .cloned()
            .collect())
    }

    fn scan_sessions(&mut self, page: &SessionPage<'_>) -> Result<Vec<Session>, StoreError> {
        let (username, status, after_id, limit) = (page.username, page.status, page.after_id, page.limit);
        Ok(self
            .sessions
            .range(after_id.saturating_add(1)..)
            .map(|(_, s)| s)
            .filter(|s| username.is_none_or(|u| s.username == u) && status.is_none_or(|st| s.status == st))
            .take(limit)
            .cloned()
            .collect())
    }

    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError> {
        Ok(self.refresh_runs.get(run_id).cloned())
    }

    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError> {
        self.refresh_runs.insert(run.run_id.clone(), run.clone());
        Ok(())
    }

    fn user_transactions(
        &mut self,
        username: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        Ok(self
            .transactions
            .iter()
            .rev()
            .filter(|t| t.username == username && t.budget.is_none() && before.is_none_or(|b| t.id < b))
            .take(limit)
            .cloned()
            .collect())
    }

    fn user_sessions(
        &mut self,
        username: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError> {
        let upper = before.map_or(i64::MAX, |b| b.saturating_sub(1));
        Ok(self
            .sessions
            .range(..=upper)
            .rev()
            .map(|(_, s)| s)
            .filter(|s| s.username == username)
            .take(limit)
            .cloned()
            .collect())
    }

    fn get_membership(&mut self, username: &str) -> Result<Option<Membership>, StoreError> {
        Ok(self.memberships.get(username).cloned())
    }

    fn put_membership(
        &mut self,
        username: &str,
        groups: &std::collections::BTreeSet<String>,
        since: Timestamp,
    ) -> Result<bool, StoreError> {
        let same = match self.memberships.get(username) {
            Some(m) => m.groups == *groups,
            None => groups.is_empty(),
        };
        if !same {
            let m = Membership {
                groups: groups.clone(),
                since,
            };
            self.memberships.insert(username.to_string(), m);
        }
        Ok(!same)
    }

    fn scan_memberships(
        &mut self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Membership)>, StoreError> {
        use std::ops::Bound::{Excluded, Unbounded};
        let lower = after.map_or(Unbounded, Excluded);
        Ok(self
            .memberships
            .range::<str, _>((lower, Unbounded))
            .take(limit)
            .map(|(u, m)| (u.clone(), m.clone()))
            .collect())
    }

    fn memberships_between(
        &mut self,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, Membership)>, StoreError> {
        use std::ops::Bound::Included;
        if first > last {
            return Ok(Vec::new());
        }
        Ok(self
            .memberships
            .range::<str, _>((Included(first), Included(last)))
            .map(|(u, m)| (u.clone(), m.clone()))
            .collect())
    }

    fn group_members_between(
        &mut self,
        groups: &std::collections::BTreeSet<String>,
        first: &str,
        last: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        use std::ops::Bound::Included;
        if first > last {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (u, m) in self
            .memberships
            .range::<str, _>((Included(first), Included(last)))
        {
            for g in m.groups.intersection(groups) {
                out.push((u.clone(), g.clone()));
            }
        }
        Ok(out)
    }

    fn scan_group(&mut self, group: &str, after: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        use std::ops::Bound::{Excluded, Unbounded};
        Ok(self
            .memberships
            .range::<str, _>((Excluded(after), Unbounded))
            .filter(|(_, m)| m.groups.contains(group))
            .take(limit)
            .map(|(u, _)| u.clone())
            .collect())
    }

    fn group_counts(&mut self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for m in self.memberships.values() {
            for g in &m.groups {
                *counts.entry(g.clone()).or_default() += 1;
            }
        }
        Ok(counts.into_iter().collect())
    }

    fn record_usage(&mut self, key: &UsageKey<'_>, usage: &Usage) -> Result<(), StoreError> {
        let (username, day, resource_type) = (key.username, key.day, key.resource_type);
        self.usage_days
            .entry((day, resource_type.to_string()))
            .or_default()
            .add(usage);
        self.user_usage_days
            .entry((username.to_string(), day, resource_type.to_string()))
            .or_default()
            .add(usage);
        self.budget_usage_add(key, usage);
        Ok(())
    }

    fn due_user_grants(&mut self, now: Timestamp, limit: usize) -> Result<Vec<(String, Grant)>, StoreError> {
        Ok(self.due_user_grants_page(now, limit))
    }

    fn due_budgets(&mut self, now: Timestamp) -> Result<Vec<String>, StoreError> {
        let due: std::collections::BTreeSet<String> = self
            .grants
            .values()
            .filter_map(|(a, g)| match a {
                AccountKey::Budget(b) if g.due_at(now) => Some(b.clone()),
                _ => None,
            })
            .collect();
        Ok(due.into_iter().collect())
    }

    fn users_named(&mut self, names: &[String]) -> Result<Vec<UserRecord>, StoreError> {
        let mut names = names.to_vec();
        names.sort();
        names.dedup();
        Ok(names.iter().filter_map(|n| self.users.get(n).cloned()).collect())
    }

    fn user_grants_between(&mut self, first: &str, last: &str) -> Result<Vec<(String, Grant)>, StoreError> {
        Ok(self.user_grants_in(first, last))
    }

    fn get_budget(&mut self, name: &str) -> Result<Option<BudgetRow>, StoreError> {
        Ok(self.budgets.get(name).cloned())
    }

    fn put_budget(&mut self, budget: &BudgetRow) -> Result<(), StoreError> {
        self.budgets.insert(budget.name.clone(), budget.clone());
        Ok(())
    }

    fn delete_budget(&mut self, name: &str) -> Result<(), StoreError> {
        self.budget_delete(name);
        Ok(())
    }

    fn budgets(&mut self) -> Result<Vec<BudgetRow>, StoreError> {
        Ok(self.budgets.values().cloned().collect())
    }

    fn record_budget_change(&mut self, change: &BudgetChange) -> Result<(), StoreError> {
        self.budget_change(change);
        Ok(())
    }

    fn budget_sessions(&mut self, budget: &str) -> Result<Vec<Session>, StoreError> {
        Ok(self.budget_active(budget))
    }

    fn budget_spent(
        &mut self,
        budget: &str,
        since: Timestamp,
        username: Option<&str>,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(self.budget_spent_by(budget, since, username))
    }

    fn recent_budget_transactions(
        &mut self,
        budget: &str,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        Ok(self.budget_recent(budget, limit))
    }

    fn budget_usage(
        &mut self,
        first: i64,
        last: i64,
        budget: Option<&str>,
    ) -> Result<Vec<BudgetUsage>, StoreError> {
        Ok(self.budget_usage_rows(first, last, budget))
    }

    fn account_grants(&mut self, account: &AccountKey) -> Result<Vec<Grant>, StoreError> {
        Ok(self
            .grants
            .values()
            .filter(|(a, g)| a == account && g.remaining > 0)
            .map(|(_, g)| g.clone())
            .collect())
    }

    fn insert_grant(&mut self, account: &AccountKey, grant: &NewGrant) -> Result<i64, StoreError> {
        self.next_grant_id += 1;
        let g = Grant {
            grant_id: self.next_grant_id,
            amount: grant.amount,
            remaining: grant.amount,
            granted_at: grant.granted_at,
            expires_at: grant.expires_at,
        };
        self.grants.insert(g.grant_id, (account.clone(), g));
        Ok(self.next_grant_id)
    }

    fn set_grants_remaining(&mut self, changes: &[(i64, i64)]) -> Result<(), StoreError> {
        for (id, remaining) in changes {
            match self.grants.get_mut(id) {
                Some((_, g)) => g.remaining = *remaining,
                None => return Err(StoreError(format!("no grant {id}"))),
            }
        }
        Ok(())
    }

    fn due_user_credit_between(
        &mut self,
        first: &str,
        last: &str,
        now: Timestamp,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let mut by: BTreeMap<String, i64> = BTreeMap::new();
        for (a, g) in self.grants.values() {
            if let AccountKey::User(u) = a {
                if first <= u.as_str() && u.as_str() <= last && g.due_at(now) {
                    *by.entry(u.clone()).or_default() += g.remaining;
                }
            }
        }
        Ok(by.into_iter().collect())
    }

    fn usage_by_day(&mut self, first: i64, last: i64) -> Result<Vec<(i64, String, Usage)>, StoreError> {
        Ok(self
            .usage_days
            .range((first, String::new())..)
            .take_while(|((d, _), _)| *d <= last)
            .map(|((d, r), u)| (*d, r.clone(), *u))
            .collect())
    }

    fn usage_by_user(
        &mut self,
        first: i64,
        last: i64,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError> {
        let mut by: BTreeMap<&str, Usage> = BTreeMap::new();
        for ((user, day, _), u) in &self.user_usage_days {
            if (first..=last).contains(day) && after.is_none_or(|a| user.as_str() > a) {
                by.entry(user).or_default().add(u);
            }
        }
        Ok(by
            .into_iter()
            .take(limit)
            .map(|(u, s)| (u.to_string(), s))
            .collect())
    }

    fn usage_top_users(
        &mut self,
        first: i64,
        last: i64,
        limit: usize,
    ) -> Result<Vec<(String, Usage)>, StoreError> {
        let mut all = self.usage_by_user(first, last, None, usize::MAX)?;
        all.sort_by(|a, b| {
            (b.1.credits, b.1.minutes)
                .cmp(&(a.1.credits, a.1.minutes))
                .then_with(|| a.0.cmp(&b.0))
        });
        all.truncate(limit);
        Ok(all)
    }

    fn user_usage(
        &mut self,
        username: &str,
        first: i64,
        last: i64,
    ) -> Result<Vec<(i64, String, Usage)>, StoreError> {
        Ok(self
            .user_usage_days
            .range((username.to_string(), first, String::new())..)
            .take_while(|((u, d, _), _)| u == username && *d <= last)
            .map(|((_, d, r), u)| (*d, r.clone(), *u))
            .collect())
    }

    fn insert_events(&mut self, events: &[NewEvent]) -> Result<(), StoreError> {
        self.events_insert(events);
        Ok(())
    }

    fn scan_events(&mut self, page: &EventPage<'_>) -> Result<Vec<StoredEvent>, StoreError> {
        Ok(self.events_page(page))
    }

    fn last_event_id(&mut self) -> Result<i64, StoreError> {
        Ok(self.next_event_id)
    }

    fn count_events(&mut self, after: i64, kinds: &str) -> Result<u64, StoreError> {
        Ok(self.events_count(after, kinds))
    }

    fn purge_events(&mut self, before: Timestamp, limit: usize) -> Result<u64, StoreError> {
        Ok(self.events_purge(before, limit))
    }

    fn sessions_to_warn(
        &mut self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Session, Option<i64>)>, StoreError> {
        Ok(self.sessions_due_warning(now, limit))
    }

    fn set_session_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        let s = self
            .sessions
            .get_mut(&id)
            .ok_or_else(|| StoreError(format!("session {id} does not exist")))?;
        s.start.warn_at = warn_at;
        match warned_mark {
            Some(m) => self.session_warned.insert(id, m),
            None => self.session_warned.remove(&id),
        };
        Ok(())
    }

    fn extend_session(&mut self, session: &Session, warned_mark: Option<i64>) -> Result<(), StoreError> {
        self.update_session(session)?;
        self.set_session_warning(session.id, warned_mark, session.warn_at)
    }

    fn session_warned_mark(&mut self, id: i64) -> Result<Option<i64>, StoreError> {
        Ok(self.session_warned.get(&id).copied())
    }

    fn arm_grant_warnings(&mut self, lead_seconds: i64) -> Result<(), StoreError> {
        self.grants_arm(lead_seconds);
        Ok(())
    }

    fn grants_to_warn(
        &mut self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(AccountKey, Grant, Option<i64>)>, StoreError> {
        Ok(self.grants_due_warning(now, limit))
    }

    fn set_grant_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Timestamp,
    ) -> Result<(), StoreError> {
        self.grant_warn.insert(id, (warned_mark, Some(warn_at)));
        Ok(())
    }

    fn get_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError> {
        Ok(self.webhooks.get(name).cloned())
    }

    fn put_webhook(&mut self, row: &WebhookRow) -> Result<(), StoreError> {
        self.webhook_put(row);
        Ok(())
    }

    fn add_webhook_failure(
        &mut self,
        name: &str,
        event_id: i64,
        error: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        self.webhook_failures
            .insert((name.to_string(), event_id), (error.to_string(), at));
        Ok(())
    }

    fn count_webhook_failures(&mut self, name: &str) -> Result<u64, StoreError> {
        Ok(self.webhook_failures.keys().filter(|(n, _)| n == name).count() as u64)
    }

    fn drop_webhook_failures(&mut self, name: &str, from_id: i64) -> Result<(), StoreError> {
        self.webhook_failures
            .retain(|(n, id), _| n != name || *id < from_id);
        Ok(())
    }
}
