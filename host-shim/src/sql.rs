//! The SQL bridge a host gives the component: run a statement with parameters, get rows; run one
//! statement for many parameter rows; own the transaction. The component brings every statement.
//!
//! Values are integers within +-(2^53-1), strings or null, carried as JSON text across the
//! component boundary (see `wit/0.3.0/quota.wit`, interface `sql`). Host code of its own (quota-hub's
//! tokens) uses the typed [`Database::query`] on the same connection and transaction.

use std::sync::Arc;

use quota_core::json::{push_int, push_string};

pub use crate::contract::Dialect;
use crate::contract::{ErrorKind, HostingContract, TransactionStatements};

use thiserror::Error;

pub use quota_core::json::SqlValue;

/// Why a statement failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SqlError {
    /// Another writer held the lock longer than the host waits.
    #[error("the database is busy (locked by another writer)")]
    Busy,
    /// The transaction conflicted with a concurrent one (PostgreSQL: a serialization failure or a
    /// deadlock) and was rolled back; the whole call can run again. The guest sees `busy`.
    #[error("the transaction conflicted with a concurrent one: {0}")]
    Conflict(String),
    /// A constraint was violated.
    #[error("constraint violated: {0}")]
    Constraint(String),
    #[error("{0}")]
    Other(String),
}

impl SqlError {
    /// A driver's failure as a storage error of the contract's kind (by the driver's code).
    pub fn from_driver(contract: &HostingContract, code: &str, message: String) -> SqlError {
        match contract.kind_of(code) {
            ErrorKind::Busy => SqlError::Busy,
            ErrorKind::Conflict => SqlError::Conflict(message),
            ErrorKind::Constraint => SqlError::Constraint(message),
            ErrorKind::Other => SqlError::Other(message),
        }
    }

    /// The contract's kind of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SqlError::Busy => ErrorKind::Busy,
            SqlError::Conflict(_) => ErrorKind::Conflict,
            SqlError::Constraint(_) => ErrorKind::Constraint,
            SqlError::Other(_) => ErrorKind::Other,
        }
    }
}

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
    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError>;
    /// Runs one statement once per parameter row; returns the rows changed in all.
    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlValue>]) -> Result<u64, SqlError>;
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
    /// to (group commit: each engine call of a group in its own savepoint).
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
/// order, one `table|[row as JSON]` line per row: for tests and tools that compare whole states.
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

/// A JSON array of values into parameters; anything but integers, strings and null is refused.
pub fn params_from_json(json: &str) -> Result<Vec<SqlValue>, SqlError> {
    serde_json::from_str(json).map_err(|e| SqlError::Other(format!("parameters: {e}")))
}

/// A JSON array of arrays into parameter rows.
pub fn param_rows_from_json(json: &str) -> Result<Vec<Vec<SqlValue>>, SqlError> {
    serde_json::from_str(json).map_err(|e| SqlError::Other(format!("parameter rows: {e}")))
}

/// A parameter as the component sent it, its text borrowed from the JSON unless it had escapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    Int(i64),
    Text(std::borrow::Cow<'a, str>),
    Null,
}

impl<'a> From<&'a SqlValue> for Param<'a> {
    fn from(v: &'a SqlValue) -> Param<'a> {
        match v {
            SqlValue::Int(i) => Param::Int(*i),
            SqlValue::Text(s) => Param::Text(std::borrow::Cow::Borrowed(s)),
            SqlValue::Null => Param::Null,
        }
    }
}

impl From<&Param<'_>> for SqlValue {
    fn from(p: &Param<'_>) -> SqlValue {
        match p {
            Param::Int(i) => SqlValue::Int(*i),
            Param::Text(s) => SqlValue::Text(s.to_string()),
            Param::Null => SqlValue::Null,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Param<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Param<'de>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Param<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer within +-(2^53-1), a string or null")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Param<'de>, E> {
                let max = quota_core::limits::json_int_abs_max;
                if (-max..=max).contains(&v) {
                    Ok(Param::Int(v))
                } else {
                    Err(E::custom(format!("{v} is outside +-(2^53-1)")))
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Param<'de>, E> {
                match i64::try_from(v) {
                    Ok(i) => self.visit_i64(i),
                    Err(_) => Err(E::custom(format!("{v} is outside +-(2^53-1)"))),
                }
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Param<'de>, E> {
                Ok(Param::Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Param<'de>, E> {
                Ok(Param::Text(std::borrow::Cow::Owned(v.to_string())))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Param<'de>, E> {
                Ok(Param::Null)
            }
        }
        d.deserialize_any(V)
    }
}

/// Calls `f` with each parameter row of a bulk write's JSON (an array of arrays), parsing one row
/// at a time into one reused buffer: a 1,000-row write allocates nothing per row.
pub fn for_each_param_row<'a>(
    json: &'a str,
    mut f: impl FnMut(&[Param<'a>]) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};

    struct Rows<'f, 'a, F> {
        f: &'f mut F,
        failed: &'f mut Option<SqlError>,
        _a: std::marker::PhantomData<&'a ()>,
    }
    struct Row<'b, 'a>(&'b mut Vec<Param<'a>>);

    impl<'de, 'b> DeserializeSeed<'de> for Row<'b, 'de> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de, 'b> Visitor<'de> for Row<'b, 'de> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a row: an array of parameters")
        }
        fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
            self.0.clear();
            while let Some(p) = seq.next_element()? {
                self.0.push(p);
            }
            Ok(())
        }
    }
    impl<'de, F: FnMut(&[Param<'de>]) -> Result<(), SqlError>> Visitor<'de> for Rows<'_, 'de, F> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of parameter rows")
        }
        fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
            let mut row = Vec::new();
            while seq.next_element_seed(Row(&mut row))?.is_some() {
                if let Err(e) = (self.f)(&row) {
                    *self.failed = Some(e);
                    return Err(serde::de::Error::custom("statement failed"));
                }
            }
            Ok(())
        }
    }

    let mut failed = None;
    let mut de = serde_json::Deserializer::from_str(json);
    let parsed = de
        .deserialize_seq(Rows {
            f: &mut f,
            failed: &mut failed,
            _a: std::marker::PhantomData,
        })
        .and_then(|()| de.end());
    match (failed, parsed) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(SqlError::Other(format!("parameter rows: {e}"))),
        (None, Ok(())) => Ok(()),
    }
}

/// One row as a JSON array, appended to `out`.
pub fn push_json_row<'a>(out: &mut String, row: impl IntoIterator<Item = Param<'a>>) {
    out.push('[');
    for (j, v) in row.into_iter().enumerate() {
        if j > 0 {
            out.push(',');
        }
        match v {
            Param::Int(n) => push_int(out, n),
            Param::Null => out.push_str("null"),
            Param::Text(s) => push_string(out, &s),
        }
    }
    out.push(']');
}

/// Rows as a JSON array of arrays.
pub fn rows_to_json(rows: &[Vec<SqlValue>]) -> String {
    let mut out = String::with_capacity(2 + rows.len() * 32);
    out.push('[');
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_row(&mut out, row.iter().map(Param::from));
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
    fn parameter_rows_stream_one_at_a_time() {
        let mut seen = Vec::new();
        for_each_param_row(r#"[[1,"a\"b",null],[],["x"]]"#, |row| {
            seen.push(row.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![
                vec![Param::Int(1), Param::Text("a\"b".into()), Param::Null],
                vec![],
                vec![Param::Text("x".into())]
            ]
        );
        for bad in ["[[1.5]]", "[1]", "[[9007199254740992]]", "[[1]] x", "{}", "[[1]"] {
            assert!(for_each_param_row(bad, |_| Ok(())).is_err(), "{bad}");
        }
        // A failing statement stops the rows and its error comes back as it was.
        let mut calls = 0;
        let e = for_each_param_row("[[1],[2],[3]]", |_| {
            calls += 1;
            Err(SqlError::Busy)
        })
        .unwrap_err();
        assert_eq!((e, calls), (SqlError::Busy, 1));
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
