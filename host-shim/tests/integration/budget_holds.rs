//! The budgets' running holds (schema 11, issue 51) over a real SQLite file: after every step of
//! a random mix of starts, extensions, ends, failed spawns and another writer's SQL, the totals the
//! triggers keep equal the sums of the sessions they stand for (`common::holds`; the same run over
//! PostgreSQL is in `postgres.rs`).

use crate::common;

use quota_core::Timestamp;
use quota_host::{SqliteDb, SqliteOptions, Worker};

const NOW: Timestamp = Timestamp(1_795_300_000);

#[test]
fn the_kept_holds_equal_the_sessions_sums_after_every_step() {
    let dir = tempfile::tempdir().expect("dir");
    for seed in [1, 7, 51] {
        let path = dir.path().join(format!("q{seed}.db"));
        let db = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("open");
        let mut w = Worker::new(common::runtime(), Box::new(db), &common::holds::values()).expect("worker");
        let ran = common::holds::run(&mut w, seed, 300, NOW);
        // The mix reached every kind of step, so every trigger fired.
        assert!(
            ran.started > 50
                && ran.extended > 10
                && ran.ended > 10
                && ran.failed > 10
                && ran.other_writer > 10,
            "seed {seed}: {ran:?}"
        );
    }
}

/// The fault build's assertion: a start charging a budget also sums its sessions and fails the
/// call when the kept totals differ. The random mix passes it at every start; a total that drifted
/// (a trigger dropped) stops the next start charging the budget, which records nothing.
#[test]
fn the_fault_build_checks_every_total_a_start_reads_against_its_sums() {
    let dir = tempfile::tempdir().expect("dir");
    let rt = common::load(quota_host::FAULT_COMPONENT_PATH, quota_host::Limits::default());
    let db = SqliteDb::open(&rt, &dir.path().join("q.db"), SqliteOptions::default()).expect("open");
    let mut w = Worker::new(rt, Box::new(db), &common::holds::values()).expect("worker");
    let ran = common::holds::run(&mut w, 29, 200, NOW);
    assert!(ran.started > 30, "{ran:?}");
    w.db()
        .query("DROP TRIGGER budget_holds_started", &[])
        .expect("drop");
    let hub = common::hub();
    let start = |w: &mut Worker, server: &str| {
        let body =
            format!(r#"{{"username":"ann","server_name":"{server}","runtime_minutes":5,"budget":"lab"}}"#);
        let req = quota_core::Request {
            method: "POST",
            path: "/api/quota/sessions",
            query: "",
            body: &body,
            caller: Some(&hub),
        };
        w.handle_request(&req, NOW.plus_seconds(86_400))
    };
    let first = start(&mut w, "x1").expect("the start itself reads totals that agree");
    assert_eq!(first.status, 201, "{}", first.body);
    let sessions = |w: &mut Worker| w.db().query("SELECT COUNT(*) FROM sessions", &[]).expect("count");
    let before = sessions(&mut w);
    let refused = match start(&mut w, "x2") {
        Ok(r) => format!("{} {}", r.status, r.body),
        Err(e) => e.to_string(),
    };
    assert!(
        refused.contains("the running total holds") && !refused.starts_with("201"),
        "{refused}"
    );
    assert_eq!(sessions(&mut w), before, "nothing recorded");
}

/// A drift no trigger prevented (a write by hand, a bug): the sweep's check finds it, names the
/// budget and sets the total to its sessions' sum; a sweep after it finds nothing (issue 59).
#[test]
fn the_sweep_finds_and_repairs_a_total_that_drifted() {
    let dir = tempfile::tempdir().expect("dir");
    let db = SqliteDb::open(
        &common::runtime(),
        &dir.path().join("q.db"),
        SqliteOptions::default(),
    )
    .expect("open");
    let mut w = Worker::new(common::runtime(), Box::new(db), &common::holds::values()).expect("worker");
    let now = Timestamp(1_795_300_000);
    common::holds::run(&mut w, 17, 60, now);
    let sweep = |w: &mut Worker| {
        let (st, b) = common::request(w, &common::admin(), "POST", "/admin/api/quota/expire", "{}", now);
        assert_eq!(st, 200, "{b}");
        b["holds_repaired"].clone()
    };
    assert_eq!(sweep(&mut w), serde_json::json!([]), "nothing drifted");
    let (kept, _) = common::holds::kept_and_summed(&mut w);
    assert!(!kept.is_empty(), "sessions run on a budget");
    for sql in [
        "UPDATE budget_holds SET held = held + 7000 WHERE budget = 'lab'",
        "INSERT INTO budget_holds (budget, held) VALUES ('gone', 3000)",
    ] {
        w.db().query(sql, &[]).expect(sql);
    }
    let found = sweep(&mut w);
    let names: Vec<&str> = found
        .as_array()
        .expect("list")
        .iter()
        .map(|d| d["budget"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["gone", "lab"], "{found}");
    assert_eq!(found[0]["kept"], 3, "{found}");
    assert_eq!(found[0]["summed"], 0, "{found}");
    let (kept, summed) = common::holds::kept_and_summed(&mut w);
    assert_eq!(kept, summed);
    assert_eq!(sweep(&mut w), serde_json::json!([]), "repaired once");
}
