//! `quota_core::Store` over the host's SQL bridge: every query of the engine, once, for every host.
//! `bridge.rs` calls the host, `rows.rs` turns rows into records and back, `bulk.rs` writes a large batch set-based, `feed.rs` events and webhooks, `gate.rs` the spawn gate's one read, `memberships.rs` a snapshot page, `store.rs` is the
//! `Store`, `migrate.rs` brings the schema up to date.

mod bridge;
mod bulk;
mod feed;
mod gate;
mod memberships;
mod migrate;
mod rows;
mod store;

pub use bridge::SqlStore;
