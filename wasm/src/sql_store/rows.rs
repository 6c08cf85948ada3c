//! The store's records as the bridge's rows and parameters, column by column in the dialects' order.

use quota_core::groups::GroupNames;
use quota_core::milli::Milli;
use quota_core::store::{
    AccountKey, BudgetRow, BudgetUsage, Grant, Membership, NewSession, NewTransaction, Session,
    SessionStatus, Transaction, TransactionType, Usage, UserRecord,
};
use quota_core::{StoreError, Timestamp};

use super::columns::*;
use crate::sql_json::{Cell, Columns, Params};

pub(super) fn limit(n: usize) -> i64 {
    i64::try_from(n)
        .unwrap_or(i64::MAX)
        .min(crate::sql_json::JSON_INT_MAX)
}

pub(super) fn user(row: &mut [Cell]) -> Result<UserRecord, StoreError> {
    let mut c = Columns::new(row, "users", USER_COLUMN_COUNT)?;
    Ok(UserRecord {
        username: c.text(0)?,
        balance: c.int(1)?,
        unlimited: c.flag(2)?,
        updated_at: Timestamp(c.int(3)?),
    })
}

pub(super) fn transaction(row: &mut [Cell]) -> Result<Transaction, StoreError> {
    let mut c = Columns::new(row, "transactions", TRANSACTION_COLUMN_COUNT)?;
    let kind = c.text(3)?;
    let id = c.int(0)?;
    Ok(NewTransaction {
        username: c.text(1)?,
        amount: c.int(2)?,
        transaction_type: TransactionType::parse(&kind)
            .ok_or_else(|| StoreError(format!("transactions: unknown transaction type `{kind}`")))?,
        resource_type: c.opt_text(4)?,
        description: c.text(5)?,
        balance_before: c.int(6)?,
        balance_after: c.int(7)?,
        created_at: Timestamp(c.int(8)?),
        created_by: c.opt_text(9)?,
        budget: c.opt_text(10)?,
        expires_at: c.opt_int(11)?.map(Timestamp),
    }
    .with_id(id))
}

pub(super) fn session(row: &mut [Cell]) -> Result<Session, StoreError> {
    let mut c = Columns::new(row, "sessions", SESSION_COLUMN_COUNT)?;
    let status = c.text(9)?;
    Ok(Session {
        id: c.int(0)?,
        start: NewSession {
            username: c.text(1)?,
            server_name: c.text(2)?,
            resource_type: c.text(3)?,
            rate: Milli(c.int(4)?),
            runtime_minutes: c.int(5)?,
            estimated_cost: Milli(c.int(6)?),
            start_time: Timestamp(c.int(7)?),
            billable: c.flag(8)?,
            budget: c.opt_text(13)?,
            warn_at: None,
        },
        status: SessionStatus::parse(&status)
            .ok_or_else(|| StoreError(format!("sessions: unknown status `{status}`")))?,
        end_time: c.opt_int(10)?.map(Timestamp),
        duration_minutes: c.opt_int(11)?,
        cost: c.int(12)?,
    })
}

/// A set of group names as stored: [`GroupNames`]' text (sorted, joined by newlines).
pub(super) fn group_text(groups: &std::collections::BTreeSet<String>) -> String {
    GroupNames::from_set(groups).into_string()
}

pub(super) fn two_texts(row: &mut [Cell]) -> Result<(String, String), StoreError> {
    let mut c = Columns::new(row, "group_members", 2)?;
    Ok((c.text(0)?, c.text(1)?))
}

/// A membership row's groups as their stored text (the spawn gate's: compared, never split).
pub(super) fn membership_text(row: &mut [Cell]) -> Result<GroupNames, StoreError> {
    let mut c = Columns::new(row, "memberships", MEMBERSHIP_COLUMN_COUNT)?;
    Ok(GroupNames::stored(c.text(1)?))
}

pub(super) fn membership(row: &mut [Cell]) -> Result<(String, Membership), StoreError> {
    let mut c = Columns::new(row, "memberships", MEMBERSHIP_COLUMN_COUNT)?;
    let username = c.text(0)?;
    // The stored text is `GroupNames`' form: one place splits it.
    let groups = GroupNames::stored(c.text(1)?).to_set();
    Ok((
        username,
        Membership {
            groups,
            since: Timestamp(c.int(2)?),
        },
    ))
}

/// (key, day, resource type) sums: a report row read by `usage_by_day` and `user_usage`.
pub(super) fn day_usage(row: &mut [Cell]) -> Result<(i64, String, Usage), StoreError> {
    let mut c = Columns::new(row, "usage_days", 5)?;
    Ok((
        c.int(0)?,
        c.text(1)?,
        Usage {
            credits: c.int(2)?,
            minutes: c.int(3)?,
            sessions: c.int(4)?,
        },
    ))
}

pub(super) fn user_usage_row(row: &mut [Cell]) -> Result<(String, Usage), StoreError> {
    let mut c = Columns::new(row, "user_usage_days", 4)?;
    Ok((
        c.text(0)?,
        Usage {
            credits: c.int(1)?,
            minutes: c.int(2)?,
            sessions: c.int(3)?,
        },
    ))
}

pub(super) fn all<T>(
    mut rows: Vec<Vec<Cell>>,
    f: fn(&mut [Cell]) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    rows.iter_mut().map(|r| f(r)).collect()
}

pub(super) fn first<T>(
    mut rows: Vec<Vec<Cell>>,
    f: fn(&mut [Cell]) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    rows.first_mut().map(|r| f(r)).transpose()
}

pub(super) fn user_params(p: &mut Params, u: &UserRecord) -> Result<(), StoreError> {
    p.push_text(&u.username);
    p.push_int(u.balance)?;
    p.push_int(i64::from(u.unlimited))?;
    p.push_int(u.updated_at.seconds())
}

pub(super) fn transaction_params(
    p: &mut Params,
    t: &quota_core::store::NewTransaction,
) -> Result<(), StoreError> {
    p.push_text(&t.username);
    p.push_int(t.amount)?;
    p.push_text(t.transaction_type.as_str());
    match &t.resource_type {
        Some(r) => p.push_text(r),
        None => p.push_null(),
    }
    p.push_text(&t.description);
    p.push_int(t.balance_before)?;
    p.push_int(t.balance_after)?;
    p.push_int(t.created_at.seconds())?;
    match &t.created_by {
        Some(b) => p.push_text(b),
        None => p.push_null(),
    }
    match &t.budget {
        Some(b) => p.push_text(b),
        None => p.push_null(),
    }
    match t.expires_at {
        Some(at) => p.push_int(at.seconds())?,
        None => p.push_null(),
    }
    Ok(())
}

pub(super) fn budget(row: &mut [Cell]) -> Result<BudgetRow, StoreError> {
    let mut c = Columns::new(row, "budgets", BUDGET_COLUMN_COUNT)?;
    Ok(BudgetRow {
        name: c.text(0)?,
        balance: c.int(1)?,
        updated_at: Timestamp(c.int(2)?),
        definition: c.opt_text(3)?,
    })
}

pub(super) fn budget_params(p: &mut Params, b: &BudgetRow) -> Result<(), StoreError> {
    p.push_text(&b.name);
    p.push_int(b.balance)?;
    p.push_int(b.updated_at.seconds())?;
    match &b.definition {
        Some(d) => p.push_text(d),
        None => p.push_null(),
    }
    Ok(())
}

pub(super) fn budget_usage(row: &mut [Cell]) -> Result<BudgetUsage, StoreError> {
    let mut c = Columns::new(row, "budget_usage_days", 7)?;
    Ok(BudgetUsage {
        budget: c.text(0)?,
        username: c.text(1)?,
        day: c.int(2)?,
        resource_type: c.text(3)?,
        usage: Usage {
            credits: c.int(4)?,
            minutes: c.int(5)?,
            sessions: c.int(6)?,
        },
    })
}

pub(super) fn grant(row: &mut [Cell]) -> Result<Grant, StoreError> {
    let c = Columns::new(row, "grants", GRANT_COLUMN_COUNT)?;
    Ok(Grant {
        grant_id: c.int(0)?,
        amount: c.int(1)?,
        remaining: c.int(2)?,
        granted_at: Timestamp(c.int(3)?),
        expires_at: Timestamp(c.int(4)?),
    })
}

/// (username, grant) of `user_grants_between`.
pub(super) fn named_grant(row: &mut [Cell]) -> Result<(String, Grant), StoreError> {
    let mut c = Columns::new(row, "grants", 6)?;
    Ok((
        c.text(0)?,
        Grant {
            grant_id: c.int(1)?,
            amount: c.int(2)?,
            remaining: c.int(3)?,
            granted_at: Timestamp(c.int(4)?),
            expires_at: Timestamp(c.int(5)?),
        },
    ))
}

/// An account as stored: (username, budget), the one of them that is not the account empty.
pub(super) fn account_columns(account: &AccountKey) -> (&str, &str) {
    match account {
        AccountKey::User(u) => (u.as_str(), ""),
        AccountKey::Budget(b) => ("", b.as_str()),
    }
}

pub(super) fn name_and_int(row: &mut [Cell]) -> Result<(String, i64), StoreError> {
    let mut c = Columns::new(row, "grants", 2)?;
    Ok((c.text(0)?, c.int(1)?))
}
