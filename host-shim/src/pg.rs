//! `PgDb`: the SQL bridge over PostgreSQL (tokio-postgres on a runtime of the connection's own,
//! driven synchronously). Every engine call is one SERIALIZABLE transaction (reads: SERIALIZABLE
//! READ ONLY); a serialization failure or a deadlock is `SqlError::Conflict`, after which the
//! worker runs the whole call again (engine calls are deterministic); the statements, the lock
//! wait and the error codes are the hosting contract's. Integers are `bigint` on
//! both sides; prepared statements are cached by their text, per connection. The rows of one
//! `execute_many` are pipelined: sent together, answered together.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Statement};

use crate::contract::HostingContract;
use crate::runtime::Runtime;
use crate::sql::{Database, Dialect, SqlError, SqlValue};

pub struct PgDb {
    rt: tokio::runtime::Runtime,
    client: Client,
    statements: HashMap<String, Statement>,
    /// To connect again when the server closed the connection (a restart, a failover).
    url: String,
    contract: Arc<HostingContract>,
    busy_wait: std::time::Duration,
}

/// A driver error as the contract's kind, by its SQLSTATE; the server's own message when it sent one.
fn pg_err(contract: &HostingContract, e: tokio_postgres::Error) -> SqlError {
    let message = e
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| e.to_string());
    let code = e.code().map(|c| c.code()).unwrap_or_default();
    contract.error(code, format!("postgres: {message}"))
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

fn read_row(row: &tokio_postgres::Row) -> Result<Vec<SqlValue>, SqlError> {
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
                .unwrap_or(SqlValue::Null),
        );
    }
    Ok(out)
}

impl PgDb {
    /// Connects to `url` (`postgres://user@host/db`; no TLS: a database on the same network) and
    /// sets the connection up by `rt`'s contract.
    pub fn connect(rt: &Runtime, url: &str) -> Result<PgDb, SqlError> {
        PgDb::connect_with(rt, url, None)
    }

    /// [`PgDb::connect`], with a busy wait of the host's own (else the contract's).
    pub fn connect_with(
        rt: &Runtime,
        url: &str,
        busy_wait: Option<std::time::Duration>,
    ) -> Result<PgDb, SqlError> {
        let contract = rt.contract(Dialect::Postgres);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| SqlError::Other(format!("postgres: runtime: {e}")))?;
        let client = Self::open(&rt, url)?;
        let mut db = PgDb {
            rt,
            client,
            statements: HashMap::new(),
            url: url.to_string(),
            contract,
            busy_wait: std::time::Duration::ZERO,
        };
        db.set_up(busy_wait)?;
        Ok(db)
    }

    fn set_up(&mut self, busy_wait: Option<std::time::Duration>) -> Result<(), SqlError> {
        let c = self.contract.clone();
        let wait = busy_wait.unwrap_or(c.busy_wait);
        self.busy_wait = wait;
        c.set_up(self, wait, crate::Durability::Full)
    }

    fn open(rt: &tokio::runtime::Runtime, url: &str) -> Result<Client, SqlError> {
        let (client, connection) = rt
            .block_on(tokio_postgres::connect(url, NoTls))
            .map_err(|e| SqlError::Other(format!("postgres: connecting: {e}")))?;
        // The connection makes progress whenever a call below waits on the runtime.
        rt.spawn(connection);
        Ok(client)
    }

    fn prepare(&mut self, sql: &str) -> Result<Statement, SqlError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .rt
            .block_on(self.client.prepare(sql))
            .map_err(|e| pg_err(&self.contract, e))?;
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
        self.rt
            .block_on(self.client.batch_execute(sql))
            .map_err(|e| pg_err(&self.contract, e))
    }
}

impl Database for PgDb {
    fn contract(&self) -> &Arc<HostingContract> {
        &self.contract
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError> {
        let stmt = self.prepare(sql)?;
        let bound = Self::bound(&stmt, params)?;
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
        let rows = self
            .rt
            .block_on(self.client.query(&stmt, &refs))
            .map_err(|e| pg_err(&self.contract, e))?;
        rows.iter().map(read_row).collect()
    }

    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlValue>]) -> Result<u64, SqlError> {
        let stmt = self.prepare(sql)?;
        let bound = rows
            .iter()
            .map(|row| Self::bound(&stmt, row))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<Vec<&(dyn ToSql + Sync)>> = bound
            .iter()
            .map(|b| b.iter().map(|v| v as &(dyn ToSql + Sync)).collect())
            .collect();
        let client = &self.client;
        // Every row's execution issued at once: tokio-postgres pipelines them on the connection,
        // and the server runs them in order. The first failure (in row order) is the answer.
        let results = self.rt.block_on(futures_util::future::join_all(
            refs.iter().map(|r| client.execute(&stmt, r.as_slice())),
        ));
        let mut changed = 0;
        for r in results {
            changed += r.map_err(|e| pg_err(&self.contract, e))?;
        }
        Ok(changed)
    }

    /// A connection the server closed (it restarted, or failed over) is opened again and set up,
    /// so a worker recovers once the database is back instead of failing forever.
    fn before_transaction(&mut self) -> Result<(), SqlError> {
        if self.client.is_closed() {
            self.client = Self::open(&self.rt, &self.url)?;
            self.statements.clear();
            self.set_up(Some(self.busy_wait))?;
        }
        Ok(())
    }
}
