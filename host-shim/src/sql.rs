//! The SQL bridge a host gives the component: run a statement with parameters, get rows; run one
//! statement for many parameter rows; own the transaction. The component brings every statement.
//!
//! Values are integers within +-(2^53-1), strings or null, carried as JSON text across the
//! component boundary (see `wit/0.3.0/quota.wit`, interface `sql`). Host code of its own (quota-hub's
//! tokens) uses the typed [`Database::query`] on the same connection and transaction.

use std::sync::Arc;

pub use crate::contract::Dialect;
use crate::contract::{HostingContract, TransactionStatements};
pub use crate::sql_error::SqlError;
pub use crate::sql_json::{
    for_each_param_row, param_rows_from_json, params_from_json, push_json_row, rows_to_json, Param,
};

pub use quota_sql_wire::SqlCell;

/// Runs one of the contract's transaction statements on `db`.
fn run<D: Database + ?Sized>(
    db: &mut D,
    pick: fn(&TransactionStatements) -> &String,
) -> Result<(), SqlError> {
    let c = db.contract().clone();
    db.query(pick(&c.transactions), &[]).map(drop)
}

/// A database connection as the engine and its host use it: a bridge that runs statements. One
/// engine call runs between `begin` (or `begin_read`) and `commit` or `rollback`, whose statements
/// (like every wait and retry) are the component's hosting contract.
pub trait Database: Send {
    /// The contract this connection was set up by: its dialect, statements and error codes.
    fn contract(&self) -> &Arc<HostingContract>;
    fn dialect(&self) -> Dialect {
        self.contract().dialect
    }
    /// Runs one statement; returns its rows.
    fn query(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, SqlError>;
    /// Runs one statement once per parameter row; returns the rows changed in all.
    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlCell>]) -> Result<u64, SqlError>;
    /// Whether a transaction is open (a failed commit may have ended it already).
    fn in_transaction(&self) -> bool {
        true
    }
    /// Called before each transaction begins (PostgreSQL: a connection the server closed is
    /// opened again, so a worker recovers once the database is back).
    fn before_transaction(&mut self) -> Result<(), SqlError> {
        Ok(())
    }
    /// Outside a transaction: whether a write transaction could begin now, without waiting
    /// (SQLite: no other connection holds the file's write lock). Changes nothing. Databases
    /// without a file-wide write lock (PostgreSQL) always can.
    fn write_lock_free(&mut self) -> Result<bool, SqlError> {
        Ok(true)
    }

    /// Starts a write transaction.
    fn begin(&mut self) -> Result<(), SqlError> {
        self.before_transaction()?;
        run(self, |t| &t.begin_write)
    }
    /// Starts a transaction that only reads (a snapshot).
    fn begin_read(&mut self) -> Result<(), SqlError> {
        self.before_transaction()?;
        run(self, |t| &t.begin_read)
    }
    fn commit(&mut self) -> Result<(), SqlError> {
        run(self, |t| &t.commit)
    }
    /// Undoes the open transaction, if any.
    fn rollback(&mut self) -> Result<(), SqlError> {
        if !self.in_transaction() {
            return Ok(());
        }
        run(self, |t| &t.rollback)
    }
    /// Marks a point inside the open transaction that [`Database::rollback_to_savepoint`] returns
    /// to (shared commit: each engine call of a group in its own savepoint).
    fn savepoint(&mut self) -> Result<(), SqlError> {
        run(self, |t| &t.savepoint)
    }
    /// Keeps what was done since [`Database::savepoint`] as part of the transaction.
    fn release_savepoint(&mut self) -> Result<(), SqlError> {
        run(self, |t| &t.release_savepoint)
    }
    /// Undoes what was done since [`Database::savepoint`]; the transaction stays open.
    fn rollback_to_savepoint(&mut self) -> Result<(), SqlError> {
        run(self, |t| &t.rollback_to_savepoint)?;
        self.release_savepoint()
    }
    /// Called outside any transaction before the engine's `migrate`, so that hosts starting at once
    /// on a new database migrate one after the other (the contract's `migration-lock`).
    fn lock_for_migration(&mut self) -> Result<(), SqlError> {
        match self.contract().transactions.migration_lock.clone() {
            Some((lock, _)) => self.query(&lock, &[]).map(drop),
            None => Ok(()),
        }
    }
    /// Releases [`Database::lock_for_migration`], outside any transaction.
    fn unlock_after_migration(&mut self) -> Result<(), SqlError> {
        match self.contract().transactions.migration_lock.clone() {
            Some((_, unlock)) => self.query(&unlock, &[]).map(drop),
            None => Ok(()),
        }
    }

    /// [`Database::query`] with parameters and rows as the component sends them (JSON).
    fn query_json(&mut self, sql: &str, params_json: &str) -> Result<String, SqlError> {
        let params = params_from_json(params_json)?;
        Ok(rows_to_json(&self.query(sql, &params)?))
    }

    /// [`Database::execute_many`] with rows as the component sends them (JSON array of arrays).
    fn execute_many_json(&mut self, sql: &str, rows_json: &str) -> Result<u64, SqlError> {
        self.execute_many(sql, &param_rows_from_json(rows_json)?)
    }
}

/// Every row of the engine's tables (the contract's list) and of `extra` ones, each table in key
/// order, one `table|[row as JSON]` line per row: for tests that compare whole states (feature
/// `test-support`; no host needs it).
#[cfg(feature = "test-support")]
pub fn dump(db: &mut dyn Database, extra: &[crate::contract::Table]) -> Result<String, SqlError> {
    let tables: Vec<_> = db.contract().tables.iter().chain(extra).cloned().collect();
    let mut out = String::new();
    for t in tables {
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {}",
            t.columns.join(", "),
            t.name,
            t.key.join(", ")
        );
        for row in db.query(&sql, &[])? {
            out.push_str(&t.name);
            out.push('|');
            out.push_str(&rows_to_json(&[row])[1..]);
            out.pop();
            out.push('\n');
        }
    }
    Ok(out)
}
