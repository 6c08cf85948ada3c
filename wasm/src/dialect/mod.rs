//! Every statement the engine runs, per SQL dialect (SQLite, PostgreSQL), with the schema and its
//! migrations. A dialect is a `Dialect` value: the store and the migration logic do not change.
//!
//! Columns are listed explicitly and read by position (see `sql_store`); parameters are `?N`.

// What a dialect holds (and the macros the dialects use: declared first, so they see them).
#[macro_use]
mod statements;
mod postgres;
mod postgres_feed;
mod sqlite;
mod sqlite_feed;
pub use postgres::postgres;
pub use sqlite::sqlite;
pub use statements::*;
