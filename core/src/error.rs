//! The engine's error enums. A refused start is not an error: it is a normal decision
//! (`gate::StartDecision::Refused`).

use thiserror::Error;

/// A failure reported by a storage backend. The host rolls the whole call back.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error("storage: {0}")]
pub struct StoreError(pub String);

/// Why an operation did not happen. Every variant except `Store` means "nothing was changed".
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum QuotaError {
    /// Bad input; `field` names the offending field or key path.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// `deduct` of more than the balance.
    #[error("Insufficient balance")]
    InsufficientBalance,
    /// Arithmetic that would leave the exact range of balances.
    #[error("{0}")]
    OutOfRange(String),
    /// Unknown session, or no active session for a (username, server name).
    #[error("{0}")]
    NotFound(String),
    /// A `run_id` reused with other parameters.
    #[error("{0}")]
    Conflict(String),
    /// The caller may use the route, but not on this user, budget or action (course staff outside
    /// their groups, or an action only a quota admin may take).
    #[error("Forbidden: {0}")]
    Forbidden(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl QuotaError {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> QuotaError {
        QuotaError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The HTTP status this error maps to (one place for every host).
    pub fn status(&self) -> u16 {
        match self {
            QuotaError::Invalid { .. } | QuotaError::InsufficientBalance | QuotaError::OutOfRange(_) => 400,
            QuotaError::Forbidden(_) => 403,
            QuotaError::NotFound(_) => 404,
            QuotaError::Conflict(_) => 409,
            QuotaError::Store(_) => 500,
        }
    }
}
