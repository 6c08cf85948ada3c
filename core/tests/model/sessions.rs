//! The session operations of the model test: start, end, stale cleanup.

use quota_core::gate::{check_start, StartDecision, StartRequest};
use quota_core::sessions::{cleanup_stale, end_session, EndRequest, EndTarget, Outcome};
use quota_core::store::SessionStatus;
use quota_core::QuotaError;

use crate::reference::*;
use crate::{Done, Step, SERVERS};

/// Check_start: a user starts a server (inputs partly invalid, groups reported or stored).
pub fn start(s: Step<'_, '_>) -> Result<Done, String> {
    let Step {
        rng,
        cfg,
        tx,
        m,
        now,
        t,
        user,
        step,
    } = s;
    let user = user.to_string();

    let refused: Option<QuotaError>;
    // check_start
    let resource = *rng.pick(&[None, Some("cpu"), Some("phx"), Some("dgpu"), Some("tpu")]);
    let runtime = *rng.pick(&[-1i64, 0, 1, 5, 30, 120, 480, 481]);
    let server = rng.pick(&SERVERS).to_string();
    let reported = rng.chance(50).then(|| some_groups(&mut *rng));
    let what: String =
        format!("check_start({user}, {resource:?}, {runtime}, {server:?}, groups {reported:?})");
    let req = StartRequest {
        username: user.clone(),
        resource: resource.map(String::from),
        runtime_minutes: runtime,
        server_name: server.clone(),
        started_at: None,
        groups: reported
            .as_ref()
            .map(|g| quota_core::groups::GroupNames::from_set(g).into()),
        budget: None,
    };
    let effective = reported
        .clone()
        .unwrap_or_else(|| m.groups.get(&user).cloned().unwrap_or_default());
    let forbidden = resource == Some("dgpu") && !effective.contains("g1");
    let got = check_start(cfg, &mut *tx, &req, t);
    if matches!(got, Ok(StartDecision::Refused(_) | StartDecision::Forbidden(_))) {
        m.refused_starts += 1;
    }
    let rate = model_rate(resource);
    if rate.is_none() || !(1..=480).contains(&runtime) {
        match got {
            Err(QuotaError::Invalid { .. }) => refused = got.err(),
            other => {
                return Err(format!(
                    "step {step} {what}: expected a validation error, got {other:?}"
                ))
            }
        }
    } else if forbidden {
        match got {
            Ok(StartDecision::Forbidden(msg)) => {
                refused = Some(QuotaError::invalid("forbidden", msg));
            }
            other => return Err(format!("step {step} {what}: expected forbidden, got {other:?}")),
        }
    } else {
        refused = None;
        let rate = rate.unwrap_or_default();
        if let Some(g) = &reported {
            if !g.is_empty() || m.groups.contains_key(&user) {
                m.groups.insert(user.clone(), g.clone());
            }
        }
        // Orphan of the same server closes first.
        let orphan = m
            .active(&user)
            .find(|(_, s)| s.server == server)
            .map(|(id, s)| (*id, s.clone()));
        if let Some((id, s)) = orphan {
            let end = now.min(s.start + s.runtime * 60);
            m.charge(
                id,
                end,
                billed(end - s.start).min(s.runtime),
                SessionStatus::Completed,
            );
        }
        if !m.balance.contains_key(&user) {
            m.balance.insert(user.clone(), model_grant(&effective));
        }
        let est = rate * runtime;
        let unlimited = m.unlimited.contains(&user);
        let held: i64 = m
            .active(&user)
            .filter(|(_, s)| s.billable)
            .map(|(_, s)| s.est)
            .sum();
        let bal = m.balance[&user];
        let allowed = unlimited || bal * 1000 - held >= est.max(10_000);
        match (&got, allowed) {
            (Ok(StartDecision::Allowed(s)), true) => {
                m.next_id += 1;
                if s.session_id != m.next_id || s.balance != bal {
                    return Err(format!(
                        "step {step} {what}: got {s:?}, model id {} balance {bal}",
                        m.next_id
                    ));
                }
                m.sessions.insert(
                    m.next_id,
                    MSession {
                        user: user.clone(),
                        server,
                        rate,
                        est,
                        runtime,
                        start: now,
                        billable: !unlimited,
                        status: SessionStatus::Active,
                        minutes: 0,
                        cost: 0,
                    },
                );
            }
            (Ok(StartDecision::Refused(r)), false) => {
                if r.balance != bal {
                    return Err(format!(
                        "step {step} {what}: refusal balance {} model {bal}",
                        r.balance
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "step {step} {what}: got {got:?}, model allowed={allowed}"
                ))
            }
        }
    }
    Ok((what, refused))
}

/// End_session, by id (sometimes unknown) or by server.
pub fn end(s: Step<'_, '_>) -> Result<Done, String> {
    let Step {
        rng,
        tx,
        m,
        now,
        t,
        user,
        step,
        ..
    } = s;
    let user = user.to_string();

    let refused: Option<QuotaError>;
    // end_session, by id (sometimes unknown) or by server
    let by_server = rng.chance(30);
    let outcome = if rng.chance(10) {
        Outcome::Failed
    } else {
        Outcome::Completed
    };
    let target = if by_server {
        EndTarget::Server {
            username: user.clone(),
            server_name: rng.pick(&SERVERS).to_string(),
        }
    } else {
        EndTarget::Id(rng.below(m.next_id as u64 + 2) as i64)
    };
    let what: String = format!("end_session({target:?}, {outcome:?})");
    let got = end_session(
        &mut *tx,
        &EndRequest {
            target: target.clone(),
            ended_at: None,
            outcome,
        },
        t,
    );
    let id = match &target {
        EndTarget::Id(id) => m.sessions.contains_key(id).then_some(*id),
        EndTarget::Server {
            username,
            server_name,
        } => m
            .active(username)
            .find(|(_, s)| &s.server == server_name)
            .map(|(id, _)| *id),
    };
    match (id, got) {
        (None, Err(e @ QuotaError::NotFound(_))) => refused = Some(e),
        (Some(id), Ok(r)) => {
            refused = None;
            let s = m.sessions[&id].clone();
            if s.status == SessionStatus::Active {
                let status = if outcome == Outcome::Failed {
                    SessionStatus::Failed
                } else {
                    SessionStatus::Completed
                };
                m.charge(id, now, billed(now - s.start), status);
            }
            let s = &m.sessions[&id];
            if (r.status, r.cost, r.duration_minutes) != (s.status, s.cost, s.minutes) {
                return Err(format!("step {step} {what}: got {r:?}, model {s:?}"));
            }
        }
        (id, got) => return Err(format!("step {step} {what}: got {got:?}, model session {id:?}")),
    }
    Ok((what, refused))
}

/// Cleanup_stale: sessions past the stale limit end, never charged.
pub fn cleanup(s: Step<'_, '_>) -> Result<Done, String> {
    let Step {
        tx, m, now, t, step, ..
    } = s;

    let what: String = "cleanup_stale".into();
    let cleaned = cleanup_stale(&mut *tx, t).map_err(|e| format!("step {step} {what}: {e}"))?;
    let refused: Option<QuotaError> = None;
    let mut expect = Vec::new();
    for (id, s) in m.sessions.iter_mut() {
        if s.status == SessionStatus::Active && now - s.start > 8 * 3600 {
            s.status = SessionStatus::CleanedUp;
            s.minutes = (now - s.start).div_euclid(60);
            expect.push(*id);
        }
    }
    let got: Vec<i64> = cleaned.iter().map(|c| c.session_id).collect();
    if got != expect {
        return Err(format!("step {step} {what}: cleaned {got:?}, model {expect:?}"));
    }
    Ok((what, refused))
}
