//! quota-hub's integration tests, in one test binary: each module is one concern's tests (what
//! it holds is its own doc comment), all sharing `common` (a real `quota-hub serve` on a SQLite
//! file, the command line, an HTTP client). One binary links wasmtime once, where one per file
//! linked it 25 times (issue 60). Run one module: `cargo test -p quota-hub --test integration
//! backup::`. The PostgreSQL suite is `tests/postgres/` (`--features pg-tests`).

#[path = "../common/mod.rs"]
mod common;

mod access_log;
mod authorization;
mod backup;
mod bad_input;
mod cli;
mod config_schema;
mod connections;
mod cronjobs;
mod docs_credits;
mod durable;
mod export;
mod groups;
mod health;
mod metrics;
mod openapi;
mod oversized_body;
mod paging;
mod restart;
mod rights;
mod scenarios_http;
mod scheduler;
mod server;
mod shared_commit;
mod storage_errors;
mod tokens;
mod webhooks;
