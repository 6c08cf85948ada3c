//! Where the data lives: database URLs (`db`), the check that a SQLite file is not on a
//! container's own layer (`durable`), and quota-hub's own tables beside the engine's (`host_tables`).

pub mod backup_state;
pub mod db;
pub mod durable;
pub mod host_tables;
