//! Several `quota-hub serve` replicas on one PostgreSQL database (a real server, started by
//! `scripts/with-postgres.sh`, which sets `QUOTA_TEST_PG_URL`): hammered at once with session
//! starts and ends, admin adds and one refresh run id sent to every replica, the ledger stays
//! exact and no request fails with a raw database error; a replica killed with SIGKILL in the middle
//! of a refresh leaves whole chunks applied (each user once, the progress recorded under the run
//! id), and re-sending its run id completes it, each user once.

#[path = "../common/mod.rs"]
mod common;
mod db;
mod migrate_db;

use std::sync::Arc;

use common::{http, json, Server};
use db::{fresh_database, ledger_mismatches, scalar, values};
use quota_host::pg::PgDb;
use quota_host::{Database, SqlCell};

#[test]
fn three_replicas_hammered_at_once_keep_the_ledger_exact() {
    let dir = tempfile::tempdir().expect("dir");
    let url = fresh_database("replicas");
    let values = values(dir.path());
    let admin = common::token_url(&url, "root", true, &[], &[]);
    let hub = common::token_url(&url, "hub", false, &["quota:sessions"], &[]);
    let servers: Vec<Server> = (0..3)
        .map(|_| Server::start_url(&url, &values, &[], &[]))
        .collect();
    let urls: Arc<Vec<String>> = Arc::new(servers.iter().map(|s| s.url.clone()).collect());
    let users = 12;
    let agent = common::agent();
    for u in 0..users {
        let (st, body) = http(
            &agent,
            "POST",
            &format!("{}/admin/api/quota/users/u{u}", urls[0]),
            Some(&admin),
            Some(r#"{"action": "set", "amount": 100000}"#),
            &[],
        );
        assert_eq!(st, 200, "{body}");
    }
    let rounds = 25;
    let mut workers = Vec::new();
    for t in 0..9 {
        let (urls, admin, hub) = (urls.clone(), admin.clone(), hub.clone());
        workers.push(std::thread::spawn(move || {
            let agent = common::agent();
            let mut statuses = Vec::new();
            for r in 0..rounds {
                let base = &urls[(t + r) % 3];
                let user = format!("u{}", (t * 7 + r) % users);
                if t % 3 == 0 {
                    let (st, b) = http(
                        &agent,
                        "POST",
                        &format!("{base}/admin/api/quota/users/{user}"),
                        Some(&admin),
                        Some(r#"{"action": "add", "amount": 3}"#),
                        &[],
                    );
                    statuses.push((st, b));
                } else {
                    let start = format!(
                        r#"{{"username": "{user}", "runtime_minutes": 5, "server_name": "t{t}r{r}"}}"#
                    );
                    let (st, b) = http(
                        &agent,
                        "POST",
                        &format!("{base}/api/quota/sessions"),
                        Some(&hub),
                        Some(&start),
                        &[],
                    );
                    if st == 201 {
                        let id = json(&b)["session_id"].as_i64().expect("id");
                        // Ended through another replica than the one that started it.
                        let other = &urls[(t + r + 1) % 3];
                        let end = http(
                            &agent,
                            "POST",
                            &format!("{other}/api/quota/sessions/{id}/end"),
                            Some(&hub),
                            Some("{}"),
                            &[],
                        );
                        statuses.push(end);
                    }
                    statuses.push((st, b));
                }
            }
            statuses
        }));
    }
    // The same refresh run id to all three replicas at once, in the middle of the load.
    let refreshes: Vec<_> = (0..3)
        .map(|k| {
            let (urls, admin) = (urls.clone(), admin.clone());
            std::thread::spawn(move || {
                http(
                    &common::agent(),
                    "POST",
                    &format!("{}/admin/api/quota/refresh", urls[k]),
                    Some(&admin),
                    Some(r#"{"action": "add", "amount": 10, "run_id": "replicas-test-run"}"#),
                    &[],
                )
            })
        })
        .collect();
    let mut answers: Vec<(u16, String)> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("worker"))
        .collect();
    let refresh: Vec<(u16, String)> = refreshes
        .into_iter()
        .map(|h| h.join().expect("refresh"))
        .collect();
    for (st, body) in &refresh {
        assert_eq!(*st, 200, "{body}");
    }
    // A replay answers the first result byte for byte: all three say the same, and the ledger
    // (below) shows one application.
    assert!(refresh.iter().all(|r| r.1 == refresh[0].1), "{refresh:?}");
    answers.extend(refresh);
    for (st, body) in &answers {
        assert!(matches!(st, 200 | 201), "{st} {body}");
        assert!(
            !body.to_lowercase().contains("postgres"),
            "a raw database error reached a client: {body}"
        );
    }
    let mut db = PgDb::connect(&common::runtime(), &url).expect("connect");
    assert!(
        ledger_mismatches(&mut db).is_empty(),
        "{:?}",
        ledger_mismatches(&mut db)
    );
    assert_eq!(
        scalar(&mut db, "SELECT COUNT(*) FROM sessions WHERE status = 'active'"),
        0
    );
    let ended = scalar(
        &mut db,
        "SELECT COUNT(*) FROM sessions WHERE status = 'completed'",
    );
    let usage = scalar(
        &mut db,
        "SELECT COUNT(*) FROM transactions WHERE transaction_type = 'usage'",
    );
    assert_eq!(usage, ended, "one usage transaction per ended session");
    assert_eq!(
        scalar(
            &mut db,
            "SELECT COUNT(*) FROM transactions WHERE transaction_type = 'auto_refresh'"
        ),
        users as i64,
        "the run id applied once: one refresh transaction per user"
    );
    assert_eq!(scalar(&mut db, "SELECT COUNT(*) FROM refresh_runs"), 1);
    let mut retried = 0;
    for s in servers {
        let log = s.stderr.clone();
        s.stop();
        retried += log
            .all()
            .iter()
            .find_map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .filter(|_| l.contains("ran again after a conflict"))
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .unwrap_or(0);
    }
    println!("3 replicas: {} answers, {ended} sessions billed once each, refresh applied once; {retried} conflict retries", answers.len());
}

#[test]
fn three_replicas_deliver_every_event_to_one_webhook_each_once_one_at_a_time() {
    use common::receiver::Receiver;
    let receiver = Receiver::start();
    let url = fresh_database("quota_webhooks");
    let dir = tempfile::tempdir().expect("dir");
    let values = common::write_values(
        dir.path(),
        "values.yaml",
        &serde_json::json!({"custom": {"authMode": "github", "quota": {"cpuRate": 1, "minimumToStart": 1,
            "webhooks": [{"name": "ops", "url": receiver.url(), "secretEnv": "WH_SECRET",
                          "events": ["start.refused", "session.ended"]}]}}}),
    );
    let admin = common::token_url(&url, "root", true, &[], &[]);
    let hub = common::token_url(&url, "hub", false, &["quota:sessions"], &[]);
    let env = [("WH_SECRET".to_string(), "s".to_string())];
    let servers: Vec<Server> = (0..3)
        .map(|_| Server::start_url(&url, &values, &[], &env))
        .collect();
    // Events written on every replica at once: refused starts, 3 threads of 40.
    let threads: Vec<_> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (u, hub) = (s.url.clone(), hub.clone());
            std::thread::spawn(move || {
                let agent = common::agent();
                for j in 0..40 {
                    let body = format!(r#"{{"username":"r{i}u{j}","runtime_minutes":5}}"#);
                    let (st, b) = http(
                        &agent,
                        "POST",
                        &format!("{u}/api/quota/sessions"),
                        Some(&hub),
                        Some(&body),
                        &[],
                    );
                    assert_eq!(st, 403, "{b}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("writer");
    }
    receiver.wait_until("120 events", std::time::Duration::from_secs(120), |g| {
        g.len() >= 120
    });
    common::eventually("nothing pending", || {
        let (_, b) = servers[0].get("/admin/api/quota/webhooks", &admin);
        json(&b)["webhooks"][0]["pending"] == 0
    });
    let got = receiver.received();
    let ids: Vec<i64> = got.iter().map(|r| r.event_id).collect();
    // Ids have gaps on PostgreSQL (a conflict retried takes new ones): the events as stored.
    let (_, b) = servers[1].get("/admin/api/quota/events?limit=500", &admin);
    let expected: Vec<i64> = json(&b)["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(expected.len(), 120);
    assert_eq!(ids, expected, "each event once, in id order");
    assert_eq!(receiver.most_in_flight(), 1, "never two replicas sending at once");
}

#[test]
fn sixteen_members_on_three_replicas_never_overspend_a_shared_budget() {
    use common::budget_load;
    let dir = tempfile::tempdir().expect("dir");
    let url = fresh_database("budget_load");
    let values = common::write_values(dir.path(), "values.yaml", &budget_load::values());
    let admin = common::token_url(&url, "root", true, &[], &[]);
    let hub = common::token_url(&url, "hub", false, &["quota:sessions"], &[]);
    let servers: Vec<Server> = (0..3)
        .map(|_| Server::start_url(&url, &values, &[], &[]))
        .collect();
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let seen = budget_load::run(&urls, &admin, &hub);
    let ended = budget_load::check_and_end(&seen, &urls, &hub);
    let mut db = PgDb::connect(&common::runtime(), &url).expect("connect");
    let wrong = db.query(budget_load::MISMATCHES_SQL, &[]).expect("ledger check");
    assert!(wrong.is_empty(), "{wrong:?}");
    assert_eq!(
        scalar(&mut db, "SELECT balance FROM budgets WHERE name = 'course'"),
        budget_load::balance_after(ended)
    );
    println!(
        "PostgreSQL, 3 replicas: {} starts allowed, {} refused with an exact text",
        seen.allowed.len(),
        seen.refused.len()
    );
    for s in servers {
        s.stop();
    }
}

#[test]
fn a_replica_killed_during_a_refresh_leaves_whole_chunks_and_a_resend_completes_it_once() {
    let dir = tempfile::tempdir().expect("dir");
    let url = fresh_database("killed");
    let values = values(dir.path());
    let admin = common::token_url(&url, "root", true, &[], &[]);
    // Enough users that the refresh is still running when the replica is killed.
    let users = 20_000;
    let victim = Server::start_url(&url, &values, &[], &[]);
    // Seeded in SQL (the CLI writes a row per round trip): each user with a balance and the one
    // ledger row that explains it.
    let mut seed = PgDb::connect(&common::runtime(), &url).expect("connect");
    for sql in [
        format!(
            "INSERT INTO users SELECT 'k' || lpad(i::text, 5, '0'), i % 500, 0, 1795000000
               FROM generate_series(0, {users} - 1) AS i"
        ),
        format!(
            "INSERT INTO transactions (username, amount, transaction_type, resource_type, description,
               balance_before, balance_after, created_at, created_by)
             SELECT 'k' || lpad(i::text, 5, '0'), i % 500, 'set', NULL, '', 0, i % 500, 1795000000, 'seed'
               FROM generate_series(0, {users} - 1) AS i"
        ),
    ] {
        seed.query(&sql, &[]).expect("seed");
    }
    let body = r#"{"action": "add", "amount": 7, "run_id": "killed-run"}"#;
    let target = format!("{}/admin/api/quota/refresh", victim.url);
    let admin2 = admin.clone();
    let sender = std::thread::spawn(move || {
        common::send(
            &common::agent(),
            "POST",
            &target,
            Some(&admin2),
            Some(body.as_bytes()),
            &[],
        )
    });
    // Kill it once the first chunks of the refresh have committed (each chunk is a transaction).
    let mut db = PgDb::connect(&common::runtime(), &url).expect("connect");
    let refreshed = "SELECT COUNT(*) FROM transactions WHERE transaction_type = 'auto_refresh'";
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while scalar(&mut db, refreshed) == 0 && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    victim.kill9();
    let _ = sender.join();
    // Whole chunks only: the run's recorded progress counts exactly the users refreshed, each once.
    let changed = scalar(&mut db, refreshed);
    assert!(
        changed > 0 && changed <= users,
        "{changed} of {users} users refreshed"
    );
    let twice = "SELECT COUNT(*) FROM (SELECT username FROM transactions
                   WHERE transaction_type = 'auto_refresh' GROUP BY username HAVING COUNT(*) > 1) AS t";
    assert_eq!(scalar(&mut db, twice), 0);
    let stored = db
        .query("SELECT result FROM refresh_runs WHERE run_id = 'killed-run'", &[])
        .expect("run");
    let SqlCell::Text(stored) = &stored[0][0] else {
        panic!("{stored:?}")
    };
    let stored: serde_json::Value = serde_json::from_str(stored).expect("json");
    assert_eq!(stored["users_updated"], changed, "{stored}");
    assert_eq!(stored.get("resume_after").is_some(), changed < users, "{stored}");
    assert!(ledger_mismatches(&mut db).is_empty());
    // Re-sent to another replica: completed exactly once.
    let other = Server::start_url(&url, &values, &[], &[]);
    for _ in 0..2 {
        let (st, b) = other.post("/admin/api/quota/refresh", &admin, body);
        assert_eq!(st, 200, "{b}");
    }
    assert_eq!(
        scalar(
            &mut db,
            "SELECT COUNT(*) FROM transactions WHERE transaction_type = 'auto_refresh'"
        ),
        users
    );
    assert_eq!(scalar(&mut db, twice), 0);
    assert!(ledger_mismatches(&mut db).is_empty());
    other.stop();
    println!("killed during the refresh with {changed} of {users} applied; re-sent: {users} applied once");
}
