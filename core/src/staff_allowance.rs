//! Course staff's allowance (`custom.quota.groups.<g>.staffAllowance: {perChange, perMonth}`): what
//! the managers of `<g>` may add to `<g>`'s members and budgets, in one change and in a calendar
//! month (UTC), each manager apart. A month's additions are read from the ledger: the manager's
//! transactions of a positive amount (`created_by`), to the group's members as they are now and to
//! the budgets it shares (a `set` that raised a balance, an `add`, a dated grant, an approved
//! request alike). Decided before anything is written; past it, a 403 naming the allowance and
//! what is left.
//!
//! A target reached through several of the manager's groups (a student in two courses the same
//! person teaches): the change passes when one of those groups has no allowance, or when it fits
//! one group's allowance (one change and what is left this month); it then counts toward every one
//! of those groups, as the ledger will (each group's month is read by its members now).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{Datelike, NaiveDate};

use crate::budgets;
use crate::config::Config;
use crate::error::QuotaError;
use crate::groups::{self, StaffAllowance};
use crate::names::normalize_username;
use crate::store::Store;
use crate::time::Timestamp;

/// An account course staff add to.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    User(&'a str),
    Budget(&'a str),
}

/// One manager's allowances during one call: the groups they manage, and what they added this
/// month through each group with an allowance (read once, then kept up to date by the call).
pub struct Allowances<'c> {
    config: &'c Config,
    manager: String,
    managed: BTreeSet<String>,
    month: (Timestamp, Timestamp),
    used: BTreeMap<String, i64>,
}

/// The calendar month (UTC) `now` falls in: its first second, and the next month's.
pub fn month_of(now: Timestamp) -> (Timestamp, Timestamp) {
    let d = now.to_naive().date();
    let first = NaiveDate::from_ymd_opt(d.year(), d.month(), 1).unwrap_or(d);
    let next = if d.month() == 12 {
        NaiveDate::from_ymd_opt(d.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(d.year(), d.month() + 1, 1)
    }
    .unwrap_or(d);
    let at = |day: NaiveDate| Timestamp::from_naive(day.and_hms_opt(0, 0, 0).unwrap_or_default());
    (at(first), at(next))
}

/// One group's allowance as a caller reads it (`GET .../me/rights`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AllowanceView {
    pub group: String,
    pub per_change: Option<i64>,
    pub per_month: Option<i64>,
    /// What the caller added through the group this month (UTC).
    pub added_this_month: i64,
    /// What is left this month; `None`: no monthly bound.
    pub left_this_month: Option<i64>,
}

impl<'c> Allowances<'c> {
    pub fn new(
        config: &'c Config,
        manager: &str,
        managed: BTreeSet<String>,
        now: Timestamp,
    ) -> Allowances<'c> {
        Allowances {
            config,
            manager: manager.to_lowercase(),
            managed,
            month: month_of(now),
            used: BTreeMap::new(),
        }
    }

    fn allowance(&self, group: &str) -> Option<StaffAllowance> {
        self.config.groups.settings.get(group)?.staff_allowance
    }

    /// What the manager added through `group` this month (the ledger's, then this call's).
    fn used(&mut self, store: &mut dyn Store, group: &str) -> Result<i64, QuotaError> {
        if let Some(u) = self.used.get(group) {
            return Ok(*u);
        }
        let (from, until) = self.month;
        let mut sum = store.added_to_members(&self.manager, group, from, until)?;
        for name in budgets::sharing(self.config, store, group)? {
            sum = sum.saturating_add(store.added_to_budget(&self.manager, &name, from, until)?);
        }
        self.used.insert(group.to_string(), sum);
        Ok(sum)
    }

    /// The manager's groups through which `target` is reached.
    fn via(&self, store: &mut dyn Store, target: Target<'_>) -> Result<BTreeSet<String>, QuotaError> {
        let theirs: BTreeSet<String> = match target {
            Target::User(u) => {
                let name = normalize_username("username", u)?;
                groups::of(store, &name)?
            }
            Target::Budget(b) => match budgets::find(self.config, store, b)? {
                Some(found) => found.def.groups.iter().cloned().collect(),
                None => BTreeSet::new(),
            },
        };
        Ok(theirs.intersection(&self.managed).cloned().collect())
    }

    /// Admits adding `added` credits to `target` (nothing to check when it adds nothing), and
    /// counts it; else the 403 that names the allowance and what is left.
    pub fn admit(&mut self, store: &mut dyn Store, target: Target<'_>, added: i64) -> Result<(), QuotaError> {
        if added <= 0 {
            return Ok(());
        }
        let via = self.via(store, target)?;
        if via.is_empty() || via.iter().any(|g| self.allowance(g).is_none()) {
            return Ok(());
        }
        // It passes through one group whose allowance it fits; refused, the message names the
        // most generous one (the most left this month).
        let mut fits = false;
        let mut shown: Option<(String, StaffAllowance, i64)> = None;
        for g in &via {
            let a = self.allowance(g).unwrap_or_default();
            let left = match a.per_month {
                Some(m) => m.saturating_sub(self.used(store, g)?),
                None => i64::MAX,
            };
            if a.per_change.is_none_or(|c| added <= c) && added <= left {
                fits = true;
                break;
            }
            if shown.as_ref().is_none_or(|(_, _, l)| left > *l) {
                shown = Some((g.clone(), a, left));
            }
        }
        if !fits {
            let (group, a, left) = shown.unwrap_or_default();
            return Err(QuotaError::Forbidden(refusal(&group, a, left, added)));
        }
        for g in &via {
            let now = self.used(store, g)?;
            self.used.insert(g.clone(), now.saturating_add(added));
        }
        Ok(())
    }

    /// Each managed group's allowance, with what the manager added through it this month.
    pub fn views(&mut self, store: &mut dyn Store) -> Result<Vec<AllowanceView>, QuotaError> {
        let mut out = Vec::new();
        for g in self.managed.clone() {
            let Some(a) = self.allowance(&g) else {
                continue;
            };
            let added = self.used(store, &g)?;
            out.push(AllowanceView {
                group: g,
                per_change: a.per_change,
                per_month: a.per_month,
                added_this_month: added,
                left_this_month: a.per_month.map(|m| m.saturating_sub(added).max(0)),
            });
        }
        Ok(out)
    }
}

/// The 403 of a change past an allowance: which one, and what is left.
fn refusal(group: &str, a: StaffAllowance, left: i64, added: i64) -> String {
    let mut bounds = Vec::new();
    if let Some(c) = a.per_change {
        bounds.push(format!("{c} credits in one change"));
    }
    if let Some(m) = a.per_month {
        bounds.push(format!(
            "{m} credits a month (UTC), {} left this month",
            left.max(0)
        ));
    }
    format!(
        "This change adds {added} credits, more than the staff allowance of group {group:?} lets \
         its managers add ({}); nothing was changed. A quota admin can make it.",
        bounds.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_is_the_utc_calendar_month() {
        let t = |s: &str| Timestamp::parse(s).unwrap();
        assert_eq!(
            month_of(t("2026-12-07T09:57:13Z")),
            (t("2026-12-01T00:00:00Z"), t("2027-01-01T00:00:00Z"))
        );
        assert_eq!(
            month_of(t("2027-02-28T23:59:59Z")),
            (t("2027-02-01T00:00:00Z"), t("2027-03-01T00:00:00Z"))
        );
        assert_eq!(month_of(t("2027-03-01T00:00:00Z")).0, t("2027-03-01T00:00:00Z"));
    }
}
