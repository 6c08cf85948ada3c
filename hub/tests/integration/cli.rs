//! The admin command line: set-quota / add-quota with arguments and CSV files, list-quota, against
//! the database directly and through a running server.

use crate::common;

use std::path::Path;

use common::cli_in;

fn balances(listing: &str) -> Vec<(String, String)> {
    listing
        .lines()
        .skip(2)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// Runs one command with `where_` (the --db or --url/--token arguments) appended.
fn run(dir: &Path, args: &[&str], where_: &[String]) -> (i32, String, String) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(where_.iter().map(String::as_str));
    cli_in(dir, &all)
}

fn exercise(dir: &Path, db: &Path, where_: &[String]) {
    // Arguments: names trimmed and lowercased.
    let (code, out, err) = run(dir, &["set-quota", " Alice ", "BOB", "--amount", "50"], where_);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("set-quota: 2 succeeded, 0 failed"), "{out}");
    let (code, out, err) = run(dir, &["add-quota", "alice", "--amount", "5"], where_);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 succeeded"), "{out}");

    // A file: per-row quota wins, --amount fills the gaps, a row without either is skipped.
    std::fs::write(dir.join("set.csv"), "username,quota\ncarol,70\ndave,\nerin,9\n").expect("csv");
    let (code, out, err) = run(dir, &["set-quota", "-f", "set.csv"], where_);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("line 3: dave has no quota"), "{err}");
    assert!(out.contains("2 succeeded, 0 failed, 1 skipped"), "{out}");
    let (code, _, err) = run(dir, &["set-quota", "-f", "set.csv", "--amount", "1"], where_);
    assert_eq!(code, 0, "{err}");

    // add-quota ignores the quota column and needs --amount.
    let (code, _, err) = run(dir, &["add-quota", "-f", "set.csv"], where_);
    assert_ne!(code, 0);
    assert!(err.contains("--amount is required"), "{err}");
    let (code, _, err) = run(dir, &["add-quota", "-f", "set.csv", "--amount", "2"], where_);
    assert_eq!(code, 0, "{err}");

    // A malformed file is refused before anything is written.
    let before = common::dump(db);
    std::fs::write(dir.join("bad.csv"), "username,quota\nfrank,5\ngina,lots\n").expect("csv");
    let (code, _, err) = run(dir, &["set-quota", "-f", "bad.csv"], where_);
    assert_ne!(code, 0);
    assert!(
        err.contains("line 3: quota `lots` is not a whole number"),
        "{err}"
    );
    std::fs::write(dir.join("nohead.csv"), "name,quota\nfrank,5\n").expect("csv");
    let (code, _, err) = run(dir, &["set-quota", "-f", "nohead.csv"], where_);
    assert_ne!(code, 0);
    assert!(err.contains("`username` column"), "{err}");
    assert_eq!(before, common::dump(db), "a refused file wrote something");

    // A row the engine refuses fails alone; the rest apply; the exit status says so.
    std::fs::write(dir.join("mixed.csv"), "username,quota\nhank,3\nin/valid,4\n").expect("csv");
    let (code, out, err) = run(dir, &["set-quota", "-f", "mixed.csv"], where_);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("1 succeeded, 1 failed"), "{out}");
    assert!(err.contains("line 3: in/valid"), "{err}");

    let (code, out, err) = run(dir, &["list-quota"], where_);
    assert_eq!(code, 0, "{err}");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("Users (6)"), "{out}");
    let head: Vec<&str> = lines
        .next()
        .unwrap_or("")
        .split("  ")
        .filter(|s| !s.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(head, ["Username", "Balance", "Last Updated"], "{out}");
    assert_eq!(
        balances(&out),
        pairs(&[
            ("alice", "55"),
            ("bob", "50"),
            ("carol", "72"),
            ("dave", "3"),
            ("erin", "11"),
            ("hank", "3")
        ]),
        "{out}"
    );
}

/// A time comfortably ahead of every clock a test run uses (`QUOTA_HUB_TEST_DAYS_AHEAD` moves the
/// commands' clock by up to a year or so; a grant may lapse at most 3,660 days ahead).
fn far_ahead() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    format!("{}Z", quota_core::Timestamp(now + 1000 * 86_400))
}

/// `budget create|list|show|set|add|deduct|delete` and `--expires` on the quota commands.
fn exercise_budgets(dir: &Path, where_: &[String]) {
    let at = far_ahead();
    let (code, out, err) = run(
        dir,
        &[
            "budget",
            "create",
            "course-101",
            "--description",
            "Intro to ML",
            "--user",
            "ann",
            "--group",
            "students",
            "--accelerator",
            "cpu",
            "--member-limit",
            "300",
        ],
        where_,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("budget course-101: created"), "{out}");
    let (code, out, err) = run(
        dir,
        &["budget", "add", "course-101", "500", "--expires", &at],
        where_,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("budget course-101: balance 500"), "{out}");
    let (code, out, err) = run(dir, &["budget", "deduct", "course-101", "100"], where_);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("balance 400"), "{out}");
    let (code, _, err) = run(dir, &["budget", "deduct", "course-101", "1000"], where_);
    assert_ne!(code, 0);
    assert!(err.contains("Insufficient balance"), "{err}");
    let (code, out, err) = run(dir, &["budget", "list"], where_);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("course-101  balance 400 (0 reserved), 1 members, 300 per member a month  [api]"),
        "{out}"
    );
    let (code, out, err) = run(dir, &["budget", "show", "course-101"], where_);
    assert_eq!(code, 0, "{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(shown["grants"][0]["remaining"], 400, "{out}");
    let (code, _, err) = run(dir, &["budget", "delete", "course-101"], where_);
    assert_ne!(code, 0, "a budget holding credit is not deleted");
    assert!(err.contains("still holds a balance of 400"), "{err}");
    let (code, _, err) = run(dir, &["budget", "set", "course-101", "0"], where_);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(dir, &["budget", "delete", "course-101"], where_);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("budget course-101: deleted"), "{out}");
    // Dated credit for users: a bad time is refused before anything is written.
    let (code, _, err) = run(
        dir,
        &["add-quota", "dana", "--amount", "5", "--expires", "friday"],
        where_,
    );
    assert_ne!(code, 0);
    assert!(err.contains("add-quota: --expires:"), "{err}");
    let (code, _, err) = run(
        dir,
        &["add-quota", "dana", "--amount", "5", "--expires", &at],
        where_,
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(
        dir,
        &["set-quota", "eve", "--amount", "7", "--expires", &at],
        where_,
    );
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = run(dir, &["budget", "list"], where_);
    assert!(out.contains("Budgets (0)"), "the deleted budget is gone: {out}");
}

#[test]
fn quota_commands_against_the_database() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    exercise(dir.path(), &db, &[format!("--db=sqlite://{}", db.display())]);
    exercise_budgets(dir.path(), &[format!("--db=sqlite://{}", db.display())]);
    let grants = rusqlite::Connection::open(&db)
        .expect("db")
        .query_row(
            "SELECT COUNT(*) FROM grants WHERE username IN ('dana', 'eve') AND remaining > 0",
            [],
            |r| r.get::<_, i64>(0),
        )
        .expect("grants");
    assert_eq!(grants, 2, "--expires made dated grants");
}

#[test]
fn quota_commands_through_a_running_server() {
    let setup = common::example();
    let server = setup.start(&[]);
    let token = setup.token("root", true, &[]);
    exercise(
        setup.dir.path(),
        &setup.db,
        &[format!("--url={}", server.url), format!("--token={token}")],
    );
    exercise_budgets(
        setup.dir.path(),
        &[format!("--url={}", server.url), format!("--token={token}")],
    );
    // Audit rows name the token's user.
    assert!(common::dump(&setup.db).contains("\"root\""));
    // Without a token, or with a user's, the server refuses.
    let (code, _, err) = cli_in(setup.dir.path(), &["list-quota", "--url", &server.url]);
    assert_ne!(code, 0);
    assert!(err.contains("--url needs an admin token"), "{err}");
    let alice = setup.token("alice", false, &[]);
    let (code, _, err) = cli_in(
        setup.dir.path(),
        &["list-quota", "--url", &server.url, "--token", &alice],
    );
    assert_ne!(code, 0);
    assert!(err.contains("403"), "{err}");
    server.stop();
}

#[test]
fn large_files_apply_every_row() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let mut csv = String::from("username,quota\n");
    for i in 0..2500 {
        csv.push_str(&format!("user{i:04},{}\n", i % 100));
    }
    std::fs::write(dir.path().join("big.csv"), csv).expect("csv");
    let dbarg = format!("--db=sqlite://{}", db.display());
    let (code, out, err) = cli_in(dir.path(), &["set-quota", "-f", "big.csv", &dbarg]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2500 succeeded, 0 failed"), "{out}");
    let (code, out, err) = cli_in(
        dir.path(),
        &["add-quota", "-f", "big.csv", "--amount", "1", &dbarg],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2500 succeeded"), "{out}");
    let (_, out, _) = cli_in(dir.path(), &["list-quota", &dbarg]);
    assert!(out.starts_with("Users (2500)\n"), "{}", &out[..40.min(out.len())]);
    let b = balances(&out);
    assert_eq!(b.len(), 2500);
    assert!(
        b.contains(&("user0142".to_string(), "43".to_string())),
        "{:?}",
        &b[140..145]
    );
}

#[test]
fn refresh_dry_run_then_for_real_and_cleanup() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let dbarg = format!("--db=sqlite://{}", db.display());
    let values = common::write_values(
        dir.path(),
        "values.yaml",
        &serde_json::json!({"custom": {"authMode": "github", "quota": {"refreshRules": {
            "topup": {"enabled": true, "schedule": "0 6 * * 1", "action": "add", "amount": 10, "maxBalance": 25}
        }}}}),
    );
    let varg = format!("--values={}", values.display());
    let (code, _, err) = cli_in(dir.path(), &["set-quota", "alice", "--amount", "5", &dbarg]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cli_in(dir.path(), &["set-quota", "bob", "--amount", "20", &dbarg]);
    assert_eq!(code, 0, "{err}");

    let before = common::dump(&db);
    let (code, out, err) = cli_in(dir.path(), &["refresh", "topup", "--dry-run", &dbarg, &varg]);
    assert_eq!(code, 0, "{err}");
    let v = common::json(&out);
    assert_eq!(
        (v["users_updated"].as_i64(), v["total_change"].as_i64()),
        (Some(2), Some(15)),
        "{out}"
    );
    assert_eq!(before, common::dump(&db), "a dry run wrote");

    let (code, out, err) = cli_in(dir.path(), &["refresh", "topup", &dbarg, &varg]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(common::json(&out)["total_change"], 15, "{out}");
    let (_, out, _) = cli_in(dir.path(), &["list-quota", &dbarg]);
    assert_eq!(balances(&out), pairs(&[("alice", "15"), ("bob", "25")]), "{out}");

    let (code, _, err) = cli_in(dir.path(), &["refresh", "nope", &dbarg, &varg]);
    assert_ne!(code, 0);
    assert!(err.contains("nope"), "{err}");

    let (code, out, err) = cli_in(dir.path(), &["cleanup", &dbarg]);
    assert_eq!(code, 0, "{err}");
    assert!(common::json(&out).is_object(), "{out}");

    let (code, _, err) = cli_in(
        dir.path(),
        &[
            "token",
            "issue",
            &dbarg,
            "--user",
            "x",
            "--scope",
            "quota:everything",
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("quota:everything"), "{err}");
}
