//! `backup` and `restore` of a SQLite database: a backup taken while 8 clients write holds every
//! write acknowledged before it began and reconciles; a restore checks the backup first (a damaged
//! file, a ledger that does not add up, another schema version: refused, nothing changed), refuses
//! while a server has the database open, and keeps what it replaced.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::{cli, Setup};

const WRITERS: usize = 8;

fn balances(db: &std::path::Path) -> Vec<(String, i64)> {
    let c = rusqlite::Connection::open(db).expect("open");
    let mut s = c
        .prepare("SELECT username, balance FROM users ORDER BY username")
        .expect("prepare");
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// Users whose balance is not the sum of their ledger, and SQLite's integrity verdict.
fn reconciles(db: &std::path::Path) -> (Vec<String>, String) {
    let c = rusqlite::Connection::open(db).expect("open");
    let mut s = c
        .prepare(
            "SELECT u.username FROM users u
             LEFT JOIN transactions t ON t.username = u.username AND t.budget IS NULL
             GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)",
        )
        .expect("prepare");
    let wrong = s
        .query_map([], |r| r.get(0))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity");
    (wrong, ok)
}

fn arg(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `quota-hub CMD --db <the setup's file> --values <its values> ARGS...`.
fn on_db(setup: &Setup, cmd: &str, args: &[&str]) -> (i32, String, String) {
    let (db, values) = (format!("sqlite://{}", arg(&setup.db)), arg(&setup.values));
    let mut all = vec![cmd, "--db", &db, "--values", &values];
    all.extend_from_slice(args);
    cli(&all)
}

fn seed(setup: &Setup, users: usize) {
    let csv = setup.dir.path().join("seed.csv");
    let mut text = String::from("username,quota\n");
    for i in 0..users {
        text.push_str(&format!("seed{i:05},{}\n", i % 1000));
    }
    std::fs::write(&csv, text).expect("csv");
    let (code, _, err) = on_db(setup, "set-quota", &["-f", &arg(&csv)]);
    assert_eq!(code, 0, "{err}");
}

/// A file's permission bits.
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
}

#[test]
fn a_backup_under_8_writers_holds_every_acknowledged_write_and_reconciles() {
    let setup = common::example();
    // Enough rows that the copy takes a while, with the writers going on meanwhile.
    seed(&setup, 20_000);
    let admin = setup.token("root", true, &[]);
    let server = Arc::new(setup.start(&[]));
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    // The slowest write answered while the backup ran (a figure printed, not asserted).
    let (backing_up, slowest_us) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let slowest_else_us = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..WRITERS)
        .map(|i| {
            let (server, stop, acked, admin) = (server.clone(), stop.clone(), acked.clone(), admin.clone());
            let (backing_up, slowest_us, slowest_else_us) =
                (backing_up.clone(), slowest_us.clone(), slowest_else_us.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let t = std::time::Instant::now();
                    let (st, body) = server.post(
                        &format!("/admin/api/quota/users/writer{i}"),
                        &admin,
                        r#"{"action": "add", "amount": 1}"#,
                    );
                    assert_eq!(st, 200, "{body}");
                    let took = t.elapsed().as_micros() as u64;
                    if backing_up.load(Ordering::SeqCst) {
                        slowest_us.fetch_max(took, Ordering::SeqCst);
                    } else {
                        slowest_else_us.fetch_max(took, Ordering::SeqCst);
                    }
                    acked[i].fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    // Every writer has written before the backup begins.
    while acked.iter().any(|a| a.load(Ordering::SeqCst) < 5) {
        std::thread::yield_now();
    }
    let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::SeqCst)).collect();
    let out = setup.dir.path().join("backup.db");
    backing_up.store(true, Ordering::SeqCst);
    let (code, stdout, err) = on_db(&setup, "backup", &["-o", &arg(&out)]);
    backing_up.store(false, Ordering::SeqCst);
    let during: u64 =
        acked.iter().map(|a| a.load(Ordering::SeqCst)).sum::<u64>() - before.iter().sum::<u64>();
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().expect("writer");
    }
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("integrity ok, every balance equals its ledger"),
        "{stdout}"
    );
    assert!(
        err.contains("backing up") && err.contains("checking the copy"),
        "progress: {err}"
    );
    println!(
        "writes acknowledged while the backup ran: {during}; the slowest took {} ms, {} ms before and after it (8 writers, debug build)",
        slowest_us.load(Ordering::SeqCst) as f64 / 1000.0,
        slowest_else_us.load(Ordering::SeqCst) as f64 / 1000.0
    );
    let got: std::collections::HashMap<String, i64> = balances(&out).into_iter().collect();
    for (i, n) in before.iter().enumerate() {
        let b = got.get(&format!("writer{i}")).copied().unwrap_or(0);
        assert!(
            b >= *n as i64,
            "writer{i}: {n} writes acknowledged before the backup, {b} in it"
        );
    }
    assert_eq!(got.len(), 20_000 + WRITERS);
    assert_eq!(reconciles(&out), (vec![], "ok".to_string()));
    for leftover in ["backup.db.partial", "backup.db.final", "backup.db-wal"] {
        assert!(
            !setup.dir.path().join(leftover).exists(),
            "{leftover} left behind"
        );
    }
    // A second backup to the same file needs --force.
    let (code, _, err) = on_db(&setup, "backup", &["-o", &arg(&out)]);
    assert_ne!(code, 0);
    assert!(err.contains("--force"), "{err}");
    Arc::try_unwrap(server).ok().expect("one owner").stop();
}

#[test]
fn restore_checks_the_backup_refuses_a_running_server_and_keeps_what_it_replaces() {
    let setup = common::example();
    let admin = setup.token("root", true, &[]);
    let server = setup.start(&[]);
    for (u, n) in [("alice", 30), ("bob", 40)] {
        let (st, b) = server.post(
            &format!("/admin/api/quota/users/{u}"),
            &admin,
            &format!(r#"{{"action": "set", "amount": {n}}}"#),
        );
        assert_eq!(st, 200, "{b}");
    }
    let backup = setup.dir.path().join("b.db");
    let (code, _, err) = on_db(&setup, "backup", &["-o", &arg(&backup)]);
    assert_eq!(code, 0, "{err}");
    let (st, b) = server.post(
        "/admin/api/quota/users/alice",
        &admin,
        r#"{"action": "set", "amount": 999}"#,
    );
    assert_eq!(st, 200, "{b}");

    // The server has the database open: refused, nothing changed.
    let (code, _, err) = on_db(&setup, "restore", &["-i", &arg(&backup)]);
    assert_ne!(code, 0);
    assert!(
        err.contains("another process has it open") && err.contains("nothing was changed"),
        "{err}"
    );
    server.stop();
    assert_eq!(
        balances(&setup.db),
        [("alice".to_string(), 999), ("bob".to_string(), 40)]
    );

    // Bad backups: each refused, naming why, the database untouched.
    let bad = |name: &str, change: &dyn Fn(&rusqlite::Connection)| {
        let p = setup.dir.path().join(name);
        std::fs::copy(&backup, &p).expect("copy");
        change(&rusqlite::Connection::open(&p).expect("open"));
        p
    };
    let garbage = setup.dir.path().join("garbage.db");
    std::fs::write(&garbage, "not a database at all, not even close".repeat(200)).expect("write");
    let tampered = bad("tampered.db", &|c| {
        c.execute(
            "UPDATE users SET balance = balance + 5 WHERE username = 'bob'",
            [],
        )
        .expect("update");
    });
    let older = bad("older.db", &|c| {
        c.execute_batch("DROP TABLE quota_schema; PRAGMA user_version = 4")
            .expect("pragma")
    });
    for (file, says) in [
        (&garbage, "does not open as a SQLite database"),
        (&tampered, "1 balance(s) differ from the sum of their ledger: bob"),
        (&older, "schema version 4, this quota-hub writes version 12"),
    ] {
        let (code, _, err) = on_db(&setup, "restore", &["-i", &arg(file)]);
        assert_ne!(code, 0, "{}", file.display());
        assert!(
            err.contains(says) && err.contains("was not changed"),
            "{}: {err}",
            file.display()
        );
        assert_eq!(balances(&setup.db)[0], ("alice".to_string(), 999));
    }

    let (code, stdout, err) = on_db(&setup, "restore", &["-i", &arg(&backup)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("restored") && stdout.contains("is kept as"),
        "{stdout}"
    );
    let kept = std::fs::read_dir(setup.dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.to_string_lossy().contains("q.db.before-restore-"))
        .expect("the replaced database is kept");
    assert_eq!(balances(&kept)[0], ("alice".to_string(), 999));
    // The restored database and the one it replaced are their owner's alone (0600).
    for p in [&kept, &setup.dir.path().join("q.db")] {
        assert_eq!(mode(p), 0o600, "{}", p.display());
    }
    // The server starts on the restored database and answers from it.
    let server = setup.start(&[]);
    let (st, body) = server.get("/admin/api/quota/users/alice", &admin);
    assert_eq!(st, 200, "{body}");
    assert_eq!(common::json(&body)["balance"], 30);
    server.stop();
    assert_eq!(reconciles(&setup.db), (vec![], "ok".to_string()));
}

#[test]
fn backups_into_a_folder_are_named_by_time_and_the_oldest_go() {
    let setup = common::example();
    seed(&setup, 3);
    let dir = setup.dir.path().join("backups");
    std::fs::create_dir(&dir).expect("dir");
    for old in [
        "quota-20200101T000000Z.db",
        "quota-20210101T000000Z.db",
        "notes.txt",
    ] {
        std::fs::write(dir.join(old), "x").expect("write");
    }
    let out = format!("{}/", arg(&dir));
    let (code, stdout, err) = on_db(&setup, "backup", &["-o", &out, "--keep", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("removed") && stdout.contains("quota-20200101T000000Z.db"),
        "{stdout}"
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // What the backup did, for the metrics (serve --backup-dir): kept beside the backups.
    assert_eq!(names.len(), 4, "{names:?}");
    assert_eq!(names.remove(0), "backup-state.json");
    assert_eq!(names[0], "notes.txt", "only backups are pruned");
    assert_eq!(names[1], "quota-20210101T000000Z.db");
    assert!(
        names[2].starts_with("quota-20")
            && names[2].ends_with("Z.db")
            && names[2].len() == "quota-20210101T000000Z.db".len()
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("backup-state.json")).expect("state"))
            .expect("json");
    let size = std::fs::metadata(dir.join(&names[2])).expect("backup").len();
    assert_eq!(
        (state["last_bytes"].as_u64(), state["failures"].as_u64()),
        (Some(size), Some(0)),
        "{state}"
    );
    assert_eq!(balances(&dir.join(&names[2])).len(), 3);
    assert_eq!(mode(&dir.join(&names[2])), 0o600, "a backup is its owner's alone");
    let (code, _, err) = on_db(
        &setup,
        "backup",
        &["-o", &arg(&setup.dir.path().join("one.db")), "--keep", "2"],
    );
    assert_ne!(code, 0);
    assert!(err.contains("--keep: only with a folder"), "{err}");
}

#[test]
fn postgres_is_pointed_at_its_own_tools() {
    for cmd in ["backup", "restore"] {
        let io = if cmd == "backup" { "-o" } else { "-i" };
        let (code, _, err) = cli(&[cmd, "--db", "postgres://quota:secret@db/quota", io, "x.db"]);
        assert_ne!(code, 0);
        assert!(err.contains("pg_dump") && !err.contains("secret"), "{err}");
    }
}

/// `migrate` is the one step that migrates (docs/upgrade.md): a command on an older file refuses
/// naming it and changes nothing; `migrate` wants a backup folder for a SQLite file, backs up
/// first (the copy keeps the old schema; pre-migration backups are never pruned, and `backups`
/// lists them), then migrates; once current it has nothing to do.
#[test]
fn migrate_backs_up_first_and_nothing_else_migrates() {
    let setup = common::example();
    seed(&setup, 30);
    let as_schema_9 = || {
        let c = rusqlite::Connection::open(&setup.db).expect("open");
        c.execute_batch("DROP TABLE quota_schema; PRAGMA user_version = 9")
            .expect("schema 9");
    };
    let schema = |p: &std::path::Path| -> (i64, i64) {
        let c = rusqlite::Connection::open(p).expect("open");
        let floor: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("floor");
        let version = c
            .query_row("SELECT MAX(version) FROM quota_schema", [], |r| r.get(0))
            .unwrap_or(floor);
        (version, floor)
    };
    as_schema_9();
    let (code, _, err) = on_db(&setup, "list-quota", &[]);
    assert_ne!(code, 0);
    assert!(
        err.contains("schema version 9") && err.contains("quota-hub migrate"),
        "{err}"
    );
    assert_eq!(schema(&setup.db), (9, 9), "nothing migrated");
    let (code, _, err) = on_db(&setup, "migrate", &[]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--backup-dir") && err.contains("nothing migrated"),
        "{err}"
    );
    let dir = setup.dir.path().join("pre-migration");
    for round in 0..3 {
        let (code, out, err) = on_db(&setup, "migrate", &["--backup-dir", &arg(&dir)]);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("backing it up first") && out.contains("schema 9 -> 12"),
            "{out}{err}"
        );
        assert_eq!(
            schema(&setup.db),
            (12, 9),
            "version 12, the floor 9 where schema 9 engines read it"
        );
        // The next backup gets a later name (they sort as their times, one per second).
        let newest = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "db") && !p.to_string_lossy().contains("2026010"))
            .max()
            .expect("a backup");
        std::fs::rename(&newest, dir.join(format!("quota-2026010{round}T000000Z.db"))).expect("rename");
        as_schema_9();
    }
    let mut kept: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .collect();
    kept.sort();
    let names: Vec<_> = kept
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "quota-20260100T000000Z.db",
            "quota-20260101T000000Z.db",
            "quota-20260102T000000Z.db"
        ],
        "every pre-migration backup kept"
    );
    let (code, listed, err) = common::cli(&["backups", &arg(&dir)]);
    assert_eq!(code, 0, "{err}");
    for n in &names {
        assert!(
            listed.contains(n.as_str()) && listed.contains("schema 9"),
            "{listed}"
        );
    }
    for p in &kept {
        assert_eq!(
            schema(p),
            (9, 9),
            "{}: the database before its migration",
            p.display()
        );
        assert_eq!(reconciles(p), (Vec::new(), "ok".to_string()));
        assert_eq!(mode(p), 0o600);
    }
    let (code, out, err) = on_db(&setup, "migrate", &["--backup-dir", &arg(&dir)]);
    assert_eq!(code, 0, "{err}");
    let (code, out2, err) = on_db(&setup, "migrate", &["--backup-dir", &arg(&dir)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("schema 9 -> 12") && out2.contains("nothing to migrate"),
        "{out}{out2}"
    );
    assert_eq!(balances(&setup.db).len(), 30);
}
