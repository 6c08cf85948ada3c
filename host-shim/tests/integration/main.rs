//! The host's integration tests, in one test binary: each module is one concern's tests (what it
//! holds is its own doc comment), all sharing `common` (the compiled component, a runtime, stores).
//! One binary links wasmtime once, where one per file linked it 12 times (issue 60). Run one
//! module: `cargo test -p quota-host --test integration faults::`. The PostgreSQL suite is
//! `tests/postgres.rs` (`--features pg-tests`).

#[path = "../common/mod.rs"]
mod common;

mod budget_holds;
mod bulk_writes;
mod compile_cache;
mod concurrency;
mod conformance;
mod faults;
mod restart;
mod scenarios_component;
mod schema;
mod shared_commit;
mod sqlite_bridge;
mod typed_exports;
