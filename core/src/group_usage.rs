//! The usage report of one group's members (`GET .../admin/api/quota/usage?group=<g>`): the
//! sums by user, resource type or day of the members of `<g>` as the engine knows them, read one
//! member at a time (the engine keeps no sums per group). Course staff read their own groups'.

use std::collections::BTreeMap;

use crate::error::QuotaError;
use crate::limits;
use crate::store::{Store, Usage};
use crate::usage::{day_rows, keyed_rows, page, Days, GroupBy, Order, Report};

/// The report of `group`'s members over `days` by `group_by` (not by budget).
pub fn report(
    store: &mut dyn Store,
    group: &str,
    days: Days,
    group_by: GroupBy,
    order: Order,
    after: Option<&str>,
    limit: usize,
) -> Result<Report, QuotaError> {
    if group_by == GroupBy::Budget {
        return Err(QuotaError::invalid(
            "group",
            "is a report of one group's members by user, resource or day, not by budget",
        ));
    }
    let mut sums: Vec<(i64, String, Usage)> = Vec::new();
    let mut by_user: BTreeMap<String, Usage> = BTreeMap::new();
    let mut cursor = String::new();
    loop {
        let members = store.scan_group(group, &cursor, limits::SCAN_PAGE_USERS)?;
        for m in &members {
            for (day, resource, u) in store.user_usage(m, days.first, days.last)? {
                by_user.entry(m.clone()).or_default().add(&u);
                sums.push((day, resource, u));
            }
        }
        match members.last() {
            Some(last) if members.len() == limits::SCAN_PAGE_USERS => cursor.clone_from(last),
            _ => break,
        }
    }
    let mut totals = Usage::default();
    for (_, _, u) in &sums {
        totals.add(u);
    }
    let rows = match group_by {
        GroupBy::Day => {
            sums.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            // One share per (day, resource type), the members' sums added.
            let mut merged: Vec<(i64, String, Usage)> = Vec::new();
            for (d, r, u) in sums {
                match merged.last_mut() {
                    Some(last) if last.0 == d && last.1 == r => last.2.add(&u),
                    _ => merged.push((d, r, u)),
                }
            }
            day_rows(merged, days)
        }
        GroupBy::Resource => {
            let mut by: BTreeMap<String, Usage> = BTreeMap::new();
            for (_, r, u) in &sums {
                by.entry(r.clone()).or_default().add(u);
            }
            keyed_rows(by)
        }
        _ => {
            if let (Order::Key, Some(a)) = (order, after) {
                by_user.retain(|k, _| k.as_str() > a);
            }
            keyed_rows(by_user)
        }
    };
    Ok(page(days, group_by, order, rows, totals, after, limit))
}
