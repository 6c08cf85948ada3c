//! The host's SQL bridge as the store calls it: the instance's dialect, a query, a statement for
//! many rows, the bridge's errors as the store's.

use quota_core::StoreError;

use crate::bindings::sql as host;
use crate::dialect::{self, Dialect};
use crate::sql_json::{rows, Cell, Params};

/// The host's database, as seen from inside the component.
pub struct SqlStore {
    pub d: &'static Dialect,
}

thread_local! {
    /// The host's dialect, asked once per instance.
    static DIALECT: std::cell::Cell<Option<&'static Dialect>> = const { std::cell::Cell::new(None) };
}

impl SqlStore {
    /// The store of this instance's host, for one call: every call that touches storage starts
    /// here, so it also starts the call's list of events afresh (`take-events`).
    pub fn host() -> SqlStore {
        quota_core::events::clear();
        quota_core::feed::clear();
        // `Cell::get` answers a copy: the dialect is kept with `set`, or every call would ask the
        // host again (one more boundary crossing per call, issue 36).
        let d = DIALECT.with(|c| {
            c.get().unwrap_or_else(|| {
                let d = match host::get_dialect() {
                    host::Dialect::Sqlite => &dialect::sqlite,
                    host::Dialect::Postgres => &dialect::postgres,
                };
                c.set(Some(d));
                d
            })
        });
        SqlStore { d }
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

impl SqlStore {
    /// Writes user rows: one UPDATE per row, then, if some did not exist, an INSERT that skips the
    /// ones that do. `rows` is a JSON array of `count` rows of `user_params`.
    pub(super) fn write_users(&self, rows: &str, count: usize) -> Result<(), StoreError> {
        let changed = host::execute_many(self.d.update_user, rows).map_err(err)?;
        if changed < count as u64 {
            host::execute_many(self.d.insert_missing_user, rows).map_err(err)?;
        }
        Ok(())
    }
}
