//! How values cross between the engine's SQL bridge and PostgreSQL: each parameter bound as its
//! statement's parameter type asks, each column read by its type, each error named by its SQLSTATE.

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Statement;

use crate::contract::HostingContract;
use crate::sql::{SqlCell, SqlError};

/// One parameter, bound as the statement's parameter type asks (`bigint`, `integer`, `text`).
#[derive(Debug)]
pub(super) enum Bound<'a> {
    I64(Option<i64>),
    I32(Option<i32>),
    Text(Option<&'a str>),
}

impl ToSql for Bound<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Bound::I64(v) => v.to_sql(ty, out),
            Bound::I32(v) => v.to_sql(ty, out),
            Bound::Text(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [Type::INT8, Type::INT4, Type::TEXT, Type::VARCHAR, Type::NAME].contains(ty)
    }

    tokio_postgres::types::to_sql_checked!();
}

fn bind<'a>(v: &'a SqlCell, ty: &Type) -> Result<Bound<'a>, SqlError> {
    let wrong = || SqlError::Other(format!("parameter {v:?}: the statement wants {ty}"));
    Ok(match (v, ty) {
        (SqlCell::Null, &Type::INT8) => Bound::I64(None),
        (SqlCell::Null, &Type::INT4) => Bound::I32(None),
        (SqlCell::Null, _) => Bound::Text(None),
        (SqlCell::Int(i), &Type::INT8) => Bound::I64(Some(*i)),
        (SqlCell::Int(i), &Type::INT4) => Bound::I32(Some(i32::try_from(*i).map_err(|_| wrong())?)),
        (SqlCell::Text(s), t) if *t == Type::TEXT || *t == Type::VARCHAR || *t == Type::NAME => {
            Bound::Text(Some(s))
        }
        _ => return Err(wrong()),
    })
}

pub(super) fn read_row(row: &tokio_postgres::Row) -> Result<Vec<SqlCell>, SqlError> {
    let mut out = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let ty = col.type_();
        let v = if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(i).map(|v| v.map(SqlCell::Int))
        } else if *ty == Type::INT4 {
            row.try_get::<_, Option<i32>>(i)
                .map(|v| v.map(|x| SqlCell::Int(x.into())))
        } else if *ty == Type::TEXT || *ty == Type::VARCHAR || *ty == Type::NAME {
            row.try_get::<_, Option<String>>(i).map(|v| v.map(SqlCell::Text))
        } else if *ty == Type::VOID {
            // `SELECT pg_advisory_lock(..)`: a function that returns nothing reads as null.
            Ok(None)
        } else {
            return Err(SqlError::Other(format!(
                "column {} is {ty}, which the engine never stores",
                col.name()
            )));
        };
        out.push(
            v.map_err(|e| SqlError::Other(format!("postgres: {e}")))?
                .unwrap_or(SqlCell::Null),
        );
    }
    Ok(out)
}

/// A statement's parameters, checked against its parameter count and types.
pub(super) fn bound<'a>(stmt: &Statement, params: &'a [SqlCell]) -> Result<Vec<Bound<'a>>, SqlError> {
    if stmt.params().len() != params.len() {
        return Err(SqlError::Other(format!(
            "the statement has {} parameters, {} given",
            stmt.params().len(),
            params.len()
        )));
    }
    params
        .iter()
        .zip(stmt.params())
        .map(|(v, t)| bind(v, t))
        .collect()
}

/// The parameters as the driver takes them.
pub(super) fn refs<'a>(bound: &'a [Bound<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect()
}

/// A driver error as the contract's kind, by its SQLSTATE; the server's own message when it sent one.
pub(super) fn pg_err(contract: &HostingContract, e: tokio_postgres::Error) -> SqlError {
    let message = e
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| e.to_string());
    let code = e.code().map(|c| c.code()).unwrap_or_default();
    SqlError::from_driver(contract, code, format!("postgres: {message}"))
}
