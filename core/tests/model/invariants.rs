//! What must hold after every step: a refusal changed nothing, every transaction reconciles, each
//! balance is the sum of its ledger and the model's, one usage row per session, memberships and
//! session states as the model has them; and, now and then, the usage reports against the ledger.

use std::collections::BTreeMap;

use quota_core::store::{SessionStatus, TransactionType};
use quota_core::usage::{self, Days, GroupBy, Order};
use quota_core::{MemStore, QuotaError};

use crate::reference::Model;
use crate::USERS;

/// The invariants after step `step` (`what`, refused with `refused` or not), `before` the store
/// as it was before it.
pub fn after_step(
    store: &MemStore,
    before: &MemStore,
    m: &Model,
    refused: Option<QuotaError>,
    step: usize,
    what: &str,
) -> Result<(), String> {
    // Invariants after every step.
    if let Some(e) = refused {
        // A refused start is told (`start.refused`): the events may differ, nothing else.
        if !store.same_but_events(before) {
            return Err(format!("step {step} {what}: refused ({e}) but the store changed"));
        }
    }
    let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
    let mut usage_per_session: BTreeMap<String, u32> = BTreeMap::new();
    for tx in &store.transactions {
        if tx.amount != tx.balance_after - tx.balance_before {
            return Err(format!(
                "step {step} {what}: transaction {} does not reconcile: {tx:?}",
                tx.id
            ));
        }
        *sums.entry(tx.username.as_str()).or_default() += tx.amount;
        if tx.transaction_type == TransactionType::Usage {
            let key = tx.description.split(':').next().unwrap_or_default().to_string();
            *usage_per_session.entry(key).or_default() += 1;
        }
    }
    if let Some((s, n)) = usage_per_session.iter().find(|(_, n)| **n > 1) {
        return Err(format!("step {step} {what}: {s} has {n} usage transactions"));
    }
    for (name, u) in &store.users {
        if sums.get(name.as_str()).copied().unwrap_or(0) != u.balance {
            return Err(format!(
                "step {step} {what}: {name} balance {} != sum of transactions",
                u.balance
            ));
        }
        if m.balance.get(name) != Some(&u.balance) || m.unlimited.contains(name) != u.unlimited {
            return Err(format!(
                "step {step} {what}: {name} is {} (unlimited {}), model {:?} (unlimited {})",
                u.balance,
                u.unlimited,
                m.balance.get(name),
                m.unlimited.contains(name)
            ));
        }
    }
    if store.users.len() != m.balance.len() {
        return Err(format!(
            "step {step} {what}: {} records, model {}",
            store.users.len(),
            m.balance.len()
        ));
    }
    for u in USERS {
        let stored = store.memberships.get(u).map(|x| &x.groups);
        let model = m.groups.get(u);
        if stored.filter(|g| !g.is_empty()) != model.filter(|g| !g.is_empty()) {
            return Err(format!(
                "step {step} {what}: {u} is in {stored:?}, model {model:?}"
            ));
        }
    }
    for (id, s) in &store.sessions {
        let ms = &m.sessions[id];
        if s.status != ms.status {
            return Err(format!(
                "step {step} {what}: session {id} is {:?}, model {:?}",
                s.status, ms.status
            ));
        }
    }
    Ok(())
}

/// The usage reports over the days `first` to `last` against the ledger: each user's, resource
/// type's and day's credits equal the sum of their `usage` transactions of those days; over the
/// whole run (`whole`) the minutes and sessions equal the completed sessions'.
pub fn check_usage(store: &mut MemStore, first: i64, last: i64, whole: bool) -> Result<(), String> {
    let days = Days::checked(first, last).map_err(|e| e.to_string())?;
    let mut by_user: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_resource: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_day: BTreeMap<String, i64> = BTreeMap::new();
    for tx in &store.transactions {
        let day = usage::day_of(tx.created_at);
        if tx.transaction_type != TransactionType::Usage || day < first || day > last {
            continue;
        }
        *by_user.entry(tx.username.clone()).or_default() -= tx.amount;
        *by_resource
            .entry(tx.resource_type.clone().unwrap_or_default())
            .or_default() -= tx.amount;
        *by_day.entry(usage::day_text(day)).or_default() -= tx.amount;
    }
    let report = |store: &mut MemStore, g: GroupBy| -> Result<BTreeMap<String, i64>, String> {
        let r = usage::report(store, days, g, Order::Key, None, 1000, None).map_err(|e| e.to_string())?;
        Ok(r.rows
            .into_iter()
            .filter(|row| row.usage.credits != 0)
            .map(|row| (row.key, row.usage.credits))
            .collect())
    };
    for (g, want) in [
        (GroupBy::User, &by_user),
        (GroupBy::Resource, &by_resource),
        (GroupBy::Day, &by_day),
    ] {
        let got = report(store, g)?;
        let want: BTreeMap<String, i64> = want
            .iter()
            .filter(|(_, c)| **c != 0)
            .map(|(k, c)| (k.clone(), *c))
            .collect();
        if got != want {
            return Err(format!(
                "usage by {g:?} of days {first}..={last}: {got:?}, ledger {want:?}"
            ));
        }
    }
    if whole {
        let totals = usage::report(store, days, GroupBy::Day, Order::Key, None, 1, None)
            .map_err(|e| e.to_string())?
            .totals;
        let done: Vec<_> = store
            .sessions
            .values()
            .filter(|s| s.status == SessionStatus::Completed)
            .collect();
        let minutes: i64 = done.iter().map(|s| s.duration_minutes.unwrap_or(0)).sum();
        let charged: i64 = done.iter().map(|s| s.cost).sum();
        let want = (charged, minutes, done.len() as i64);
        if (totals.credits, totals.minutes, totals.sessions) != want {
            return Err(format!(
                "usage totals {totals:?}, completed sessions (credits, minutes, sessions) {want:?}"
            ));
        }
    }
    Ok(())
}

/// Every change that should make an event made exactly one: one `session.ended` per ended session
/// (none for a running one), one `start.refused` per refused start, and one `balance.low` per
/// ledger change of a limited user that crossed a `notifyBelow` mark downward, naming the lowest
/// mark crossed.
pub fn check_events(store: &MemStore, cfg: &quota_core::Config, m: &Model) -> Result<(), String> {
    use quota_core::store::EventKind;
    let data = |e: &quota_core::store::StoredEvent| -> serde_json::Value {
        serde_json::from_str(&e.event.data).unwrap_or_default()
    };
    let mut ended: BTreeMap<i64, u32> = BTreeMap::new();
    let mut refused = 0;
    let mut lows = Vec::new();
    for e in &store.events {
        match e.event.kind {
            EventKind::SessionEnded => {
                *ended
                    .entry(data(e)["session_id"].as_i64().unwrap_or(-1))
                    .or_default() += 1
            }
            EventKind::StartRefused => refused += 1,
            EventKind::BalanceLow => {
                let d = data(e);
                lows.push((
                    e.event.username.clone().unwrap_or_default(),
                    d["balance"].as_i64().unwrap_or(0),
                    d["threshold"].as_i64().unwrap_or(0),
                ));
            }
            other => {
                return Err(format!(
                    "an event the model makes no room for: {}",
                    other.as_str()
                ))
            }
        }
    }
    for (id, s) in &store.sessions {
        let n = ended.remove(id).unwrap_or(0);
        let want = u32::from(s.status != SessionStatus::Active);
        if n != want {
            return Err(format!(
                "session {id} ({:?}) has {n} session.ended events, not {want}",
                s.status
            ));
        }
    }
    if let Some((id, _)) = ended.iter().next() {
        return Err(format!("session.ended for session {id}, which does not exist"));
    }
    if refused != m.refused_starts {
        return Err(format!(
            "{refused} start.refused events for {} refused starts",
            m.refused_starts
        ));
    }
    // The ledger in order, each user's unlimited flag as it was at each change.
    let marks = &cfg.notify.notify_below;
    let mut unlimited: std::collections::BTreeSet<&str> = Default::default();
    let mut want = Vec::new();
    for tx in &store.transactions {
        match tx.transaction_type {
            TransactionType::SetUnlimited => {
                unlimited.insert(&tx.username);
            }
            TransactionType::UnsetUnlimited => {
                unlimited.remove(tx.username.as_str());
            }
            _ => {}
        }
        if unlimited.contains(tx.username.as_str()) {
            continue;
        }
        if let Some(t) = marks
            .iter()
            .rev()
            .find(|t| tx.balance_before >= **t && tx.balance_after < **t)
        {
            want.push((tx.username.clone(), tx.balance_after, *t));
        }
    }
    if lows != want {
        return Err(format!(
            "balance.low events {lows:?}, the ledger's crossings {want:?}"
        ));
    }
    Ok(())
}
