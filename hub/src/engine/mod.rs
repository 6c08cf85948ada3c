//! The engine component, built into this binary, and workers over a database.

pub mod pool;
mod write_load;

use std::sync::Arc;

use quota_host::{default_cache_dir, Limits, Runtime, Worker};

use crate::storage::db::Db;
use crate::storage::host_tables;

/// `scripts/build-wasm.sh` writes it; the binary carries it, so an operator deploys one file.
static COMPONENT: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../target/wasm/quota-engine.wasm"
));

/// The engine, compiled once per machine: the compiled component is kept in the cache directory
/// (`QUOTA_CACHE_DIR`, else `$XDG_CACHE_HOME/quota-engine` or `~/.cache/quota-engine`; see
/// `quota_host::default_cache_dir`), so a command starts in milliseconds. `QUOTA_CACHE_DIR=off` compiles
/// every time.
pub fn runtime() -> Result<Arc<Runtime>, String> {
    let limits = Limits::default();
    let dir = default_cache_dir().filter(|d| d.as_os_str() != "off");
    let Some(dir) = dir else {
        return Runtime::from_bytes(COMPONENT, limits).map_err(|e| format!("engine: {e}"));
    };
    let (rt, outcome) =
        Runtime::from_bytes_cached(COMPONENT, limits, &dir).map_err(|e| format!("engine: {e}"))?;
    tracing::debug!(target: "quota_hub", "engine: {outcome:?} (cache {})", dir.display());
    Ok(rt)
}

/// A worker over its own connection to `db`, configured with `values`: the engine's schema created
/// in an empty database and checked in any other (never migrated here), quota-hub's tables made.
pub fn worker(
    rt: &Arc<Runtime>,
    db: &Db,
    values: &serde_json::Value,
    auto_checkpoint: bool,
    busy_timeout: Option<std::time::Duration>,
) -> Result<Worker, String> {
    let conn = db.open(rt, auto_checkpoint, busy_timeout)?;
    // An empty database is created; an older one is migrated only by `quota-hub migrate`, which
    // backs it up first (docs/upgrade.md).
    let mut w =
        Worker::without_migrating(rt.clone(), conn, &values.to_string()).map_err(|e| e.to_string())?;
    host_tables::ensure_schema(w.db()).map_err(|e| e.to_string())?;
    Ok(w)
}
