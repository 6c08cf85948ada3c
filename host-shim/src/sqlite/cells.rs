//! How values cross between the engine's SQL bridge and SQLite: parameters bound, columns read, and
//! a result code named as the hosting contract's error codes name it.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::ToSql;

use crate::sql::{Param, SqlCell, SqlError};

/// Binds a parameter (the type is ours, the trait rusqlite's: a wrapper joins them).
pub(super) struct Bind<'a, 'b>(pub(super) &'b Param<'a>);

impl ToSql for Bind<'_, '_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Param::Int(i) => ValueRef::Integer(*i),
            Param::Text(s) => ValueRef::Text(s.as_bytes()),
            Param::Null => ValueRef::Null,
        }))
    }
}

pub(super) fn params(values: &[SqlCell]) -> Vec<Param<'_>> {
    values.iter().map(Param::from).collect()
}

pub(super) fn column(v: ValueRef<'_>, i: usize) -> Result<Param<'_>, SqlError> {
    match v {
        ValueRef::Integer(n) => Ok(Param::Int(n)),
        ValueRef::Null => Ok(Param::Null),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .map(|s| Param::Text(s.into()))
            .map_err(|_| SqlError::Other(format!("column {i}: text that is not UTF-8"))),
        ValueRef::Real(_) | ValueRef::Blob(_) => Err(SqlError::Other(format!(
            "column {i}: a float or blob, which the engine never stores"
        ))),
    }
}

/// SQLite's name of a result code's primary part (what the contract's error codes match).
pub(super) fn result_code_name(extended: i32) -> &'static str {
    match extended & 0xff {
        5 => "SQLITE_BUSY",
        6 => "SQLITE_LOCKED",
        19 => "SQLITE_CONSTRAINT",
        _ => "SQLITE_ERROR",
    }
}
