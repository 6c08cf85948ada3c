//! The one conversion between core's request and result types and the generated WIT records, on
//! the host side of the boundary (the guest has the mirror image in `wasm/src/convert.rs` and its
//! exports: each side converts in one direction only, requests out and results in). The hosting
//! contract's records are `contract.rs`.

mod contract;

use quota_core::admin::{AdminAction, AdminRequest, AdminResult, BatchDetail, BatchEntry, BatchResult};
use quota_core::forecast::NextRefresh;
use quota_core::gate::{Refusal, StartDecision, StartRequest, Started};
use quota_core::reads::{Me, Rates, UserDetail};
use quota_core::sessions::{CleanedSession, EndRequest, EndResult, EndTarget, Outcome};
use quota_core::store::{NewTransaction, SessionStatus, Transaction, TransactionType, UserRecord};
use quota_core::{Milli, QuotaError, StoreError, Timestamp};

use crate::bindings::{api, types};

pub fn quota_error(e: api::QuotaError) -> QuotaError {
    match e {
        api::QuotaError::Invalid(p) => QuotaError::Invalid {
            field: p.field,
            message: p.message,
        },
        api::QuotaError::InsufficientBalance => QuotaError::InsufficientBalance,
        api::QuotaError::OutOfRange(m) => QuotaError::OutOfRange(m),
        api::QuotaError::NotFound(m) => QuotaError::NotFound(m),
        api::QuotaError::Conflict(m) => QuotaError::Conflict(m),
        api::QuotaError::Forbidden(m) => QuotaError::Forbidden(m),
        api::QuotaError::Storage(m) => QuotaError::Store(StoreError(m)),
    }
}

pub fn start_request(r: &StartRequest) -> api::StartRequest {
    api::StartRequest {
        username: r.username.clone(),
        accelerator: r.resource.clone(),
        runtime_minutes: r.runtime_minutes,
        server_name: r.server_name.clone(),
        started_at: r.started_at.map(Timestamp::seconds),
        groups: r.groups.as_ref().map(|g| g.as_str().to_string()),
        budget: r.budget.clone(),
    }
}

/// The engine's settings for hosts, from the component's record.
pub fn host_settings(h: api::HostSettings) -> quota_core::config::HostSettings {
    quota_core::config::HostSettings {
        runtime_minutes_min: h.runtime_minutes_min,
        runtime_minutes_max: h.runtime_minutes_max,
        default_runtime_minutes: h.default_runtime_minutes,
        extend_choices: h.extend_choices,
        warn_before_stop_minutes: h.warn_before_stop_minutes,
        live_streams_per_user: h.live_streams_per_user,
        on_storage_error: h.on_storage_error,
        sweep_interval_seconds: h.sweep_interval_seconds,
        users_page_max: h.users_page_max,
    }
}

/// `started` carries only what the request does not (see the WIT): the rest is the request's, as
/// the engine normalised it.
pub fn start_decision(d: api::StartDecision, req: &StartRequest) -> StartDecision {
    match d {
        api::StartDecision::Allowed(s) => StartDecision::Allowed(Started {
            session_id: s.session_id,
            budget: req.budget.clone(),
            username: quota_core::names::normalize_username("username", &req.username)
                .unwrap_or_else(|_| req.username.clone()),
            server_name: req.server_name.clone(),
            resource_type: req
                .resource
                .clone()
                .unwrap_or_else(|| quota_core::accelerators::CPU_RESOURCE.to_string()),
            rate: Milli(s.rate),
            runtime_minutes: s.runtime_minutes,
            estimated_cost: Milli(s.estimated_cost),
            balance: s.balance,
            status: SessionStatus::Active,
            ends_at: Timestamp(s.ends_at),
        }),
        api::StartDecision::Refused(r) => StartDecision::Refused(Refusal {
            message: r.message,
            balance: r.balance,
            held: r.held,
            estimated_cost: Milli(r.estimated_cost),
            next_refresh: r.next_refresh.map(|n| NextRefresh {
                rule: n.rule,
                at: Timestamp(n.at),
                balance: n.balance,
            }),
        }),
        api::StartDecision::Forbidden(m) => StartDecision::Forbidden(m),
    }
}

pub fn end_request(r: &EndRequest) -> api::EndRequest {
    api::EndRequest {
        target: match &r.target {
            EndTarget::Id(id) => api::EndTarget::Id(*id),
            EndTarget::Server {
                username,
                server_name,
            } => api::EndTarget::Server((username.clone(), server_name.clone())),
        },
        ended_at: r.ended_at.map(Timestamp::seconds),
        outcome: match r.outcome {
            Outcome::Completed => api::Outcome::Completed,
            Outcome::Failed => api::Outcome::Failed,
        },
    }
}

pub fn status(s: types::SessionStatus) -> SessionStatus {
    match s {
        types::SessionStatus::Active => SessionStatus::Active,
        types::SessionStatus::Completed => SessionStatus::Completed,
        types::SessionStatus::Failed => SessionStatus::Failed,
        types::SessionStatus::CleanedUp => SessionStatus::CleanedUp,
    }
}

pub fn end_result(r: api::EndResult) -> EndResult {
    EndResult {
        session_id: r.session_id,
        status: status(r.status),
        duration_minutes: r.duration_minutes,
        cost: r.cost,
        balance: r.balance,
    }
}

pub fn cleaned(c: api::CleanedSession) -> CleanedSession {
    CleanedSession {
        session_id: c.session_id,
        username: c.username,
        server_name: c.server_name,
        start_time: Timestamp(c.start_time),
        duration_minutes: c.duration_minutes,
    }
}

pub fn admin_action(a: AdminAction) -> api::AdminAction {
    match a {
        AdminAction::Set(n) => api::AdminAction::Set(n),
        AdminAction::Add(n) => api::AdminAction::Add(n),
        AdminAction::Deduct(n) => api::AdminAction::Deduct(n),
        AdminAction::SetUnlimited(f) => api::AdminAction::SetUnlimited(f),
    }
}

pub fn admin_result(r: api::AdminResult, req: &AdminRequest) -> AdminResult {
    AdminResult {
        username: r.username,
        balance: r.balance,
        action: req.action.name(),
        amount: r.amount,
        unlimited: r.unlimited,
    }
}

pub fn batch_entry(e: &BatchEntry) -> api::BatchEntry {
    api::BatchEntry {
        username: e.username.clone(),
        amount: e.amount,
        unlimited: e.unlimited,
        expires_at: e.expires_at.map(Timestamp::seconds),
    }
}

pub fn batch_result(r: api::BatchResult) -> BatchResult {
    BatchResult {
        success: r.success as usize,
        failed: r.failed as usize,
        details: r
            .details
            .into_iter()
            .map(|d| BatchDetail {
                username: d.username,
                status: if d.status == "success" {
                    "success"
                } else {
                    "failed"
                },
                balance: d.balance,
                unlimited: d.unlimited,
                error: d.error,
            })
            .collect(),
    }
}

pub fn user(u: types::UserRecord) -> UserRecord {
    UserRecord {
        username: u.username,
        balance: u.balance,
        unlimited: u.unlimited,
        updated_at: Timestamp(u.updated_at),
    }
}

fn transaction_type(t: types::TransactionType) -> TransactionType {
    match t {
        types::TransactionType::Usage => TransactionType::Usage,
        types::TransactionType::InitialGrant => TransactionType::InitialGrant,
        types::TransactionType::Set => TransactionType::Set,
        types::TransactionType::Add => TransactionType::Add,
        types::TransactionType::Deduct => TransactionType::Deduct,
        types::TransactionType::SetUnlimited => TransactionType::SetUnlimited,
        types::TransactionType::UnsetUnlimited => TransactionType::UnsetUnlimited,
        types::TransactionType::AutoRefresh => TransactionType::AutoRefresh,
        types::TransactionType::Expire => TransactionType::Expire,
    }
}

pub fn transaction(t: types::Transaction) -> Transaction {
    NewTransaction {
        username: t.username,
        amount: t.amount,
        transaction_type: transaction_type(t.transaction_type),
        resource_type: t.resource_type,
        description: t.description,
        balance_before: t.balance_before,
        balance_after: t.balance_after,
        created_at: Timestamp(t.created_at),
        created_by: t.created_by,
        budget: t.budget,
        expires_at: t.expires_at.map(Timestamp),
    }
    .with_id(t.id)
}

pub fn user_detail(d: api::UserView) -> UserDetail {
    UserDetail {
        username: d.username,
        balance: d.balance,
        unlimited: d.unlimited,
        recent_transactions: d.recent_transactions.into_iter().map(transaction).collect(),
        groups: d.groups.into_iter().collect(),
        grants: d.grants.into_iter().map(grant).collect(),
    }
}

fn grant(g: api::Grant) -> quota_core::store::Grant {
    quota_core::store::Grant {
        grant_id: g.grant_id,
        amount: g.amount,
        remaining: g.remaining,
        granted_at: Timestamp(g.granted_at),
        expires_at: Timestamp(g.expires_at),
    }
}

/// `{cpu: rate, <accelerator>: rate, ...}`, as core's JSON form of the rates.
fn rates_json(rates: &[(String, i64)]) -> serde_json::Value {
    serde_json::Value::Object(
        rates
            .iter()
            .map(|(k, v)| (k.clone(), Milli(*v).to_json()))
            .collect(),
    )
}

pub fn me(m: api::MeView) -> Me {
    Me {
        rates: rates_json(&m.rates),
        username: m.username,
        balance: m.balance,
        held: Milli(m.held),
        available: m.available.map(Milli),
        unlimited: m.unlimited,
        enabled: m.enabled,
        // The typed view carries no forecast, no budgets and no display names: `GET
        // {base}/api/quota/me` does.
        resource_names: Default::default(),
        next_refresh: None,
        lasts_minutes: None,
        expiring_next: m.grants.first().map(|g| quota_core::lots::ExpiringNext {
            amount: g.remaining,
            expires_at: Timestamp(g.expires_at),
        }),
        grants: m.grants.into_iter().map(grant).collect(),
        budgets: Vec::new(),
    }
}

pub fn rates(r: api::Rates) -> Rates {
    Rates {
        enabled: r.enabled,
        rates: rates_json(&r.rates),
        minimum_to_start: Milli(r.minimum_to_start),
    }
}

pub fn accelerator(a: api::Accelerator) -> (String, quota_core::accelerators::Accelerator) {
    (
        a.key,
        quota_core::accelerators::Accelerator {
            display_name: a.display_name,
            description: a.description,
            node_selector: a.node_selector.into_iter().collect(),
            quota_rate: Milli(a.quota_rate),
            // Not in the typed record: `/api/accelerators` (the engine's JSON) shows them.
            resources: Default::default(),
            tolerations: Vec::new(),
            extra: serde_json::Map::new(),
        },
    )
}

/// An observation the component returned with an answer, as `quota_core`'s.
pub fn observation(e: api::Observation) -> quota_core::observations::Observation {
    use quota_core::observations::{GateResult, Observation};
    match e {
        api::Observation::Gate(g) => Observation::Gate {
            result: match g.decision {
                api::GateResult::Allowed => GateResult::Allowed,
                api::GateResult::Refused => GateResult::Refused,
                api::GateResult::Forbidden => GateResult::Forbidden,
                api::GateResult::Invalid => GateResult::Invalid,
            },
            resource_type: g.resource_type,
        },
        api::Observation::SessionsEnded(s) => Observation::SessionsEnded {
            status: status(s.status),
            resource_type: s.resource_type,
            sessions: s.sessions,
            credits: s.credits,
            budget: s.budget,
        },
        api::Observation::Refreshed(r) => Observation::Refreshed {
            rule_name: r.rule_name,
            users_updated: r.users_updated,
        },
        api::Observation::HoldsRepaired(h) => Observation::HoldsRepaired {
            budget: h.budget,
            kept: h.kept,
            summed: h.summed,
        },
    }
}

// The hosting contract (`hosting.contract`) into the host's own types.
