//! `serve`: the server, its scheduler and its clean stop.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use quota_core::Timestamp;
use quota_host::Checkpointer;

use crate::app::App;
use crate::cli::ServeArgs;
use crate::clock::{self, Clock};
use crate::engine::pool::{Kind, Pool, PoolOptions};
use crate::http;
use crate::log::info;
use crate::metrics::durability::Sources;
use crate::metrics::Metrics;
use crate::schedule::replica::{probe_forever, ReplicaProbe};
use crate::storage::db::{self, Db};
use crate::tokens::import;
use crate::{engine, listen, schedule as scheduler};

use crate::values::read_checked;

/// How often the server copies the WAL into the database file.
const CHECKPOINT_INTERVAL_MS: u64 = 200;

pub(super) fn serve(a: ServeArgs) -> Result<ExitCode, String> {
    let rt = engine::runtime()?;
    let (doc, _) = read_checked(&a.values, &rt, "; not serving")?;
    let db = db::parse(&a.db)?;
    if let (Db::Sqlite(path), false) = (&db, a.allow_ephemeral_db) {
        crate::storage::durable::check(&a.db, path)?;
    }
    let clock = match &a.clock_start {
        Some(s) => Clock::starting_at(Timestamp::parse(s).map_err(|e| format!("--clock-start: {e}"))?),
        None => Clock::system()?,
    };
    if a.test_clock || a.clock_start.is_some() || clock::days_ahead()? != 0 {
        info!("WARNING: test clock options are on; never use them in production");
    }
    // Every problem of the tokens file before anything starts (as for the values file).
    let imported = match &a.tokens {
        Some(path) => Some(
            import::read(path, &|k| std::env::var(k).ok())
                .map_err(|p| format!("--tokens: {}; not serving", p.join("; ")))?,
        ),
        None => None,
    };
    let (opts, metrics) = pool_options(&a, &db, &clock)?;
    let pool = Pool::start(&rt, &db, &doc, opts)?;
    if let Some(m) = &metrics {
        m.know_rules(pool.summary.rules.iter().map(|r| r.name.clone()));
    }
    let _checkpointer = match &db {
        Db::Sqlite(path) => Some(
            Checkpointer::start(&rt, path, Duration::from_millis(CHECKPOINT_INTERVAL_MS))
                .map_err(|e| format!("checkpointer: {e}"))?,
        ),
        // PostgreSQL checkpoints by itself.
        Db::Postgres(_) => None,
    };
    let app = Arc::new(App {
        pool,
        base: http::normalise_base(&a.base_url),
        clock,
        test_clock: a.test_clock,
        scheduler: !a.no_scheduler,
        token_use: Default::default(),
        metrics,
        log_probes: a.log_probes,
        limits: listen::ConnLimits {
            connections_max: a.connections_max as usize,
            header_read_timeout: Duration::from_millis(a.header_read_timeout_ms),
            body_read_timeout: Duration::from_millis(a.body_read_timeout_ms),
        },
    });
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("async runtime: {e}"))?;
    let served = tokio_rt.block_on(async {
        if let (Some(tokens), Some(path)) = (imported, a.tokens.clone()) {
            let now = app.clock.now();
            let (to_apply, read) = (tokens.clone(), tokens);
            let summary = app
                .pool
                .run_in_tx(Kind::Write, move |tx| import::apply(tx, &to_apply, now))
                .await?
                .map_err(|e| format!("--tokens: importing: {e}"))?;
            info!(
                "--tokens: {} token(s) imported, {} already there, {} removed",
                summary.added, summary.kept, summary.removed
            );
            // A rotated Secret is imported again while serving.
            tokio::spawn(scheduler::upkeep::follow_tokens_forever(app.clone(), path, read));
        }
        let served = run_server(app.clone(), &a.listen).await;
        scheduler::upkeep::record_token_use(&app).await;
        served
    });
    tokio_rt.shutdown_timeout(Duration::from_secs(5));
    served?;
    if let Ok(mut app) = Arc::try_unwrap(app) {
        let retried = app.pool.shutdown();
        if retried > 0 {
            info!("{retried} engine call(s) ran again after a conflict with another replica's transaction");
        }
    }
    info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The engine pool's options from the flags: the writers (one on SQLite), the readers, the busy
/// wait, the shared commit, and the metrics (with the backups' folder and Litestream's socket)
/// observing it.
fn pool_options(
    a: &ServeArgs,
    db: &Db,
    clock: &Clock,
) -> Result<(PoolOptions, Option<Arc<Metrics>>), String> {
    let busy = a.busy_timeout_ms.map(Duration::from_millis);
    let old = std::env::var(crate::cli::SHARED_COMMIT_MAX_OLD_ENV).ok();
    let (shared_max, renamed) = crate::cli::shared_commit_max(a.shared_commit_max, old.as_deref())?;
    if let Some(warning) = renamed {
        info!("{warning}");
    }
    let writers = match (db, a.writers) {
        (Db::Sqlite(_), Some(n)) if n > 1 => {
            return Err("--writers: SQLite takes one writer at a time; more than 1 needs postgres://".into())
        }
        (Db::Sqlite(_), _) => 1,
        (Db::Postgres(_), n) => n.unwrap_or(4),
    };
    let replica = match (&a.litestream_socket, db) {
        (Some(socket), Db::Sqlite(path)) => {
            let path = std::path::absolute(path).map_err(|e| format!("--db: {e}"))?;
            Some(Arc::new(ReplicaProbe::new(socket.clone(), path, clock.now().seconds())))
        }
        (Some(_), Db::Postgres(_)) => {
            return Err("--litestream-socket: Litestream replicates SQLite files; PostgreSQL has its own (docs/postgres.md)".into())
        }
        (None, _) => None,
    };
    let sources = Sources {
        backup_dir: a.backup_dir.clone(),
        replica,
    };
    let metrics = (!a.no_metrics).then(|| Arc::new(Metrics::with(sources)));
    let observer = metrics.clone().map(|m| m as Arc<dyn quota_host::Observer>);
    let opts = PoolOptions {
        writers,
        readers: a.readers,
        busy_timeout: busy,
        shared_commit_max: shared_max as usize,
        observer,
    };
    Ok((opts, metrics))
}

async fn run_server(app: Arc<App>, listen: &str) -> Result<(), String> {
    // One instant for the whole start-up: runs at or before it were missed (reported, not
    // replayed), runs after it are the scheduler's, however long the rest of the start-up takes.
    let t0 = app.clock.now();
    match app.pool.run(Kind::Write, move |w| w.cleanup_stale(t0)).await {
        Ok(Ok(cleaned)) => {
            for c in &cleaned {
                info!(
                    "stale session {} of {} (server `{}`, started {}) closed after {} minutes, not charged",
                    c.session_id, c.username, c.server_name, c.start_time, c.duration_minutes
                );
            }
        }
        Ok(Err(e)) => return Err(format!("stale cleanup: {e}")),
        Err(e) => return Err(format!("stale cleanup: {e}")),
    }
    // Grants that lapsed while no server ran are written off before the first request.
    scheduler::upkeep::sweep(&app)
        .await
        .map_err(|e| format!("writing off due grants: {e}"))?;
    if app.scheduler {
        scheduler::report_missed(&app, t0).await;
    } else {
        info!("refresh rules: not scheduled here (--no-scheduler: CronJobs or another process run them)");
    }
    for rule in app
        .pool
        .summary
        .rules
        .iter()
        .filter(|r| r.enabled && app.scheduler)
    {
        let name = rule.name.clone();
        if let Ok(Ok(Some(t))) = app.pool.run(Kind::Read, move |w| w.next_fire(&name, t0)).await {
            info!("refresh rule {}: next run {t}Z", rule.name);
        }
        tokio::spawn(scheduler::run_rule_forever(app.clone(), rule.name.clone(), t0));
    }
    // Webhooks are registered before the first request, so none misses an event of this run.
    scheduler::deliveries::start(&app)
        .await
        .map_err(|e| format!("webhooks: {e}"))?;
    tokio::spawn(scheduler::upkeep::purge_replays_forever(app.clone()));
    tokio::spawn(scheduler::upkeep::sweep_forever(app.clone()));
    tokio::spawn(scheduler::upkeep::record_token_use_forever(app.clone()));
    if let Some(p) = app.metrics.as_ref().and_then(|m| m.durability.replica()) {
        tokio::spawn(probe_forever(app.clock.clone(), p));
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    // The handlers are installed before the server says it is listening: a SIGTERM sent as soon
    // as it is up must stop it cleanly, not kill it with the default action.
    let stop = stop_signal()?;
    println!("quota-hub listening on http://{addr}{}/", app.base);
    let _ = std::io::stdout().flush();
    let limits = app.limits;
    listen::serve(listener, http::router(app), limits, stop).await;
    Ok(())
}

/// SIGINT or SIGTERM: stop accepting, finish the requests in flight, exit 0. The handlers are
/// installed when this is called; the future resolves at the first signal.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        info!("stopping: finishing requests in flight");
    })
}
