//! `quota-core`: the compute-credit quota engine, sans-IO.
//!
//! Every operation is a function of (request, stored state through [`Store`], `now`). The crate
//! reads no clock, opens no file or socket and starts no thread, so the same code runs natively,
//! inside the WebAssembly component, and in the browser.
//!
//! - [`gate::check_start`], [`sessions::end_session`], [`sessions::cleanup_stale`]: the spawn gate and
//!   usage sessions.
//! - [`admin`]: `set` / `add` / `deduct` / `set_unlimited` and batches.
//! - [`refresh::refresh`]: add-or-set over filtered users, at most once per `run_id`.
//! - [`reads`]: list, detail, me, rates, accelerators, sessions, the ledger.
//! - [`api::handle_request`]: the HTTP-shaped front door every host serves.

pub mod accelerator_pod;
pub mod accelerators;
pub mod account;
pub mod admin;
pub mod api;
pub mod budgets;
pub mod config;
pub mod credit_requests;
pub mod cron;
pub mod engine_call;
pub mod error;
pub mod events;
pub mod extend;
pub mod forecast;
pub mod gate;
pub mod grants;
pub mod group_usage;
pub mod groups;
pub mod history;
pub mod hub_names;
pub mod invariants;
pub mod json;
pub mod ledger;
pub mod limits;
pub mod lots;
pub mod memstore;
pub mod milli;
pub mod names;
pub mod observations;
pub mod quota_input;
pub mod reads;
pub mod refresh;
pub mod sessions;
pub mod staff_allowance;
pub mod store;
pub mod strict_json;
pub mod targets;
pub mod time;
pub mod usage;
mod values_read;

pub use api::{handle_request, Caller, Request, Response};
pub use config::{Config, ConfigError};
pub use error::{QuotaError, StoreError};
pub use memstore::MemStore;
pub use milli::Milli;
pub use store::Store;
pub use time::Timestamp;
