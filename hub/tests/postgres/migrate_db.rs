//! `quota-hub migrate-db`: a SQLite file of thousands of users and sessions copied into PostgreSQL
//! whole, then verified.

use super::*;

#[test]
fn migrate_db_copies_a_sqlite_file_with_thousands_of_users_and_sessions() {
    let dir = tempfile::tempdir().expect("dir");
    let values = values(dir.path());
    let file = dir.path().join("q.db");
    let users = 3_000;
    let csv = dir.path().join("users.csv");
    let rows: String = (0..users)
        .map(|i| format!("m{i:05},{}\n", 100 + i % 700))
        .collect();
    std::fs::write(&csv, format!("username,quota\n{rows}")).expect("csv");
    let sqlite = format!("sqlite://{}", file.display());
    let (code, _, err) = common::cli(&[
        "set-quota",
        "--db",
        &sqlite,
        "--values",
        &values.to_string_lossy(),
        "-f",
        &csv.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{err}");
    let admin = common::token(&file, "root", true, &[]);
    let hub = common::token(&file, "hub", false, &["quota:sessions"]);
    let server = Server::start(&file, &values, &[]);
    let mut ids = Vec::new();
    for i in 0..2_000 {
        let body = format!(r#"{{"username": "m{:05}", "runtime_minutes": 5}}"#, i % users);
        let (st, b) = server.post("/api/quota/sessions", &hub, &body);
        assert_eq!(st, 201, "{b}");
        ids.push(json(&b)["session_id"].as_i64().expect("id"));
    }
    for id in &ids[..1_500] {
        let (st, b) = server.post(&format!("/api/quota/sessions/{id}/end"), &hub, "{}");
        assert_eq!(st, 200, "{b}");
    }
    let before = server.get("/admin/api/quota/", &admin).1;
    server.stop();

    let url = fresh_database("migrated");
    let migrate = |extra: &[&str]| {
        let mut args = vec!["migrate-db", "--from", &sqlite, "--to", &url, "--values"];
        let v = values.to_string_lossy().to_string();
        args.push(&v);
        args.extend(extra);
        common::cli(&args)
    };
    let (code, out, err) = migrate(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("every balance equals its ledger"), "{out}");
    assert!(
        out.contains(&format!("users {users}")) && out.contains("sessions 2000"),
        "{out}"
    );
    // A second copy into the now non-empty target is refused, and changes nothing.
    let (code, _, err) = migrate(&[]);
    assert_ne!(code, 0);
    assert!(
        err.contains("already holds") && err.contains("--replace"),
        "{err}"
    );
    let (code, _, err) = migrate(&["--replace"]);
    assert_eq!(code, 0, "{err}");

    let mut db = PgDb::connect(&common::runtime(), &url).expect("connect");
    assert!(ledger_mismatches(&mut db).is_empty());
    assert_eq!(
        scalar(&mut db, "SELECT COUNT(*) FROM sessions WHERE status = 'active'"),
        500
    );
    // The tables the target's triggers keep are what they stand for, not copied twice: the day
    // totals the users' sums (1,500 sessions ended), the budgets' holds the sessions running.
    assert_eq!(
        scalar(&mut db, "SELECT SUM(sessions)::bigint FROM usage_days"),
        1_500
    );
    assert_eq!(
        scalar(&mut db, "SELECT SUM(sessions)::bigint FROM user_usage_days"),
        1_500
    );
    // The copy serves as the original did: the same list, the same tokens, ids continuing.
    let server = Server::start_url(&url, &values, &[], &[]);
    let after = server.get("/admin/api/quota/", &admin).1;
    assert_eq!(before, after);
    let (st, b) = server.post(
        "/api/quota/sessions",
        &hub,
        r#"{"username": "m00001", "runtime_minutes": 5, "server_name": "after"}"#,
    );
    assert_eq!(st, 201, "{b}");
    assert_eq!(
        json(&b)["session_id"].as_i64(),
        Some(ids.iter().max().unwrap() + 1)
    );
    server.stop();
}
