//! Scheduled refresh rules: each enabled rule runs at its cron times (UTC) with
//! `run_id = <rule>@<scheduled minute>`, which the engine applies at most once, so several servers
//! on one database (or a restart within the minute) never apply a run twice. A run missed while no
//! server was up is not replayed; the server says so when it starts.

pub mod cronjobs;
pub mod deliveries;
pub mod replica;
pub mod upkeep;

use std::sync::Arc;
use std::time::Duration;

use quota_core::Timestamp;
use quota_host::{HostError, Worker};

use crate::app::App;
use crate::engine::pool::Kind;
use crate::log::info;
use crate::metrics::RuleStatus;

/// How far back a server looks for a run it missed.
const MISSED_LOOKBACK_SECONDS: i64 = 7 * 24 * 60 * 60;

/// `rule@2026-11-22T10:00:00Z`.
pub fn run_id(rule: &str, at: Timestamp) -> String {
    format!("{rule}@{at}Z")
}

/// The last fire time of `rule` at or before `now`, within the lookback (the engine's cron).
pub fn previous_fire(w: &mut Worker, rule: &str, now: Timestamp) -> Result<Option<Timestamp>, HostError> {
    let mut t = now.plus_seconds(-MISSED_LOOKBACK_SECONDS);
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
const METRICS_FIRES_CHECKED: usize = 32;

/// The fire times of `rule` at or before `now`, oldest first: the window widens from an hour until
/// it holds [`metrics_fires_checked`] of them or reaches the lookback, so a rule that fires every
/// minute is not scanned over a week.
fn recent_fires(w: &mut Worker, rule: &str, now: Timestamp) -> Result<Vec<Timestamp>, HostError> {
    let mut window = 3600;
    loop {
        let window_s = window.min(MISSED_LOOKBACK_SECONDS);
        let mut t = now.plus_seconds(-window_s);
        let mut fires = Vec::new();
        while let Some(next) = w.next_fire(rule, t)? {
            if next > now {
                break;
            }
            fires.push(next);
            t = next;
        }
        if fires.len() >= METRICS_FIRES_CHECKED || window_s == MISSED_LOOKBACK_SECONDS {
            let keep = fires.len().saturating_sub(METRICS_FIRES_CHECKED);
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
