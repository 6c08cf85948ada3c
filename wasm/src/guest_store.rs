//! `quota_core::Store` over the host's imported storage functions.

use quota_core::store::{
    Change, NewSession, RefreshRun, Session, SessionStatus, Store, Transaction, UserRecord,
};
use quota_core::{StoreError, Timestamp};

use crate::bindings::storage as host;
use crate::convert::{self as cv, clamp_u32};

/// The host's storage, as seen from inside the component.
pub struct HostStore;

fn err(e: String) -> StoreError {
    StoreError(e)
}

impl Store for HostStore {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        Ok(host::get_user(username).map_err(err)?.map(cv::user_in))
    }

    fn put_user(&mut self, user: &UserRecord) -> Result<(), StoreError> {
        host::put_user(&cv::user_out(user)).map_err(err)
    }

    fn scan_users(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<UserRecord>, StoreError> {
        Ok(host::scan_users(after, clamp_u32(limit))
            .map_err(err)?
            .into_iter()
            .map(cv::user_in)
            .collect())
    }

    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError> {
        let list: Vec<_> = changes
            .iter()
            .map(|c| crate::bindings::types::Change {
                user: cv::user_out(&c.user),
                entry: cv::new_tx_out(&c.entry),
            })
            .collect();
        host::record_changes(&list).map_err(err)
    }

    fn recent_transactions(&mut self, username: &str, limit: usize) -> Result<Vec<Transaction>, StoreError> {
        let list = host::recent_transactions(username, clamp_u32(limit)).map_err(err)?;
        Ok(list.into_iter().map(cv::tx_in).collect())
    }

    fn scan_transactions(
        &mut self,
        username: Option<&str>,
        after_id: i64,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        let list = host::scan_transactions(username, after_id, clamp_u32(limit)).map_err(err)?;
        Ok(list.into_iter().map(cv::tx_in).collect())
    }

    fn insert_session(&mut self, session: &NewSession) -> Result<i64, StoreError> {
        host::insert_session(&cv::new_session_out(session)).map_err(err)
    }

    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError> {
        Ok(host::get_session(id).map_err(err)?.map(cv::session_in))
    }

    fn update_session(&mut self, session: &Session) -> Result<(), StoreError> {
        host::update_session(&cv::session_out(session)).map_err(err)
    }

    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError> {
        Ok(host::active_sessions(username)
            .map_err(err)?
            .into_iter()
            .map(cv::session_in)
            .collect())
    }

    fn gate_state(&mut self, username: &str) -> Result<(Option<UserRecord>, Vec<Session>), StoreError> {
        let (user, sessions) = host::gate_state(username).map_err(err)?;
        // The host leaves out the username the engine already has: one string less per start.
        let user = user.map(|u| UserRecord {
            username: username.to_string(),
            balance: u.balance,
            unlimited: u.unlimited,
            updated_at: Timestamp(u.updated_at),
        });
        Ok((user, sessions.into_iter().map(cv::session_in).collect()))
    }

    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError> {
        Ok(host::stale_sessions(cutoff.seconds())
            .map_err(err)?
            .into_iter()
            .map(cv::session_in)
            .collect())
    }

    fn scan_sessions(
        &mut self,
        username: Option<&str>,
        status: Option<SessionStatus>,
        after_id: i64,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError> {
        let status = status.map(cv::status_out);
        let list = host::scan_sessions(username, status, after_id, clamp_u32(limit)).map_err(err)?;
        Ok(list.into_iter().map(cv::session_in).collect())
    }

    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError> {
        Ok(host::get_refresh_run(run_id).map_err(err)?.map(|r| RefreshRun {
            run_id: r.run_id,
            params: r.params,
            result: r.response,
            created_at: Timestamp(r.created_at),
        }))
    }

    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError> {
        host::put_refresh_run(&crate::bindings::types::RefreshRun {
            run_id: run.run_id.clone(),
            params: run.params.clone(),
            response: run.result.clone(),
            created_at: run.created_at.seconds(),
        })
        .map_err(err)
    }
}
