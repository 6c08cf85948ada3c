//! The data of a wasmtime store: the storage backend the guest's imports reach, the memory limit,
//! and whether storage failed during the current call (then the call is rolled back whatever the
//! guest returned).

use quota_core::{StoreError, Timestamp};
use wasmtime::StoreLimits;

use crate::backend::Backend;
use crate::bindings::{storage, types};
use crate::convert as cv;

pub struct HostState {
    pub backend: Box<dyn Backend>,
    pub limits: StoreLimits,
    pub storage_failed: Option<String>,
}

impl HostState {
    /// Notes a failed host-side read or write, so the call is rolled back.
    pub fn seen_result<T>(&mut self, r: Result<T, StoreError>) -> Result<T, String> {
        self.seen(r)
    }

    fn seen<T>(&mut self, r: Result<T, StoreError>) -> Result<T, String> {
        r.map_err(|e| {
            let msg = e.to_string();
            self.storage_failed.get_or_insert_with(|| msg.clone());
            msg
        })
    }
}

fn limit(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl types::Host for HostState {}

impl storage::Host for HostState {
    fn get_user(&mut self, username: String) -> Result<Option<types::UserRecord>, String> {
        let r = self.backend.get_user(&username);
        self.seen(r).map(|u| u.map(cv::user_out))
    }

    fn put_user(&mut self, user: types::UserRecord) -> Result<(), String> {
        let r = self.backend.put_user(&cv::user_in(user));
        self.seen(r)
    }

    fn scan_users(&mut self, after: Option<String>, n: u32) -> Result<Vec<types::UserRecord>, String> {
        let r = self.backend.scan_users(after.as_deref(), limit(n));
        self.seen(r).map(|l| l.into_iter().map(cv::user_out).collect())
    }

    fn record_changes(&mut self, changes: Vec<types::Change>) -> Result<(), String> {
        let changes: Vec<_> = changes
            .into_iter()
            .map(|c| quota_core::store::Change {
                user: cv::user_in(c.user),
                entry: cv::new_tx_in(c.entry),
            })
            .collect();
        let r = self.backend.record_changes(&changes);
        self.seen(r)
    }

    fn recent_transactions(&mut self, username: String, n: u32) -> Result<Vec<types::Transaction>, String> {
        let r = self.backend.recent_transactions(&username, limit(n));
        self.seen(r).map(|l| l.into_iter().map(cv::tx_out).collect())
    }

    fn scan_transactions(
        &mut self,
        username: Option<String>,
        after_id: i64,
        n: u32,
    ) -> Result<Vec<types::Transaction>, String> {
        let r = self
            .backend
            .scan_transactions(username.as_deref(), after_id, limit(n));
        self.seen(r).map(|l| l.into_iter().map(cv::tx_out).collect())
    }

    fn insert_session(&mut self, session: types::NewSession) -> Result<i64, String> {
        let r = self.backend.insert_session(&cv::new_session_in(session));
        self.seen(r)
    }

    fn get_session(&mut self, id: i64) -> Result<Option<types::Session>, String> {
        let r = self.backend.get_session(id);
        self.seen(r).map(|s| s.map(cv::session_out))
    }

    fn update_session(&mut self, session: types::Session) -> Result<(), String> {
        let r = self.backend.update_session(&cv::session_in(session));
        self.seen(r)
    }

    fn active_sessions(&mut self, username: String) -> Result<Vec<types::Session>, String> {
        let r = self.backend.active_sessions(&username);
        self.seen(r).map(|l| l.into_iter().map(cv::session_out).collect())
    }

    fn gate_state(
        &mut self,
        username: String,
    ) -> Result<(Option<types::UserState>, Vec<types::Session>), String> {
        let r = self.backend.gate_state(&username);
        let state = |u: quota_core::store::UserRecord| types::UserState {
            balance: u.balance,
            unlimited: u.unlimited,
            updated_at: u.updated_at.0,
        };
        self.seen(r)
            .map(|(u, l)| (u.map(state), l.into_iter().map(cv::session_out).collect()))
    }

    fn stale_sessions(&mut self, cutoff: i64) -> Result<Vec<types::Session>, String> {
        let r = self.backend.stale_sessions(Timestamp(cutoff));
        self.seen(r).map(|l| l.into_iter().map(cv::session_out).collect())
    }

    fn scan_sessions(
        &mut self,
        username: Option<String>,
        status: Option<types::SessionStatus>,
        after_id: i64,
        n: u32,
    ) -> Result<Vec<types::Session>, String> {
        let r =
            self.backend
                .scan_sessions(username.as_deref(), status.map(cv::status_in), after_id, limit(n));
        self.seen(r).map(|l| l.into_iter().map(cv::session_out).collect())
    }

    fn get_refresh_run(&mut self, run_id: String) -> Result<Option<types::RefreshRun>, String> {
        let r = self.backend.get_refresh_run(&run_id);
        self.seen(r).map(|x| x.map(cv::run_out))
    }

    fn put_refresh_run(&mut self, run: types::RefreshRun) -> Result<(), String> {
        let r = self.backend.put_refresh_run(&cv::run_in(run));
        self.seen(r)
    }
}
