//! A transaction in progress: the engine's exports called inside it, and the host's own statements.

use quota_core::refresh::Step;
use wasmtime::Store;

use crate::bindings::{api, ComponentInstance};
use crate::error::{trap, HostError};
use crate::observe::Observation;
use crate::replies::{refresh_result, Migration};
use crate::sql::{SqlCell, SqlError};
use crate::store_data::HostState;

/// One open transaction: engine calls and the host's own statements, committed together.
pub struct Tx<'a> {
    pub(crate) bindings: &'a ComponentInstance,
    pub(crate) store: &'a mut Store<HostState>,
    pub(crate) trapped: &'a mut bool,
    /// Where the observations of this transaction's calls go, when the worker has an observer.
    pub(crate) observations: Option<&'a mut Vec<Observation>>,
    /// Users per transaction of a refresh with a run id (the runtime's `Limits`).
    pub(crate) chunk_users: u32,
}

fn http_request(req: &quota_core::Request<'_>) -> api::HttpRequest {
    api::HttpRequest {
        method: req.method.to_string(),
        path: req.path.to_string(),
        query: req.query.to_string(),
        body: req.body.to_string(),
        caller: req.caller.map(|c| api::Caller {
            name: c.name.clone(),
            admin: c.admin,
            scopes: c.scopes.clone(),
        }),
    }
}

impl Tx<'_> {
    /// The engine's `migrate` in this transaction: (the version the database had, the version
    /// this engine writes). A database already at that version is only read. A host checking
    /// readiness runs it in a read transaction and treats any other answer as "not ready" (its
    /// caller returns an error, so whatever the steps wrote is rolled back).
    /// A step that fails is reported with the engine's words (the versions, the step), not only
    /// the statement's; a busy or conflicting database keeps its own error (the caller retries).
    pub fn migrate(&mut self) -> Result<Migration, HostError> {
        let answer = match self.bindings.quota_engine_api().call_migrate(&mut *self.store) {
            Ok(a) => a,
            Err(e) => {
                *self.trapped = true;
                return Err(trap(e));
            }
        };
        let failed = self.store.data().storage_failed.clone();
        match (answer, failed) {
            (_, Some(e @ (SqlError::Busy | SqlError::Conflict(_)))) => Err(HostError::Storage(e)),
            (Err(e), _) => {
                // The engine's words stand for the failed step (the transaction still rolls back).
                self.store.data_mut().storage_failed = None;
                Err(HostError::Storage(SqlError::Other(format!(
                    "migrating the database: {}",
                    crate::convert::quota_error(e)
                ))))
            }
            (Ok(_), Some(e)) => Err(HostError::Storage(e)),
            (Ok(m), None) => Ok(Migration {
                from_version: m.from_version,
                to_version: m.to_version,
            }),
        }
    }

    /// Runs one export. A trap poisons the instance (replaced when the transaction ends); a failed
    /// statement during the call fails it with that statement's error.
    pub(crate) fn call<T>(
        &mut self,
        f: impl FnOnce(&ComponentInstance, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, HostError> {
        match f(self.bindings, self.store) {
            Err(e) => {
                *self.trapped = true;
                Err(trap(e))
            }
            Ok(v) => match &self.store.data().storage_failed {
                Some(e) => Err(HostError::Storage(e.clone())),
                None => Ok(v),
            },
        }
    }

    /// Keeps what a call observed (returned with its answer) until the transaction commits, when
    /// the worker has an observer to tell.
    pub(crate) fn observed(&mut self, list: Vec<api::Observation>) {
        if let Some(kept) = self.observations.as_deref_mut() {
            kept.extend(list.into_iter().map(crate::convert::observation));
        }
    }

    /// The database, for a host's own reads in this transaction (a token lookup); a failure is
    /// the caller's to report.
    pub fn db(&mut self) -> &mut dyn crate::sql::Database {
        self.store.data_mut().db()
    }

    /// Users per transaction of a refresh with a run id (for [`Tx::handle_request_step`]).
    pub fn refresh_chunk_users(&self) -> u32 {
        self.chunk_users
    }

    /// Active sessions by resource type.
    pub fn active_sessions(&mut self) -> Result<Vec<(String, u64)>, HostError> {
        let r = self.call(|b, s| b.quota_engine_api().call_active_sessions(s))?;
        Ok(r.map_err(|e| HostError::Quota(crate::convert::quota_error(e)))?
            .into_iter()
            .map(|c| (c.resource_type, c.sessions))
            .collect())
    }

    /// The SQL the database speaks (for a host's own statements).
    pub fn dialect(&self) -> crate::Dialect {
        self.store.data().db_ref().dialect()
    }

    /// A statement of the host's own (quota-hub's tokens and replays), in this transaction.
    pub fn query(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, HostError> {
        let r = self.store.data_mut().db().query(sql, params);
        self.store.data_mut().seen(r).map_err(HostError::Storage)
    }

    /// Answers one REST request through the component.
    pub fn handle_request(
        &mut self,
        req: &quota_core::Request<'_>,
        now: quota_core::Timestamp,
    ) -> Result<quota_core::Response, HostError> {
        let wreq = http_request(req);
        let r = self.call(|b, s| b.quota_engine_api().call_handle_request(s, &wreq, now.0))?;
        // An `err` is a storage failure the guest reported; the host's own record of it (above)
        // normally wins, so this is a fallback.
        let r = r.map_err(|m| HostError::Storage(SqlError::Other(m)))?;
        self.observed(r.observations);
        Ok(quota_core::Response {
            status: r.status,
            body: r.body,
        })
    }

    /// [`Tx::handle_request`], with a refresh that has a run id applied in chunks of `chunk_users`
    /// users, one per transaction (see [`Worker::chunked`]).
    pub fn handle_request_step(
        &mut self,
        req: &quota_core::Request<'_>,
        now: quota_core::Timestamp,
        chunk_users: u32,
    ) -> Result<Step<quota_core::Response>, HostError> {
        let wreq = http_request(req);
        let r = self.call(|b, s| {
            b.quota_engine_api()
                .call_handle_request_step(s, &wreq, now.0, chunk_users)
        })?;
        Ok(match r.map_err(|m| HostError::Storage(SqlError::Other(m)))? {
            api::RequestStep::Done(r) => {
                self.observed(r.observations);
                Step::Done(quota_core::Response {
                    status: r.status,
                    body: r.body,
                })
            }
            api::RequestStep::More => Step::More,
        })
    }

    /// [`Tx::run_rule`] with a run id, in chunks of `chunk_users` users (see [`Worker::chunked`]).
    pub fn run_rule_step(
        &mut self,
        name: &str,
        run_id: &str,
        now: quota_core::Timestamp,
        chunk_users: u32,
    ) -> Result<Step<quota_core::refresh::RefreshResult>, HostError> {
        let (r, observed) = self.call(|b, s| {
            b.quota_engine_api()
                .call_run_rule_step(s, name, run_id, now.0, chunk_users)
        })?;
        self.observed(observed);
        Ok(match r {
            Ok(api::RefreshStep::Done(r)) => Step::Done(refresh_result(Ok(r))?),
            Ok(api::RefreshStep::More) => Step::More,
            Err(e) => return refresh_result(Err(e)).map(Step::Done),
        })
    }

    /// Runs configured rule `name` (at most once per `run_id`); `replayed` says a run id had been
    /// applied before.
    pub fn run_rule(
        &mut self,
        name: &str,
        run_id: Option<&str>,
        dry_run: bool,
        now: quota_core::Timestamp,
    ) -> Result<quota_core::refresh::RefreshResult, HostError> {
        let (r, observed) = self.call(|b, s| {
            b.quota_engine_api()
                .call_run_rule(s, name, run_id, dry_run, now.0)
        })?;
        self.observed(observed);
        refresh_result(r)
    }
}
