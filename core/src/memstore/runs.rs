//! Refresh runs in memory.

use super::MemStore;
use crate::error::StoreError;
use crate::store::{RefreshRun, RunStore};

impl RunStore for MemStore {
    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError> {
        Ok(self.refresh_runs.get(run_id).cloned())
    }

    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError> {
        self.refresh_runs.insert(run.run_id.clone(), run.clone());
        Ok(())
    }
}
