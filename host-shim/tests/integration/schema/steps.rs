//! Each migration step on a database left at the schema before it: what it adds, and that it keeps
//! every row (schemas 3, 4, 6, 7, 8, 10 and 11).

use super::*;

#[test]
fn a_schema_6_database_gains_the_events_and_keeps_its_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let mut w = worker(&path);
    let hub = common::hub();
    for (method, path, body) in [
        (
            "POST",
            "/admin/api/quota/users/alice",
            r#"{"action":"set","amount":70}"#,
        ),
        (
            "POST",
            "/api/quota/sessions",
            r#"{"username":"alice","runtime_minutes":30}"#,
        ),
        (
            "POST",
            "/admin/api/quota/users/alice",
            r#"{"action":"add","amount":5,"expires_at":"2027-01-01T00:00:00Z"}"#,
        ),
    ] {
        let caller = if path.contains("sessions") {
            hub.clone()
        } else {
            common::admin()
        };
        let (st, b) = common::request(&mut w, &caller, method, path, body, NOW);
        assert!(st < 300, "{path}: {b}");
    }
    back_to_schema_6(w.db());
    let before = tables(w.db());
    let m = w.migrate().expect("migrate");
    assert_eq!((m.from_version, m.to_version), (6, 12));
    assert_eq!(before, as_before_schema_7(tables(w.db())));
    // The session running across the upgrade is not warned (its marks were never armed), and it
    // is extended and ended as any other.
    let (st, b) = common::request(
        &mut w,
        &hub,
        "POST",
        "/api/quota/sessions/1/extend",
        r#"{"minutes":5}"#,
        NOW,
    );
    assert_eq!(st, 200, "{b}");
    let (st, b) = common::request(
        &mut w,
        &hub,
        "POST",
        "/api/quota/sessions/1/end",
        "{}",
        NOW.plus_seconds(60),
    );
    assert_eq!(st, 200, "{b}");
    let (st, b) = common::request(
        &mut w,
        &common::admin(),
        "GET",
        "/admin/api/quota/events",
        "",
        NOW,
    );
    assert_eq!(st, 200);
    assert_eq!(b["events"][0]["kind"], "session.ended", "{b}");
}

/// The day totals and the sums by user, each summed by (day, resource type): they must agree.
fn day_totals(w: &mut Worker) -> (Vec<Vec<SqlCell>>, Vec<Vec<SqlCell>>) {
    let kept = rows(
        w.db(),
        "SELECT day, resource_type, credits, minutes, sessions FROM usage_days ORDER BY day, resource_type",
    );
    let by_user = rows(
        w.db(),
        "SELECT day, resource_type, SUM(credits), SUM(minutes), SUM(sessions) FROM user_usage_days
         GROUP BY day, resource_type ORDER BY day, resource_type",
    );
    (kept, by_user)
}

/// Schema 8 keeps the day totals from the sums by user by trigger: a session's end writes one sum.
#[test]
fn a_schema_7_database_gains_the_day_total_triggers_and_its_totals_stay_the_users_sums() {
    let dir = tempfile::tempdir().expect("dir");
    let mut w = worker(&dir.path().join("q.db"));
    let (admin, hub) = (common::admin(), common::hub());
    let t0 = 1_795_230_000;
    let run = |w: &mut Worker, user: &str, server: &str, start: i64, minutes: i64| {
        let body = format!(r#"{{"username":"{user}","server_name":"{server}","runtime_minutes":60}}"#);
        let (st, s) = common::request(w, &hub, "POST", "/api/quota/sessions", &body, Timestamp(start));
        assert_eq!(st, 201, "{s}");
        let path = format!("/api/quota/sessions/{}/end", s["session_id"]);
        let (st, e) = common::request(w, &hub, "POST", &path, "{}", Timestamp(start + minutes * 60));
        assert_eq!(st, 200, "{e}");
    };
    for user in ["alice", "bob"] {
        let path = format!("/admin/api/quota/users/{user}");
        let (st, _) = common::request(
            &mut w,
            &admin,
            "POST",
            &path,
            r#"{"action":"set","amount":1000}"#,
            Timestamp(t0),
        );
        assert_eq!(st, 200);
    }
    // A new (user, day) row, the same row again (an upsert that updates), another user that day.
    run(&mut w, "alice", "", t0, 10);
    run(&mut w, "alice", "", t0 + 3_600, 20);
    run(&mut w, "bob", "b", t0, 5);
    let (kept, by_user) = day_totals(&mut w);
    assert_eq!(kept, by_user);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(int(&kept[0][3]), 35, "minutes of the day: {kept:?}");
    assert_eq!(int(&kept[0][4]), 3, "sessions of the day: {kept:?}");

    back_to_schema_7(w.db());
    let before = tables(w.db());
    let m = w.migrate().expect("migrate");
    assert_eq!((m.from_version, m.to_version), (7, 12));
    assert_eq!(
        without_schema_9(tables(w.db())),
        before,
        "the migration writes no row"
    );
    // The next day, and the first day again: both paths of the triggers.
    run(&mut w, "bob", "b", t0 + 86_400, 7);
    run(&mut w, "alice", "", t0 + 7_200, 1);
    let (kept, by_user) = day_totals(&mut w);
    assert_eq!(kept, by_user);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(int(&kept[0][3]), 36, "{kept:?}");
    assert_eq!(int(&kept[1][3]), 7, "{kept:?}");
}

#[test]
fn a_schema_3_database_gains_the_memberships_table_and_keeps_its_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let mut w = worker(&path);
    let (st, _) = common::request(
        &mut w,
        &common::admin(),
        "POST",
        "/admin/api/quota/users/alice",
        r#"{"action":"set","amount":7}"#,
        Timestamp(1_795_230_000),
    );
    assert_eq!(st, 200);
    // Schema 3 as the previous release wrote it: no membership tables.
    back_to_schema_5(w.db());
    w.db().query("DROP TABLE memberships", &[]).expect("drop");
    w.db().query("DROP TABLE group_members", &[]).expect("drop");
    w.db().query("DROP TABLE usage_days", &[]).expect("drop");
    w.db().query("DROP TABLE user_usage_days", &[]).expect("drop");
    w.db().query("PRAGMA user_version = 3", &[]).expect("version");
    let before = tables(w.db());
    let m = w.migrate().expect("migrate");
    assert_eq!((m.from_version, m.to_version), (3, 12));
    let mut after = tables(w.db());
    assert_eq!(after.remove("memberships"), Some(Vec::new()));
    assert_eq!(after.remove("group_members"), Some(Vec::new()));
    assert_eq!(after.remove("usage_days"), Some(Vec::new()));
    assert_eq!(after.remove("user_usage_days"), Some(Vec::new()));
    assert_eq!(before, as_before_schema_6(after));
    let (st, body) = common::request(
        &mut w,
        &common::admin(),
        "PUT",
        "/admin/api/quota/groups/lab",
        r#"{"members":["alice"]}"#,
        Timestamp(1_795_230_060),
    );
    assert_eq!(st, 200, "{body}");
}

#[test]
fn a_schema_4_database_gets_the_usage_sums_the_engine_would_have_kept() {
    let dir = tempfile::tempdir().expect("dir");
    let mut w = worker(&dir.path().join("q.db"));
    let (admin, hub) = (common::admin(), common::hub());
    let t0 = 1_795_230_000;
    common::request(
        &mut w,
        &admin,
        "POST",
        "/admin/api/quota/users/alice",
        r#"{"action":"set","amount":1000}"#,
        Timestamp(t0),
    );
    // Sessions ending on three days, one of them not billed (an unlimited user's minutes count).
    for (i, user) in ["alice", "alice", "bob"].iter().enumerate() {
        if *user == "bob" {
            common::request(
                &mut w,
                &admin,
                "POST",
                "/admin/api/quota/users/bob",
                r#"{"action":"set_unlimited","unlimited":true}"#,
                Timestamp(t0),
            );
        }
        let start = t0 + i as i64 * 86_400;
        let body = format!(r#"{{"username":"{user}","runtime_minutes":60}}"#);
        let (st, s) = common::request(
            &mut w,
            &hub,
            "POST",
            "/api/quota/sessions",
            &body,
            Timestamp(start),
        );
        assert_eq!(st, 201, "{s}");
        let path = format!("/api/quota/sessions/{}/end", s["session_id"]);
        let (st, e) = common::request(&mut w, &hub, "POST", &path, "{}", Timestamp(start + 600));
        assert_eq!(st, 200, "{e}");
    }
    let kept = tables(w.db());
    assert_eq!(kept["user_usage_days"].len(), 3, "{:?}", kept["user_usage_days"]);
    back_to_schema_5(w.db());
    w.db().query("DROP TABLE usage_days", &[]).expect("drop");
    w.db().query("DROP TABLE user_usage_days", &[]).expect("drop");
    w.db().query("PRAGMA user_version = 4", &[]).expect("version");
    let m = w.migrate().expect("migrate");
    assert_eq!((m.from_version, m.to_version), (4, 12));
    let kept = without_schema_7(kept);
    assert_eq!(
        without_schema_7(tables(w.db())),
        kept,
        "the same sums, rebuilt from the ledger and the sessions"
    );
    // A file set back by hand migrates again to the same sums (no row is counted twice).
    back_to_schema_5(w.db());
    w.db().query("PRAGMA user_version = 4", &[]).expect("version");
    w.migrate().expect("again");
    assert_eq!(without_schema_7(tables(w.db())), kept);
}

/// Schema 9 adds credit requests: a schema 8 database keeps every row, and takes requests at once
/// (one pending per user and account, held by its index too).
#[test]
fn a_schema_8_database_gains_credit_requests_and_keeps_its_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let mut w = worker(&dir.path().join("q.db"));
    let admin = common::admin();
    let (st, b) = common::request(
        &mut w,
        &admin,
        "POST",
        "/admin/api/quota/users/alice",
        r#"{"action":"set","amount":10}"#,
        NOW,
    );
    assert_eq!(st, 200, "{b}");
    back_to_schema_8(w.db());
    let before = tables(w.db());
    let m = w.migrate().expect("migrate");
    assert_eq!((m.from_version, m.to_version), (8, 12));
    assert_eq!(
        without_schema_9(tables(w.db())),
        before,
        "the migration writes no row"
    );
    let alice = quota_core::Caller {
        name: "alice".into(),
        admin: false,
        scopes: vec![],
    };
    let ask = r#"{"amount":5,"reason":"lab"}"#;
    let (st, b) = common::request(&mut w, &alice, "POST", "/api/quota/me/requests", ask, NOW);
    assert_eq!(st, 201, "{b}");
    let (st, b) = common::request(&mut w, &alice, "POST", "/api/quota/me/requests", ask, NOW);
    assert_eq!(st, 409, "{b}");
    // The index holds it too, whatever the engine read.
    let dup = w.db().query(
        "INSERT INTO credit_requests (username, budget, amount, reason, status, created_at)
         VALUES ('alice', '', 1, 'x', 'pending', 0)",
        &[],
    );
    assert!(dup.is_err(), "a second pending request for one account");
}

/// Schema 11 keeps what runs on each budget as running totals (issue 51). A schema 10 database
/// whose sessions on budgets were started and changed by the previous release (no triggers) gains
/// the totals from the sessions running, and they follow every write after.
#[test]
fn a_schema_10_database_gains_the_budgets_holds_from_the_sessions_running() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open");
    let mut w = Worker::new(common::runtime(), Box::new(db), &common::holds::values()).expect("worker");
    common::holds::run(&mut w, 3, 60, NOW);
    back_to_schema_10(w.db());
    // The previous release starts a session on a budget, extends one, ends one: no totals kept.
    for sql in [
        "INSERT INTO sessions (username, server_name, resource_type, rate_milli, runtime_minutes,
         estimated_cost_milli, start_time, billable, status, cost, budget)
         VALUES ('ann', 'old', 'cpu', 1000, 45, 45000, 1795300000, 1, 'active', 0, 'course')",
        "UPDATE sessions SET estimated_cost_milli = estimated_cost_milli + 7000 WHERE id = (SELECT MIN(id)
         FROM sessions WHERE status = 'active' AND budget = 'lab')",
        "UPDATE sessions SET status = 'completed' WHERE id = (SELECT MAX(id) FROM sessions
         WHERE status = 'active' AND budget = 'course' AND server_name <> 'old')",
    ] {
        w.db().query(sql, &[]).expect(sql);
    }
    let m = w.migrate().expect("migrate");
    assert_eq!((m.from_version, m.to_version), (10, 12));
    let (kept, summed) = common::holds::kept_and_summed(&mut w);
    assert_eq!(kept.len(), 2, "sessions run on both budgets: {kept:?}");
    assert_eq!(kept, summed);
    // And they follow the writes after it.
    common::holds::run(&mut w, 5, 60, NOW.plus_seconds(7200));
}

/// Schema 12 drops the ledger's index of a member's rows on a budget (the contract step schema 11
/// announced; issue 60): a schema 11 database loses that index and nothing else, keeps every row,
/// and the sessions on budgets started before it go on with their holds true.
#[test]
fn a_schema_11_database_loses_the_member_index_and_keeps_its_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open");
    let mut w = Worker::new(common::runtime(), Box::new(db), &common::holds::values()).expect("worker");
    let member = "transactions_by_budget_member".to_string();
    assert!(!indexes(w.db()).contains(&member), "a new database is made at 12");
    common::holds::run(&mut w, 11, 60, NOW);
    back_to_schema_11(w.db());
    assert_eq!(version_of(&path), 11);
    let mut expected = indexes(w.db());
    assert!(expected.contains(&member), "{expected:?}");
    expected.retain(|i| *i != member);
    let before = tables(w.db());
    let m = w.migrate().expect("migrate");
    assert_eq!((m.from_version, m.to_version), (11, 12));
    assert_eq!(indexes(w.db()), expected, "only the member index goes");
    assert_eq!(before, without_schema_12(tables(w.db())));
    let (kept, summed) = common::holds::kept_and_summed(&mut w);
    assert_eq!(kept, summed);
    common::holds::run(&mut w, 12, 60, NOW.plus_seconds(7200));
}

/// The previous release writes a budget session before each statement of the schema 10 to 12
/// migration in turn (issue 59: the rolling upgrade's holds drifted). SQLite's migration holds the
/// write lock from its first statement, so every write waits for it: the totals stay the sums.
#[test]
fn the_previous_releases_writes_at_each_step_of_the_migration_keep_the_holds_true() {
    use common::interleave::{Interleaved, OldRelease, OldWrite, Outcome};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    let mut statements = None;
    let mut k = 0;
    while statements.is_none_or(|n| k < n) {
        for write in [OldWrite::Start, OldWrite::End] {
            let dir = tempfile::tempdir().expect("dir");
            let path = dir.path().join("q.db");
            let rt = common::runtime();
            let inner = SqliteDb::open(&rt, &path, SqliteOptions::default()).expect("open");
            let old_db = SqliteDb::open(
                &rt,
                &path,
                SqliteOptions {
                    busy_timeout: Some(std::time::Duration::ZERO),
                    ..SqliteOptions::default()
                },
            )
            .expect("the previous release's connection");
            let old = Arc::new(Mutex::new(OldRelease {
                db: Box::new(old_db),
                no_wait: None,
            }));
            let (armed, seen) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
            let outcome = Arc::new(Mutex::new(Outcome::NotYet));
            let db = Interleaved {
                inner: Box::new(inner),
                armed: armed.clone(),
                seen: seen.clone(),
                at: k,
                write,
                old: old.clone(),
                outcome: outcome.clone(),
            };
            let mut w = Worker::new(rt.clone(), Box::new(db), &common::holds::values()).expect("worker");
            common::holds::run(&mut w, 7 + k as u64, 40, NOW);
            back_to_schema_10(w.db());
            armed.store(true, Ordering::SeqCst);
            let m = w.migrate().expect("migrate");
            armed.store(false, Ordering::SeqCst);
            assert_eq!((m.from_version, m.to_version), (10, 12));
            statements.get_or_insert(seen.load(Ordering::SeqCst));
            let o = Interleaved::finish(&old, &outcome, write);
            assert_ne!(o, Outcome::NotYet, "statement {k} ran");
            let (kept, summed) = common::holds::kept_and_summed(&mut w);
            assert_eq!(
                kept, summed,
                "{write:?} before statement {k} of the migration ({o:?})"
            );
        }
        k += 1;
    }
    assert!(statements.is_some_and(|n| n > 8), "{statements:?}");
}
