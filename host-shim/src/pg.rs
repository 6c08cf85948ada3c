//! `PgDb`: the SQL bridge over PostgreSQL (the `postgres` crate, synchronous). Every engine call is
//! one SERIALIZABLE transaction (reads: SERIALIZABLE READ ONLY); a serialization failure or a
//! deadlock is `SqlError::Conflict`, after which the worker runs the whole call again (engine
//! calls are deterministic). Integers are `bigint` on both sides; prepared statements are cached
//! by their text, per connection.

use std::collections::HashMap;

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Statement};

use crate::sql::{Database, Dialect, SqlError, SqlValue};

/// The advisory lock key hosts take around the engine's `migrate` ("quota" in ASCII).
const migration_lock: i64 = 0x71756f7461;

pub struct PgDb {
    client: Client,
    statements: HashMap<String, Statement>,
}

fn pg_err(e: postgres::Error) -> SqlError {
    match e.code() {
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED => {
            SqlError::Conflict(e.to_string())
        }
        Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE || *c == SqlState::QUERY_CANCELED => SqlError::Busy,
        Some(c) if c.code().starts_with("23") => SqlError::Constraint(
            e.as_db_error()
                .map(|d| d.message().to_string())
                .unwrap_or_else(|| e.to_string()),
        ),
        _ => SqlError::Other(format!(
            "postgres: {}",
            e.as_db_error()
                .map(|d| d.message().to_string())
                .unwrap_or_else(|| e.to_string())
        )),
    }
}

/// One parameter, bound as the statement's parameter type asks (`bigint`, `integer`, `text`).
#[derive(Debug)]
enum Bound<'a> {
    I64(Option<i64>),
    I32(Option<i32>),
    Text(Option<&'a str>),
}

impl ToSql for Bound<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Bound::I64(v) => v.to_sql(ty, out),
            Bound::I32(v) => v.to_sql(ty, out),
            Bound::Text(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [Type::INT8, Type::INT4, Type::TEXT, Type::VARCHAR, Type::NAME].contains(ty)
    }

    postgres::types::to_sql_checked!();
}

fn bind<'a>(v: &'a SqlValue, ty: &Type) -> Result<Bound<'a>, SqlError> {
    let wrong = || SqlError::Other(format!("parameter {v:?}: the statement wants {ty}"));
    Ok(match (v, ty) {
        (SqlValue::Null, &Type::INT8) => Bound::I64(None),
        (SqlValue::Null, &Type::INT4) => Bound::I32(None),
        (SqlValue::Null, _) => Bound::Text(None),
        (SqlValue::Int(i), &Type::INT8) => Bound::I64(Some(*i)),
        (SqlValue::Int(i), &Type::INT4) => Bound::I32(Some(i32::try_from(*i).map_err(|_| wrong())?)),
        (SqlValue::Text(s), t) if *t == Type::TEXT || *t == Type::VARCHAR || *t == Type::NAME => {
            Bound::Text(Some(s))
        }
        _ => return Err(wrong()),
    })
}

fn read_row(row: &postgres::Row) -> Result<Vec<SqlValue>, SqlError> {
    let mut out = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let ty = col.type_();
        let v = if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(i).map(|v| v.map(SqlValue::Int))
        } else if *ty == Type::INT4 {
            row.try_get::<_, Option<i32>>(i)
                .map(|v| v.map(|x| SqlValue::Int(x.into())))
        } else if *ty == Type::TEXT || *ty == Type::VARCHAR || *ty == Type::NAME {
            row.try_get::<_, Option<String>>(i).map(|v| v.map(SqlValue::Text))
        } else {
            return Err(SqlError::Other(format!(
                "column {} is {ty}, which the engine never stores",
                col.name()
            )));
        };
        out.push(v.map_err(pg_err)?.unwrap_or(SqlValue::Null));
    }
    Ok(out)
}

impl PgDb {
    /// Connects to `url` (`postgres://user@host/db`; no TLS: a database on the same network).
    pub fn connect(url: &str) -> Result<PgDb, SqlError> {
        let client =
            Client::connect(url, NoTls).map_err(|e| SqlError::Other(format!("postgres: connecting: {e}")))?;
        Ok(PgDb {
            client,
            statements: HashMap::new(),
        })
    }

    fn prepare(&mut self, sql: &str) -> Result<Statement, SqlError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).map_err(pg_err)?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    fn bound<'a>(stmt: &Statement, params: &'a [SqlValue]) -> Result<Vec<Bound<'a>>, SqlError> {
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

    /// Runs statements of the host's own (quota-hub's tables), outside the engine's bridge.
    pub fn batch(&mut self, sql: &str) -> Result<(), SqlError> {
        self.client.batch_execute(sql).map_err(pg_err)
    }
}

impl Database for PgDb {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError> {
        let stmt = self.prepare(sql)?;
        let bound = Self::bound(&stmt, params)?;
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
        let rows = self.client.query(&stmt, &refs).map_err(pg_err)?;
        rows.iter().map(read_row).collect()
    }

    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlValue>]) -> Result<u64, SqlError> {
        let stmt = self.prepare(sql)?;
        let mut changed = 0;
        for row in rows {
            let bound = Self::bound(&stmt, row)?;
            let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            changed += self.client.execute(&stmt, &refs).map_err(pg_err)?;
        }
        Ok(changed)
    }

    fn begin(&mut self) -> Result<(), SqlError> {
        self.client
            .batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
            .map_err(pg_err)
    }

    fn begin_read(&mut self) -> Result<(), SqlError> {
        self.client
            .batch_execute("BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY")
            .map_err(pg_err)
    }

    fn commit(&mut self) -> Result<(), SqlError> {
        self.client.batch_execute("COMMIT").map_err(pg_err)
    }

    fn rollback(&mut self) -> Result<(), SqlError> {
        // Outside a transaction PostgreSQL only warns; a broken connection is reported.
        self.client.batch_execute("ROLLBACK").map_err(pg_err)
    }

    fn lock_for_migration(&mut self) -> Result<(), SqlError> {
        // A session lock, taken before the migration's transaction (and its snapshot) begins.
        self.client
            .batch_execute(&format!("SELECT pg_advisory_lock({migration_lock})"))
            .map_err(pg_err)
    }

    fn unlock_after_migration(&mut self) -> Result<(), SqlError> {
        self.client
            .batch_execute(&format!("SELECT pg_advisory_unlock({migration_lock})"))
            .map_err(pg_err)
    }

    fn dump(&mut self) -> Result<String, SqlError> {
        let mut out = String::new();
        for (table, order) in [
            ("users", "username"),
            ("transactions", "id"),
            ("sessions", "id"),
            ("refresh_runs", "run_id"),
        ] {
            let exists = self
                .query(&format!("SELECT to_regclass('{table}')::text"), &[])?
                .first()
                .is_some_and(|r| r.first() != Some(&SqlValue::Null));
            if !exists {
                continue;
            }
            out.push_str(&format!("-- {table}\n"));
            let rows = self.query(&format!("SELECT * FROM {table} ORDER BY {order}"), &[])?;
            out.push_str(&crate::sql::rows_to_json(&rows));
            out.push('\n');
        }
        Ok(out)
    }
}
