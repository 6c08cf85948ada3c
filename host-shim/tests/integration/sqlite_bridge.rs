//! The SQLite bridge on its own: typed values and errors, and checkpointing off the request path.

use crate::common;

use quota_host::{Checkpointer, Database, SqlCell, SqlError, SqliteDb, SqliteOptions};

fn open(path: &std::path::Path, auto_checkpoint: bool) -> SqliteDb {
    SqliteDb::open(
        &common::runtime(),
        path,
        SqliteOptions {
            no_auto_checkpoint: !auto_checkpoint,
            ..SqliteOptions::default()
        },
    )
    .expect("open")
}

/// Writes enough rows to pass SQLite's 1,000-page auto-checkpoint threshold in one commit; returns
/// the size of the main database file right after it.
fn big_commit(path: &std::path::Path, auto_checkpoint: bool) -> (SqliteDb, u64) {
    let mut db = open(path, auto_checkpoint);
    db.query("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT NOT NULL)", &[])
        .expect("table");
    let rows: Vec<Vec<SqlCell>> = (0..50_000)
        .map(|i| vec![format!("u{i:05}").into(), "x".repeat(150).into()])
        .collect();
    db.begin().expect("begin");
    assert_eq!(
        db.execute_many("INSERT INTO t (k, v) VALUES (?1, ?2)", &rows)
            .expect("write"),
        50_000
    );
    db.commit().expect("commit");
    let size = std::fs::metadata(path).expect("db file").len();
    (db, size)
}

#[test]
fn without_auto_checkpoint_a_commit_leaves_the_copy_to_an_explicit_checkpoint() {
    let dir = tempfile::tempdir().expect("dir");
    // With SQLite's default, the commit itself copied the pages into the database file.
    let (_, with_auto) = big_commit(&dir.path().join("auto.db"), true);
    assert!(
        with_auto > 4 << 20,
        "auto-checkpoint filled the file ({with_auto} bytes)"
    );
    // Without it, the file stays at its empty size until a checkpoint runs.
    let path = dir.path().join("q.db");
    let (mut db, without) = big_commit(&path, false);
    assert!(
        without < 1 << 20,
        "the commit did not checkpoint ({without} bytes)"
    );
    let stats = quota_host::checkpoint::checkpoint(&mut db).expect("checkpoint");
    assert!(stats.wal_frames > 1000, "{stats:?}");
    assert_eq!(
        stats.checkpointed, stats.wal_frames,
        "a passive checkpoint with no readers copies every frame"
    );
    assert!(std::fs::metadata(&path).expect("db").len() > 4 << 20);
    drop(db);
    let mut again = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("reopen");
    let n = again.query("SELECT COUNT(*) FROM t", &[]).expect("count");
    assert_eq!(n, vec![vec![SqlCell::Int(50_000)]]);
}

#[test]
fn a_checkpointer_starts_and_stops_cleanly() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let (mut db, _) = big_commit(&path, false);
    // Dropping the checkpointer runs a last checkpoint and joins its thread.
    drop(
        Checkpointer::start(&common::runtime(), &path, std::time::Duration::from_secs(3600)).expect("start"),
    );
    let after = quota_host::checkpoint::checkpoint(&mut db).expect("checkpoint");
    assert_eq!(after.checkpointed, after.wal_frames, "{after:?}");
}

#[test]
fn values_rows_and_errors_are_typed() {
    let mut db = SqliteDb::memory(&common::runtime()).expect("db");
    db.query("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, r REAL)", &[])
        .expect("table");
    db.query(
        "INSERT INTO t (k, n) VALUES (?1, ?2), (?3, ?4)",
        &[
            "a".into(),
            SqlCell::Int(-(1 << 53) + 1),
            "b".into(),
            SqlCell::Null,
        ],
    )
    .expect("insert");
    let rows = db.query("SELECT k, n FROM t ORDER BY k", &[]).expect("select");
    assert_eq!(
        rows,
        vec![
            vec!["a".into(), SqlCell::Int(-(1 << 53) + 1)],
            vec!["b".into(), SqlCell::Null]
        ]
    );
    // The same through the component's JSON wire format.
    assert_eq!(
        db.query_json("SELECT k, n FROM t WHERE k = ?1", r#"["a"]"#)
            .expect("json"),
        r#"[["a",-9007199254740991]]"#
    );
    assert!(db.query_json("SELECT 1", "[1.5]").is_err(), "floats are refused");
    assert!(
        db.query_json("SELECT 1", "[true]").is_err(),
        "booleans are refused"
    );
    // A unique key violated is a constraint error, not a bare message.
    let dup = db
        .query("INSERT INTO t (k) VALUES ('a')", &[])
        .expect_err("duplicate");
    assert!(
        matches!(&dup, SqlError::Constraint(m) if m.contains("UNIQUE")),
        "{dup:?}"
    );
    // A float column is refused when read: the engine never stores one.
    db.query("UPDATE t SET r = 1.5 WHERE k = 'a'", &[])
        .expect("update");
    assert!(db.query("SELECT r FROM t WHERE k = 'a'", &[]).is_err());
}

#[test]
fn a_writer_locked_out_longer_than_its_wait_gets_busy() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let mut holder = SqliteDb::open(&common::runtime(), &path, SqliteOptions::default()).expect("holder");
    holder.query("CREATE TABLE t (k INTEGER)", &[]).expect("table");
    holder.begin().expect("lock");
    let mut waiter = SqliteDb::open(
        &common::runtime(),
        &path,
        SqliteOptions {
            busy_timeout: Some(std::time::Duration::from_millis(50)),
            ..SqliteOptions::default()
        },
    )
    .expect("waiter");
    assert_eq!(waiter.begin(), Err(SqlError::Busy));
    holder.rollback().expect("unlock");
    waiter.begin().expect("free now");
    waiter.rollback().expect("rollback");
}

/// The component's set-up statements carry the host's busy wait and durability: the contract's
/// when the host gives none, the operator's when it does.
#[test]
fn a_connection_is_set_up_with_the_wait_and_durability_it_was_opened_with() {
    let dir = tempfile::tempdir().expect("dir");
    let rt = common::runtime();
    let pragma = |db: &mut SqliteDb, name: &str| -> Option<i64> {
        db.query(&format!("PRAGMA {name}"), &[]).expect("pragma")[0][0].as_int()
    };
    let mut plain = SqliteDb::open(&rt, &dir.path().join("a.db"), SqliteOptions::default()).expect("open");
    let contract_wait = rt.contract(quota_host::Dialect::Sqlite).busy_wait.as_millis() as i64;
    assert_eq!(pragma(&mut plain, "busy_timeout"), Some(contract_wait));
    assert_eq!(
        pragma(&mut plain, "synchronous"),
        Some(2),
        "FULL unless the operator chose otherwise"
    );
    let mut chosen = SqliteDb::open(
        &rt,
        &dir.path().join("b.db"),
        SqliteOptions {
            busy_timeout: Some(std::time::Duration::from_millis(1234)),
            durability: Some(quota_host::Durability::Normal),
            ..SqliteOptions::default()
        },
    )
    .expect("open");
    assert_eq!(pragma(&mut chosen, "busy_timeout"), Some(1234));
    assert_eq!(pragma(&mut chosen, "synchronous"), Some(1), "NORMAL");
    let journal = chosen.query("PRAGMA journal_mode", &[]).expect("journal")[0][0].clone();
    assert_eq!(journal.as_text(), Some("wal"));
}
