//! Storage backends: the engine's `Store` plus the transaction control the host needs.

use quota_core::{Store, StoreError};

use crate::host_tables::HostTables;

/// A storage backend. The host wraps every engine call in `begin` .. `commit` (or `rollback`).
pub trait Backend: Store + HostTables + Send {
    /// Starts the call's transaction (for SQLite, `BEGIN IMMEDIATE`: the write lock is taken up front,
    /// so two writers never deadlock upgrading a read lock).
    fn begin(&mut self) -> Result<(), StoreError>;
    /// Starts a transaction for a call that only reads (for SQLite, `BEGIN DEFERRED`: a snapshot
    /// that waits for no writer). A write inside it fails rather than waits.
    fn begin_read(&mut self) -> Result<(), StoreError> {
        self.begin()
    }
    /// Makes everything since `begin` durable.
    fn commit(&mut self) -> Result<(), StoreError>;
    /// Undoes everything since `begin`.
    fn rollback(&mut self) -> Result<(), StoreError>;
    /// Every stored row in a fixed order, for tests that compare whole states.
    fn dump(&mut self) -> Result<String, StoreError>;
}
