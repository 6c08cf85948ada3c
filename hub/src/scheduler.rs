//! Scheduled refresh rules: each enabled rule runs at its cron times (UTC) with
//! `run_id = <rule>@<scheduled minute>`, which the engine applies at most once, so several servers
//! on one database (or a restart within the minute) never apply a run twice. A run missed while no
//! server was up is not replayed; the server says so when it starts.

use std::sync::Arc;
use std::time::Duration;

use quota_core::Timestamp;
use quota_host::{HostError, Worker};

use crate::log::info;
use crate::pool::Kind;
use crate::server::App;
use crate::{host_tables, token_import, token_rows};

/// How far back a server looks for a run it missed.
const missed_lookback_seconds: i64 = 7 * 24 * 60 * 60;
/// Idempotency-Key replays are kept at least 24 hours; older ones are purged hourly.
const replay_keep_seconds: i64 = 48 * 60 * 60;
const purge_interval_seconds: u64 = 60 * 60;

/// `rule@2026-11-22T10:00:00Z`.
pub fn run_id(rule: &str, at: Timestamp) -> String {
    format!("{rule}@{at}Z")
}

/// The last fire time of `rule` at or before `now`, within the lookback (the engine's cron).
pub fn previous_fire(w: &mut Worker, rule: &str, now: Timestamp) -> Result<Option<Timestamp>, HostError> {
    let mut t = now.plus_seconds(-missed_lookback_seconds);
    let mut last = None;
    while let Some(next) = w.next_fire(rule, t)? {
        if next > now {
            break;
        }
        last = Some(next);
        t = next;
    }
    Ok(last)
}

/// How many of a rule's latest fire times the metrics look through for the last applied run.
const metrics_fires_checked: usize = 32;

/// One enabled rule as the metrics show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleStatus {
    pub rule: String,
    /// Its newest fire time at or before now (within the lookback).
    pub last_scheduled: Timestamp,
    /// Whether that run was applied (by any server, hub or CronJob: the database says).
    pub last_applied: bool,
    /// The newest of its latest fire times whose run was applied, if any.
    pub last_success: Option<Timestamp>,
}

/// The fire times of `rule` at or before `now`, oldest first: the window widens from an hour until
/// it holds [`metrics_fires_checked`] of them or reaches the lookback, so a rule that fires every
/// minute is not scanned over a week.
fn recent_fires(w: &mut Worker, rule: &str, now: Timestamp) -> Result<Vec<Timestamp>, HostError> {
    let mut window = 3600;
    loop {
        let window_s = window.min(missed_lookback_seconds);
        let mut t = now.plus_seconds(-window_s);
        let mut fires = Vec::new();
        while let Some(next) = w.next_fire(rule, t)? {
            if next > now {
                break;
            }
            fires.push(next);
            t = next;
        }
        if fires.len() >= metrics_fires_checked || window_s == missed_lookback_seconds {
            let keep = fires.len().saturating_sub(metrics_fires_checked);
            return Ok(fires.split_off(keep));
        }
        window *= 4;
    }
}

/// Each enabled rule's last scheduled run and last applied run, read from the database (so it is
/// right after a restart and whichever server or CronJob ran it).
pub fn rule_statuses(w: &mut Worker, rules: &[String], now: Timestamp) -> Result<Vec<RuleStatus>, HostError> {
    let mut out = Vec::new();
    for rule in rules {
        let fires = recent_fires(w, rule, now)?;
        let Some(&last) = fires.last() else { continue };
        let mut success = None;
        for &at in fires.iter().rev() {
            if w.run_applied(&run_id(rule, at))? {
                success = Some(at);
                break;
            }
        }
        out.push(RuleStatus {
            rule: rule.clone(),
            last_scheduled: last,
            last_applied: success == Some(last),
            last_success: success,
        });
    }
    Ok(out)
}

/// Logs, for each enabled rule, the last scheduled run at or before `now` if nobody applied it.
pub async fn report_missed(app: &Arc<App>, now: Timestamp) {
    for rule in app.pool.summary.rules.iter().filter(|r| r.enabled) {
        let name = rule.name.clone();
        let missed = app
            .pool
            .run(Kind::Read, move |w| {
                let Some(at) = previous_fire(w, &name, now)? else {
                    return Ok(None);
                };
                let id = run_id(&name, at);
                Ok::<_, HostError>((!w.run_applied(&id)?).then_some(id))
            })
            .await;
        if let Ok(Ok(Some(id))) = missed {
            info!(
                "refresh rule {}: the last scheduled run {id} was not applied (no server was up then); missed runs are not replayed",
                rule.name
            );
        }
    }
}

/// Runs `rule` at each of its fire times after `since`, forever. A fire time the server was up for
/// is run even if the server reaches it late (a slow start, a busy machine); only runs at or before
/// `since` belong to [`report_missed`].
pub async fn run_rule_forever(app: Arc<App>, rule: String, since: Timestamp) {
    let mut since = since;
    loop {
        let name = rule.clone();
        let at = match app.pool.run(Kind::Read, move |w| w.next_fire(&name, since)).await {
            Ok(Ok(Some(at))) => at,
            Ok(Ok(None)) => {
                info!("refresh rule {rule}: never fires again");
                return;
            }
            Ok(Err(e)) => {
                info!("refresh rule {rule}: no next fire time ({e}); the rule stops");
                return;
            }
            Err(e) => {
                info!("refresh rule {rule}: stopped ({e})");
                return;
            }
        };
        loop {
            let wait_ms = at.seconds() * 1000 - app.clock.now_ms();
            if wait_ms <= 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(wait_ms as u64)).await;
        }
        // The next run is the first after this one, or after now if this one ran very late (a
        // machine that slept through several runs applies one of them late, not every one).
        since = at.max(app.clock.now());
        let id = run_id(&rule, at);
        let now = app.clock.now();
        let (name, rid) = (rule.clone(), id.clone());
        let answer = app
            .pool
            .run_in_tx_steps(Kind::Write, move |tx| {
                let chunk = tx.refresh_chunk_users();
                tx.run_rule_step(&name, &rid, now, chunk)
            })
            .await;
        // The engine applies a run id at most once, deciding inside the call's transaction, so of
        // several servers racing for one run exactly one sees `replayed: false`.
        match answer {
            Ok(Ok(r)) if r.replayed => {
                info!("refresh rule {rule}: run {id} was already applied (by another server)")
            }
            Ok(Ok(r)) => info!(
                "refresh rule {rule}: run {id} applied: {} users updated, total change {}, {} skipped",
                r.users_updated, r.total_change, r.skipped
            ),
            Ok(Err(HostError::Quota(e))) => info!("refresh rule {rule}: run {id} refused: {e}"),
            Ok(Err(e)) => info!("refresh rule {rule}: run {id} failed and was rolled back: {e}"),
            Err(e) => info!("refresh rule {rule}: run {id} not run: {e}"),
        }
    }
}

/// Forgets old Idempotency-Key replays, hourly.
pub async fn purge_replays_forever(app: Arc<App>) {
    let mut tick = tokio::time::interval(Duration::from_secs(purge_interval_seconds));
    loop {
        tick.tick().await;
        let before = app.clock.now().plus_seconds(-replay_keep_seconds);
        match app
            .pool
            .run(Kind::Write, move |w| {
                w.transaction(false, |tx| host_tables::purge_idempotent(tx, before))
            })
            .await
        {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => info!("forgot {n} Idempotency-Key replays older than {before}"),
            Ok(Err(e)) => info!("purging Idempotency-Key replays failed: {e}"),
            Err(e) => info!("purging Idempotency-Key replays not run: {e}"),
        }
    }
}

/// How often the tokens' `last_used` is written (the "at most once a minute").
const token_use_interval_seconds: u64 = 60;

/// How often `serve --tokens FILE` reads FILE and the secrets it names again (a Kubernetes Secret
/// mounted as files changes in place, within about a minute of its update).
const tokens_poll_interval_seconds: u64 = 5;

/// Re-imports `--tokens FILE` whenever it or a secret it names says something else than what was
/// imported last (`imported`, as read at start): a rotated Secret takes effect without a restart.
/// A file that no longer reads cleanly is reported once per distinct problem and changes nothing.
pub async fn follow_tokens_forever(
    app: Arc<App>,
    path: std::path::PathBuf,
    mut imported: Vec<token_import::Imported>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(tokens_poll_interval_seconds));
    let mut last_problem = String::new();
    sort(&mut imported);
    loop {
        tick.tick().await;
        let mut now_read = match token_import::read(&path, &|k| std::env::var(k).ok()) {
            Ok(t) => t,
            Err(problems) => {
                let p = problems.join("; ");
                if p != last_problem {
                    info!(
                        "--tokens: {} changed and is refused, the imported tokens stay as they were: {p}",
                        path.display()
                    );
                    last_problem = p;
                }
                continue;
            }
        };
        last_problem.clear();
        sort(&mut now_read);
        if now_read == imported {
            continue;
        }
        let (tokens, now) = (now_read.clone(), app.clock.now());
        match app
            .pool
            .run_in_tx(Kind::Write, move |tx| token_import::apply(tx, &tokens, now))
            .await
        {
            Ok(Ok(s)) => {
                info!(
                    "--tokens: {} changed: {} token(s) imported, {} kept, {} removed",
                    path.display(),
                    s.added,
                    s.kept,
                    s.removed
                );
                imported = now_read;
            }
            // Tried again at the next tick.
            Ok(Err(e)) => info!("--tokens: {} changed; importing failed: {e}", path.display()),
            Err(e) => info!("--tokens: {} changed; importing failed: {e}", path.display()),
        }
    }

    fn sort(t: &mut [token_import::Imported]) {
        t.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// Writes the tokens' `last_used` once a minute.
pub async fn record_token_use_forever(app: Arc<App>) {
    let mut tick = tokio::time::interval(Duration::from_secs(token_use_interval_seconds));
    loop {
        tick.tick().await;
        record_token_use(&app).await;
    }
}

/// Writes `last_used` of the tokens used since the last write (at shutdown too). A failure is
/// logged and the uses kept for the next try.
pub async fn record_token_use(app: &App) {
    let used = app.token_use.take();
    if used.is_empty() {
        return;
    }
    let (again, usage) = (used.clone(), app.token_use.clone());
    let written = app
        .pool
        .run(Kind::Write, move |w| {
            w.transaction(false, |tx| token_rows::touch_tokens(tx, &used))
        })
        .await;
    if let Err(e) = written
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()))
    {
        info!("recording when tokens were last used failed (kept for the next try): {e}");
        for (hash, when) in again {
            usage.note(&hash, when);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(schedule: &str) -> Worker {
        let v = serde_json::json!({"custom": {"authMode": "github", "quota": {"refreshRules": {
            "daily": {"enabled": true, "schedule": schedule, "action": "add", "amount": 5}
        }}}});
        Worker::without_storage(crate::engine::runtime().unwrap(), &v.to_string()).unwrap()
    }

    #[test]
    fn previous_fire_is_the_last_at_or_before_now() {
        let mut w = worker("0 3 * * *");
        let now = Timestamp::parse("2026-11-22T10:30:00Z").unwrap();
        assert_eq!(
            previous_fire(&mut w, "daily", now).unwrap(),
            Some(Timestamp::parse("2026-11-22T03:00:00Z").unwrap())
        );
        let at = Timestamp::parse("2026-11-22T03:00:00Z").unwrap();
        assert_eq!(previous_fire(&mut w, "daily", at).unwrap(), Some(at));
        assert_eq!(previous_fire(&mut w, "nope", at).unwrap(), None);
    }

    #[test]
    fn run_ids_name_the_rule_and_minute() {
        let at = Timestamp::parse("2026-11-22T03:00:00Z").unwrap();
        assert_eq!(run_id("daily", at), "daily@2026-11-22T03:00:00Z");
    }
}
