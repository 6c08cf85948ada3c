//! Course staff's changes in the model test (issue 58): `dave` manages group `g1`, whose
//! `staffAllowance` is 50 credits a change and 150 a calendar month (UTC), and changes a random
//! user's credit through the REST front door. The model's rules, in the front door's order: never
//! his own credit (403), only `g1`'s members now (403), the amount's range (400), then the
//! allowance: what the change adds (an `add`, a `set` above the balance) within the change's bound
//! and what is left of his month, counted over `g1`'s members as they are now (403). A refusal
//! writes nothing (`invariants::after_step`).

use quota_core::api::{handle_request_step, Caller, Request};
use quota_core::engine_call::EngineCall;
use quota_core::staff_allowance::month_of;
use quota_core::QuotaError;

use crate::{Done, Step, USERS};

pub const STAFF: &str = "dave";
pub const GROUP: &str = "g1";
pub const PER_CHANGE: i64 = 50;
pub const PER_MONTH: i64 = 150;

/// One change by course staff.
pub fn staff_action(s: Step<'_, '_>) -> Result<Done, String> {
    let Step {
        rng,
        cfg,
        tx,
        m,
        t,
        step,
        ..
    } = s;
    let user = rng.pick(&USERS).to_string();
    let amount = *rng.pick(&[-5i64, 0, 1, 20, 49, 50, 51, 120, 10_000_001]);
    let set = rng.chance(40);
    let action = if set { "set" } else { "add" };
    let what = format!("staff {STAFF} {action} {amount} to {user}");
    let caller = Caller {
        name: STAFF.into(),
        admin: false,
        scopes: vec![format!("quota:manage!group={GROUP}")],
    };
    let body = serde_json::json!({"action": action, "amount": amount}).to_string();
    let path = format!("/admin/api/quota/users/{user}");
    let req = Request {
        method: "POST",
        path: &path,
        query: "",
        body: &body,
        caller: Some(&caller),
    };
    let r = handle_request_step(cfg, EngineCall::new(tx.store()), &req, t, 0)
        .map_err(|e| format!("step {step} {what}: {e}"))?;
    let status = match r.answer {
        quota_core::refresh::Step::Done(ref resp) => resp.status,
        quota_core::refresh::Step::More => return Err(format!("step {step} {what}: not done")),
    };

    let cur = m.balance.get(&user).copied().unwrap_or(0);
    let member = m.groups.get(&user).is_some_and(|g| g.contains(GROUP));
    let in_range = if set {
        (0..=10_000_000).contains(&amount)
    } else {
        (-10_000_000..=10_000_000).contains(&amount)
    };
    let added = if set { (amount - cur).max(0) } else { amount.max(0) };
    let month = month_of(t).0.seconds();
    let used: i64 = m
        .staff_added
        .iter()
        .filter(|((mo, u), _)| *mo == month && m.groups.get(u).is_some_and(|g| g.contains(GROUP)))
        .map(|(_, a)| a)
        .sum();
    let expect = if user == STAFF || !member {
        403
    } else if !in_range {
        400
    } else if added > 0 && (added > PER_CHANGE || used + added > PER_MONTH) {
        403
    } else {
        200
    };
    if status != expect {
        return Err(format!(
            "step {step} {what}: status {status}, model {expect} (used {used}, adds {added})"
        ));
    }
    if status != 200 {
        let refused = if status == 400 {
            QuotaError::invalid("amount", "out of range")
        } else {
            QuotaError::Forbidden(what.clone())
        };
        return Ok((what, Some(refused)));
    }
    m.balance
        .insert(user.clone(), if set { amount } else { cur + amount });
    if added > 0 {
        *m.staff_added.entry((month, user)).or_default() += added;
    }
    Ok((what, None))
}
