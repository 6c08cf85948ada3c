//! Refresh runs over SQL: their statements and `RunStore`.

use quota_core::store::{RefreshRun, RunStore};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::rows::first;
use super::sql::Sql;
use crate::sql_json::{Columns, Params};

const GET_REFRESH_RUN: Sql =
    same!("SELECT run_id, params, result, created_at FROM refresh_runs WHERE run_id = $1");
/// Inserts a refresh run, or replaces its result (a chunked run records its progress).
const PUT_REFRESH_RUN: Sql = same!(
    "INSERT INTO refresh_runs (run_id, params, result, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (run_id) DO UPDATE SET result = excluded.result"
);

impl RunStore for SqlStore {
    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError> {
        let rows = self.query(&GET_REFRESH_RUN, Params::new().text(run_id))?;
        first(rows, |row| {
            let mut c = Columns::new(row, "refresh_runs", 4)?;
            Ok(RefreshRun {
                run_id: c.text(0)?,
                params: c.text(1)?,
                result: c.text(2)?,
                created_at: Timestamp(c.int(3)?),
            })
        })
    }

    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError> {
        let p = Params::new()
            .text(&run.run_id)
            .text(&run.params)
            .text(&run.result)
            .int(run.created_at.seconds())?;
        self.query(&PUT_REFRESH_RUN, p).map(drop)
    }
}
