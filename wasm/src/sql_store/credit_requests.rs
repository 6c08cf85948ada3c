//! Credit requests over SQL: their statements and `RequestStore`. A user's own account is the
//! empty budget (as for grants), so one partial unique index holds "one pending request per user and
//! account".

use quota_core::store::{CreditRequest, RequestPage, RequestStatus, RequestStore};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::rows::{all, first};
use super::sql::Sql;
use crate::sql_json::{Cell, Columns, Params};

macro_rules! request_columns {
    () => {
        "id, username, budget, amount, reason, status, created_at, decided_at, decided_by, granted, expires_at, note"
    };
}
const REQUEST_COLUMN_COUNT: usize = 12;

const INSERT_REQUEST: Sql = same!(
    "INSERT INTO credit_requests (username, budget, amount, reason, status, created_at)
         VALUES ($1, $2, $3, $4, 'pending', $5) RETURNING id"
);
const GET_REQUEST: Sql = same!(concat!(
    "SELECT ",
    request_columns!(),
    " FROM credit_requests WHERE id = $1"
));
/// User `$1`'s pending request for account `$2` (`''`: their own).
const PENDING_REQUEST: Sql = same!(concat!(
    "SELECT ",
    request_columns!(),
    " FROM credit_requests WHERE username = $1 AND budget = $2 AND status = 'pending'"
));
const PUT_DECISION: Sql = same!(
    "UPDATE credit_requests SET status = $2, decided_at = $3, decided_by = $4, granted = $5,
         expires_at = $6, note = $7 WHERE id = $1"
);
/// Requests after id `$1` with status `$2`, user `$3`, budget `$4` (each when not null), at most `$5`.
const SCAN_REQUESTS: Sql = same!(concat!(
    "SELECT ",
    request_columns!(),
    " FROM credit_requests WHERE id > $1 AND ($2::text IS NULL OR status = $2)
         AND ($3::text IS NULL OR username = $3) AND ($4::text IS NULL OR budget = $4) ORDER BY id LIMIT $5"
));

fn request(row: &mut [Cell]) -> Result<CreditRequest, StoreError> {
    let mut c = Columns::new(row, "credit_requests", REQUEST_COLUMN_COUNT)?;
    let status = c.text(5)?;
    Ok(CreditRequest {
        id: c.int(0)?,
        username: c.text(1)?,
        budget: Some(c.text(2)?).filter(|b| !b.is_empty()),
        amount: c.int(3)?,
        reason: c.text(4)?,
        status: RequestStatus::parse(&status)
            .ok_or_else(|| StoreError(format!("credit_requests: unknown status `{status}`")))?,
        created_at: Timestamp(c.int(6)?),
        decided_at: c.opt_int(7)?.map(Timestamp),
        decided_by: c.opt_text(8)?,
        granted: c.opt_int(9)?,
        expires_at: c.opt_int(10)?.map(Timestamp),
        note: c.opt_text(11)?,
    })
}

impl RequestStore for SqlStore {
    fn insert_request(&mut self, r: &CreditRequest) -> Result<i64, StoreError> {
        let p = Params::new()
            .text(&r.username)
            .text(r.budget.as_deref().unwrap_or(""))
            .int(r.amount)?
            .text(&r.reason)
            .int(r.created_at.seconds())?;
        self.one_int(&INSERT_REQUEST, p, "inserting a credit request")
    }

    fn get_request(&mut self, id: i64) -> Result<Option<CreditRequest>, StoreError> {
        first(self.query(&GET_REQUEST, Params::new().int(id)?)?, request)
    }

    fn pending_request(
        &mut self,
        username: &str,
        budget: Option<&str>,
    ) -> Result<Option<CreditRequest>, StoreError> {
        let p = Params::new().text(username).text(budget.unwrap_or(""));
        first(self.query(&PENDING_REQUEST, p)?, request)
    }

    fn put_decision(&mut self, r: &CreditRequest) -> Result<(), StoreError> {
        let p = Params::new()
            .int(r.id)?
            .text(r.status.as_str())
            .opt_int(r.decided_at.map(Timestamp::seconds))?
            .opt_text(r.decided_by.as_deref())
            .opt_int(r.granted)?
            .opt_int(r.expires_at.map(Timestamp::seconds))?
            .opt_text(r.note.as_deref());
        self.query(&PUT_DECISION, p).map(drop)
    }

    fn scan_requests(&mut self, page: &RequestPage<'_>) -> Result<Vec<CreditRequest>, StoreError> {
        let p = Params::new()
            .int(page.after_id)?
            .opt_text(page.status.map(RequestStatus::as_str))
            .opt_text(page.username)
            .opt_text(page.budget)
            .int(i64::try_from(page.limit).unwrap_or(i64::MAX))?;
        all(self.query(&SCAN_REQUESTS, p)?, request)
    }
}
