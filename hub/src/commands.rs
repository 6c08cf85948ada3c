//! What each command does.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use quota_core::limits::batch_users_max;
use quota_core::Timestamp;
use quota_host::{Checkpointer, Worker};
use serde_json::json;

use crate::cli::{self, Cli, Command, QuotaArgs, ServeArgs};
use crate::clock::{self, Clock};
use crate::cronjobs;
use crate::db::{self, Db};
use crate::log::info;
use crate::metrics::Metrics;
use crate::pool::{Kind, Pool, PoolOptions};
use crate::quota_file::{self, Entry};
use crate::server::{self, App};
use crate::target::{segment, Target};
use crate::token_import;
use crate::{engine, listen, scheduler, token_commands, values};

/// Files with more rows than this get a progress bar.
const progress_rows_min: usize = 300;
/// How often the server copies the WAL into the database file.
const checkpoint_interval_ms: u64 = 200;

pub fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Serve(a) => serve(a),
        Command::Token { command } => token_commands::run(command),
        Command::SetQuota(a) => change_quota(a, true),
        Command::AddQuota(a) => change_quota(a, false),
        Command::ListQuota(t) => list_quota(&mut Target::open(&t, false)?),
        Command::Refresh {
            rule,
            dry_run,
            rule_json,
            run_id,
            scheduled_within,
            target,
        } => refresh(&rule, dry_run, rule_json, run_id, scheduled_within, &target),
        Command::MigrateDb {
            from,
            to,
            values,
            replace,
        } => crate::migrate_db::run(&from, &to, &values, replace).map(|()| ExitCode::SUCCESS),
        Command::RenderCronjobs {
            values,
            namespace,
            name_prefix,
            hub_url,
            token_secret,
            token_key,
            image,
        } => {
            let o = cronjobs::Options {
                name_prefix: &name_prefix,
                namespace: &namespace,
                hub_url: &hub_url,
                token_secret: &token_secret,
                token_key: &token_key,
                image: &image,
            };
            render_cronjobs(&values, &o)
        }
        Command::Cleanup(t) => {
            let v = Target::open(&t, false)?.ok("POST", "/admin/api/quota/cleanup", "{}")?;
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        Command::CheckConfig { values } => check_config(&values),
    }
}

/// `refresh RULE`: on the database (`--db`), or sent to a server (`--url`) as the rule's refresh
/// request; with `--scheduled-within`, under the run id of its latest scheduled minute.
fn refresh(
    rule: &str,
    dry_run: bool,
    rule_json: Option<String>,
    run_id: Option<String>,
    scheduled_within: Option<i64>,
    target: &cli::Target,
) -> Result<ExitCode, String> {
    let now = Clock::system()?.now();
    let rt = engine::runtime()?;
    let (doc, fragment) = match &rule_json {
        Some(text) => {
            let fragment: serde_json::Value =
                serde_json::from_str(text).map_err(|e| format!("--rule-json: not JSON: {e}"))?;
            (cronjobs::one_rule_values(rule, &fragment), fragment)
        }
        None => {
            let doc = values::read(&target.values)?;
            let fragment = cronjobs::rules(&doc)
                .into_iter()
                .find(|(n, _)| n == rule)
                .map(|(_, f)| f)
                .ok_or_else(|| format!("refresh: no rule `{rule}` in {}", target.values.display()))?;
            (doc, fragment)
        }
    };
    let mut checker =
        values::check(&rt, &doc).map_err(|p| format!("refresh rule `{rule}`: {}", p.join("; ")))?;
    let run_id = match (run_id, scheduled_within) {
        (Some(id), _) => Some(id),
        (None, Some(window)) => {
            let at = scheduler::previous_fire(&mut checker, rule, now)
                .map_err(|e| e.to_string())?
                .filter(|at| at.seconds() >= now.seconds() - window)
                .ok_or_else(|| {
                    format!("refresh rule `{rule}`: no scheduled time within the last {window} s (give --run-id to run it by hand)")
                })?;
            Some(scheduler::run_id(rule, at))
        }
        (None, None) => None,
    };
    if target.url.is_none() {
        if rule_json.is_some() {
            return Err("--rule-json goes with --url; on a database the values file's rule runs".into());
        }
        let Target::Local(mut w, _) = Target::open(target, true)? else {
            unreachable!("a target without --url is local")
        };
        let r = w
            .run_rule(rule, run_id.as_deref(), dry_run, now)
            .map_err(|e| e.to_string())?;
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut body = cronjobs::refresh_body(rule, &fragment, run_id.as_deref());
    if dry_run {
        body["dry_run"] = true.into();
    }
    let v = Target::open(target, false)?.ok("POST", "/admin/api/quota/refresh", &body.to_string())?;
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

fn render_cronjobs(values_path: &std::path::Path, o: &cronjobs::Options<'_>) -> Result<ExitCode, String> {
    let rt = engine::runtime()?;
    let (doc, _) = checked_values(values_path, &rt, "; no CronJobs rendered")?;
    let jobs = cronjobs::render(&doc, o).map_err(|bad| {
        for b in &bad {
            eprintln!("{}: {b}", values_path.display());
        }
        format!(
            "{}: {} rule name(s) cannot name a CronJob; no CronJobs rendered",
            values_path.display(),
            bad.len()
        )
    })?;
    let mut out = String::new();
    for j in &jobs {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(j).map_err(|e| e.to_string())?);
    }
    print!("{out}");
    eprintln!("{} CronJob(s) for {} enabled rule(s)", jobs.len(), jobs.len());
    Ok(ExitCode::SUCCESS)
}

/// Reads and checks a values file with the engine; prints every problem and refuses the file.
fn checked_values(
    path: &std::path::Path,
    rt: &Arc<quota_host::Runtime>,
    refusal: &str,
) -> Result<(serde_json::Value, Worker), String> {
    let doc = values::read(path)?;
    match values::check(rt, &doc) {
        Ok(w) => Ok((doc, w)),
        Err(problems) => {
            for p in &problems {
                eprintln!("{}: {p}", path.display());
            }
            Err(format!(
                "{}: {} problem(s){refusal}",
                path.display(),
                problems.len()
            ))
        }
    }
}

fn check_config(path: &std::path::Path) -> Result<ExitCode, String> {
    let rt = engine::runtime()?;
    let (doc, mut w) = checked_values(path, &rt, "")?;
    let summary = w.summary().clone();
    let accelerators = doc
        .pointer("/custom/accelerators")
        .and_then(serde_json::Value::as_object)
        .map_or(0, |a| a.len());
    println!(
        "{}: OK (quota {}, {accelerators} accelerator(s), {} refresh rule(s))",
        path.display(),
        if summary.enabled { "enabled" } else { "disabled" },
        summary.rules.len()
    );
    let now = Clock::system()?.now();
    for r in &summary.rules {
        let next = w.next_fire(&r.name, now).map_err(|e| e.to_string())?;
        let when = match (r.enabled, next) {
            (false, _) => "disabled".to_string(),
            (true, Some(t)) => format!("next run {t}Z"),
            (true, None) => "never fires".to_string(),
        };
        println!("  rule {}: {when}", r.name);
    }
    Ok(ExitCode::SUCCESS)
}

fn entries_of(a: &QuotaArgs, set: bool) -> Result<(Vec<Entry>, Vec<String>), String> {
    let cmd = if set { "set-quota" } else { "add-quota" };
    if let Some(f) = &a.file {
        if !set && a.amount.is_none() {
            return Err(format!("{cmd}: --amount is required"));
        }
        let p = quota_file::read(f, a.amount, set)?;
        return Ok((p.entries, p.warnings));
    }
    if a.users.is_empty() {
        return Err(format!("{cmd}: name one or more users, or give -f FILE"));
    }
    let amount = a
        .amount
        .ok_or_else(|| format!("{cmd}: --amount is required with usernames"))?;
    let mut entries = Vec::new();
    for u in &a.users {
        let username = u.trim().to_lowercase();
        if username.is_empty() {
            return Err(format!("{cmd}: an empty username was given"));
        }
        entries.push(Entry {
            username,
            amount,
            line: 0,
        });
    }
    Ok((entries, Vec::new()))
}

fn change_quota(a: QuotaArgs, set: bool) -> Result<ExitCode, String> {
    let cmd = if set { "set-quota" } else { "add-quota" };
    // The whole input is checked before the first write.
    let (entries, warnings) = entries_of(&a, set)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let mut target = Target::open(&a.target, false)?;
    let bar = if entries.len() > progress_rows_min {
        indicatif::ProgressBar::new(entries.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut failures: Vec<String> = Vec::new();
    let mut succeeded = 0usize;
    if set {
        for chunk in entries.chunks(batch_users_max) {
            let users: Vec<_> = chunk
                .iter()
                .map(|e| json!({"username": e.username, "amount": e.amount}))
                .collect();
            let body = json!({ "users": users }).to_string();
            match target.ok("POST", "/admin/api/quota/batch", &body) {
                Ok(v) => {
                    let details = v["details"].as_array().cloned().unwrap_or_default();
                    for (e, d) in chunk.iter().zip(details.iter()) {
                        if d["status"] == "success" {
                            succeeded += 1;
                        } else {
                            failures.push(failure(e, d["error"].as_str().unwrap_or("failed")));
                        }
                    }
                }
                Err(msg) => failures.extend(chunk.iter().map(|e| failure(e, &msg))),
            }
            bar.inc(chunk.len() as u64);
        }
    } else {
        for e in &entries {
            let body = json!({"action": "add", "amount": e.amount}).to_string();
            let path = format!("/admin/api/quota/users/{}", segment(&e.username));
            match target.ok("POST", &path, &body) {
                Ok(_) => succeeded += 1,
                Err(msg) => failures.push(failure(e, &msg)),
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    for f in &failures {
        eprintln!("failed: {f}");
    }
    println!(
        "{cmd}: {succeeded} succeeded, {} failed, {} skipped",
        failures.len(),
        warnings.len()
    );
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn failure(e: &Entry, msg: &str) -> String {
    if e.line > 0 {
        format!("line {}: {}: {msg}", e.line, e.username)
    } else {
        format!("{}: {msg}", e.username)
    }
}

/// Users per request of `list-quota` (pages of the admin list route).
const list_page_users: usize = 10_000;

fn list_quota(target: &mut Target) -> Result<ExitCode, String> {
    // Page by page (no single answer holds 50,000 users), then written line by line.
    let mut rows: Vec<[String; 3]> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let query = match &after {
            None => format!("limit={list_page_users}"),
            Some(a) => format!("limit={list_page_users}&after={}", segment(a)),
        };
        let v = target.ok("GET", &format!("/admin/api/quota/?{query}"), "")?;
        for u in v["users"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let balance = if u["unlimited"] == true {
                "unlimited".to_string()
            } else {
                u["balance"].to_string()
            };
            rows.push([
                u["username"].as_str().unwrap_or("").to_string(),
                balance,
                u["updated_at"].as_str().unwrap_or("").to_string(),
            ]);
        }
        match v["next_after"].as_str() {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
    }
    let head = ["Username", "Balance", "Last Updated"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0), width(1));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = writeln!(out, "Users ({})", rows.len()).and_then(|()| {
        for [a, b, c] in std::iter::once(head.map(str::to_string)).chain(rows) {
            writeln!(out, "{a:<w0$}  {b:>w1$}  {c}")?;
        }
        out.flush()
    });
    written.map_err(|e| format!("stdout: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

fn serve(a: ServeArgs) -> Result<ExitCode, String> {
    let rt = engine::runtime()?;
    let (doc, _) = checked_values(&a.values, &rt, "; not serving")?;
    let db = db::parse(&a.db)?;
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
            token_import::read(path, &|k| std::env::var(k).ok())
                .map_err(|p| format!("--tokens: {}; not serving", p.join("; ")))?,
        ),
        None => None,
    };
    let busy = Duration::from_millis(a.busy_timeout_ms);
    let writers = match (&db, a.writers) {
        (Db::Sqlite(_), Some(n)) if n > 1 => {
            return Err("--writers: SQLite takes one writer at a time; more than 1 needs postgres://".into())
        }
        (Db::Sqlite(_), _) => 1,
        (Db::Postgres(_), n) => n.unwrap_or(4),
    };
    let metrics = (!a.no_metrics).then(|| Arc::new(Metrics::new()));
    let observer = metrics.clone().map(|m| m as Arc<dyn quota_host::Observer>);
    let opts = PoolOptions {
        writers,
        readers: a.readers,
        busy_timeout: busy,
        group_commit_max: a.group_commit_max as usize,
        observer,
    };
    let pool = Pool::start(&rt, &db, &doc, opts)?;
    if let Some(m) = &metrics {
        m.know_rules(pool.summary.rules.iter().map(|r| r.name.clone()));
    }
    let _checkpointer = match &db {
        Db::Sqlite(path) => Some(
            Checkpointer::start(path, Duration::from_millis(checkpoint_interval_ms))
                .map_err(|e| format!("checkpointer: {e}"))?,
        ),
        // PostgreSQL checkpoints by itself.
        Db::Postgres(_) => None,
    };
    let app = Arc::new(App {
        pool,
        base: server::normalise_base(&a.base_url),
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
        if let Some(tokens) = imported {
            let now = app.clock.now();
            let summary = app
                .pool
                .run_in_tx(Kind::Write, move |tx| token_import::apply(tx, &tokens, now))
                .await?
                .map_err(|e| format!("--tokens: importing: {e}"))?;
            info!(
                "--tokens: {} token(s) imported, {} already there, {} removed",
                summary.added, summary.kept, summary.removed
            );
        }
        let served = run_server(app.clone(), &a.listen).await;
        scheduler::record_token_use(&app).await;
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
    tokio::spawn(scheduler::purge_replays_forever(app.clone()));
    tokio::spawn(scheduler::record_token_use_forever(app.clone()));
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
    listen::serve(listener, server::router(app), limits, stop).await;
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
