//! `quota-core` results to the generated WIT types (outward: storage rows no longer cross the
//! boundary as records, and requests are converted where each export reads them), and the user
//! records a page hands to `refresh-preview`.

use quota_core::store::{SessionStatus, Transaction, TransactionType, UserRecord};

use crate::bindings::types as wit;

pub fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub fn user_out(u: &UserRecord) -> wit::UserRecord {
    wit::UserRecord {
        username: u.username.clone(),
        balance: u.balance,
        unlimited: u.unlimited,
        updated_at: u.updated_at.seconds(),
    }
}

/// A user record from the host (a page's loaded users, for a preview).
pub fn user_in(u: wit::UserRecord) -> UserRecord {
    UserRecord {
        username: u.username,
        balance: u.balance,
        unlimited: u.unlimited,
        updated_at: quota_core::Timestamp(u.updated_at),
    }
}

fn tx_type_out(t: TransactionType) -> wit::TransactionType {
    match t {
        TransactionType::Usage => wit::TransactionType::Usage,
        TransactionType::InitialGrant => wit::TransactionType::InitialGrant,
        TransactionType::Set => wit::TransactionType::Set,
        TransactionType::Add => wit::TransactionType::Add,
        TransactionType::Deduct => wit::TransactionType::Deduct,
        TransactionType::SetUnlimited => wit::TransactionType::SetUnlimited,
        TransactionType::UnsetUnlimited => wit::TransactionType::UnsetUnlimited,
        TransactionType::AutoRefresh => wit::TransactionType::AutoRefresh,
        TransactionType::Expire => wit::TransactionType::Expire,
    }
}

pub fn tx_out(t: &Transaction) -> wit::Transaction {
    wit::Transaction {
        id: t.id,
        username: t.username.clone(),
        amount: t.amount,
        transaction_type: tx_type_out(t.transaction_type),
        resource_type: t.resource_type.clone(),
        description: t.description.clone(),
        balance_before: t.balance_before,
        balance_after: t.balance_after,
        created_at: t.created_at.seconds(),
        created_by: t.created_by.clone(),
        budget: t.budget.clone(),
        expires_at: t.expires_at.map(quota_core::Timestamp::seconds),
    }
}

pub fn status_out(s: SessionStatus) -> wit::SessionStatus {
    match s {
        SessionStatus::Active => wit::SessionStatus::Active,
        SessionStatus::Completed => wit::SessionStatus::Completed,
        SessionStatus::Failed => wit::SessionStatus::Failed,
        SessionStatus::CleanedUp => wit::SessionStatus::CleanedUp,
    }
}

/// What a call observed, as the WIT `observation`s.
pub fn observations_out(
    list: Vec<quota_core::observations::Observation>,
) -> Vec<crate::bindings::api::Observation> {
    list.into_iter().map(observation_out).collect()
}

fn observation_out(o: quota_core::observations::Observation) -> crate::bindings::api::Observation {
    use crate::bindings::api as w;
    use quota_core::observations::{GateResult, Observation};
    match o {
        Observation::Gate {
            result,
            resource_type,
        } => w::Observation::Gate(w::GateObservation {
            decision: match result {
                GateResult::Allowed => w::GateResult::Allowed,
                GateResult::Refused => w::GateResult::Refused,
                GateResult::Forbidden => w::GateResult::Forbidden,
                GateResult::Invalid => w::GateResult::Invalid,
            },
            resource_type,
        }),
        Observation::SessionsEnded {
            status,
            resource_type,
            sessions,
            credits,
            budget,
        } => w::Observation::SessionsEnded(w::SessionsEndedObservation {
            status: status_out(status),
            resource_type,
            sessions,
            credits,
            budget,
        }),
        Observation::Refreshed {
            rule_name,
            users_updated,
        } => w::Observation::Refreshed(w::RefreshedObservation {
            rule_name,
            users_updated,
        }),
        Observation::HoldsRepaired { budget, kept, summed } => {
            w::Observation::HoldsRepaired(w::HoldsRepairedObservation { budget, kept, summed })
        }
    }
}

pub fn grant_out(g: &quota_core::store::Grant) -> crate::bindings::api::Grant {
    crate::bindings::api::Grant {
        grant_id: g.grant_id,
        amount: g.amount,
        remaining: g.remaining,
        granted_at: g.granted_at.seconds(),
        expires_at: g.expires_at.seconds(),
    }
}
