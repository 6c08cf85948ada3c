//! A worker: one engine instance and one storage backend, used by one thread at a time.
//!
//! Instantiating a component costs tens of microseconds, more than a whole call, so a worker keeps
//! its instance between calls (the guest keeps nothing but its parsed configuration). Each call:
//! `begin` a storage transaction, set the epoch deadline, call, then `commit` if the call returned
//! normally and storage never failed, else `rollback`. After a trap, a deadline or a memory-limit
//! breach the instance is thrown away and a fresh one is configured, so the worker keeps serving.

use std::sync::Arc;

use wasmtime::{Store, StoreLimitsBuilder};

use crate::backend::Backend;
use crate::bindings::{api, QuotaEngine};
use crate::error::HostError;
use crate::host_tables::{IdempotencyKey, IdempotencyRecord};
use crate::runtime::Runtime;
use crate::state::HostState;

pub struct Worker {
    runtime: Arc<Runtime>,
    store: Option<Store<HostState>>,
    bindings: QuotaEngine,
    values_json: String,
    summary: api::ConfigSummary,
}

/// Names what stopped the guest: the wasm trap (`unreachable` for a guest panic, `interrupt` for the
/// epoch deadline, ...) rather than the backtrace header.
fn trap(e: wasmtime::Error) -> HostError {
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(t) => HostError::Trap(t.to_string()),
        None => HostError::Trap(e.root_cause().to_string()),
    }
}

impl Worker {
    /// A worker over `backend`, configured with the values document (JSON).
    pub fn new(
        runtime: Arc<Runtime>,
        backend: Box<dyn Backend>,
        values_json: &str,
    ) -> Result<Worker, HostError> {
        let (store, bindings) = instantiate(&runtime, backend)?;
        let mut w = Worker {
            runtime,
            store: Some(store),
            bindings,
            values_json: String::new(),
            summary: api::ConfigSummary {
                enabled: false,
                rules: Vec::new(),
            },
        };
        w.configure(values_json)?;
        Ok(w)
    }

    /// Replaces the configuration (a refused one leaves the previous in force).
    pub fn configure(&mut self, values_json: &str) -> Result<&api::ConfigSummary, HostError> {
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
                self.summary = summary;
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

    pub fn summary(&self) -> &api::ConfigSummary {
        &self.summary
    }

    fn store_mut(&mut self) -> &mut Store<HostState> {
        // Present except inside `replace_instance`, which always puts one back or fails the worker.
        self.store
            .as_mut()
            .unwrap_or_else(|| unreachable!("worker store is missing"))
    }

    /// Runs one engine call in one storage transaction.
    pub fn call<T>(
        &mut self,
        f: impl FnOnce(&QuotaEngine, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, HostError> {
        self.run(false, f)
    }

    /// Runs one engine call that only reads, in a read transaction (see [`Backend::begin_read`]).
    pub fn call_read<T>(
        &mut self,
        f: impl FnOnce(&QuotaEngine, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, HostError> {
        self.run(true, f)
    }

    fn run<T>(
        &mut self,
        read_only: bool,
        f: impl FnOnce(&QuotaEngine, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, HostError> {
        let ticks = self.runtime.limits.deadline_ticks();
        let store = self
            .store
            .as_mut()
            .unwrap_or_else(|| unreachable!("worker store is missing"));
        store.data_mut().storage_failed = None;
        let backend = &mut store.data_mut().backend;
        let begun = if read_only {
            backend.begin_read()
        } else {
            backend.begin()
        };
        begun.map_err(|e| HostError::Storage(e.to_string()))?;
        store.set_epoch_deadline(ticks);
        let answer = f(&self.bindings, store);
        let failed = store.data_mut().storage_failed.take();
        match (answer, failed) {
            (Ok(v), None) => match store.data_mut().backend.commit() {
                Ok(()) => Ok(v),
                Err(e) => {
                    let _ = store.data_mut().backend.rollback();
                    Err(HostError::Storage(e.to_string()))
                }
            },
            (Ok(_), Some(msg)) => {
                store
                    .data_mut()
                    .backend
                    .rollback()
                    .map_err(|e| HostError::Storage(e.to_string()))?;
                Err(HostError::Storage(msg))
            }
            (Err(e), _) => {
                let err = trap(e);
                store
                    .data_mut()
                    .backend
                    .rollback()
                    .map_err(|e| HostError::Storage(e.to_string()))?;
                self.replace_instance()?;
                Err(err)
            }
        }
    }

    /// A fresh instance over the same backend, configured as before.
    fn replace_instance(&mut self) -> Result<(), HostError> {
        let old = self
            .store
            .take()
            .unwrap_or_else(|| unreachable!("worker store is missing"));
        let backend = old.into_data().backend;
        let (store, bindings) = instantiate(&self.runtime, backend)?;
        self.store = Some(store);
        self.bindings = bindings;
        let values = std::mem::take(&mut self.values_json);
        self.configure(&values).map(|_| ())
    }

    /// Answers one REST request through the component.
    pub fn handle_request(
        &mut self,
        req: &quota_core::Request<'_>,
        now: quota_core::Timestamp,
    ) -> Result<quota_core::Response, HostError> {
        self.handle_request_once(req, now, None)
    }

    /// Answers one REST request; `GET` runs in a read transaction. With an idempotency key, the
    /// first completed response is recorded in the same transaction as the call, and a repeat with
    /// the same body hash replays it without calling the engine (another body: 409).
    pub fn handle_request_once(
        &mut self,
        req: &quota_core::Request<'_>,
        now: quota_core::Timestamp,
        once: Option<(&IdempotencyKey, &str)>,
    ) -> Result<quota_core::Response, HostError> {
        let wreq = api::HttpRequest {
            method: req.method.to_string(),
            path: req.path.to_string(),
            query: req.query.to_string(),
            body: req.body.to_string(),
            caller: req.caller.map(|c| api::Caller {
                name: c.name.clone(),
                admin: c.admin,
                scopes: c.scopes.clone(),
            }),
        };
        let read_only = req.method == "GET" && once.is_none();
        let r = self.run(read_only, |b, s| {
            if let Some((key, body_hash)) = once {
                let seen = s.data_mut().backend.get_idempotent(key);
                match s.data_mut().seen_result(seen) {
                    Err(e) => return Ok(Err(e)),
                    Ok(Some(first)) if first.body_hash == body_hash => {
                        return Ok(Ok(api::HttpResponse {
                            status: first.status,
                            body: first.body,
                        }))
                    }
                    Ok(Some(_)) => {
                        return Ok(Ok(api::HttpResponse {
                            status: 409,
                            body: serde_json::json!({
                                "error": "Idempotency-Key: already used with a different body"
                            })
                            .to_string(),
                        }))
                    }
                    Ok(None) => {}
                }
            }
            let r = b.quota_engine_api().call_handle_request(&mut *s, &wreq, now.0)?;
            if let (Some((key, body_hash)), Ok(resp)) = (once, &r) {
                let record = IdempotencyRecord {
                    body_hash: body_hash.to_string(),
                    status: resp.status,
                    body: resp.body.clone(),
                    created_at: now,
                };
                let put = s.data_mut().backend.put_idempotent(key, &record);
                if let Err(e) = s.data_mut().seen_result(put) {
                    return Ok(Err(e));
                }
            }
            Ok(r)
        })?;
        let r = r.map_err(HostError::Storage)?;
        Ok(quota_core::Response {
            status: r.status,
            body: r.body,
        })
    }

    /// The spawn gate.
    pub fn check_start(
        &mut self,
        req: &api::StartRequest,
        now: quota_core::Timestamp,
    ) -> Result<Result<api::StartDecision, api::QuotaError>, HostError> {
        self.call(|b, s| b.quota_engine_api().call_check_start(s, req, now.0))
    }

    /// Ends a session.
    pub fn end_session(
        &mut self,
        req: &api::EndRequest,
        now: quota_core::Timestamp,
    ) -> Result<Result<api::EndResult, api::QuotaError>, HostError> {
        self.call(|b, s| b.quota_engine_api().call_end_session(s, req, now.0))
    }

    /// Runs a configured refresh rule.
    pub fn run_rule(
        &mut self,
        name: &str,
        run_id: Option<&str>,
        dry_run: bool,
        now: quota_core::Timestamp,
    ) -> Result<Result<api::RefreshResult, api::QuotaError>, HostError> {
        self.call(|b, s| {
            b.quota_engine_api()
                .call_run_rule(s, name, run_id, dry_run, now.0)
        })
    }

    /// Runs a configured rule under `run_id`, and says whether that run had already been applied
    /// (checked in the same transaction, so two hosts racing for one run agree on who applied it).
    pub fn run_rule_once(
        &mut self,
        name: &str,
        run_id: &str,
        now: quota_core::Timestamp,
    ) -> Result<(bool, Result<api::RefreshResult, api::QuotaError>), HostError> {
        self.call(|b, s| {
            let seen = s.data_mut().backend.get_refresh_run(run_id);
            let already = match s.data_mut().seen_result(seen) {
                Ok(r) => r.is_some(),
                Err(e) => return Ok((false, Err(api::QuotaError::Storage(e)))),
            };
            let r = b
                .quota_engine_api()
                .call_run_rule(&mut *s, name, Some(run_id), false, now.0)?;
            Ok((already, r))
        })
    }

    /// Closes stale sessions.
    pub fn cleanup_stale(
        &mut self,
        now: quota_core::Timestamp,
    ) -> Result<Result<Vec<api::CleanedSession>, api::QuotaError>, HostError> {
        self.call(|b, s| b.quota_engine_api().call_cleanup_stale(s, now.0))
    }

    /// The backend, e.g. to dump it in a test.
    pub fn backend(&mut self) -> &mut dyn Backend {
        self.store_mut().data_mut().backend.as_mut()
    }
}

fn instantiate(
    runtime: &Runtime,
    backend: Box<dyn Backend>,
) -> Result<(Store<HostState>, QuotaEngine), HostError> {
    let limits = StoreLimitsBuilder::new()
        .memory_size(runtime.limits.memory_bytes)
        .instances(4)
        .build();
    let mut store = Store::new(
        &runtime.engine,
        HostState {
            backend,
            limits,
            storage_failed: None,
        },
    );
    store.limiter(|s| &mut s.limits);
    store.set_epoch_deadline(runtime.limits.deadline_ticks());
    let bindings = runtime
        .pre
        .instantiate(&mut store)
        .map_err(|e| HostError::Load(format!("{e:#}")))?;
    Ok((store, bindings))
}
