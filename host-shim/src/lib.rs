//! `quota-host`: embeds the quota engine component with wasmtime over pluggable storage.
//!
//! - [`Runtime`]: one per process (engine, compiled component, `InstancePre`, epoch ticker).
//! - [`Worker`]: one instance + one [`Backend`], one storage transaction per call.
//! - Backends: [`MemBackend`], [`SqliteBackend`].

#![allow(non_upper_case_globals)]

mod bindings;
mod convert;
mod state;

pub mod backend;
pub mod error;
pub mod host_tables;
pub mod mem;
pub mod runtime;
pub mod scenario_host;
pub mod sqlite;
pub mod worker;

pub use backend::Backend;
pub use bindings::api;
pub use error::HostError;
pub use host_tables::{HostTables, IdempotencyKey, IdempotencyRecord, TokenRecord};
pub use mem::MemBackend;
pub use runtime::{Limits, Runtime};
pub use sqlite::{CheckpointStats, Checkpointer, Durability, SqliteBackend, SqliteOptions};
pub use worker::Worker;

/// Where `scripts/build-wasm.sh` puts the component, relative to the workspace root.
pub const component_path: &str = "target/wasm/quota-engine.wasm";
/// The test-only fault-injection variant (`scripts/build-wasm.sh --fault`).
pub const fault_component_path: &str = "target/wasm/quota-engine-fault.wasm";
