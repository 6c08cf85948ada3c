//! Where the credits go: usage summed by day, resource type or user over a range of UTC days, for
//! admins (`GET {base}/admin/api/quota/usage`) and for a user's own chart (`.../me/usage`).
//!
//! Every completed session adds, on the UTC day its end was recorded (the day of its `usage`
//! transaction when it was charged), its charge, its billed minutes and one session to two
//! running sums kept beside the ledger: per (day, resource type) and per (user, day, resource
//! type). The reports read those sums, so a month of a ten-million-row ledger is a few hundred rows
//! read, not a scan. The credits equal the ledger's `usage` rows of the same days by construction
//! (`core/tests/model/` holds them to it); a session that was not charged (an unlimited user,
//! quota disabled) adds its minutes with 0 credits.

use serde::Serialize;

use crate::error::QuotaError;
use crate::limits;
use crate::names::normalize_username;
use crate::store::Store;
pub use crate::store::Usage;
use crate::time::Timestamp;

pub use crate::time::DAY_SECONDS;

/// The UTC day (days since 1970-01-01) of a timestamp.
pub fn day_of(t: Timestamp) -> i64 {
    t.seconds().div_euclid(DAY_SECONDS)
}

/// `YYYY-MM-DD` of a day number.
pub fn day_text(day: i64) -> String {
    Timestamp(day * DAY_SECONDS)
        .to_naive()
        .format("%Y-%m-%d")
        .to_string()
}

/// Parses `YYYY-MM-DD` (a UTC day) for the field `field`.
pub fn parse_day(field: &str, text: &str) -> Result<i64, QuotaError> {
    let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .filter(|_| text.len() == 10)
        .ok_or_else(|| QuotaError::invalid(field, format!("must be a date YYYY-MM-DD, got `{text}`")))?;
    let t = Timestamp::from_naive(date.and_hms_opt(0, 0, 0).unwrap_or_default());
    if !(limits::TIMESTAMP_SECONDS_MIN..=limits::TIMESTAMP_SECONDS_MAX).contains(&t.seconds()) {
        return Err(QuotaError::invalid(
            field,
            format!("`{text}` is outside the years 1970 to 9999"),
        ));
    }
    Ok(day_of(t))
}

/// A range of UTC days, both ends included, at most [`limits::usage_range_days_max`] long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Days {
    pub first: i64,
    pub last: i64,
}

impl Days {
    /// From the `from` and `to` fields (both required).
    pub fn parse(from: Option<&str>, to: Option<&str>) -> Result<Days, QuotaError> {
        let first = parse_day(
            "from",
            from.ok_or_else(|| QuotaError::invalid("from", "required (YYYY-MM-DD)"))?,
        )?;
        let last = parse_day(
            "to",
            to.ok_or_else(|| QuotaError::invalid("to", "required (YYYY-MM-DD)"))?,
        )?;
        Days::checked(first, last)
    }

    pub fn checked(first: i64, last: i64) -> Result<Days, QuotaError> {
        if last < first {
            return Err(QuotaError::invalid("to", "must not be before `from`"));
        }
        if last - first + 1 > limits::USAGE_RANGE_DAYS_MAX {
            return Err(QuotaError::invalid(
                "to",
                format!("a range holds at most {} days", limits::USAGE_RANGE_DAYS_MAX),
            ));
        }
        Ok(Days { first, last })
    }

    /// The `n` days ending with the day of `now`.
    pub fn ending(now: Timestamp, n: i64) -> Days {
        let last = day_of(now);
        Days {
            first: last - n + 1,
            last,
        }
    }

    /// The first second of the range and the first second after it.
    pub fn seconds(&self) -> (Timestamp, Timestamp) {
        (
            Timestamp(self.first * DAY_SECONDS),
            Timestamp((self.last + 1) * DAY_SECONDS),
        )
    }
}

/// What a report rows are keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    User,
    Resource,
    Day,
    /// The account charged: a budget's name, `""` for personal accounts.
    Budget,
}

impl GroupBy {
    pub fn parse(s: &str) -> Result<GroupBy, QuotaError> {
        Ok(match s {
            "user" => GroupBy::User,
            "resource" => GroupBy::Resource,
            "day" => GroupBy::Day,
            "budget" => GroupBy::Budget,
            _ => {
                return Err(QuotaError::invalid(
                    "group_by",
                    format!("must be `user`, `resource`, `day` or `budget`, got `{s}`"),
                ))
            }
        })
    }
}

/// How a report's rows are ordered: by their key (paged with `after`), or most credits first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Key,
    Credits,
}

/// One resource type's share of a day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceUsage {
    pub resource_type: String,
    #[serde(flatten)]
    pub usage: Usage,
}

/// One row of a report: its key (a username, a resource type or a `YYYY-MM-DD` day), its sums and,
/// for a day, each resource type's share (by resource type).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Row {
    pub key: String,
    #[serde(flatten)]
    pub usage: Usage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_resource: Option<Vec<ResourceUsage>>,
}

/// A report page and the totals of the whole range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub group_by: &'static str,
    pub rows: Vec<Row>,
    pub totals: Usage,
    /// The key to pass as `after` for the next page; `null` on the last.
    pub next_after: Option<String>,
}

/// Every day of `days` with each resource type's share (days without usage have none).
pub(crate) fn day_rows(sums: Vec<(i64, String, Usage)>, days: Days) -> Vec<Row> {
    let mut rows: Vec<Row> = (days.first..=days.last)
        .map(|d| Row {
            key: day_text(d),
            usage: Usage::default(),
            by_resource: Some(Vec::new()),
        })
        .collect();
    for (day, resource_type, u) in sums {
        let Some(row) = usize::try_from(day - days.first)
            .ok()
            .and_then(|i| rows.get_mut(i))
        else {
            continue;
        };
        row.usage.add(&u);
        if let Some(shares) = row.by_resource.as_mut() {
            shares.push(ResourceUsage {
                resource_type,
                usage: u,
            });
        }
    }
    rows
}

/// The admin report: a page of rows of `group_by` over `days`, with the range's totals.
pub fn report(
    store: &mut dyn Store,
    days: Days,
    group_by: GroupBy,
    order: Order,
    after: Option<&str>,
    limit: usize,
    budget: Option<&str>,
) -> Result<Report, QuotaError> {
    if budget.is_some() || group_by == GroupBy::Budget {
        return budget_report(store, days, group_by, order, after, limit, budget);
    }
    let sums = store.usage_by_day(days.first, days.last)?;
    let mut totals = Usage::default();
    for (_, _, u) in &sums {
        totals.add(u);
    }
    let rows = match group_by {
        GroupBy::Budget => Vec::new(),
        GroupBy::Day => day_rows(sums, days),
        GroupBy::Resource => {
            let mut by: std::collections::BTreeMap<String, Usage> = Default::default();
            for (_, r, u) in &sums {
                by.entry(r.clone()).or_default().add(u);
            }
            keyed_rows(by)
        }
        GroupBy::User => {
            let users = match order {
                Order::Key => store.usage_by_user(days.first, days.last, after, limit.saturating_add(1))?,
                Order::Credits => store.usage_top_users(days.first, days.last, limit)?,
            };
            keyed_rows(users)
        }
    };
    Ok(page(days, group_by, order, rows, totals, after, limit))
}

/// One row per (key, sums), in the order given.
pub(crate) fn keyed_rows(by: impl IntoIterator<Item = (String, Usage)>) -> Vec<Row> {
    by.into_iter()
        .map(|(key, usage)| Row {
            key,
            usage,
            by_resource: None,
        })
        .collect()
}

/// Orders, pages and finishes a report's rows (rows by user arrive after `after` already).
pub(crate) fn page(
    days: Days,
    group_by: GroupBy,
    order: Order,
    mut rows: Vec<Row>,
    totals: Usage,
    after: Option<&str>,
    limit: usize,
) -> Report {
    if order == Order::Credits {
        rows.sort_by(|a, b| {
            (b.usage.credits, b.usage.minutes)
                .cmp(&(a.usage.credits, a.usage.minutes))
                .then_with(|| a.key.cmp(&b.key))
        });
        rows.truncate(limit);
        return finish(days, group_by, rows, totals, None);
    }
    if group_by != GroupBy::User {
        if let Some(a) = after {
            rows.retain(|r| r.key.as_str() > a);
        }
    }
    let next = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        rows.last().map(|r| r.key.clone())
    });
    finish(days, group_by, rows, totals, next.flatten())
}

/// A report by budget (`group_by=budget`: the personal accounts' row is the total less the
/// budgets'), or of one budget's usage (`budget=<name>`) by any key.
fn budget_report(
    store: &mut dyn Store,
    days: Days,
    group_by: GroupBy,
    order: Order,
    after: Option<&str>,
    limit: usize,
    budget: Option<&str>,
) -> Result<Report, QuotaError> {
    let rows = store.budget_usage(days.first, days.last, budget)?;
    let mut totals = Usage::default();
    if budget.is_some() {
        for r in &rows {
            totals.add(&r.usage);
        }
    } else {
        for (_, _, u) in store.usage_by_day(days.first, days.last)? {
            totals.add(&u);
        }
    }
    let mut by: std::collections::BTreeMap<String, Usage> = Default::default();
    let out = match group_by {
        GroupBy::Day => day_rows(
            rows.into_iter()
                .map(|r| (r.day, r.resource_type, r.usage))
                .collect(),
            days,
        ),
        _ => {
            if group_by == GroupBy::Budget && budget.is_none() {
                let mut personal = totals;
                for r in &rows {
                    personal.credits -= r.usage.credits;
                    personal.minutes -= r.usage.minutes;
                    personal.sessions -= r.usage.sessions;
                }
                if personal != Usage::default() {
                    by.insert(String::new(), personal);
                }
            }
            for r in rows {
                let key = match group_by {
                    GroupBy::User => r.username,
                    GroupBy::Resource => r.resource_type,
                    _ => r.budget,
                };
                by.entry(key).or_default().add(&r.usage);
            }
            keyed_rows(by)
        }
    };
    // Rows by user come paged from the store elsewhere; here they are filtered as every key is.
    let mut out = out;
    if let (GroupBy::User, Some(a)) = (group_by, after) {
        out.retain(|r| r.key.as_str() > a);
    }
    Ok(page(days, group_by, order, out, totals, after, limit))
}

fn finish(
    days: Days,
    group_by: GroupBy,
    rows: Vec<Row>,
    totals: Usage,
    next_after: Option<String>,
) -> Report {
    Report {
        from: day_text(days.first),
        to: day_text(days.last),
        group_by: match group_by {
            GroupBy::User => "user",
            GroupBy::Resource => "resource",
            GroupBy::Day => "day",
            GroupBy::Budget => "budget",
        },
        rows,
        totals,
        next_after,
    }
}

/// A user's own usage: every day of `days`, each resource type's share.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MyUsage {
    pub from: String,
    pub to: String,
    pub days: Vec<Row>,
    pub totals: Usage,
}

pub fn mine(store: &mut dyn Store, username: &str, days: Days) -> Result<MyUsage, QuotaError> {
    let username = normalize_username("username", username)?;
    let sums = store.user_usage(&username, days.first, days.last)?;
    let mut totals = Usage::default();
    for (_, _, u) in &sums {
        totals.add(u);
    }
    Ok(MyUsage {
        from: day_text(days.first),
        to: day_text(days.last),
        days: day_rows(sums, days),
        totals,
    })
}
