//! The balance operations of the model test: one admin action, a batch, a refresh.

use std::collections::BTreeSet;

use quota_core::admin::{self, AdminAction, AdminRequest, BatchEntry};
use quota_core::refresh::{refresh, RefreshAction, RefreshParams, RefreshRequest};
use quota_core::targets::Targets;
use quota_core::QuotaError;

use crate::reference::*;
use crate::{Done, Step, USERS};

/// One admin action on one user, amounts partly out of range.
pub fn admin_action(s: Step<'_, '_>) -> Result<Done, String> {
    let Step {
        rng,
        tx,
        m,
        t,
        user,
        step,
        ..
    } = s;
    let user = user.to_string();

    let refused: Option<QuotaError>;
    // admin operations, amounts partly out of range
    let amount = *rng.pick(&[-10_000_001i64, -500, -5, 0, 1, 7, 100, 10_000_000, 10_000_001]);
    let action = match rng.below(4) {
        0 => AdminAction::Set(amount),
        1 => AdminAction::Add(amount),
        2 => AdminAction::Deduct(amount),
        _ => AdminAction::SetUnlimited(rng.chance(50)),
    };
    let what: String = format!("admin({user}, {action:?})");
    let got = admin::admin_update(
        &mut *tx,
        &AdminRequest {
            username: user.clone(),
            action,
            description: None,
            expires_at: None,
        },
        "root",
        t,
    );
    let cur = m.balance.get(&user).copied().unwrap_or(0);
    let expect: Result<i64, ()> = match action {
        AdminAction::Set(a) if (0..=10_000_000).contains(&a) => Ok(a),
        AdminAction::Add(a) if (-10_000_000..=10_000_000).contains(&a) => Ok(cur + a),
        AdminAction::Deduct(a) if (1..=10_000_000).contains(&a) && cur >= a => Ok(cur - a),
        AdminAction::SetUnlimited(_) => Ok(cur),
        _ => Err(()),
    };
    match (expect, got) {
        (Ok(b), Ok(r)) if r.balance == b => {
            refused = None;
            m.balance.insert(user.clone(), b);
            if let AdminAction::SetUnlimited(f) = action {
                if f {
                    m.unlimited.insert(user.clone());
                } else {
                    m.unlimited.remove(&user);
                }
            }
        }
        (Err(()), Err(e)) if is_input_refusal(&e) => refused = Some(e),
        (e, g) => return Err(format!("step {step} {what}: got {g:?}, model {e:?}")),
    }
    Ok((what, refused))
}

/// An admin batch over a few users.
pub fn admin_batch(s: Step<'_, '_>) -> Result<Done, String> {
    let Step {
        rng, tx, m, t, step, ..
    } = s;

    let entries: Vec<BatchEntry> = (0..rng.below(4))
        .map(|_| BatchEntry {
            username: rng.pick(&USERS).to_string(),
            amount: rng.chance(70).then(|| *rng.pick(&[-1i64, 0, 3, 50])),
            unlimited: rng.chance(30).then(|| rng.chance(50)),
            expires_at: None,
        })
        .collect();
    let what: String = format!("batch({entries:?})");
    let items: Vec<_> = entries.iter().cloned().map(Ok).collect();
    let r = admin::batch(&mut *tx, &items, "root", t).map_err(|e| format!("step {step} {what}: {e}"))?;
    let refused: Option<QuotaError> = None;
    let mut ok = 0;
    for e in &entries {
        let valid = e.amount.is_some_and(|a| a >= 0) || (e.amount.is_none() && e.unlimited.is_some());
        if valid {
            ok += 1;
            let cur = m.balance.get(&e.username).copied().unwrap_or(0);
            m.balance.insert(e.username.clone(), e.amount.unwrap_or(cur));
            match e.unlimited {
                Some(true) => {
                    m.unlimited.insert(e.username.clone());
                }
                Some(false) => {
                    m.unlimited.remove(&e.username);
                }
                None => {}
            }
        }
    }
    if r.success != ok || r.failed != entries.len() - ok {
        return Err(format!("step {step} {what}: got {r:?}, model {ok} ok"));
    }
    Ok((what, refused))
}

/// A refresh (add or set) over random targets, with or without a run id.
pub fn refresh_run(s: Step<'_, '_>) -> Result<Done, String> {
    let Step {
        rng,
        tx,
        m,
        t,
        user,
        step,
        ..
    } = s;
    let user = user.to_string();

    let refused: Option<QuotaError>;
    let action = if rng.chance(30) {
        RefreshAction::Set
    } else {
        RefreshAction::Add
    };
    let amount = *rng.pick(&[-60i64, -5, 0, 5, 40, 200]);
    let max_balance = rng.chance(40).then(|| *rng.pick(&[0i64, 30, 100]));
    let min_balance = rng.chance(40).then(|| *rng.pick(&[0i64, 5, 25]));
    let mut targets = Targets {
        include_unlimited: rng.chance(30),
        balance_below: rng.chance(30).then(|| *rng.pick(&[0i64, 20, 50])),
        ..Targets::default()
    };
    if rng.chance(30) {
        targets.include_users = Some([user.clone()].into_iter().collect());
    }
    if rng.chance(20) {
        targets.exclude_users = [rng.pick(&USERS).to_string()].into_iter().collect();
    }
    if rng.chance(35) {
        let g = some_groups(&mut *rng);
        targets.include_groups = (!g.is_empty()).then_some(g);
    }
    if rng.chance(20) {
        targets.exclude_groups = some_groups(&mut *rng);
    }
    let run_id = rng.chance(40).then(|| format!("run{}", rng.below(3)));
    let dry_run = rng.chance(15);
    let params = RefreshParams {
        rule_name: "r".into(),
        action,
        amount,
        max_balance,
        min_balance,
        targets: targets.clone(),
        expires_after: None,
    };
    let what: String = format!("refresh({params:?}, {run_id:?}, dry={dry_run})");
    let got = refresh(
        &quota_core::Config::default(),
        &mut *tx,
        &RefreshRequest {
            params: params.clone(),
            run_id: run_id.clone(),
            dry_run,
        },
        t,
    );
    let fp = params.fingerprint();
    let replay = run_id
        .as_ref()
        .filter(|_| !dry_run)
        .and_then(|r| m.runs.get(r).cloned());
    if action == RefreshAction::Set && amount < 0 {
        match got {
            Err(e @ QuotaError::Invalid { .. }) => refused = Some(e),
            g => return Err(format!("step {step} {what}: expected 400, got {g:?}")),
        }
    } else if let Some((old_fp, counts)) = replay {
        match got {
            Ok(r) if old_fp == fp && (r.users_updated, r.total_change, r.skipped) == counts => refused = None,
            Err(e @ QuotaError::Conflict(_)) if old_fp != fp => refused = Some(e),
            g => return Err(format!("step {step} {what}: replay expected, got {g:?}")),
        }
    } else {
        refused = None;
        let (mut updated, mut total, mut skipped) = (0u64, 0i64, 0u64);
        let mut next = m.balance.clone();
        for (name, &cur) in &m.balance {
            let unl = m.unlimited.contains(name);
            let matched = (targets.include_unlimited || !unl)
                && targets.balance_below.is_none_or(|b| cur < b)
                && targets.include_users.as_ref().is_none_or(|s| s.contains(name))
                && !targets.exclude_users.contains(name)
                && {
                    let none = BTreeSet::new();
                    let of = m.groups.get(name).unwrap_or(&none);
                    targets
                        .include_groups
                        .as_ref()
                        .is_none_or(|g| g.iter().any(|x| of.contains(x)))
                        && !targets.exclude_groups.iter().any(|x| of.contains(x))
                };
            let new = if !matched {
                cur
            } else if action == RefreshAction::Set {
                amount
            } else if amount > 0 {
                max_balance
                    .map_or(cur + amount, |c| (cur + amount).min(c))
                    .max(cur)
            } else if amount < 0 {
                (cur + amount).max(min_balance.unwrap_or(0)).min(cur)
            } else {
                cur
            };
            if new == cur {
                skipped += 1;
            } else {
                updated += 1;
                total += new - cur;
                next.insert(name.clone(), new);
            }
        }
        match got {
            Ok(r) if (r.users_updated, r.total_change, r.skipped) == (updated, total, skipped) => {
                if !dry_run {
                    m.balance = next;
                    if let Some(id) = run_id {
                        m.runs.insert(id, (fp, (updated, total, skipped)));
                    }
                }
            }
            g => {
                return Err(format!(
                    "step {step} {what}: got {g:?}, model ({updated}, {total}, {skipped})"
                ))
            }
        }
    }
    Ok((what, refused))
}
