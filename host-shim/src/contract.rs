//! The hosting contract (wit/0.3.0, `hosting`): how the component must be hosted, as it states it.
//! Read once per [`crate::Runtime`] for each dialect; this module is the one place the Rust host
//! applies it: connection set-up, the busy wait, retry pauses, error kinds and what they mean.
//! Data only: the set-up statements are asked for per connection ([`crate::Runtime::connection_setup`])
//! and run by `setup::set_up`.

use std::time::Duration;

/// The SQL a database speaks: the contract differs per dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// The kinds of storage failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Busy,
    Conflict,
    Constraint,
    Other,
}

/// What one kind of failure means for the call and its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handling {
    pub kind: ErrorKind,
    /// Run the whole call again (by [`HostingContract::backoff`]).
    pub retry: bool,
    pub http_status: u16,
    /// The caller may simply try again later.
    pub transient: bool,
}

/// A statement run on every new connection (the host's busy wait and durability already in it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupStatement {
    pub sql: String,
    pub expect: Vec<String>,
    pub retry_while_busy: bool,
}

/// The statements that own a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionStatements {
    pub begin_write: String,
    pub begin_read: String,
    pub commit: String,
    pub rollback: String,
    pub savepoint: String,
    pub release_savepoint: String,
    pub rollback_to_savepoint: String,
    pub migration_lock: Option<(String, String)>,
}

/// One of the engine's tables: name, columns in copy order, the unique key rows are ordered by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    pub key: Vec<String>,
    /// The column the database assigns (an identity id), if one does.
    pub identity: Option<String>,
}

/// The contract for one dialect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostingContract {
    pub dialect: Dialect,
    /// The first pause before a busy set-up statement runs again; it doubles up to `setup_pause_max`.
    pub setup_pause_first: Duration,
    pub setup_pause_max: Duration,
    pub transactions: TransactionStatements,
    pub busy_wait: Duration,
    pub retry_attempts: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    pub jitter_percent: u32,
    pub refresh_chunk_users: u32,
    pub call_deadline: Duration,
    pub migration_deadline: Duration,
    pub memory_limit_bytes: u64,
    /// How often a host runs the sweep (due grants, warnings, the purge).
    pub sweep_interval: Duration,
    /// How long a host waits for a webhook's receiver to answer one delivery.
    pub webhook_timeout: Duration,
    /// The largest page a host asks of the users and memberships lists.
    pub users_page_max: u32,
    pub error_codes: Vec<(String, ErrorKind)>,
    pub error_handling: Vec<Handling>,
    pub tables: Vec<Table>,
}

/// How hard SQLite works to make a commit durable (`synchronous` in the set-up statements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=FULL`: an acknowledged commit survives power loss (the default).
    Full,
    /// `synchronous=NORMAL`: survives a process crash, may lose the last commits on power loss.
    Normal,
}

impl HostingContract {
    /// The kind of a driver's error code (SQLite's result code name, PostgreSQL's SQLSTATE).
    pub fn kind_of(&self, code: &str) -> ErrorKind {
        self.error_codes
            .iter()
            .find(|(prefix, _)| code.starts_with(prefix.as_str()))
            .map_or(ErrorKind::Other, |(_, k)| *k)
    }

    /// What a failure of `kind` means.
    pub fn handling(&self, kind: ErrorKind) -> Handling {
        self.error_handling
            .iter()
            .find(|h| h.kind == kind)
            .copied()
            .unwrap_or(Handling {
                kind,
                retry: false,
                http_status: 500,
                transient: false,
            })
    }

    /// The pause before run `attempt` (1-based) of a call that is retried: `min(max, base x n^2)`,
    /// less a random part of up to `jitter_percent` of it.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let n = u64::from(attempt);
        let full = self
            .backoff_base
            .saturating_mul(u32::try_from(n * n).unwrap_or(u32::MAX))
            .min(self.backoff_max);
        let jitter = full.as_nanos() as u64 * u64::from(self.jitter_percent) / 100;
        full - Duration::from_nanos(if jitter == 0 { 0 } else { random() % (jitter + 1) })
    }
}

/// A number that differs between calls and processes (std's randomly keyed hasher), for jitter.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}
