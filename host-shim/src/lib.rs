//! `quota-host`: embeds the quota engine component with wasmtime over a SQL database.
//!
//! - [`Runtime`]: one per process (engine, compiled component, `InstancePre`, epoch ticker).
//! - [`Worker`]: one instance + one [`Database`], one transaction per call ([`Worker::transaction`]
//!   for several calls and the host's own statements together). Every export is a typed method
//!   (`engine.rs`): core's types in and out, [`HostError`] for everything that is not an answer.
//! - [`Database`]: the SQL bridge the component's `sql` import runs on; [`SqliteDb`] implements it
//!   over a file or `:memory:`. The schema and every query are the component's.

mod bindings;
mod convert;
pub mod observe;
mod store_data;

pub mod checkpoint;
mod compile_cache;
pub mod contract;
pub mod engine;
pub mod error;
#[cfg(feature = "postgres")]
pub mod pg;
mod replies;
pub mod runtime;
mod setup;
mod shared_commit;
pub mod sql;
mod sql_error;
mod sql_json;
pub mod sqlite;
mod tx;
pub mod worker;

pub use checkpoint::{CheckpointStats, Checkpointer};
pub use compile_cache::{default_dir as default_cache_dir, Outcome as CacheOutcome};
pub use contract::{Durability, ErrorKind, HostingContract};
pub use error::HostError;
pub use observe::Observer;
pub use replies::{ConfigSummary, Migration, RuleInfo};
pub use runtime::{Bounds, Limits, Runtime};
pub use shared_commit::SharedCall;
#[cfg(feature = "test-support")]
pub use sql::dump;
pub use sql::{Database, Dialect, SqlCell, SqlError};
pub use sqlite::{SqliteDb, SqliteOptions};
pub use worker::{Tx, Worker};

/// Where `scripts/build-wasm.sh` puts the component, relative to the workspace root.
pub const COMPONENT_PATH: &str = "target/wasm/quota-engine.wasm";
/// The test-only fault-injection variant (`scripts/build-wasm.sh --fault`).
pub const FAULT_COMPONENT_PATH: &str = "target/wasm/quota-engine-fault.wasm";
