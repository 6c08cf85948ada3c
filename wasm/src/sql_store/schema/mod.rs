//! The schema and its migrations, per dialect: `sqlite.rs`, `postgres.rs` (with what they share,
//! `both_dialects.rs`). The statements that read and write the rows are beside their `Store` calls
//! (`sql_store/<kind>.rs`), written once.

#[macro_use]
mod both_dialects;
mod holds;
mod postgres;
mod sqlite;

pub use both_dialects::Schema;

use super::sql::Dialect;

/// The schema of `d`.
pub fn of(d: Dialect) -> &'static Schema {
    match d {
        Dialect::Sqlite => &sqlite::SQLITE,
        Dialect::Postgres => &postgres::POSTGRES,
    }
}
