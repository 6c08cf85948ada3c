//! A worker: one engine instance and one database connection, used by one thread at a time.
//!
//! Instantiating a component costs tens of microseconds, more than a whole call, so a worker keeps
//! its instance between calls (the guest keeps nothing but its parsed configuration). Each
//! transaction: `begin`, set the epoch deadline, run the engine calls (and the host's own
//! statements), then `commit` if everything returned normally and no statement failed, else
//! `rollback`. After a trap, a deadline or a memory-limit breach the instance is thrown away and a
//! fresh one is configured, so the worker keeps serving.

mod calls;

use std::sync::Arc;

use wasmtime::Store;

use crate::bindings::ComponentInstance;
use crate::contract::HostingContract;
use crate::error::{trap, HostError};
use crate::observe::{Observation, Observer};
use crate::replies::{ConfigSummary, Migration, RuleInfo};
use crate::runtime::{instantiate, Bounds, Runtime};
use crate::sql::{Database, SqlError};
use crate::store_data::HostState;
pub use crate::tx::Tx;

pub struct Worker {
    pub(crate) runtime: Arc<Runtime>,
    /// The runtime's bounds and the hosting contract for this worker's database dialect.
    pub(crate) bounds: Bounds,
    contract: Arc<HostingContract>,
    pub(crate) store: Option<Store<HostState>>,
    pub(crate) bindings: ComponentInstance,
    values_json: String,
    summary: ConfigSummary,
    /// Calls run again after a conflict with a concurrent transaction, since this worker began.
    pub conflicts_retried: u64,
    /// Told of committed observations, traps, busy failures and retries (see [`Worker::observe`]).
    pub(crate) observer: Option<Arc<dyn Observer>>,
    /// The observations of the open transaction's calls, until it commits (or is rolled back).
    pub(crate) observations: Vec<Observation>,
    /// In `migrate`: calls get the contract's migration deadline, not a call's.
    migrating: bool,
}

impl Worker {
    /// A worker over `db`, configured with the values document (JSON), with the database brought to
    /// the engine's schema (the engine's `migrate`, in a write transaction).
    pub fn new(runtime: Arc<Runtime>, db: Box<dyn Database>, values_json: &str) -> Result<Worker, HostError> {
        let mut w = Worker::configured(runtime, db, values_json)?;
        w.migrate()?;
        Ok(w)
    }

    /// A worker over a database already at a schema this engine writes as it is (its own, or a
    /// newer release's whose floor allows it), or an empty one, which it creates: an existing
    /// schema is checked, never changed ([`HostError::NeedsMigration`] when it needs a migration,
    /// an explicit step: docs/upgrade.md).
    pub fn without_migrating(
        runtime: Arc<Runtime>,
        db: Box<dyn Database>,
        values_json: &str,
    ) -> Result<Worker, HostError> {
        let mut w = Worker::configured(runtime, db, values_json)?;
        match w.check_schema() {
            Err(HostError::NeedsMigration { found: 0, .. }) => {
                w.migrate()?;
            }
            other => {
                other?;
            }
        }
        Ok(w)
    }

    /// A worker over `db` whose schema nothing has looked at yet: its caller decides
    /// ([`Worker::check_schema`], [`Worker::migrate`]), as `quota-hub migrate` does.
    pub fn unmigrated(
        runtime: Arc<Runtime>,
        db: Box<dyn Database>,
        values_json: &str,
    ) -> Result<Worker, HostError> {
        Worker::configured(runtime, db, values_json)
    }

    /// The schema as the engine finds it, changing nothing: the engine's `migrate` in a
    /// transaction rolled back when it would have changed the version.
    pub fn check_schema(&mut self) -> Result<Migration, HostError> {
        self.migrating = true;
        let m = self.transaction(false, |tx| {
            let m = tx.migrate()?;
            if m.from_version == m.to_version {
                Ok(m)
            } else {
                Err(HostError::NeedsMigration {
                    found: m.from_version,
                    writes: m.to_version,
                })
            }
        });
        self.migrating = false;
        m
    }

    /// A fresh instance over `db`, configured; the schema untouched.
    fn configured(
        runtime: Arc<Runtime>,
        db: Box<dyn Database>,
        values_json: &str,
    ) -> Result<Worker, HostError> {
        let (bounds, contract) = (runtime.bounds(db.dialect()), db.contract().clone());
        let (store, bindings) = instantiate(&runtime, &bounds, db)?;
        let mut w = Worker {
            runtime,
            bounds,
            contract,
            store: Some(store),
            bindings,
            values_json: String::new(),
            summary: ConfigSummary::default(),
            conflicts_retried: 0,
            observer: None,
            observations: Vec::new(),
            migrating: false,
        };
        w.configure(values_json)?;
        Ok(w)
    }

    /// Brings the database to the engine's current schema (idempotent).
    pub fn migrate(&mut self) -> Result<Migration, HostError> {
        // Hosts starting at once on a new database take turns (SQLite's write lock does this
        // already; PostgreSQL takes an advisory lock, held outside the transaction's snapshot).
        self.db().lock_for_migration().map_err(HostError::Storage)?;
        // The migration's own deadline: it may rebuild derived tables from the whole ledger.
        self.migrating = true;
        let m = self.transaction(false, |tx| tx.migrate());
        self.migrating = false;
        let unlocked = self.db().unlock_after_migration();
        let m = m?;
        unlocked.map_err(HostError::Storage)?;
        Ok(m)
    }

    /// Replaces the configuration (a refused one leaves the previous in force).
    pub fn configure(&mut self, values_json: &str) -> Result<&ConfigSummary, HostError> {
        let store = self
            .store
            .as_mut()
            .unwrap_or_else(|| unreachable!("worker store is missing"));
        let answer = self
            .bindings
            .quota_engine_api()
            .call_configure(store, values_json);
        match answer {
            Ok(Ok(summary)) => {
                self.summary = ConfigSummary {
                    enabled: summary.enabled,
                    rules: summary
                        .rules
                        .into_iter()
                        .map(|r| RuleInfo {
                            name: r.name,
                            enabled: r.enabled,
                            schedule: r.schedule,
                        })
                        .collect(),
                    settings: crate::convert::host_settings(summary.settings),
                };
                self.values_json = values_json.to_string();
                Ok(&self.summary)
            }
            Ok(Err(problems)) => Err(HostError::Config(
                problems.into_iter().map(|p| (p.field, p.message)).collect(),
            )),
            Err(e) => {
                let err = trap(e);
                self.replace_instance()?;
                Err(err)
            }
        }
    }

    /// Reports to `observer` from now on: the observations of every committed call (returned by
    /// the engine with each answer), traps, busy failures and conflict retries.
    pub fn observe(&mut self, observer: Arc<dyn Observer>) {
        self.observer = Some(observer);
    }

    pub(crate) fn note_failure(&self, e: &HostError) {
        if let Some(o) = &self.observer {
            match e {
                HostError::Trap(_) => o.trapped(),
                e if e.is_transient(&self.contract) => o.busy(),
                _ => {}
            }
        }
    }

    /// The hosting contract of this worker's database.
    pub fn contract(&self) -> &Arc<HostingContract> {
        &self.contract
    }

    pub fn summary(&self) -> &ConfigSummary {
        &self.summary
    }

    /// The first firing minute of rule `name` strictly after `after` (the engine's cron), if any.
    /// Touches no storage, so it runs outside any transaction.
    pub fn next_fire(
        &mut self,
        name: &str,
        after: quota_core::Timestamp,
    ) -> Result<Option<quota_core::Timestamp>, HostError> {
        let store = self
            .store
            .as_mut()
            .unwrap_or_else(|| unreachable!("worker store is missing"));
        store.set_epoch_deadline(self.bounds.deadline_ticks());
        match self
            .bindings
            .quota_engine_api()
            .call_next_fire(store, name, after.0)
        {
            Ok(t) => Ok(t.map(quota_core::Timestamp)),
            Err(e) => {
                let err = trap(e);
                self.replace_instance()?;
                Err(err)
            }
        }
    }

    /// A worker for calls that touch no storage (checking a values document, cron times): configured
    /// with `values_json` (JSON) over an empty private `:memory:` database. A refused document is
    /// `HostError::Config` with every problem and its key path.
    pub fn without_storage(runtime: Arc<Runtime>, values_json: &str) -> Result<Worker, HostError> {
        let db = crate::sqlite::SqliteDb::memory(&runtime).map_err(HostError::Storage)?;
        Worker::configured(runtime, Box::new(db), values_json)
    }

    fn store_mut(&mut self) -> &mut Store<HostState> {
        // Present except inside `replace_instance`, which always puts one back or fails the worker.
        self.store
            .as_mut()
            .unwrap_or_else(|| unreachable!("worker store is missing"))
    }

    /// Runs `f` in one transaction (a read transaction when `read_only`): committed only if `f`
    /// returns `Ok`, nothing trapped and no statement failed; rolled back otherwise. When the
    /// database reports a conflict with a concurrent transaction (PostgreSQL's serialization
    /// failures and deadlocks), the whole of `f` runs again in a new transaction, at most
    /// the contract's retry attempts; engine calls are deterministic, so a retry decides again
    /// from what is committed.
    pub fn transaction<T>(
        &mut self,
        read_only: bool,
        mut f: impl FnMut(&mut Tx<'_>) -> Result<T, HostError>,
    ) -> Result<T, HostError> {
        let contract = self.db().contract().clone();
        let mut attempt = 0;
        loop {
            let answer = self.transaction_once(read_only, &mut f);
            let retry = match &answer {
                Err(HostError::Storage(e)) => contract.handling(e.kind()).retry,
                _ => false,
            };
            if retry && attempt < contract.retry_attempts {
                attempt += 1;
                self.conflicts_retried += 1;
                if let Some(o) = &self.observer {
                    o.conflict_retried();
                }
                std::thread::sleep(contract.backoff(attempt));
                continue;
            }
            let answer = match answer {
                Err(HostError::Storage(SqlError::Conflict(m))) if retry => Err(HostError::Storage(
                    SqlError::Conflict(format!("{m} (still conflicting after {attempt} retries)")),
                )),
                other => other,
            };
            if let Err(e) = &answer {
                self.note_failure(e);
            }
            return answer;
        }
    }

    fn transaction_once<T>(
        &mut self,
        read_only: bool,
        f: &mut impl FnMut(&mut Tx<'_>) -> Result<T, HostError>,
    ) -> Result<T, HostError> {
        let db = self.db();
        let begun = if read_only { db.begin_read() } else { db.begin() };
        begun.map_err(HostError::Storage)?;
        self.observations.clear();
        let (answer, trapped) = self.run_scoped(f);
        let outcome = match answer {
            Ok(v) => match self.db().commit() {
                Ok(()) => {
                    if let Some(o) = &self.observer {
                        if !self.observations.is_empty() {
                            o.committed(&self.observations);
                        }
                    }
                    return Ok(v);
                }
                Err(e) => Err(HostError::Storage(e)),
            },
            Err(e) => Err(e),
        };
        let rolled_back = self.db().rollback();
        if trapped {
            self.replace_instance()?;
        }
        rolled_back.map_err(HostError::Storage)?;
        outcome
    }

    /// The one runner of engine calls, inside a transaction or a savepoint its caller opened and
    /// closes: the deadline set, `f` run with a [`Tx`], and its answer unless a statement failed
    /// (the database's own record of a failure wins over what the guest made of it) or the guest
    /// trapped. Also says whether it trapped (the caller replaces the instance after undoing).
    pub(crate) fn run_scoped<T>(
        &mut self,
        f: &mut impl FnMut(&mut Tx<'_>) -> Result<T, HostError>,
    ) -> (Result<T, HostError>, bool) {
        let ticks = if self.migrating {
            self.bounds.migration_ticks()
        } else {
            self.bounds.deadline_ticks()
        };
        let chunk_users = self.bounds.refresh_chunk_users;
        let store = self
            .store
            .as_mut()
            .unwrap_or_else(|| unreachable!("worker store is missing"));
        store.data_mut().storage_failed = None;
        store.set_epoch_deadline(ticks);
        let mut trapped = false;
        let answer = f(&mut Tx {
            bindings: &self.bindings,
            store: &mut *store,
            trapped: &mut trapped,
            observations: self.observer.is_some().then_some(&mut self.observations),
            chunk_users,
        });
        let answer = match (answer, store.data_mut().storage_failed.take()) {
            (Ok(v), None) if !trapped => Ok(v),
            (_, Some(e)) => Err(HostError::Storage(e)),
            (Err(e), None) => Err(e),
            (Ok(_), None) => Err(HostError::Trap("an engine call trapped".into())),
        };
        (answer, trapped)
    }

    /// Answers one REST request through the component; `GET` runs in a read transaction, and a
    /// refresh with a run id commits a chunk of users per transaction, as every host does.
    pub fn handle_request(
        &mut self,
        req: &quota_core::Request<'_>,
        now: quota_core::Timestamp,
    ) -> Result<quota_core::Response, HostError> {
        if req.method == "GET" {
            return self.transaction(true, |tx| tx.handle_request(req, now));
        }
        self.chunked(|tx, chunk| tx.handle_request_step(req, now, chunk))
    }

    /// The database, outside any transaction (a test's dump, a tool's check).
    pub fn db(&mut self) -> &mut dyn Database {
        self.store_mut().data_mut().db()
    }
}
