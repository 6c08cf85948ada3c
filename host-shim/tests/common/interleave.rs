//! The previous release's writes interleaved with each step of the schema 11 migration (issue 59):
//! a database of schema 10 with sessions running on budgets, and, right before the migration's
//! `k`th statement, a start or an end of a budget session by the previous release (no triggers
//! of its own) on another connection: done at once when nothing holds it back, or, when the
//! migration's locks would make it wait, done after the migration committed, as a waiting writer
//! is. Whichever `k`, the totals the triggers keep must then equal the sessions' sums.
//!
//! Deterministic without sleeps: the writer never waits for a lock (SQLite: no busy wait;
//! PostgreSQL: `lock_timeout` of 1 ms, then it is treated as waiting).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use quota_host::{Database, HostingContract, SqlCell, SqlError};

/// The previous release's write.
#[derive(Clone, Copy, Debug)]
pub enum OldWrite {
    /// A session started on budget `course`.
    Start,
    /// The oldest session running on a budget ended.
    End,
}

impl OldWrite {
    fn statement(self) -> &'static str {
        match self {
            OldWrite::Start => {
                "INSERT INTO sessions (username, server_name, resource_type, rate_milli, runtime_minutes,
                 estimated_cost_milli, start_time, billable, status, cost, budget)
                 VALUES ('ann', 'old-release', 'cpu', 1000, 45, 45000, 1795300000, 1, 'active', 0, 'course')"
            }
            OldWrite::End => {
                "UPDATE sessions SET status = 'completed', end_time = 1795303600, duration_minutes = 60
                 WHERE id = (SELECT MIN(id) FROM sessions WHERE status = 'active' AND budget IS NOT NULL)"
            }
        }
    }
}

/// A connection of the previous release that never waits for a lock.
pub struct OldRelease {
    pub db: Box<dyn Database>,
    /// The statement that makes a lock wait an error at once (PostgreSQL), if the dialect needs one.
    pub no_wait: Option<&'static str>,
}

impl OldRelease {
    /// Runs `w` in its own transaction; `false`: it would have waited for a lock (nothing done).
    fn try_write(&mut self, w: OldWrite) -> bool {
        if let Some(s) = self.no_wait {
            self.db.query(s, &[]).expect("no wait");
        }
        if self.db.begin().is_err() {
            return false;
        }
        match self.db.query(w.statement(), &[]) {
            Ok(_) => match self.db.commit() {
                Ok(()) => true,
                Err(_) => {
                    let _ = self.db.rollback();
                    false
                }
            },
            Err(_) => {
                let _ = self.db.rollback();
                false
            }
        }
    }
}

/// What happened to the previous release's write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    NotYet,
    DoneDuringMigration,
    Waited,
}

/// A host's database that lets the previous release write before the migration's `at`th
/// statement.
pub struct Interleaved {
    pub inner: Box<dyn Database>,
    pub armed: Arc<AtomicBool>,
    pub seen: Arc<AtomicUsize>,
    pub at: usize,
    pub write: OldWrite,
    pub old: Arc<Mutex<OldRelease>>,
    pub outcome: Arc<Mutex<Outcome>>,
}

impl Interleaved {
    fn before_statement(&mut self) {
        if !self.armed.load(Ordering::SeqCst) {
            return;
        }
        if self.seen.fetch_add(1, Ordering::SeqCst) == self.at {
            let done = self.old.lock().expect("old").try_write(self.write);
            *self.outcome.lock().expect("outcome") = if done {
                Outcome::DoneDuringMigration
            } else {
                Outcome::Waited
            };
        }
    }

    /// After the migration: the write that had to wait is done now (as the waiting writer's is).
    pub fn finish(old: &Arc<Mutex<OldRelease>>, outcome: &Arc<Mutex<Outcome>>, write: OldWrite) -> Outcome {
        let o = *outcome.lock().expect("outcome");
        if o == Outcome::Waited {
            assert!(
                old.lock().expect("old").try_write(write),
                "the waiting write, after the migration"
            );
        }
        o
    }
}

impl Database for Interleaved {
    fn contract(&self) -> &Arc<HostingContract> {
        self.inner.contract()
    }
    fn query(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, SqlError> {
        self.before_statement();
        self.inner.query(sql, params)
    }
    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlCell>]) -> Result<u64, SqlError> {
        self.before_statement();
        self.inner.execute_many(sql, rows)
    }
    fn in_transaction(&self) -> bool {
        self.inner.in_transaction()
    }
    fn before_transaction(&mut self) -> Result<(), SqlError> {
        self.inner.before_transaction()
    }
    fn write_lock_free(&mut self) -> Result<bool, SqlError> {
        self.inner.write_lock_free()
    }
}
