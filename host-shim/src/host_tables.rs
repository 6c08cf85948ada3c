//! Rows only hosts keep: API tokens (stored hashed) and `Idempotency-Key` replays. The engine
//! never sees them; they live in the same database so one transaction covers an engine call and
//! the replay record of its response.

use quota_core::{StoreError, Timestamp};

/// An API token, by the hash of its secret (the secret itself is never stored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRecord {
    /// Hex SHA-256 of the secret.
    pub hash: String,
    /// The user or service the token acts as.
    pub name: String,
    pub admin: bool,
    /// Service scopes (`quota:sessions`, `quota:refresh`, `quota:admin`).
    pub scopes: Vec<String>,
    pub created_at: Timestamp,
}

/// What identifies a request for `Idempotency-Key`: the key is scoped to caller, method and path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyKey {
    pub caller: String,
    pub method: String,
    pub path: String,
    pub key: String,
}

/// The first completed response to a keyed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// Hex SHA-256 of the request body: a repeat with another body is a conflict.
    pub body_hash: String,
    pub status: u16,
    pub body: String,
    pub created_at: Timestamp,
}

/// Host-side rows of a backend.
pub trait HostTables {
    fn put_token(&mut self, token: &TokenRecord) -> Result<(), StoreError>;
    fn find_token(&mut self, hash: &str) -> Result<Option<TokenRecord>, StoreError>;
    fn get_idempotent(&mut self, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError>;
    fn put_idempotent(&mut self, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<(), StoreError>;
    /// Forgets replays recorded before `before`; returns how many.
    fn purge_idempotent(&mut self, before: Timestamp) -> Result<u64, StoreError>;
}

/// Scopes are stored as one space-separated column.
pub fn scopes_column(scopes: &[String]) -> String {
    scopes.join(" ")
}

pub fn scopes_from_column(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}
