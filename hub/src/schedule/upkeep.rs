//! The server's housekeeping on a timer, beside the refresh rules: old Idempotency-Key replays
//! forgotten, the tokens file followed (`serve --tokens`), the tokens' `last_used` written, due
//! grants written off and warnings written every 10 seconds.

use std::sync::Arc;
use std::time::Duration;

use crate::app::App;
use crate::engine::pool::Kind;
use crate::log::{info, warning};
use crate::storage::host_tables;
use crate::tokens::{import as token_import, rows as token_rows};

/// Idempotency-Key replays are kept at least 24 hours; older ones are purged hourly.
const REPLAY_KEEP_SECONDS: i64 = 48 * 60 * 60;
const PURGE_INTERVAL_SECONDS: u64 = 60 * 60;

/// Forgets old Idempotency-Key replays, hourly.
pub async fn purge_replays_forever(app: Arc<App>) {
    let mut tick = tokio::time::interval(Duration::from_secs(PURGE_INTERVAL_SECONDS));
    loop {
        tick.tick().await;
        let before = app.clock.now().plus_seconds(-REPLAY_KEEP_SECONDS);
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

/// How often the tokens' `last_used` is written (the issue's "at most once a minute").
const TOKEN_USE_INTERVAL_SECONDS: u64 = 60;

/// How often `serve --tokens FILE` reads FILE and the secrets it names again (a Kubernetes Secret
/// mounted as files changes in place, within about a minute of its update).
const TOKENS_POLL_INTERVAL_SECONDS: u64 = 5;

/// Re-imports `--tokens FILE` whenever it or a secret it names says something else than what was
/// imported last (`imported`, as read at start): a rotated Secret takes effect without a restart.
/// A file that no longer reads cleanly is reported once per distinct problem and changes nothing.
pub async fn follow_tokens_forever(
    app: Arc<App>,
    path: std::path::PathBuf,
    mut imported: Vec<token_import::Imported>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(TOKENS_POLL_INTERVAL_SECONDS));
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
    let mut tick = tokio::time::interval(Duration::from_secs(TOKEN_USE_INTERVAL_SECONDS));
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

/// The sweep's caller: a service with the refresh scope, as a CronJob calling the route would be.
fn sweeper() -> quota_core::Caller {
    quota_core::Caller {
        name: "quota-hub".into(),
        admin: false,
        scopes: vec![quota_core::api::SCOPE_REFRESH.to_string()],
    }
}

/// Writes every expiry due now (`POST .../admin/api/quota/expire` in chunks, each its own
/// transaction, so writers never wait long behind it), logging what it wrote off.
pub async fn sweep(app: &Arc<App>) -> Result<(), String> {
    let now = app.clock.now();
    let (mut grants, mut credits) = (0u64, 0i64);
    loop {
        let r = app
            .pool
            .route(
                Kind::Write,
                sweeper(),
                "POST",
                "/admin/api/quota/expire".into(),
                r#"{"in_chunks": true}"#.into(),
                now,
            )
            .await?;
        if r.status != 200 {
            return Err(format!("{} {}", r.status, r.body));
        }
        let swept: serde_json::Value = serde_json::from_str(&r.body).map_err(|e| e.to_string())?;
        grants += swept["grants_expired"].as_u64().unwrap_or(0);
        credits += swept["credits_expired"].as_i64().unwrap_or(0);
        for d in swept["holds_repaired"].as_array().into_iter().flatten() {
            warning!(
                "budget {}: its running total said {} credits held, its running sessions hold {}; set right (docs/operations.md, QuotaBudgetHoldsRepaired)",
                d["budget"], d["kept"], d["summed"]
            );
        }
        if swept["more"] != true {
            break;
        }
    }
    if grants > 0 {
        info!("expired {grants} grant(s): {credits} credits written off");
    }
    Ok(())
}

/// The sweep, as often as the hosting contract says (each run is idempotent: replicas on one
/// database may all run it): due grants written off (credit model 2: "every minute" at least),
/// `session.ending` and `grant.expiring` warnings written (at most this late), old events purged.
pub async fn sweep_forever(app: Arc<App>) {
    let mut tick = tokio::time::interval(app.pool.contract.sweep_interval);
    tick.tick().await;
    loop {
        tick.tick().await;
        if let Err(e) = sweep(&app).await {
            info!("writing off due grants failed (the next sweep tries again): {e}");
        }
    }
}
