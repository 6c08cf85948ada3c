//! Why a statement failed, in the contract's kinds.

use thiserror::Error;

use crate::contract::{ErrorKind, HostingContract};

/// Why a statement failed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SqlError {
    /// Another writer held the lock longer than the host waits.
    #[error("the database is busy (locked by another writer)")]
    Busy,
    /// The transaction conflicted with a concurrent one (PostgreSQL: a serialization failure or a
    /// deadlock) and was rolled back; the whole call can run again. The guest sees `busy`.
    #[error("the transaction conflicted with a concurrent one: {0}")]
    Conflict(String),
    /// A constraint was violated.
    #[error("constraint violated: {0}")]
    Constraint(String),
    #[error("{0}")]
    Other(String),
}

impl SqlError {
    /// A driver's failure as a storage error of the contract's kind (by the driver's code).
    pub fn from_driver(contract: &HostingContract, code: &str, message: String) -> SqlError {
        match contract.kind_of(code) {
            ErrorKind::Busy => SqlError::Busy,
            ErrorKind::Conflict => SqlError::Conflict(message),
            ErrorKind::Constraint => SqlError::Constraint(message),
            ErrorKind::Other => SqlError::Other(message),
        }
    }

    /// The contract's kind of this failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SqlError::Busy => ErrorKind::Busy,
            SqlError::Conflict(_) => ErrorKind::Conflict,
            SqlError::Constraint(_) => ErrorKind::Constraint,
            SqlError::Other(_) => ErrorKind::Other,
        }
    }
}
