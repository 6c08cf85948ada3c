//! `quota_core::Store` over the host's SQL bridge: every statement of the engine, once, for every
//! host. A file per kind of row, as `quota_core::store` has them (`users.rs`, `sessions.rs`,
//! `groups.rs`, `runs.rs`, `usage.rs`, `grants.rs`, `budgets.rs`, `events.rs`), each holding its
//! statements, written once where the dialects agree (`sql.rs`), and its trait's implementation.
//! `bridge.rs` calls the host, `rows.rs` turns rows into records and back, `columns.rs` names the
//! tables and their columns, `schema/` holds each dialect's schema and migrations, `migrate.rs`
//! brings a database up to date.

#[macro_use]
mod sql;
#[macro_use]
mod columns;
mod bridge;
mod budgets;
mod credit_requests;
mod events;
mod grants;
mod groups;
mod migrate;
mod rows;
mod runs;
mod schema;
mod sessions;
mod usage;
mod users;

pub use bridge::SqlStore;
pub use columns::TABLES;
