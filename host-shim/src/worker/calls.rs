//! How a worker calls the guest: one export under the call's deadline (observed, or read-only), a
//! refresh with a run id in chunks of one transaction each, and a fresh instance after a trap.

use crate::runtime::instantiate;

use quota_core::refresh::Step;
use wasmtime::Store;

use super::Worker;
use crate::bindings::ComponentInstance;
use crate::error::HostError;
use crate::store_data::HostState;
use crate::tx::Tx;

impl Worker {
    /// Users per transaction of a refresh with a run id (the runtime's `Limits`), for a host that
    /// drives the chunks itself (one job per chunk on its own queue).
    pub fn refresh_chunk_users(&self) -> u32 {
        self.bounds.refresh_chunk_users
    }

    /// Runs `f` in write transactions until it is `Done`, passing the runtime's
    /// `refresh_chunk_users`: a refresh with a run id applies one chunk of users per transaction
    /// (each retried on its own after a conflict), so no transaction holds its locks for long. A
    /// process that dies between chunks leaves the run resumable by its run id.
    pub fn chunked<T>(
        &mut self,
        mut f: impl FnMut(&mut Tx<'_>, u32) -> Result<Step<T>, HostError>,
    ) -> Result<T, HostError> {
        let chunk_users = self.bounds.refresh_chunk_users;
        loop {
            if let Step::Done(v) = self.transaction(false, |tx| f(tx, chunk_users))? {
                return Ok(v);
            }
        }
    }

    /// Runs one engine call in one write transaction.
    pub(crate) fn call<T>(
        &mut self,
        f: impl Fn(&ComponentInstance, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, HostError> {
        self.transaction(false, |tx| tx.call(&f))
    }

    /// Runs one engine call that observes (returns what it observed beside its answer) in its own
    /// write transaction; the observations are told once it has committed.
    pub(crate) fn call_observed<T>(
        &mut self,
        f: impl Fn(
            &ComponentInstance,
            &mut Store<HostState>,
        ) -> wasmtime::Result<(T, Vec<crate::bindings::api::Observation>)>,
    ) -> Result<T, HostError> {
        self.transaction(false, |tx| {
            let (answer, observed) = tx.call(&f)?;
            tx.observed(observed);
            Ok(answer)
        })
    }

    /// Runs one engine call that only reads, in a read transaction.
    pub(crate) fn call_read<T>(
        &mut self,
        f: impl Fn(&ComponentInstance, &mut Store<HostState>) -> wasmtime::Result<T>,
    ) -> Result<T, HostError> {
        self.transaction(true, |tx| tx.call(&f))
    }

    /// A fresh instance over the same database, configured as before.
    pub(crate) fn replace_instance(&mut self) -> Result<(), HostError> {
        let old = self
            .store
            .take()
            .unwrap_or_else(|| unreachable!("worker store is missing"));
        let db = old.into_data().into_db();
        let (store, bindings) = instantiate(&self.runtime, &self.bounds, db)?;
        self.store = Some(store);
        self.bindings = bindings;
        let values = std::mem::take(&mut self.values_json);
        self.configure(&values).map(|_| ())
    }
}
