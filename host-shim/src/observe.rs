//! What a host may watch of its workers, for metrics: the observations of committed calls (never
//! those of a call rolled back or retried), traps, calls that failed busy, and conflict retries.

pub use quota_core::observations::{GateResult, Observation};

/// Told by a worker what happened; called on the worker's thread, so keep it quick (counters).
pub trait Observer: Send + Sync {
    /// The observations of calls whose transaction has just committed.
    fn committed(&self, observations: &[Observation]);
    /// An engine call trapped (a panic, the deadline, the memory limit); it was rolled back.
    fn trapped(&self);
    /// A call failed because the database stayed busy or conflicting (answered 503 by a server).
    fn busy(&self);
    /// A call ran again after a conflict with a concurrent transaction (PostgreSQL).
    fn conflict_retried(&self);
    /// A write transaction of [`crate::Worker::shared_commit`] committed, carrying `calls` calls (shared
    /// commit; 1 when each call commits alone).
    fn commit_shared(&self, calls: usize) {
        let _ = calls;
    }
}
