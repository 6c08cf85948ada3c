//! WAL checkpoints of a SQLite file from a thread of their own, so that no request pays for them.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::runtime::Runtime;
use crate::sql::{Database, SqlError};
use crate::sqlite::{SqliteDb, SqliteOptions};

/// What one checkpoint did: frames in the WAL, and frames copied into the database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointStats {
    pub wal_frames: i64,
    pub checkpointed: i64,
}

/// Copies committed WAL frames into the database file without waiting for readers or writers
/// (`PASSIVE`): safe at any time, from any connection outside a transaction.
pub fn checkpoint(db: &mut dyn Database) -> Result<CheckpointStats, SqlError> {
    let rows = db.query("PRAGMA wal_checkpoint(PASSIVE)", &[])?;
    let int = |i: usize| rows.first().and_then(|r| r.get(i)).and_then(|v| v.as_int());
    match (int(1), int(2)) {
        (Some(wal_frames), Some(checkpointed)) => Ok(CheckpointStats {
            wal_frames,
            checkpointed,
        }),
        _ => Err(SqlError::Other(format!("wal_checkpoint answered {rows:?}"))),
    }
}

/// Checkpoints one file every interval until dropped.
pub struct Checkpointer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing `path` every `interval`. Errors are reported on stderr and retried at
    /// the next interval (a busy database is normal).
    pub fn start(rt: &Runtime, path: &Path, interval: Duration) -> Result<Checkpointer, SqlError> {
        let options = SqliteOptions {
            no_auto_checkpoint: true,
            ..SqliteOptions::default()
        };
        let mut db = SqliteDb::open(rt, path, options)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("quota-checkpoint".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    if let Err(e) = checkpoint(&mut db) {
                        eprintln!("quota: WAL checkpoint failed (will retry): {e}");
                    }
                    std::thread::park_timeout(interval);
                }
                // A last checkpoint on the way out keeps the WAL short for the next start.
                let _ = checkpoint(&mut db);
            })
            .map_err(|e| SqlError::Other(format!("starting the checkpointer: {e}")))?;
        Ok(Checkpointer {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
