//! The SQLite backend on its own: schema versioning, and checkpointing off the request path.

use quota_core::store::{Change, NewTransaction, Store, TransactionType, UserRecord};
use quota_core::Timestamp;
use quota_host::{Backend, Checkpointer, Durability, SqliteBackend, SqliteOptions};

fn change(i: usize) -> Change {
    let name = format!("u{i:05}");
    Change {
        user: UserRecord {
            username: name.clone(),
            balance: 5,
            unlimited: false,
            updated_at: Timestamp(1),
        },
        entry: NewTransaction {
            username: name,
            amount: 5,
            transaction_type: TransactionType::Add,
            resource_type: None,
            description: "x".repeat(100),
            balance_before: 0,
            balance_after: 5,
            created_at: Timestamp(1),
            created_by: Some("t".into()),
        },
    }
}

/// Writes enough changes to pass SQLite's 1,000-page auto-checkpoint threshold, returns the size of
/// the main database file right after the commit.
fn big_commit(path: &std::path::Path, auto_checkpoint: bool) -> (SqliteBackend, u64) {
    let mut b = SqliteBackend::open_with(
        path,
        SqliteOptions {
            auto_checkpoint,
            ..SqliteOptions::default()
        },
    )
    .expect("open");
    let changes: Vec<Change> = (0..30_000).map(change).collect();
    b.begin().expect("begin");
    b.record_changes(&changes).expect("write");
    b.commit().expect("commit");
    let size = std::fs::metadata(path).expect("db file").len();
    (b, size)
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
    let (b, without) = big_commit(&path, false);
    assert!(
        without < 1 << 20,
        "the commit did not checkpoint ({without} bytes)"
    );
    let stats = b.checkpoint().expect("checkpoint");
    assert!(stats.wal_frames > 1000, "{stats:?}");
    assert_eq!(
        stats.checkpointed, stats.wal_frames,
        "a passive checkpoint with no readers copies every frame"
    );
    assert!(std::fs::metadata(&path).expect("db").len() > 4 << 20);
    drop(b);
    let mut again = SqliteBackend::open(&path, Durability::Full).expect("reopen");
    assert_eq!(again.scan_users(None, 100_000).expect("scan").len(), 30_000);
}

#[test]
fn a_checkpointer_starts_and_stops_cleanly() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let mut b = SqliteBackend::open_with(
        &path,
        SqliteOptions {
            auto_checkpoint: false,
            ..SqliteOptions::default()
        },
    )
    .expect("open");
    b.begin().expect("begin");
    b.record_changes(&(0..2000).map(change).collect::<Vec<_>>())
        .expect("write");
    b.commit().expect("commit");
    // Dropping the checkpointer runs a last checkpoint and joins its thread.
    drop(Checkpointer::start(&path, std::time::Duration::from_secs(3600)).expect("start"));
    let after = b.checkpoint().expect("checkpoint");
    assert_eq!(after.checkpointed, after.wal_frames, "{after:?}");
}

#[test]
fn a_newer_schema_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let b = SqliteBackend::open(&path, Durability::Full).expect("open");
    assert_eq!(b.schema_version().expect("version"), 2);
    b.connection()
        .pragma_update(None, "user_version", 99)
        .expect("bump");
    drop(b);
    let err = SqliteBackend::open(&path, Durability::Full)
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains("schema version 99, newer than this program's 2"),
        "{err}"
    );
}
