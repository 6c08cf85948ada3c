//! The typed façade: every engine export as a method of [`Worker`], with core's request and result
//! types in and out and one error type ([`HostError`]: a refusal of the engine is
//! `HostError::Quota`). No generated type appears in this crate's public API.

use quota_core::admin::{AdminRequest, AdminResult, BatchEntry, BatchResult};
use quota_core::gate::{StartDecision, StartRequest};
use quota_core::reads::{Me, Rates, UserDetail};
use quota_core::refresh::RefreshResult;
use quota_core::sessions::{CleanedSession, EndRequest, EndResult};
use quota_core::store::UserRecord;
use quota_core::Timestamp;

use crate::bindings::api;
use crate::convert as cv;
use crate::error::HostError;
use crate::replies::{decided, refresh_result};
use crate::worker::Worker;

impl Worker {
    /// The spawn gate: records the session when allowed. A refusal is a decision, not an error.
    pub fn check_start(&mut self, req: &StartRequest, now: Timestamp) -> Result<StartDecision, HostError> {
        let w = cv::start_request(req);
        let d = self.call_observed(|b, s| b.quota_engine_api().call_check_start(s, &w, now.0))?;
        Ok(cv::start_decision(decided(d)?, req))
    }

    /// Ends a session and bills it; idempotent for a session already ended.
    pub fn end_session(&mut self, req: &EndRequest, now: Timestamp) -> Result<EndResult, HostError> {
        let w = cv::end_request(req);
        let r = self.call_observed(|b, s| b.quota_engine_api().call_end_session(s, &w, now.0))?;
        Ok(cv::end_result(decided(r)?))
    }

    /// Closes every session active for more than 8 hours, without charge.
    pub fn cleanup_stale(&mut self, now: Timestamp) -> Result<Vec<CleanedSession>, HostError> {
        let r = self.call_observed(|b, s| b.quota_engine_api().call_cleanup_stale(s, now.0))?;
        Ok(decided(r)?.into_iter().map(cv::cleaned).collect())
    }

    /// One admin change made by `caller`.
    pub fn admin_update(
        &mut self,
        req: &AdminRequest,
        caller: &str,
        now: Timestamp,
    ) -> Result<AdminResult, HostError> {
        let action = cv::admin_action(req.action);
        let r = self.call(|b, s| {
            b.quota_engine_api().call_admin_update(
                s,
                &req.username,
                action,
                req.description.as_deref(),
                caller,
                now.0,
            )
        })?;
        Ok(cv::admin_result(decided(r)?, req))
    }

    /// Up to 1,000 entries; an invalid one is counted as failed and the others apply.
    pub fn batch(
        &mut self,
        entries: &[BatchEntry],
        caller: &str,
        now: Timestamp,
    ) -> Result<BatchResult, HostError> {
        let w: Vec<api::BatchEntry> = entries.iter().map(cv::batch_entry).collect();
        let r = self.call(|b, s| b.quota_engine_api().call_batch(s, &w, caller, now.0))?;
        Ok(cv::batch_result(decided(r)?))
    }

    /// A refresh in the REST body's form (JSON).
    pub fn refresh(&mut self, body_json: &str, now: Timestamp) -> Result<RefreshResult, HostError> {
        let r = self.call_observed(|b, s| b.quota_engine_api().call_refresh(s, body_json, now.0))?;
        refresh_result(r)
    }

    /// Runs configured rule `name` now, at most once per `run_id` (`replayed` says it ran before).
    /// With a run id it is applied in chunks, one transaction each ([`Worker::chunked`]).
    pub fn run_rule(
        &mut self,
        name: &str,
        run_id: Option<&str>,
        dry_run: bool,
        now: Timestamp,
    ) -> Result<RefreshResult, HostError> {
        match run_id {
            Some(id) if !dry_run => self.chunked(|tx, chunk| tx.run_rule_step(name, id, now, chunk)),
            _ => self.transaction(false, |tx| tx.run_rule(name, run_id, dry_run, now)),
        }
    }

    /// Whether a refresh run with this id has been applied to every user.
    pub fn run_applied(&mut self, run_id: &str) -> Result<bool, HostError> {
        let r = self.call_read(|b, s| b.quota_engine_api().call_run_applied(s, run_id))?;
        decided(r)
    }

    /// Sets every listed user's groups (username, groups) to exactly those, in one transaction of
    /// any size; `complete`: a user left out is in no group afterwards.
    pub fn replace_memberships(
        &mut self,
        users: &[(String, Vec<String>)],
        complete: bool,
        now: Timestamp,
    ) -> Result<quota_core::groups::Replaced, HostError> {
        let w: Vec<api::GroupMembership> = users
            .iter()
            .map(|(u, g)| api::GroupMembership {
                username: u.clone(),
                groups: g.clone(),
            })
            .collect();
        let r = self.call(|b, s| {
            b.quota_engine_api()
                .call_replace_memberships(s, &w, complete, now.0)
        })?;
        let r = decided(r)?;
        Ok(quota_core::groups::Replaced {
            changed: r.changed,
            users: r.users,
        })
    }

    /// Every user record, by username, balances as of `now`.
    pub fn list_users(&mut self, now: Timestamp) -> Result<Vec<UserRecord>, HostError> {
        let r = self.call_read(|b, s| b.quota_engine_api().call_list_users(s, now.0))?;
        Ok(decided(r)?.into_iter().map(cv::user).collect())
    }

    /// A user's balance as of `now`, flag and newest transactions (an unknown user reads as zeros).
    pub fn user_detail(&mut self, username: &str, now: Timestamp) -> Result<UserDetail, HostError> {
        let r = self.call_read(|b, s| b.quota_engine_api().call_user_detail(s, username, now.0))?;
        Ok(cv::user_detail(decided(r)?))
    }

    /// What a user sees of their own quota, the balance as of `now`.
    pub fn me(&mut self, username: &str, now: Timestamp) -> Result<Me, HostError> {
        let r = self.call_read(|b, s| b.quota_engine_api().call_me(s, username, now.0))?;
        Ok(cv::me(decided(r)?))
    }

    /// The configured rates.
    pub fn rates(&mut self) -> Result<Rates, HostError> {
        let r = self.call_read(|b, s| b.quota_engine_api().call_get_rates(s))?;
        Ok(cv::rates(r))
    }

    /// The configured accelerators, in the values file's order of keys as the engine lists them.
    pub fn accelerators(
        &mut self,
    ) -> Result<Vec<(String, quota_core::accelerators::Accelerator)>, HostError> {
        let r = self.call_read(|b, s| b.quota_engine_api().call_get_accelerators(s))?;
        Ok(r.into_iter().map(cv::accelerator).collect())
    }
}
