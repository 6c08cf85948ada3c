//! Refresh runs with a `run_id`: applied at most once, their progress kept between chunks.

use crate::error::StoreError;
use crate::time::Timestamp;

/// The recorded outcome of a refresh run with a `run_id` (at-most-once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshRun {
    pub run_id: String,
    /// Canonical JSON of the run's parameters; a reuse with other parameters is a conflict.
    pub params: String,
    /// The JSON response of the first run, replayed verbatim; while a chunked run is between
    /// chunks, where it stopped (see `refresh::refresh_step`).
    pub result: String,
    pub created_at: Timestamp,
}

/// Refresh runs.
pub trait RunStore {
    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError>;
    /// Inserts or replaces the run with this `run_id` (a chunked run records its progress).
    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError>;
}
