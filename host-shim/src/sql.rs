//! The SQL bridge a host gives the component: run a statement with parameters, get rows; run one
//! statement for many parameter rows; own the transaction. The component brings every statement.
//!
//! Values are integers within +-(2^53-1), strings or null, carried as JSON text across the
//! component boundary (see `wit/0.2.0/quota.wit`, interface `sql`). Host code of its own (quota-hub's
//! tokens) uses the typed [`Database::query`] on the same connection and transaction.

use quota_core::json::{push_int, push_string};

use thiserror::Error;

/// The SQL a database speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
}

pub use quota_core::json::SqlValue;

/// Why a statement failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SqlError {
    /// Another writer held the lock longer than the host waits.
    #[error("the database is busy (locked by another writer)")]
    Busy,
    /// A constraint was violated.
    #[error("constraint violated: {0}")]
    Constraint(String),
    #[error("{0}")]
    Other(String),
}

/// A database connection as the engine and its host use it. One engine call runs between `begin`
/// (or `begin_read`) and `commit` or `rollback`.
pub trait Database: Send {
    fn dialect(&self) -> Dialect;
    /// Runs one statement; returns its rows.
    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError>;
    /// Runs one statement once per parameter row; returns the rows changed in all.
    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlValue>]) -> Result<u64, SqlError>;
    /// Starts a write transaction (SQLite: `BEGIN IMMEDIATE`, the write lock taken up front so two
    /// writers never deadlock upgrading a read lock).
    fn begin(&mut self) -> Result<(), SqlError>;
    /// Starts a transaction that only reads (SQLite: `BEGIN DEFERRED`, a snapshot).
    fn begin_read(&mut self) -> Result<(), SqlError>;
    fn commit(&mut self) -> Result<(), SqlError>;
    /// Undoes the open transaction, if any.
    fn rollback(&mut self) -> Result<(), SqlError>;
    /// Every row of every table, in a fixed order: for tests that compare whole states.
    fn dump(&mut self) -> Result<String, SqlError>;

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

/// A JSON array of values into parameters; anything but integers, strings and null is refused.
pub fn params_from_json(json: &str) -> Result<Vec<SqlValue>, SqlError> {
    serde_json::from_str(json).map_err(|e| SqlError::Other(format!("parameters: {e}")))
}

/// A JSON array of arrays into parameter rows.
pub fn param_rows_from_json(json: &str) -> Result<Vec<Vec<SqlValue>>, SqlError> {
    serde_json::from_str(json).map_err(|e| SqlError::Other(format!("parameter rows: {e}")))
}

/// Rows as a JSON array of arrays.
pub fn rows_to_json(rows: &[Vec<SqlValue>]) -> String {
    let mut out = String::with_capacity(2 + rows.len() * 32);
    out.push('[');
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        for (j, v) in row.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            match v {
                SqlValue::Int(n) => push_int(&mut out, *n),
                SqlValue::Null => out.push_str("null"),
                SqlValue::Text(s) => push_string(&mut out, s),
            }
        }
        out.push(']');
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_integers_strings_or_null() {
        assert_eq!(
            params_from_json(r#"[1,"a",null,-9007199254740991]"#).unwrap(),
            vec![
                SqlValue::Int(1),
                SqlValue::Text("a".into()),
                SqlValue::Null,
                SqlValue::Int(-quota_core::limits::json_int_abs_max)
            ]
        );
        for bad in [
            "[1.5]",
            "[true]",
            "[[1]]",
            "[{}]",
            "[9007199254740992]",
            "{}",
            "nope",
        ] {
            assert!(params_from_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rows_round_trip_through_json() {
        let rows = vec![
            vec![
                SqlValue::Int(-3),
                SqlValue::Text("é\"\n\u{1}\\".into()),
                SqlValue::Null,
            ],
            vec![],
        ];
        let json = rows_to_json(&rows);
        let back: Vec<Vec<serde_json::Value>> = serde_json::from_str(&json).unwrap();
        assert_eq!(back[0][1], "é\"\n\u{1}\\");
        assert_eq!(back[0][0], -3);
        assert!(back[1].is_empty());
    }
}
