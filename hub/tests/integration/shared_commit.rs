//! Shared commit in the real server: write requests that queue while the writer waits for the
//! database share one commit, each is answered only after it, and every acknowledged write is on
//! disk after a SIGKILL. The queue is made deterministic by holding SQLite's write lock from the
//! test until every request is waiting or running (read from `/metrics`, not guessed with sleeps).

use crate::common;

use std::time::Instant;

use common::metrics::{get, parse, Samples};
use common::{http, Server};

const REQUESTS: usize = 24;

type Answer = std::thread::JoinHandle<(u16, String)>;

fn server(dir: &std::path::Path, extra: &[&str]) -> Server {
    let values = common::write_values(
        dir,
        "values.json",
        &serde_json::json!({"custom": {"authMode": "github",
            "quota": {"enabled": true, "cpuRate": 1, "minimumToStart": 10, "defaultQuota": 100}}}),
    );
    let mut args = vec!["--busy-timeout-ms", "60000"];
    args.extend_from_slice(extra);
    Server::start(&dir.join("q.db"), &values, &args)
}

/// `n` session starts (users u0..), each from a client thread of its own.
fn start_sessions(url: &str, hub: &str, n: usize) -> Vec<Answer> {
    (0..n)
        .map(|i| {
            let (url, hub) = (url.to_string(), hub.to_string());
            std::thread::spawn(move || {
                let body = format!(r#"{{"username":"u{i}","runtime_minutes":5}}"#);
                common::http(
                    &common::agent(),
                    "POST",
                    &format!("{url}/api/quota/sessions"),
                    Some(&hub),
                    Some(&body),
                    &[],
                )
            })
        })
        .collect()
}

/// Scrapes until `n` write requests are waiting for or running on the writer; each scrape is also
/// given to `check`.
fn wait_until_inside(scrape: impl Fn() -> Samples, n: usize, check: impl Fn(f64, f64)) {
    let deadline = Instant::now() + common::PATIENCE;
    loop {
        let now = scrape();
        let (waiting, running) = (
            get(&now, "quota_write_calls_waiting", ""),
            get(&now, "quota_write_calls_running", ""),
        );
        check(waiting, running);
        if waiting + running == n as f64 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {n} writes reached the server",
            waiting + running
        );
        std::thread::yield_now();
    }
}

#[test]
fn queued_writes_share_one_commit_and_every_acknowledged_write_survives_sigkill() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let server = server(dir.path(), &[]);
    let hub = common::token(&db, "hub", false, &["quota:sessions"]);
    let scraper = common::token(&db, "prometheus", false, &["quota:metrics"]);
    let scrape = || -> Samples {
        let (status, text) = server.get("/metrics", &scraper);
        assert_eq!(status, 200, "{text}");
        parse(&text)
    };
    let before = scrape();

    // Another process holds the write lock: the writer waits in BEGIN for it.
    let lock = rusqlite::Connection::open(&db).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let clients = start_sessions(&server.url, &hub, REQUESTS);
    // Every request has reached the writer's queue or the writer.
    wait_until_inside(scrape, REQUESTS, |_, _| {});
    lock.execute_batch("ROLLBACK").expect("release the lock");

    for c in clients {
        let (status, body) = c.join().expect("client");
        assert_eq!(status, 201, "{body}");
    }
    let after = scrape();
    let delta = |name: &str| get(&after, name, "") - get(&before, name, "");
    // The writer held one shared commit while the lock was taken; everything queued behind it is the next
    // shared commit (fewer than --shared-commit-max, 64): at most two commits for all of them.
    let commits = delta("quota_shared_commit_calls");
    assert!(
        (1.0..=2.0).contains(&commits),
        "{REQUESTS} writes in {commits} commits"
    );
    assert_eq!(delta("quota_shared_commit_calls_sum"), REQUESTS as f64);
    assert_eq!(get(&after, "quota_write_calls_waiting", ""), 0.0);
    assert_eq!(get(&after, "quota_write_calls_running", ""), 0.0);

    // Acknowledged means on disk: kill the server without letting it stop.
    server.kill9();
    let c = rusqlite::Connection::open(&db).expect("open");
    let active: i64 = c
        .query_row("SELECT COUNT(*) FROM sessions WHERE status = 'active'", [], |r| {
            r.get(0)
        })
        .expect("count");
    assert_eq!(active, REQUESTS as i64);
}

#[test]
fn shared_commit_max_1_commits_each_write_alone() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let server = server(dir.path(), &["--shared-commit-max", "1"]);
    let hub = common::token(&db, "hub", false, &["quota:sessions"]);
    let scraper = common::token(&db, "prometheus", false, &["quota:metrics"]);
    let agent = common::agent();
    let metrics_url = format!("{}/metrics", server.url);
    let lock = rusqlite::Connection::open(&db).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let clients = start_sessions(&server.url, &hub, 8);
    let scrape = || {
        let (_, text) = http(&agent, "GET", &metrics_url, Some(&scraper), None, &[]);
        parse(&text)
    };
    wait_until_inside(scrape, 8, |_, running| {
        assert!(
            running <= 1.0,
            "a writer without shared commit runs one call at a time"
        );
    });
    lock.execute_batch("ROLLBACK").expect("release the lock");
    for c in clients {
        let (status, body) = c.join().expect("client");
        assert_eq!(status, 201, "{body}");
    }
    let (_, text) = http(&agent, "GET", &metrics_url, Some(&scraper), None, &[]);
    let after = parse(&text);
    assert_eq!(
        get(&after, "quota_shared_commit_calls", ""),
        8.0,
        "one commit per write"
    );
    assert_eq!(get(&after, "quota_shared_commit_calls_sum", ""), 8.0);
    server.stop();
}

#[test]
fn sixteen_members_at_once_never_overspend_a_shared_budget_with_shared_commits_on() {
    use common::budget_load;
    let dir = tempfile::tempdir().expect("dir");
    let values = common::write_values(dir.path(), "values.json", &budget_load::values());
    let db = dir.path().join("q.db");
    let server = Server::start(&db, &values, &["--busy-timeout-ms", "60000"]);
    let admin = common::token(&db, "root", true, &[]);
    let hub = common::token(&db, "hub", false, &["quota:sessions"]);
    let urls = vec![server.url.clone()];
    let seen = budget_load::run(&urls, &admin, &hub);
    let ended = budget_load::check_and_end(&seen, &urls, &hub);
    let c = rusqlite::Connection::open(&db).expect("db");
    let wrong: Vec<String> = c
        .prepare(budget_load::MISMATCHES_SQL)
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:?}");
    let balance: i64 = c
        .query_row("SELECT balance FROM budgets WHERE name = 'course'", [], |r| {
            r.get(0)
        })
        .expect("budget");
    assert_eq!(balance, budget_load::balance_after(ended));
    println!(
        "SQLite, shared commit on: {} starts allowed, {} refused with an exact text",
        seen.allowed.len(),
        seen.refused.len()
    );
    server.stop();
}
