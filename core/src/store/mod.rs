//! What the engine keeps, and the storage traits every backend implements: one file per kind of
//! row (`users.rs` users and their ledger, `sessions.rs`, `groups.rs` memberships, `runs.rs`
//! refresh runs, `usage.rs` the running sums, `grants.rs` dated grants, `budgets.rs`, `events.rs`
//! events and webhooks, `credit_requests.rs`), each holding its rows and its trait. [`Store`] is all of them.
//!
//! The traits are shaped for real databases: one call per row read or write, and paged scans where
//! a whole set must be visited (refresh, the lists). Each engine operation is run by its host inside
//! one database transaction, so the engine never needs locks, and implementations need no atomicity
//! of their own: a host rolls the transaction back when the operation returns a `StoreError` (or
//! the guest traps).
//!
//! A new call is added to its kind's trait here, to `MemStore` (`memstore/<kind>.rs`) and to the
//! component's `SqlStore` (`wasm/src/sql_store/<kind>.rs`, its statement beside it).

mod budgets;
mod credit_requests;
mod events;
mod grants;
mod groups;
mod runs;
mod sessions;
mod usage;
mod users;

pub use budgets::*;
pub use credit_requests::*;
pub use events::*;
pub use grants::*;
pub use groups::*;
pub use runs::*;
pub use sessions::*;
pub use usage::*;
pub use users::*;

/// Storage as the engine sees it: every kind of row. Engine code takes `&mut dyn Store` and calls
/// any kind's methods on it.
pub trait Store:
    UserStore
    + SessionStore
    + GroupStore
    + RunStore
    + UsageStore
    + GrantStore
    + BudgetStore
    + EventStore
    + RequestStore
{
}

impl<T> Store for T where
    T: UserStore
        + SessionStore
        + GroupStore
        + RunStore
        + UsageStore
        + GrantStore
        + BudgetStore
        + EventStore
        + RequestStore
{
}
