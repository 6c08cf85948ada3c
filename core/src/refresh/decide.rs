//! What a refresh decides, a page of users (or the budgets it names) at a time, before it writes
//! anything: each account's new balance, the users it skips, where a chunked run stopped.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::params::RefreshParams;
use crate::config::Config;
use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::ledger::{self, Account, BudgetAccount};
use crate::limits;
use crate::lots;
use crate::store::{Grant, Store, UserRecord};
use crate::time::Timestamp;

pub(super) struct Decided {
    pub(super) changes: Vec<Decision>,
    pub(super) skipped: u64,
    pub(super) total: i128,
    /// The last username scanned.
    pub(super) after: Option<String>,
    /// Every user has been seen.
    pub(super) finished: bool,
}

/// One account's decided change: its row (a user's or a budget's), the grants it holds (the due
/// ones are written off first), its balance as of now and its new balance.
pub(super) struct Decision {
    pub(super) account: Holder,
    pub(super) grants: Vec<Grant>,
    pub(super) before: i64,
    pub(super) new: i64,
}

pub(super) enum Holder {
    User(UserRecord),
    Budget(BudgetAccount),
}

impl Decision {
    pub(super) fn name(&self) -> &str {
        match &self.account {
            Holder::User(u) => &u.username,
            Holder::Budget(b) => &b.row.name,
        }
    }

    pub(super) fn before(&self) -> i64 {
        self.before
    }
}

/// Scans at most `limit` users after the progress's last one, page by page, deciding each.
pub(super) fn decide(
    tx: &mut EngineCall<'_>,
    p: &RefreshParams,
    progress: Option<&Progress>,
    limit: usize,
    now: Timestamp,
) -> Result<Decided, QuotaError> {
    let mut d = Decided {
        changes: Vec::new(),
        skipped: progress.map_or(0, |at| at.skipped),
        total: progress.map_or(0, |at| i128::from(at.total_change)),
        after: progress.map(|at| at.resume_after.clone()),
        finished: false,
    };
    let mut scanned: usize = 0;
    d.finished = loop {
        let want = limits::SCAN_PAGE_USERS.min(limit - scanned);
        if want == 0 {
            break false;
        }
        let page = tx.scan_users(d.after.as_deref(), want)?;
        let got = page.len();
        scanned += got;
        if let Some(last) = page.last() {
            d.after = Some(last.username.clone());
        }
        let mut groups = page_groups(tx, &p.targets, &page)?;
        let mut held = page_grants(tx.store(), &page)?;
        let none = BTreeSet::new();
        for user in page {
            let of_user = groups.next_for(&user.username).unwrap_or(&none);
            // Balances as of now: a lapsed grant's credit no longer counts, for the targets too.
            let grants = held.remove(&user.username).unwrap_or_default();
            let before = lots::balance_at(user.balance, &grants, now);
            let as_of_now = UserRecord {
                balance: before,
                ..user.clone()
            };
            if !p.targets.matches(&as_of_now, of_user) {
                d.skipped += 1;
                continue;
            }
            let new =
                ledger::checked_balance(p.new_balance(before), &format!("Refresh of {}", user.username))?;
            if new == before {
                d.skipped += 1;
                continue;
            }
            d.total += i128::from(new) - i128::from(before);
            d.changes.push(Decision {
                account: Holder::User(user),
                grants,
                before,
                new,
            });
        }
        if got < want {
            break true;
        }
    };
    Ok(d)
}

/// The personal grants of a page of users (sorted by username), read in one call.
fn page_grants(
    store: &mut dyn Store,
    page: &[UserRecord],
) -> Result<BTreeMap<String, Vec<Grant>>, QuotaError> {
    let (Some(first), Some(last)) = (page.first(), page.last()) else {
        return Ok(BTreeMap::new());
    };
    let mut out: BTreeMap<String, Vec<Grant>> = BTreeMap::new();
    for (u, g) in store.user_grants_between(&first.username, &last.username)? {
        out.entry(u).or_default().push(g);
    }
    Ok(out)
}

/// A run over budgets (`targets.budgets`): each named budget's account, decided as a user's is
/// (`balanceBelow`/`balanceAbove` apply; caps and floors too). Every budget in one call.
pub(super) fn budget_accounts(
    config: &Config,
    store: &mut dyn Store,
    p: &RefreshParams,
    names: &BTreeSet<String>,
    now: Timestamp,
) -> Result<Decided, QuotaError> {
    let mut d = Decided {
        changes: Vec::new(),
        skipped: 0,
        total: 0,
        after: None,
        finished: true,
    };
    for (i, name) in names.iter().enumerate() {
        if crate::budgets::find(config, store, name)?.is_none() {
            return Err(QuotaError::invalid(
                format!("targets.budgets[{i}]"),
                format!("unknown budget {name}"),
            ));
        }
        let acct = crate::budgets::account(store, name, "", now)?;
        let grants = store.account_grants(&acct.key())?;
        let before = lots::balance_at(acct.row.balance, &grants, now);
        let in_range = p.targets.balance_below.is_none_or(|b| before < b)
            && p.targets.balance_above.is_none_or(|a| before > a);
        let new = ledger::checked_balance(p.new_balance(before), &format!("Refresh of budget {name}"))?;
        if !in_range || new == before {
            d.skipped += 1;
            continue;
        }
        d.total += i128::from(new) - i128::from(before);
        d.changes.push(Decision {
            account: Holder::Budget(acct),
            grants,
            before,
            new,
        });
    }
    Ok(d)
}

/// The time a run gives its dated credit from: the minute a scheduled run id names
/// (`<rule>@YYYY-MM-DDTHH:MM:SSZ`, as the hosts' schedulers write them; seconds may be left out),
/// else the run's first time.
pub(super) fn run_time(run_id: Option<&str>, first: Timestamp) -> Timestamp {
    run_id
        .and_then(|id| id.rsplit_once('@'))
        .and_then(|(_, minute)| {
            let minute = minute.strip_suffix('Z')?;
            chrono::NaiveDateTime::parse_from_str(minute, "%Y-%m-%dT%H:%M:%S")
                .or_else(|_| chrono::NaiveDateTime::parse_from_str(minute, "%Y-%m-%dT%H:%M"))
                .ok()
        })
        .map_or(first, Timestamp::from_naive)
}

/// The groups a page of users (sorted by username) is in among those the targets name, read in one
/// call when the targets name groups; otherwise nothing is read.
fn page_groups(
    tx: &mut EngineCall<'_>,
    targets: &crate::targets::Targets,
    page: &[UserRecord],
) -> Result<PageGroups, QuotaError> {
    let named: BTreeSet<String> = match (targets.uses_groups(), page.first(), page.last()) {
        (true, Some(_), Some(_)) => targets
            .include_groups
            .iter()
            .flatten()
            .chain(&targets.exclude_groups)
            .cloned()
            .collect(),
        _ => return Ok(PageGroups::default()),
    };
    let (first, last) = (&page[0].username, &page[page.len() - 1].username);
    let mut of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (u, g) in tx.group_members_between(&named, first, last)? {
        of.entry(u).or_default().insert(g);
    }
    Ok(PageGroups { of })
}

/// The named groups of the users of a page who are in any (the others are in none of them).
#[derive(Default)]
struct PageGroups {
    of: BTreeMap<String, BTreeSet<String>>,
}

impl PageGroups {
    fn next_for(&mut self, username: &str) -> Option<&BTreeSet<String>> {
        self.of.get(username)
    }
}

/// Where a chunked run stopped, stored as its run's `result` until the run completes (a completed
/// run stores its `RefreshResult`, which has no `resume_after`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Progress {
    /// The last username the run has dealt with.
    pub(super) resume_after: String,
    pub(super) users_updated: u64,
    pub(super) total_change: i64,
    pub(super) skipped: u64,
}
