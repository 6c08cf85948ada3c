//! The host's SQL bridge as the store calls it: the instance's dialect, a query, a statement for
//! many rows, the bridge's errors as the store's.

use std::sync::OnceLock;

use quota_core::StoreError;

use super::sql::{Dialect, Sql};
use crate::bindings::sql as host;
use crate::sql_json::{rows, Cell, Params};

/// The host's database, as seen from inside the component, for one call.
pub struct SqlStore {
    pub d: Dialect,
}

/// The host's dialect, asked once per instance (a host never changes its database's dialect).
static DIALECT: OnceLock<Dialect> = OnceLock::new();

impl SqlStore {
    /// The store of this instance's host.
    pub fn host() -> SqlStore {
        let d = *DIALECT.get_or_init(|| match host::get_dialect() {
            host::Dialect::Sqlite => Dialect::Sqlite,
            host::Dialect::Postgres => Dialect::Postgres,
        });
        SqlStore { d }
    }

    /// `s` as this store's dialect runs it.
    pub(super) fn sql(&self, s: &Sql) -> &'static str {
        self.d.pick(s)
    }

    /// Runs statement `s` with one row of parameters; answers its rows.
    pub(super) fn query(&self, s: &Sql, params: Params) -> Result<Vec<Vec<Cell>>, StoreError> {
        query(self.sql(s), params)
    }

    /// Runs statement `s` once per row of `rows`; answers the rows changed.
    pub(super) fn execute_many(&self, s: &Sql, rows: Params) -> Result<u64, StoreError> {
        execute_many(self.sql(s), rows)
    }

    /// Runs statement `s` with one row of parameters; answers the rows it changed.
    pub(super) fn execute(&self, s: &Sql, p: Params) -> Result<u64, StoreError> {
        host::execute_many(self.sql(s), &format!("[{}]", p.finish())).map_err(err)
    }

    /// The one integer statement `s` answers (a count, a sum, a new id).
    pub(super) fn one_int(&self, s: &Sql, p: Params, what: &str) -> Result<i64, StoreError> {
        self.query(s, p)?
            .first()
            .and_then(|r| r.first())
            .and_then(Cell::as_int)
            .ok_or_else(|| StoreError(format!("{what} returned no integer")))
    }
}

pub(super) fn err(e: host::Error) -> StoreError {
    StoreError(match e {
        host::Error::Busy => "the database is busy (locked by another writer)".to_string(),
        host::Error::Conflict(m) => format!("the transaction conflicted with a concurrent one: {m}"),
        host::Error::Constraint(m) => format!("constraint violated: {m}"),
        host::Error::Other(m) => m,
    })
}

pub(super) fn query(sql: &str, params: Params) -> Result<Vec<Vec<Cell>>, StoreError> {
    rows(&host::query(sql, &params.finish()).map_err(err)?)
}

/// Runs `sql` once per row of `rows`; returns the rows changed.
pub(super) fn execute_many(sql: &str, rows: Params) -> Result<u64, StoreError> {
    host::execute_many(sql, &rows.finish()).map_err(err)
}
