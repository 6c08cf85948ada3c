//! Credit requests in memory.

use super::MemStore;
use crate::error::StoreError;
use crate::store::{CreditRequest, RequestPage, RequestStatus, RequestStore};

impl RequestStore for MemStore {
    fn insert_request(&mut self, r: &CreditRequest) -> Result<i64, StoreError> {
        self.next_request_id += 1;
        let id = self.next_request_id;
        self.requests.insert(id, CreditRequest { id, ..r.clone() });
        Ok(id)
    }

    fn get_request(&mut self, id: i64) -> Result<Option<CreditRequest>, StoreError> {
        Ok(self.requests.get(&id).cloned())
    }

    fn pending_request(
        &mut self,
        username: &str,
        budget: Option<&str>,
    ) -> Result<Option<CreditRequest>, StoreError> {
        Ok(self
            .requests
            .values()
            .find(|r| {
                r.status == RequestStatus::Pending && r.username == username && r.budget.as_deref() == budget
            })
            .cloned())
    }

    fn put_decision(&mut self, r: &CreditRequest) -> Result<(), StoreError> {
        let Some(row) = self.requests.get_mut(&r.id) else {
            return Err(StoreError(format!("credit request {} is not stored", r.id)));
        };
        row.status = r.status;
        row.decided_at = r.decided_at;
        row.decided_by.clone_from(&r.decided_by);
        row.granted = r.granted;
        row.expires_at = r.expires_at;
        row.note.clone_from(&r.note);
        Ok(())
    }

    fn scan_requests(&mut self, p: &RequestPage<'_>) -> Result<Vec<CreditRequest>, StoreError> {
        Ok(self
            .requests
            .range(p.after_id.saturating_add(1)..)
            .map(|(_, r)| r)
            .filter(|r| p.status.is_none_or(|s| r.status == s))
            .filter(|r| p.username.is_none_or(|u| r.username == u))
            .filter(|r| p.budget.is_none_or(|b| r.budget.as_deref() == Some(b)))
            .take(p.limit)
            .cloned()
            .collect())
    }
}
