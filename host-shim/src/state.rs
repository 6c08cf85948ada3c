//! The data of a wasmtime store: the database the guest's `sql` imports reach, the memory limit,
//! and the first storage failure of the current call (then the call is rolled back whatever the
//! guest returned, and the failure, `busy` or not, is what the host reports).

use wasmtime::StoreLimits;

use crate::bindings::{sql, types};
use crate::sql::{Database, Dialect, SqlError};

pub struct HostState {
    pub db: Box<dyn Database>,
    pub limits: StoreLimits,
    pub storage_failed: Option<SqlError>,
}

impl HostState {
    /// Notes a failed statement, so the call is rolled back and its failure reported.
    pub fn seen<T>(&mut self, r: Result<T, SqlError>) -> Result<T, SqlError> {
        if let Err(e) = &r {
            self.storage_failed.get_or_insert_with(|| e.clone());
        }
        r
    }
}

fn wit_error(e: SqlError) -> sql::Error {
    match e {
        SqlError::Busy | SqlError::Conflict(_) => sql::Error::Busy,
        SqlError::Constraint(m) => sql::Error::Constraint(m),
        SqlError::Other(m) => sql::Error::Other(m),
    }
}

impl types::Host for HostState {}

impl sql::Host for HostState {
    fn get_dialect(&mut self) -> sql::Dialect {
        match self.db.dialect() {
            Dialect::Sqlite => sql::Dialect::Sqlite,
            Dialect::Postgres => sql::Dialect::Postgres,
        }
    }

    fn query(&mut self, statement: String, params_json: String) -> Result<String, sql::Error> {
        let r = self.db.query_json(&statement, &params_json);
        self.seen(r).map_err(wit_error)
    }

    fn execute_many(&mut self, statement: String, rows_json: String) -> Result<u64, sql::Error> {
        let r = self.db.execute_many_json(&statement, &rows_json);
        self.seen(r).map_err(wit_error)
    }
}
