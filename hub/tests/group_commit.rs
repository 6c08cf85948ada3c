//! Group commit in the real server: write requests that queue while the writer waits for the
//! database share one commit, each is answered only after it, and every acknowledged write is on
//! disk after a SIGKILL. The queue is made deterministic by holding SQLite's write lock from the
//! test until every request is waiting or running (read from `/metrics`, not guessed with sleeps).

#![allow(non_upper_case_globals)]

mod common;

use std::time::Instant;

use common::metrics::{get, parse, Samples};
use common::{http, Server};

const requests: usize = 24;

#[test]
fn queued_writes_share_one_commit_and_every_acknowledged_write_survives_sigkill() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let values = common::write_values(
        dir.path(),
        "values.json",
        &serde_json::json!({"custom": {"authMode": "github",
            "quota": {"enabled": true, "cpuRate": 1, "minimumToStart": 10, "defaultQuota": 100}}}),
    );
    let server = Server::start(&db, &values, &["--busy-timeout-ms", "60000"]);
    let hub = common::token(&db, "hub", false, &["quota:sessions"]);
    let scraper = common::token(&db, "prometheus", false, &["quota:metrics"]);
    let agent = common::agent();
    let scrape = || -> Samples {
        let (status, text) = http(
            &agent,
            "GET",
            &format!("{}/metrics", server.url),
            Some(&scraper),
            None,
            &[],
        );
        assert_eq!(status, 200, "{text}");
        parse(&text)
    };
    let before = scrape();

    // Another process holds the write lock: the writer waits in BEGIN for it.
    let lock = rusqlite::Connection::open(&db).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let clients: Vec<_> = (0..requests)
        .map(|i| {
            let (url, hub) = (server.url.clone(), hub.clone());
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
        .collect();
    // Every request has reached the writer's queue or the writer.
    let deadline = Instant::now() + common::patience;
    loop {
        let now = scrape();
        let inside = get(&now, "quota_write_calls_waiting", "") + get(&now, "quota_write_calls_running", "");
        if inside == requests as f64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {inside} of {requests} writes reached the server"
        );
        std::thread::yield_now();
    }
    lock.execute_batch("ROLLBACK").expect("release the lock");

    for c in clients {
        let (status, body) = c.join().expect("client");
        assert_eq!(status, 201, "{body}");
    }
    let after = scrape();
    let delta = |name: &str| get(&after, name, "") - get(&before, name, "");
    // The writer held one group while the lock was taken; everything queued behind it is the next
    // group (fewer than --group-commit-max, 64): at most two commits for all of them.
    let commits = delta("quota_group_commit_calls");
    assert!(
        (1.0..=2.0).contains(&commits),
        "{requests} writes in {commits} commits"
    );
    assert_eq!(delta("quota_group_commit_calls_sum"), requests as f64);
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
    assert_eq!(active, requests as i64);
}

#[test]
fn group_commit_max_1_commits_each_write_alone() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let values = common::write_values(
        dir.path(),
        "values.json",
        &serde_json::json!({"custom": {"authMode": "github",
            "quota": {"enabled": true, "cpuRate": 1, "minimumToStart": 10, "defaultQuota": 100}}}),
    );
    let server = Server::start(
        &db,
        &values,
        &["--busy-timeout-ms", "60000", "--group-commit-max", "1"],
    );
    let hub = common::token(&db, "hub", false, &["quota:sessions"]);
    let scraper = common::token(&db, "prometheus", false, &["quota:metrics"]);
    let agent = common::agent();
    let metrics_url = format!("{}/metrics", server.url);
    let lock = rusqlite::Connection::open(&db).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    let clients: Vec<_> = (0..8)
        .map(|i| {
            let (url, hub) = (server.url.clone(), hub.clone());
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
        .collect();
    let deadline = Instant::now() + common::patience;
    loop {
        let (_, text) = http(&agent, "GET", &metrics_url, Some(&scraper), None, &[]);
        let now = parse(&text);
        let (waiting, running) = (
            get(&now, "quota_write_calls_waiting", ""),
            get(&now, "quota_write_calls_running", ""),
        );
        assert!(
            running <= 1.0,
            "a writer without group commit runs one call at a time"
        );
        if waiting + running == 8.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of 8 writes reached the server",
            waiting + running
        );
        std::thread::yield_now();
    }
    lock.execute_batch("ROLLBACK").expect("release the lock");
    for c in clients {
        let (status, body) = c.join().expect("client");
        assert_eq!(status, 201, "{body}");
    }
    let (_, text) = http(&agent, "GET", &metrics_url, Some(&scraper), None, &[]);
    let after = parse(&text);
    assert_eq!(
        get(&after, "quota_group_commit_calls", ""),
        8.0,
        "one commit per write"
    );
    assert_eq!(get(&after, "quota_group_commit_calls_sum", ""), 8.0);
    server.stop();
}
