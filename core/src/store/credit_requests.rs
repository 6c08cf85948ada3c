//! Credit requests: a user asks for credit on their own account or a budget's, and a quota admin
//! or the account's course staff decides (approve, with the grant written in the same call, or
//! deny). At most one pending request per user and account.

use serde::Serialize;

use crate::error::StoreError;
use crate::time::Timestamp;

/// Where a request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestStatus {
    Pending,
    Approved,
    Denied,
}

impl RequestStatus {
    pub const ALL: [RequestStatus; 3] = [
        RequestStatus::Pending,
        RequestStatus::Approved,
        RequestStatus::Denied,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Pending => "pending",
            RequestStatus::Approved => "approved",
            RequestStatus::Denied => "denied",
        }
    }

    pub fn parse(s: &str) -> Option<RequestStatus> {
        RequestStatus::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One request, with its decision once made; serialized as the routes show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CreditRequest {
    /// Given by the store (ignored by `insert_request`).
    pub id: i64,
    pub username: String,
    /// The budget asked for; `None`: the user's own account.
    pub budget: Option<String>,
    pub amount: i64,
    pub reason: String,
    pub status: RequestStatus,
    pub created_at: Timestamp,
    pub decided_at: Option<Timestamp>,
    pub decided_by: Option<String>,
    /// What an approval granted (at most `amount`).
    pub granted: Option<i64>,
    /// An approval's grant lapses then (a dated grant); `None`: undated.
    pub expires_at: Option<Timestamp>,
    pub note: Option<String>,
}

/// A page of requests: those with `id > after_id`, by id, at most `limit`, each filter when given.
#[derive(Clone, Copy, Debug)]
pub struct RequestPage<'a> {
    pub status: Option<RequestStatus>,
    pub username: Option<&'a str>,
    pub budget: Option<&'a str>,
    pub after_id: i64,
    pub limit: usize,
}

/// Credit requests.
pub trait RequestStore {
    /// Stores a new request; returns its id.
    fn insert_request(&mut self, r: &CreditRequest) -> Result<i64, StoreError>;
    /// A request by id.
    fn get_request(&mut self, id: i64) -> Result<Option<CreditRequest>, StoreError>;
    /// The user's pending request for the account (`budget` `None`: their own), if any.
    fn pending_request(
        &mut self,
        username: &str,
        budget: Option<&str>,
    ) -> Result<Option<CreditRequest>, StoreError>;
    /// Records a request's decision (its status and decision fields; the rest is unchanged).
    fn put_decision(&mut self, r: &CreditRequest) -> Result<(), StoreError>;
    /// A page of requests (see [`RequestPage`]).
    fn scan_requests(&mut self, page: &RequestPage<'_>) -> Result<Vec<CreditRequest>, StoreError>;
}
