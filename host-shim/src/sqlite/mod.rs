//! The SQLite bridge: a file (or `:memory:`), set up by the hosting contract (WAL, busy wait,
//! `synchronous`), prepared statements cached by their text, values bound and read one way.

use std::sync::Arc;

use crate::contract::HostingContract;
use crate::sql::{for_each_param_row, push_json_row, Database, Param, SqlCell, SqlError};

mod cells;
mod open;
use cells::{column, params, result_code_name, Bind};
pub use open::{SqliteDb, SqliteOptions};

impl SqliteDb {
    fn err(&self, e: rusqlite::Error) -> SqlError {
        let code = match &e {
            rusqlite::Error::SqliteFailure(f, _) => result_code_name(f.extended_code),
            _ => "",
        };
        SqlError::from_driver(&self.contract, code, format!("sqlite: {e}"))
    }

    /// Runs `sql` with `params` and hands `row` each row's values, read one way for every caller.
    fn each_row(
        &self,
        sql: &str,
        params: &[Param<'_>],
        mut row: impl FnMut(&[Param<'_>]) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let n = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(params.iter().map(Bind)))
            .map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let mut values = Vec::with_capacity(n);
            for i in 0..n {
                values.push(column(r.get_ref(i).map_err(|e| self.err(e))?, i)?);
            }
            row(&values)?;
        }
        Ok(())
    }

    fn run_rows<'a>(
        &self,
        sql: &str,
        rows: impl FnOnce(&mut dyn FnMut(&[Param<'a>]) -> Result<(), SqlError>) -> Result<(), SqlError>,
    ) -> Result<u64, SqlError> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let mut changed = 0u64;
        rows(&mut |row| {
            changed += st
                .execute(rusqlite::params_from_iter(row.iter().map(Bind)))
                .map_err(|e| self.err(e))? as u64;
            Ok(())
        })?;
        Ok(changed)
    }
}

impl Database for SqliteDb {
    fn contract(&self) -> &Arc<HostingContract> {
        &self.contract
    }

    fn query(&mut self, sql: &str, values: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, SqlError> {
        let mut out = Vec::new();
        self.each_row(sql, &params(values), |r| {
            out.push(r.iter().map(SqlCell::from).collect());
            Ok(())
        })?;
        Ok(out)
    }

    fn query_json(&mut self, sql: &str, params_json: &str) -> Result<String, SqlError> {
        // Rows go from SQLite straight into the JSON text: no row vectors in between.
        let params: Vec<Param<'_>> =
            serde_json::from_str(params_json).map_err(|e| SqlError::Other(format!("parameters: {e}")))?;
        let mut out = String::from("[");
        self.each_row(sql, &params, |r| {
            if out.len() > 1 {
                out.push(',');
            }
            push_json_row(&mut out, r.iter().cloned());
            Ok(())
        })?;
        out.push(']');
        Ok(out)
    }

    fn execute_many_json(&mut self, sql: &str, rows_json: &str) -> Result<u64, SqlError> {
        // Each row is bound straight from the JSON text as it is parsed.
        self.run_rows(sql, |f| for_each_param_row(rows_json, f))
    }

    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlCell>]) -> Result<u64, SqlError> {
        self.run_rows(sql, |f| rows.iter().try_for_each(|r| f(&params(r))))
    }

    fn in_transaction(&self) -> bool {
        !self.conn.is_autocommit()
    }

    fn write_lock_free(&mut self) -> Result<bool, SqlError> {
        // One try without waiting, then the usual wait back.
        let wait = self.query("PRAGMA busy_timeout", &[])?;
        self.query("PRAGMA busy_timeout = 0", &[])?;
        let tried = self.begin();
        let restore = format!("PRAGMA busy_timeout = {}", wait[0][0].as_int().unwrap_or(0));
        self.query(&restore, &[])?;
        match tried {
            Ok(()) => self.rollback().map(|()| true),
            Err(SqlError::Busy) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
