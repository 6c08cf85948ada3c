//! Refresh: one add-or-set over every user the targets pick (or the budgets they name), at most
//! once per `run_id`; with `expires_after`, the credit given is a dated grant.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Config;
use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::grants;
use crate::ledger::{self, Account, Entry};
use crate::limits;
use crate::observations::Observation;
use crate::store::{Grant, NewGrant, RefreshRun, Store, TransactionType};
use crate::time::Timestamp;

mod decide;
pub mod params;
pub use params::{params_from_body, RefreshAction, RefreshParams, RefreshRequest};

use decide::{budget_accounts, decide, run_time, Decision, Holder, Progress};

/// One user's change, reported by a dry run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserChange {
    pub username: String,
    pub balance_before: i64,
    pub balance_after: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshResult {
    pub users_updated: u64,
    pub total_change: i64,
    pub skipped: u64,
    pub action: RefreshAction,
    pub rule_name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dry_run: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub changes: Option<Vec<UserChange>>,
    /// The run id had been applied before: this is that run's result, replayed; nothing changed.
    /// Not part of the JSON (a replay answers byte for byte as the first run did).
    #[serde(skip)]
    pub replayed: bool,
}

/// One call of a refresh that may be committed in chunks: `More` asks the host to commit and call
/// again with the same request.
#[derive(Clone, Debug, PartialEq)]
pub enum Step<T> {
    Done(T),
    More,
}

/// A stored run: completed, or stopped between chunks.
enum RunState {
    Completed(RefreshResult),
    Partial(Progress),
}

fn run_state(run: &RefreshRun) -> Result<RunState, QuotaError> {
    let bad = |e: serde_json::Error| QuotaError::Store(crate::StoreError(format!("stored refresh run: {e}")));
    let v: Value = serde_json::from_str(&run.result).map_err(bad)?;
    if v.get("resume_after").is_some() {
        Ok(RunState::Partial(serde_json::from_value(v).map_err(bad)?))
    } else {
        Ok(RunState::Completed(serde_json::from_value(v).map_err(bad)?))
    }
}

/// Whether a stored run has been applied to every user (a run stopped between chunks has not).
pub fn run_completed(run: &RefreshRun) -> bool {
    matches!(run_state(run), Ok(RunState::Completed(_)))
}

/// The whole refresh in one call (one transaction); a run left between chunks by
/// [`refresh_step`] is completed from where it stopped.
pub fn refresh(
    config: &Config,
    tx: &mut EngineCall<'_>,
    req: &RefreshRequest,
    now: Timestamp,
) -> Result<RefreshResult, QuotaError> {
    match refresh_step(config, tx, req, now, 0)? {
        Step::Done(r) => Ok(r),
        Step::More => Err(QuotaError::Store(crate::StoreError(
            "an unlimited refresh call stopped early".into(),
        ))),
    }
}

/// A refresh that deals with at most `chunk_users` users per call (0: all) when it has a `run_id`
/// and is not a dry run: each call applies the next users by name and records where it stopped
/// under the run id, so the host commits each chunk on its own (locks held briefly) and a run cut
/// off between chunks is resumed, each user once, by sending its run id again. Without a run id
/// there is nothing to resume from, so the refresh is one call whatever `chunk_users` says.
///
/// Every change of a chunk is decided before any is written, so an out-of-range balance changes
/// nothing in that chunk (the chunks before it stay applied, and the run stays resumable).
pub fn refresh_step(
    config: &Config,
    tx: &mut EngineCall<'_>,
    req: &RefreshRequest,
    now: Timestamp,
    chunk_users: u32,
) -> Result<Step<RefreshResult>, QuotaError> {
    let p = &req.params;
    p.validate()?;
    let fingerprint = p.fingerprint();
    let (progress, created_at) = match resume(tx.store(), req, &fingerprint, now)? {
        Resume::Replay(first) => return Ok(Step::Done(first)),
        Resume::From(progress, created_at) => (progress, created_at),
    };
    // A run's dated credit expires a while after the run's time: the scheduled minute of a
    // scheduled run (its run id says it), else when the run first ran, so a retried run id makes
    // the same grant.
    let expires_at = p
        .expires_after
        .map(|d| run_time(req.run_id.as_deref(), created_at).plus_seconds(d));
    let limit = match (chunk_users, &req.run_id, req.dry_run) {
        (n, Some(_), false) if n > 0 => n as usize,
        _ => usize::MAX,
    };
    let d = match &p.targets.budgets {
        Some(names) => budget_accounts(config, tx.store(), p, names, now)?,
        None => decide(tx, p, progress.as_ref(), limit, now)?,
    };
    let total_change = ledger::checked_balance(d.total, "The refresh's total change")?;
    let users_updated = progress.as_ref().map_or(0, |at| at.users_updated) + d.changes.len() as u64;
    crate::invariants::refresh(
        users_updated - progress.as_ref().map_or(0, |at| at.users_updated),
        d.changes.len(),
        d.total - progress.as_ref().map_or(0, |at| i128::from(at.total_change)),
        d.changes
            .iter()
            .map(|c| i128::from(c.new) - i128::from(c.before))
            .sum(),
    );
    let mut result = RefreshResult {
        users_updated,
        total_change,
        skipped: d.skipped,
        action: p.action,
        rule_name: p.rule_name.clone(),
        dry_run: None,
        changes: None,
        replayed: false,
    };
    if req.dry_run {
        result.dry_run = Some(true);
        result.changes = Some(
            d.changes
                .into_iter()
                .map(|c| UserChange {
                    username: c.name().to_string(),
                    balance_before: c.before(),
                    balance_after: c.new,
                })
                .collect(),
        );
        return Ok(Step::Done(result));
    }
    apply(tx, p, d.changes, expires_at, now)?;
    if let Some(run_id) = &req.run_id {
        let stored = if d.finished {
            to_json(&result)?
        } else {
            to_json(&Progress {
                resume_after: d.after.unwrap_or_default(),
                users_updated,
                total_change,
                skipped: d.skipped,
            })?
        };
        tx.put_refresh_run(&RefreshRun {
            run_id: run_id.clone(),
            params: fingerprint,
            result: stored,
            created_at,
        })?;
    }
    if d.finished {
        tx.observe(Observation::Refreshed {
            rule_name: result.rule_name.clone(),
            users_updated: result.users_updated,
        });
        Ok(Step::Done(result))
    } else {
        Ok(Step::More)
    }
}

/// Where a refresh starts: a run id already completed replays its result; one stopped between
/// chunks continues from its progress (and keeps its first time); anything else starts afresh.
enum Resume {
    Replay(RefreshResult),
    From(Option<Progress>, Timestamp),
}

fn resume(
    store: &mut dyn Store,
    req: &RefreshRequest,
    fingerprint: &str,
    now: Timestamp,
) -> Result<Resume, QuotaError> {
    let Some(run_id) = &req.run_id else {
        return Ok(Resume::From(None, now));
    };
    if run_id.is_empty() || run_id.chars().count() > limits::RULE_NAME_CHARS_MAX {
        return Err(QuotaError::invalid(
            "run_id",
            format!("must be 1 to {} characters", limits::RULE_NAME_CHARS_MAX),
        ));
    }
    if req.dry_run {
        return Ok(Resume::From(None, now));
    }
    let Some(run) = store.get_refresh_run(run_id)? else {
        return Ok(Resume::From(None, now));
    };
    if run.params != fingerprint {
        return Err(QuotaError::Conflict(format!(
            "run_id `{run_id}` was already used with other parameters"
        )));
    }
    Ok(match run_state(&run)? {
        RunState::Completed(mut first) => {
            first.replayed = true;
            Resume::Replay(first)
        }
        RunState::Partial(at) => Resume::From(Some(at), run.created_at),
    })
}

/// The changes of one call, decided before any is written (so an out-of-range result changes
/// nothing), and where the scan stopped. Writes the decided changes: accounts without grants and
/// without a dated credit a page per storage call (the bulk path), the others one at a time
/// through their grants (due expiries first, a `set` dropping them, a deduction drawing from them,
/// a dated credit as a grant).
fn apply(
    tx: &mut EngineCall<'_>,
    p: &RefreshParams,
    changes: Vec<Decision>,
    expires_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<(), QuotaError> {
    let description = format!("Auto {}: {}", p.action.as_str(), p.rule_name);
    let entry = || Entry::of(TransactionType::AutoRefresh, description.clone());
    let mut page = Vec::with_capacity(limits::SCAN_PAGE_USERS.min(changes.len()));
    for c in changes {
        match c.account {
            Holder::User(mut user) if c.grants.is_empty() && expires_at.is_none() => {
                page.push(ledger::change(tx, &mut user, c.new, entry(), now));
                if page.len() == limits::SCAN_PAGE_USERS {
                    tx.record_changes(&page)?;
                    page.clear();
                }
            }
            Holder::User(mut user) => one(tx, &mut user, p, c.grants, c.new, expires_at, entry(), now)?,
            Holder::Budget(mut b) => one(tx, &mut b, p, c.grants, c.new, expires_at, entry(), now)?,
        }
    }
    if !page.is_empty() {
        tx.record_changes(&page)?;
    }
    Ok(())
}

/// One account's change through its grants.
#[allow(clippy::too_many_arguments)]
fn one<A: Account + ?Sized>(
    tx: &mut EngineCall<'_>,
    account: &mut A,
    p: &RefreshParams,
    grants: Vec<Grant>,
    new: i64,
    expires_at: Option<Timestamp>,
    entry: Entry<'_>,
    now: Timestamp,
) -> Result<(), QuotaError> {
    let live = grants::settle_with(tx, account, grants, now)?;
    let cur = account.balance();
    match (p.action, expires_at) {
        (RefreshAction::Set, at) => {
            grants::drop_all(tx, &live)?;
            let dated = at.filter(|_| new > 0);
            ledger::apply(
                tx,
                account,
                new,
                Entry {
                    expires_at: dated,
                    ..entry
                },
                now,
            )?;
            if let Some(at) = dated {
                let g = NewGrant {
                    amount: new,
                    granted_at: now,
                    expires_at: at,
                };
                tx.insert_grant(&account.key(), &g)?;
            }
        }
        (RefreshAction::Add, Some(at)) if new > cur => {
            grants::grant(tx, account, new - cur, at, entry, now)?;
        }
        (RefreshAction::Add, _) if new < cur => {
            grants::draw(tx.store(), &live, cur - new, now)?;
            ledger::apply(tx, account, new, entry, now)?;
        }
        _ => ledger::apply(tx, account, new, entry, now)?,
    }
    Ok(())
}

fn to_json(v: &impl Serialize) -> Result<String, QuotaError> {
    serde_json::to_string(v).map_err(|e| QuotaError::Store(crate::StoreError(e.to_string())))
}
