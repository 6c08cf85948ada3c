//! The data of a wasmtime store: the database the guest's `sql` imports reach, the memory limit,
//! and the first storage failure of the current call (then the call is rolled back whatever the
//! guest returned, and the failure, `busy` or not, is what the host reports).

use wasmtime::StoreLimits;

use crate::bindings::{sql, types};
use crate::sql::{Database, Dialect, SqlError};

pub struct HostState {
    /// None only for the runtime's throwaway instance that reads the hosting contract.
    db: Option<Box<dyn Database>>,
    pub limits: StoreLimits,
    pub storage_failed: Option<SqlError>,
}

impl HostState {
    pub fn new(db: Box<dyn Database>, limits: StoreLimits) -> HostState {
        HostState {
            db: Some(db),
            limits,
            storage_failed: None,
        }
    }

    /// Over no database: every statement fails (the contract export runs none).
    pub fn detached() -> HostState {
        HostState {
            db: None,
            limits: StoreLimits::default(),
            storage_failed: None,
        }
    }

    pub fn db(&mut self) -> &mut dyn Database {
        match &mut self.db {
            Some(db) => db.as_mut(),
            None => unreachable!("a worker's instance always has its database"),
        }
    }

    pub fn db_ref(&self) -> &dyn Database {
        match &self.db {
            Some(db) => db.as_ref(),
            None => unreachable!("a worker's instance always has its database"),
        }
    }

    pub fn into_db(self) -> Box<dyn Database> {
        self.db
            .unwrap_or_else(|| unreachable!("a worker's instance always has its database"))
    }

    fn bridge(&mut self) -> Result<&mut dyn Database, SqlError> {
        match &mut self.db {
            Some(db) => Ok(db.as_mut()),
            None => Err(SqlError::Other("this instance has no database".into())),
        }
    }

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
        SqlError::Busy => sql::Error::Busy,
        SqlError::Conflict(m) => sql::Error::Conflict(m),
        SqlError::Constraint(m) => sql::Error::Constraint(m),
        SqlError::Other(m) => sql::Error::Other(m),
    }
}

impl types::Host for HostState {}

impl sql::Host for HostState {
    fn get_dialect(&mut self) -> sql::Dialect {
        match self.db.as_ref().map_or(Dialect::Sqlite, |db| db.dialect()) {
            Dialect::Sqlite => sql::Dialect::Sqlite,
            Dialect::Postgres => sql::Dialect::Postgres,
        }
    }

    fn query(&mut self, statement: String, params_json: String) -> Result<String, sql::Error> {
        let r = self
            .bridge()
            .and_then(|db| db.query_json(&statement, &params_json));
        self.seen(r).map_err(wit_error)
    }

    fn execute_many(&mut self, statement: String, rows_json: String) -> Result<u64, sql::Error> {
        let r = self
            .bridge()
            .and_then(|db| db.execute_many_json(&statement, &rows_json));
        self.seen(r).map_err(wit_error)
    }
}
