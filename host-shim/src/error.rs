//! Errors at the host boundary.

use thiserror::Error;

use crate::contract::HostingContract;
use crate::sql::SqlError;

#[derive(Debug, Error)]
pub enum HostError {
    /// The component could not be read, compiled or linked.
    #[error("loading the engine component: {0}")]
    Load(String),
    /// The values document was refused; every problem with its key path.
    #[error("invalid configuration:\n{}", .0.iter().map(|(f, m)| format!("  {f}: {m}")).collect::<Vec<_>>().join("\n"))]
    Config(Vec<(String, String)>),
    /// The guest trapped, ran past its deadline, or hit its memory limit. Nothing it wrote was kept,
    /// and the worker was given a fresh instance.
    #[error("the engine stopped abnormally ({0}); the call was rolled back")]
    Trap(String),
    /// The engine refused the operation (bad input, not found, ...); nothing was changed. A refused
    /// spawn is not an error: `check_start` returns it as a decision.
    #[error("{0}")]
    Quota(quota_core::QuotaError),
    /// A statement failed; nothing the call wrote was kept. `Busy` is worth retrying later.
    #[error("storage: {0}; the call was rolled back")]
    Storage(SqlError),
    /// The database needs a migration and this worker may not run one (a server started without
    /// migrating: the migration is an explicit step, docs/upgrade.md). Nothing was changed.
    #[error(
        "the database has schema version {found}, this engine writes version {writes}: it needs \
         its migration, an explicit step (`quota-hub migrate`, the chart's pre-upgrade Job, or the \
         hub's start; docs/upgrade.md); nothing was changed"
    )]
    NeedsMigration { found: u32, writes: u32 },
}

impl HostError {
    /// Whether the caller may simply try again later: a storage failure of a kind the contract
    /// calls `transient` (another writer held the database, a conflict that outlasted the retries).
    pub fn is_transient(&self, contract: &HostingContract) -> bool {
        matches!(self, HostError::Storage(e) if contract.handling(e.kind()).transient)
    }
}

/// Names what stopped the guest: the wasm trap (`unreachable` for a guest panic, `interrupt` for the
/// epoch deadline, ...) rather than the backtrace header.
pub(crate) fn trap(e: wasmtime::Error) -> HostError {
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(t) => HostError::Trap(t.to_string()),
        None => HostError::Trap(e.root_cause().to_string()),
    }
}
