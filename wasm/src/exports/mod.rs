//! The exported `api` interface: each function converts, calls `quota-core`, converts back.

use quota_core::admin::{self, AdminAction, AdminRequest, BatchEntry};
use quota_core::gate::{self, StartDecision, StartRequest};
use quota_core::refresh::{self, Step};
use quota_core::sessions::{self, EndRequest, EndTarget, Outcome};
use quota_core::{api as core_api, QuotaError, Timestamp};

use crate::bindings::api::{self as wit, Guest};
use crate::convert as cv;
use crate::sql_store::SqlStore;

mod configured;
mod http;
mod pages;
mod views;

use configured::{config, error_out, recorded, refresh_out, with_config};
use quota_core::store::RunStore;

pub(crate) struct Component;

impl Guest for Component {
    fn configure(values_json: String) -> Result<wit::ConfigSummary, Vec<wit::Problem>> {
        configured::configure(&values_json)
    }

    fn migrate() -> Result<wit::Migration, wit::QuotaError> {
        let (from, to) = SqlStore::host()
            .migrate()
            .map_err(|e| error_out(QuotaError::Store(e)))?;
        Ok(wit::Migration {
            from_version: from,
            to_version: to,
        })
    }

    fn next_fire(name: String, after: i64) -> Option<i64> {
        config()?
            .next_fire(&name, Timestamp(after))
            .map(Timestamp::seconds)
    }

    fn check_start(
        req: wit::StartRequest,
        now: i64,
    ) -> (Result<wit::StartDecision, wit::QuotaError>, Vec<wit::Observation>) {
        let req = StartRequest {
            username: req.username,
            resource: req.accelerator,
            runtime_minutes: req.runtime_minutes,
            server_name: req.server_name,
            started_at: req.started_at.map(Timestamp),
            // Checked by the gate, and only when they differ from the stored ones.
            groups: req.groups.map(quota_core::groups::ReportedGroups::text),
            budget: req.budget,
        };
        recorded(now, |cfg, store| {
            Ok(match gate::check_start(cfg, store, &req, Timestamp(now))? {
                StartDecision::Allowed(s) => wit::StartDecision::Allowed(wit::Started {
                    session_id: s.session_id,
                    rate: s.rate.raw(),
                    runtime_minutes: s.runtime_minutes,
                    estimated_cost: s.estimated_cost.raw(),
                    balance: s.balance,
                    ends_at: s.ends_at.seconds(),
                }),
                StartDecision::Refused(r) => wit::StartDecision::Refused(wit::Refusal {
                    message: r.message,
                    balance: r.balance,
                    held: r.held,
                    estimated_cost: r.estimated_cost.raw(),
                    next_refresh: r.next_refresh.map(|n| wit::ScheduledTopUp {
                        rule: n.rule,
                        at: n.at.seconds(),
                        balance: n.balance,
                    }),
                }),
                StartDecision::Forbidden(m) => wit::StartDecision::Forbidden(m),
            })
        })
    }

    fn end_session(
        req: wit::EndRequest,
        now: i64,
    ) -> (Result<wit::EndResult, wit::QuotaError>, Vec<wit::Observation>) {
        let target = match req.target {
            wit::EndTarget::Id(id) => EndTarget::Id(id),
            wit::EndTarget::Server((username, server_name)) => EndTarget::Server {
                username,
                server_name,
            },
        };
        let outcome = match req.outcome {
            wit::Outcome::Completed => Outcome::Completed,
            wit::Outcome::Failed => Outcome::Failed,
        };
        let req = EndRequest {
            target,
            ended_at: req.ended_at.map(Timestamp),
            outcome,
        };
        recorded(now, |_, tx| {
            let r = sessions::end_session(tx, &req, Timestamp(now))?;
            Ok(wit::EndResult {
                session_id: r.session_id,
                status: cv::status_out(r.status),
                duration_minutes: r.duration_minutes,
                cost: r.cost,
                balance: r.balance,
            })
        })
    }

    fn cleanup_stale(
        now: i64,
    ) -> (
        Result<Vec<wit::CleanedSession>, wit::QuotaError>,
        Vec<wit::Observation>,
    ) {
        recorded(now, |_, tx| {
            Ok(sessions::cleanup_stale(tx, Timestamp(now))?
                .into_iter()
                .map(|c| wit::CleanedSession {
                    session_id: c.session_id,
                    username: c.username,
                    server_name: c.server_name,
                    start_time: c.start_time.seconds(),
                    duration_minutes: c.duration_minutes,
                })
                .collect())
        })
    }

    fn admin_update(
        username: String,
        action: wit::AdminAction,
        description: Option<String>,
        caller: String,
        now: i64,
    ) -> Result<wit::AdminResult, wit::QuotaError> {
        let action = match action {
            wit::AdminAction::Set(a) => AdminAction::Set(a),
            wit::AdminAction::Add(a) => AdminAction::Add(a),
            wit::AdminAction::Deduct(a) => AdminAction::Deduct(a),
            wit::AdminAction::SetUnlimited(f) => AdminAction::SetUnlimited(f),
        };
        // Dated grants are REST's for now (`expires_at` in the body).
        let req = AdminRequest {
            username,
            action,
            description,
            expires_at: None,
        };
        let r = recorded(now, |_, tx| {
            admin::admin_update(tx, &req, &caller, Timestamp(now))
        })
        .0?;
        Ok(wit::AdminResult {
            username: r.username,
            balance: r.balance,
            action: r.action.to_string(),
            amount: r.amount,
            unlimited: r.unlimited,
        })
    }

    fn batch(
        entries: Vec<wit::BatchEntry>,
        caller: String,
        now: i64,
    ) -> Result<wit::BatchResult, wit::QuotaError> {
        let items: Vec<admin::BatchItem> = entries
            .into_iter()
            .map(|e| {
                Ok(BatchEntry {
                    username: e.username,
                    amount: e.amount,
                    unlimited: e.unlimited,
                    expires_at: e.expires_at.map(Timestamp),
                })
            })
            .collect();
        let r = recorded(now, |_, tx| admin::batch(tx, &items, &caller, Timestamp(now))).0?;
        Ok(wit::BatchResult {
            success: cv::clamp_u32(r.success),
            failed: cv::clamp_u32(r.failed),
            details: r
                .details
                .into_iter()
                .map(|d| wit::BatchDetail {
                    username: d.username,
                    status: d.status.to_string(),
                    balance: d.balance,
                    unlimited: d.unlimited,
                    error: d.error,
                })
                .collect(),
        })
    }

    fn refresh(
        body_json: String,
        now: i64,
    ) -> (Result<wit::RefreshResult, wit::QuotaError>, Vec<wit::Observation>) {
        recorded(now, |cfg, tx| {
            let req = core_api::refresh_request_from_json(&body_json)?;
            refresh_out(refresh::refresh(cfg, tx, &req, Timestamp(now))?)
        })
    }

    fn run_rule(
        name: String,
        run_id: Option<String>,
        dry_run: bool,
        now: i64,
    ) -> (Result<wit::RefreshResult, wit::QuotaError>, Vec<wit::Observation>) {
        recorded(now, |cfg, tx| {
            let req = cfg.rule_request(&name, run_id, dry_run)?;
            refresh_out(refresh::refresh(cfg, tx, &req, Timestamp(now))?)
        })
    }

    fn run_rule_step(
        name: String,
        run_id: String,
        now: i64,
        chunk_users: u32,
    ) -> (Result<wit::RefreshStep, wit::QuotaError>, Vec<wit::Observation>) {
        recorded(now, |cfg, tx| {
            let req = cfg.rule_request(&name, Some(run_id), false)?;
            Ok(
                match refresh::refresh_step(cfg, tx, &req, Timestamp(now), chunk_users)? {
                    Step::Done(r) => wit::RefreshStep::Done(refresh_out(r)?),
                    Step::More => wit::RefreshStep::More,
                },
            )
        })
    }

    fn run_applied(run_id: String) -> Result<bool, wit::QuotaError> {
        SqlStore::host()
            .get_refresh_run(&run_id)
            .map(|r| r.as_ref().is_some_and(refresh::run_completed))
            .map_err(|e| error_out(QuotaError::Store(e)))
    }

    fn replace_memberships(
        users: Vec<wit::GroupMembership>,
        complete: bool,
        now: i64,
    ) -> Result<wit::MembershipsReplaced, wit::QuotaError> {
        let entries = users
            .iter()
            .map(|u| (u.username.as_str(), u.groups.iter().map(String::as_str).collect()));
        let snapshot = quota_core::groups::snapshot(entries).map_err(error_out)?;
        let r = quota_core::groups::replace(&mut SqlStore::host(), &snapshot, complete, Timestamp(now))
            .map_err(error_out)?;
        Ok(wit::MembershipsReplaced {
            changed: r.changed,
            users: r.users,
        })
    }

    fn list_users(now: i64) -> Result<Vec<crate::bindings::types::UserRecord>, wit::QuotaError> {
        let users =
            quota_core::reads::list_users(&mut SqlStore::host(), Timestamp(now)).map_err(error_out)?;
        Ok(users.iter().map(|r| cv::user_out(&r.user)).collect())
    }

    fn user_detail(username: String, now: i64) -> Result<wit::UserView, wit::QuotaError> {
        views::user_detail(&username, now)
    }

    fn get_rates() -> wit::Rates {
        views::rates()
    }

    fn me(username: String, now: i64) -> Result<wit::MeView, wit::QuotaError> {
        views::me(&username, now)
    }

    fn get_accelerators() -> Vec<wit::Accelerator> {
        views::accelerators()
    }

    fn estimate_cost(
        accelerator: Option<String>,
        runtime_minutes: i64,
    ) -> Result<wit::Estimate, wit::QuotaError> {
        with_config(|cfg| pages::estimate(cfg, accelerator, runtime_minutes))
    }

    fn parse_quota_input(field: String, text: String) -> Result<wit::QuotaInput, wit::Problem> {
        pages::quota_input(&field, &text)
    }

    fn name_problems(kind: wit::NameKind, names: Vec<String>) -> Vec<Option<String>> {
        let kind = match kind {
            wit::NameKind::User => quota_core::hub_names::NameKind::User,
            wit::NameKind::Group => quota_core::hub_names::NameKind::Group,
        };
        names
            .iter()
            .map(|n| quota_core::hub_names::name_problem(kind, n))
            .collect()
    }

    fn route_template(path: String) -> Option<String> {
        quota_core::api::route_template(&path).map(str::to_string)
    }

    fn refresh_preview(
        body_json: String,
        users: Vec<crate::bindings::types::UserRecord>,
        memberships: Vec<wit::GroupMembership>,
    ) -> Result<String, wit::QuotaError> {
        let users = users.into_iter().map(cv::user_in).collect();
        let entries = memberships
            .iter()
            .map(|m| (m.username.as_str(), m.groups.iter().map(String::as_str).collect()));
        let groups = quota_core::groups::snapshot(entries).map_err(error_out)?;
        pages::refresh_preview(&body_json, users, groups).map_err(error_out)
    }

    fn active_sessions() -> Result<Vec<wit::ResourceCount>, wit::QuotaError> {
        let counts = quota_core::reads::active_sessions_by_type(&mut SqlStore::host()).map_err(error_out)?;
        Ok(counts
            .into_iter()
            .map(|(resource_type, sessions)| wit::ResourceCount {
                resource_type,
                sessions,
            })
            .collect())
    }

    fn handle_request(req: wit::HttpRequest, now: i64) -> Result<wit::HttpResponse, String> {
        match Self::handle_request_step(req, now, 0)? {
            wit::RequestStep::Done(r) => Ok(r),
            wit::RequestStep::More => Err("an unlimited refresh call stopped early".to_string()),
        }
    }

    fn handle_request_step(
        req: wit::HttpRequest,
        now: i64,
        chunk_users: u32,
    ) -> Result<wit::RequestStep, String> {
        http::handle_request_step(req, now, chunk_users)
    }
}

// The export symbols only exist in the wasm build; a native build (clippy, `cargo test --workspace`)
// still type-checks the whole adapter.
#[cfg(target_arch = "wasm32")]
crate::bindings::export!(Component with_types_in crate::bindings);
