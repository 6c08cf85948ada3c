//! Read-only views: the user list, a user's detail, rates, accelerators, sessions, the ledger; a
//! user's own view is `me.rs`.

mod me;
pub use me::{me, Me};

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::accelerators::Accelerator;
use crate::config::Config;
use crate::error::QuotaError;
use crate::limits;
use crate::milli::Milli;
use crate::names::normalize_username;
use crate::sessions::SessionView;
use crate::store::{
    AccountKey, Grant, LedgerPage, SessionPage, SessionStatus, Store, Transaction, UserRecord,
};
use crate::time::Timestamp;

/// A user's record as the lists show it, with their groups (left out when none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UserRow {
    #[serde(flatten)]
    pub user: UserRecord,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub groups: BTreeSet<String>,
}

/// A page of records with their groups (one more read per page, only when someone has groups).
fn with_groups(
    store: &mut dyn Store,
    mut page: Vec<UserRecord>,
    now: Timestamp,
) -> Result<Vec<UserRow>, QuotaError> {
    let (mut memberships, due) = match (page.first(), page.last()) {
        (Some(first), Some(last)) => (
            store.memberships_between(&first.username, &last.username)?,
            store.due_user_credit_between(&first.username, &last.username, now)?,
        ),
        _ => (Vec::new(), Vec::new()),
    };
    // Balances as of now: the credit of grants whose expiry has come is left out.
    if !due.is_empty() {
        let due: std::collections::BTreeMap<String, i64> = due.into_iter().collect();
        for u in &mut page {
            if let Some(d) = due.get(&u.username) {
                u.balance -= d;
            }
        }
    }
    let mut memberships = std::mem::take(&mut memberships).into_iter().peekable();
    Ok(page
        .into_iter()
        .map(|user| {
            while memberships.peek().is_some_and(|(u, _)| *u < user.username) {
                memberships.next();
            }
            let groups = match memberships.peek() {
                Some((u, _)) if *u == user.username => memberships.next().map(|(_, m)| m.groups),
                _ => None,
            };
            UserRow {
                user,
                groups: groups.unwrap_or_default(),
            }
        })
        .collect())
}

/// A user's record with its balance as of `now`: the credit of grants whose expiry has come is
/// left out (their `expire` transactions are written by the account's next write).
fn as_of(
    store: &mut dyn Store,
    user: Option<UserRecord>,
    now: Timestamp,
) -> Result<Option<UserRecord>, QuotaError> {
    let Some(u) = user else { return Ok(None) };
    let grants = store.account_grants(&AccountKey::User(u.username.clone()))?;
    Ok(Some(crate::account::as_of(u, &grants, now)))
}

/// Every record, sorted by username (read page by page).
pub fn list_users(store: &mut dyn Store, now: Timestamp) -> Result<Vec<UserRow>, QuotaError> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store.scan_users(after.as_deref(), limits::SCAN_PAGE_USERS)?;
        let full = page.len() == limits::SCAN_PAGE_USERS;
        after = page.last().map(|u| u.username.clone());
        out.extend(with_groups(store, page, now)?);
        if !full {
            return Ok(out);
        }
    }
}

/// Up to `limit` user records with `username > after`, by username, and the username to send as
/// `after` for the next page (None on the last page).
pub fn users_page(
    store: &mut dyn Store,
    after: Option<&str>,
    limit: usize,
    now: Timestamp,
) -> Result<(Vec<UserRow>, Option<String>), QuotaError> {
    let page = store.scan_users(after, limit.saturating_add(1))?;
    let (page, next) = cut_page(page, limit);
    Ok((with_groups(store, page, now)?, next))
}

/// A page read one past `limit`: the first `limit` records and, when there were more, the name a
/// next page starts after.
fn cut_page(mut records: Vec<UserRecord>, limit: usize) -> (Vec<UserRecord>, Option<String>) {
    if records.len() > limit {
        records.truncate(limit);
        let next = records.last().map(|u| u.username.clone());
        (records, next)
    } else {
        (records, None)
    }
}

/// [`users_page`] for course staff: the user records of the members of `groups`, by username (each
/// group read a page at a time, never the whole user table; members without a record skipped).
pub fn members_page(
    store: &mut dyn Store,
    groups: &BTreeSet<String>,
    after: Option<&str>,
    limit: usize,
    now: Timestamp,
) -> Result<(Vec<UserRow>, Option<String>), QuotaError> {
    let want = limit.saturating_add(1);
    let mut records = Vec::new();
    let mut cursor = after.unwrap_or("").to_string();
    while records.len() < want {
        // The next names after `cursor` over every group: complete up to the smallest last name
        // of a group's full batch.
        let mut names = BTreeSet::new();
        let mut upto: Option<String> = None;
        for g in groups {
            let batch = store.scan_group(g, &cursor, want)?;
            if batch.len() == want {
                let last = batch.last().cloned().unwrap_or_default();
                upto = Some(upto.map_or(last.clone(), |u: String| u.min(last)));
            }
            names.extend(batch);
        }
        let names: Vec<String> = names
            .into_iter()
            .filter(|n| upto.as_ref().is_none_or(|u| n <= u))
            .collect();
        for n in &names {
            // A member who never had a record (never started, never granted) has nothing to list.
            records.extend(store.get_user(n)?);
            if records.len() == want {
                break;
            }
        }
        match (upto, names.last()) {
            (Some(_), Some(last)) => cursor = last.clone(),
            _ => break,
        }
    }
    let (records, next) = cut_page(records, limit);
    Ok((with_groups(store, records, now)?, next))
}

/// Every member of `groups` with a record, a page of the users list at a time.
pub fn list_members(
    store: &mut dyn Store,
    groups: &BTreeSet<String>,
    now: Timestamp,
) -> Result<Vec<UserRow>, QuotaError> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let (page, next) = members_page(store, groups, after.as_deref(), limits::SCAN_PAGE_USERS, now)?;
        out.extend(page);
        match next {
            Some(n) => after = Some(n),
            None => return Ok(out),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UserDetail {
    pub username: String,
    pub balance: i64,
    pub unlimited: bool,
    pub recent_transactions: Vec<Transaction>,
    /// The user's groups (left out when none).
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub groups: BTreeSet<String>,
    /// Live dated grants with credit left, soonest expiry first.
    pub grants: Vec<Grant>,
}

/// A user's balance (as of now) and newest 20 transactions; an unknown user reads as zeros
/// (nothing created).
pub fn user_detail(store: &mut dyn Store, username: &str, now: Timestamp) -> Result<UserDetail, QuotaError> {
    let username = normalize_username("username", username)?;
    let stored = store.get_user(&username)?;
    let user = as_of(store, stored, now)?;
    let recent_transactions = store.recent_transactions(&username, limits::RECENT_TRANSACTIONS_MAX)?;
    let groups = crate::groups::of(store, &username)?;
    let grants = crate::lots::live(store.account_grants(&AccountKey::User(username.clone()))?, now);
    Ok(UserDetail {
        groups,
        grants,
        balance: user.as_ref().map_or(0, |u| u.balance),
        unlimited: user.as_ref().is_some_and(|u| u.unlimited),
        username,
        recent_transactions,
    })
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rates {
    pub enabled: bool,
    pub rates: Value,
    pub minimum_to_start: Milli,
}

pub fn rates(config: &Config) -> Rates {
    Rates {
        enabled: config.enabled,
        rates: config.rates_json(),
        minimum_to_start: config.minimum_to_start,
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Accelerators<'a> {
    pub accelerators: indexmap::IndexMap<&'a String, &'a Accelerator>,
}

/// Every accelerator, in the values file's order.
pub fn accelerators(config: &Config) -> Accelerators<'_> {
    Accelerators {
        accelerators: config.accelerators.iter().collect(),
    }
}

/// The accelerators a member of `groups` may start, in the values file's order.
pub fn accelerators_for<'a>(
    config: &'a Config,
    groups: &std::collections::BTreeSet<String>,
) -> Accelerators<'a> {
    Accelerators {
        accelerators: config
            .accelerators
            .iter()
            .filter(|(k, _)| config.groups.may_start(k, groups))
            .collect(),
    }
}

/// Sessions filtered by username and status, by id, at most `sessions_list_max` after `after_id`.
pub fn list_sessions(
    store: &mut dyn Store,
    username: Option<&str>,
    status: Option<SessionStatus>,
    after_id: i64,
    limit: usize,
) -> Result<(Vec<SessionView>, Option<i64>), QuotaError> {
    let username = username.map(|u| normalize_username("username", u)).transpose()?;
    let limit = limit.min(limits::SESSIONS_LIST_MAX);
    let mut sessions = store.scan_sessions(&SessionPage {
        username: username.as_deref(),
        status,
        after_id,
        limit: limit + 1,
    })?;
    let next = if sessions.len() > limit {
        sessions.truncate(limit);
        sessions.last().map(|s| s.id)
    } else {
        None
    };
    Ok((sessions.iter().map(SessionView::from).collect(), next))
}

/// The audit log by id, oldest first, a page at a time: everything, a user's personal account, or
/// a budget's (a member's rows of it with both).
pub fn ledger(
    store: &mut dyn Store,
    username: Option<&str>,
    budget: Option<&str>,
    range: (crate::Timestamp, crate::Timestamp),
    after_id: i64,
    limit: usize,
) -> Result<Vec<Transaction>, QuotaError> {
    let username = username.map(|u| normalize_username("username", u)).transpose()?;
    Ok(store.scan_transactions(&LedgerPage {
        username: username.as_deref(),
        budget,
        since: range.0,
        until: range.1,
        after_id,
        limit: limit.min(limits::LEDGER_PAGE_MAX),
    })?)
}

/// Active sessions counted by resource type, for a host's gauge (read a page at a time).
pub fn active_sessions_by_type(
    store: &mut dyn Store,
) -> Result<std::collections::BTreeMap<String, u64>, QuotaError> {
    let mut counts = std::collections::BTreeMap::new();
    let mut after_id = 0;
    loop {
        let page = store.scan_sessions(&SessionPage {
            username: None,
            status: Some(SessionStatus::Active),
            after_id,
            limit: limits::SESSIONS_LIST_MAX,
        })?;
        for s in &page {
            *counts.entry(s.resource_type.clone()).or_insert(0) += 1;
        }
        match page.last() {
            Some(last) if page.len() == limits::SESSIONS_LIST_MAX => after_id = last.id,
            _ => return Ok(counts),
        }
    }
}
