//! The engine component, built into this binary, and workers over a database.

use std::sync::Arc;

use quota_host::{Limits, Runtime, Worker};

use crate::db::Db;
use crate::host_tables;

/// `scripts/build-wasm.sh` writes it; the binary carries it, so an operator deploys one file.
static component: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../target/wasm/quota-engine.wasm"
));

pub fn runtime() -> Result<Arc<Runtime>, String> {
    Runtime::from_bytes(component, Limits::default()).map_err(|e| format!("engine: {e}"))
}

/// A worker over its own connection to `db`, configured with `values`; the engine's schema and
/// quota-hub's tables are brought up to date first.
pub fn worker(
    rt: &Arc<Runtime>,
    db: &Db,
    values: &serde_json::Value,
    auto_checkpoint: bool,
    busy_timeout: std::time::Duration,
) -> Result<Worker, String> {
    let conn = db.open(auto_checkpoint, busy_timeout)?;
    let mut w = Worker::new(rt.clone(), conn, &values.to_string()).map_err(|e| e.to_string())?;
    host_tables::ensure_schema(w.db()).map_err(|e| e.to_string())?;
    Ok(w)
}
