//! `PgDb`: the SQL bridge over PostgreSQL (tokio-postgres on a runtime of the connection's own,
//! driven synchronously). Every engine call is one SERIALIZABLE transaction (reads: SERIALIZABLE
//! READ ONLY); a serialization failure or a deadlock is `SqlError::Conflict`, after which the
//! worker runs the whole call again (engine calls are deterministic); the statements, the lock
//! wait and the error codes are the hosting contract's. Integers are `bigint` on
//! both sides; prepared statements are cached by their text, per connection. The rows of one
//! `execute_many` are pipelined: sent together, answered together.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_postgres::{Client, NoTls, Statement};

use crate::contract::{Durability, HostingContract, SetupStatement};
use crate::runtime::Runtime;
use crate::sql::{Database, Dialect, SqlCell, SqlError};

mod cells;
use cells::{bound, pg_err, read_row, refs};

pub struct PgDb {
    rt: tokio::runtime::Runtime,
    client: Client,
    statements: HashMap<String, Statement>,
    /// To connect again when the server closed the connection (a restart, a failover).
    url: String,
    contract: Arc<HostingContract>,
    busy_wait: std::time::Duration,
    /// The contract's set-up statements with `busy_wait` in them, run again on a reconnect.
    setup: Vec<SetupStatement>,
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
        let busy_wait = busy_wait.unwrap_or(contract.busy_wait);
        // PostgreSQL's durability is the server's; the set-up does not depend on it.
        let setup = rt
            .connection_setup(Dialect::Postgres, busy_wait, Durability::Full)
            .map_err(|e| SqlError::Other(e.to_string()))?;
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
            busy_wait,
            setup,
        };
        db.set_up()?;
        Ok(db)
    }

    fn set_up(&mut self) -> Result<(), SqlError> {
        let (c, statements, wait) = (
            self.contract.clone(),
            std::mem::take(&mut self.setup),
            self.busy_wait,
        );
        let done = crate::setup::set_up(self, &statements, &c, wait);
        self.setup = statements;
        done
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
}

impl Database for PgDb {
    fn contract(&self) -> &Arc<HostingContract> {
        &self.contract
    }

    fn query(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, SqlError> {
        let stmt = self.prepare(sql)?;
        let bound = bound(&stmt, params)?;
        let rows = self
            .rt
            .block_on(self.client.query(&stmt, &refs(&bound)))
            .map_err(|e| pg_err(&self.contract, e))?;
        rows.iter().map(read_row).collect()
    }

    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlCell>]) -> Result<u64, SqlError> {
        let stmt = self.prepare(sql)?;
        let bound = rows
            .iter()
            .map(|row| bound(&stmt, row))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<_> = bound.iter().map(|b| refs(b)).collect();
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
            self.set_up()?;
        }
        Ok(())
    }
}
