//! Conversions between the generated WIT types and `quota-core`'s records, for the storage imports.

use quota_core::milli::Milli;
use quota_core::store::{
    NewSession, NewTransaction, RefreshRun, Session, SessionStatus, Transaction, TransactionType, UserRecord,
};
use quota_core::Timestamp;

use crate::bindings::types as wit;

pub fn user_out(u: UserRecord) -> wit::UserRecord {
    wit::UserRecord {
        username: u.username,
        balance: u.balance,
        unlimited: u.unlimited,
        updated_at: u.updated_at.0,
    }
}

pub fn user_in(u: wit::UserRecord) -> UserRecord {
    UserRecord {
        username: u.username,
        balance: u.balance,
        unlimited: u.unlimited,
        updated_at: Timestamp(u.updated_at),
    }
}

fn tx_type_in(t: wit::TransactionType) -> TransactionType {
    match t {
        wit::TransactionType::Usage => TransactionType::Usage,
        wit::TransactionType::InitialGrant => TransactionType::InitialGrant,
        wit::TransactionType::Set => TransactionType::Set,
        wit::TransactionType::Add => TransactionType::Add,
        wit::TransactionType::Deduct => TransactionType::Deduct,
        wit::TransactionType::SetUnlimited => TransactionType::SetUnlimited,
        wit::TransactionType::UnsetUnlimited => TransactionType::UnsetUnlimited,
        wit::TransactionType::AutoRefresh => TransactionType::AutoRefresh,
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
    }
}

pub fn new_tx_in(t: wit::NewTransaction) -> NewTransaction {
    NewTransaction {
        username: t.username,
        amount: t.amount,
        transaction_type: tx_type_in(t.transaction_type),
        resource_type: t.resource_type,
        description: t.description,
        balance_before: t.balance_before,
        balance_after: t.balance_after,
        created_at: Timestamp(t.created_at),
        created_by: t.created_by,
    }
}

fn new_tx_out(t: NewTransaction) -> wit::NewTransaction {
    wit::NewTransaction {
        username: t.username,
        amount: t.amount,
        transaction_type: tx_type_out(t.transaction_type),
        resource_type: t.resource_type,
        description: t.description,
        balance_before: t.balance_before,
        balance_after: t.balance_after,
        created_at: t.created_at.0,
        created_by: t.created_by,
    }
}

pub fn tx_out(t: Transaction) -> wit::Transaction {
    let (id, entry) = t.into_parts();
    wit::Transaction {
        id,
        entry: new_tx_out(entry),
    }
}

pub fn status_in(s: wit::SessionStatus) -> SessionStatus {
    match s {
        wit::SessionStatus::Active => SessionStatus::Active,
        wit::SessionStatus::Completed => SessionStatus::Completed,
        wit::SessionStatus::Failed => SessionStatus::Failed,
        wit::SessionStatus::CleanedUp => SessionStatus::CleanedUp,
    }
}

fn status_out(s: SessionStatus) -> wit::SessionStatus {
    match s {
        SessionStatus::Active => wit::SessionStatus::Active,
        SessionStatus::Completed => wit::SessionStatus::Completed,
        SessionStatus::Failed => wit::SessionStatus::Failed,
        SessionStatus::CleanedUp => wit::SessionStatus::CleanedUp,
    }
}

pub fn new_session_in(s: wit::NewSession) -> NewSession {
    NewSession {
        username: s.username,
        server_name: s.server_name,
        resource_type: s.resource_type,
        rate: Milli(s.rate),
        runtime_minutes: s.runtime_minutes,
        estimated_cost: Milli(s.estimated_cost),
        start_time: Timestamp(s.start_time),
        billable: s.billable,
    }
}

pub fn session_in(s: wit::Session) -> Session {
    let st = new_session_in(s.start);
    let mut out = st.with_id(s.id);
    out.status = status_in(s.status);
    out.end_time = s.end_time.map(Timestamp);
    out.duration_minutes = s.duration_minutes;
    out.cost = s.cost;
    out
}

fn new_session_out(s: NewSession) -> wit::NewSession {
    wit::NewSession {
        username: s.username,
        server_name: s.server_name,
        resource_type: s.resource_type,
        rate: s.rate.raw(),
        runtime_minutes: s.runtime_minutes,
        estimated_cost: s.estimated_cost.raw(),
        start_time: s.start_time.0,
        billable: s.billable,
    }
}

pub fn session_out(s: Session) -> wit::Session {
    wit::Session {
        id: s.id,
        start: new_session_out(s.start_record()),
        status: status_out(s.status),
        end_time: s.end_time.map(|t| t.0),
        duration_minutes: s.duration_minutes,
        cost: s.cost,
    }
}

pub fn run_out(r: RefreshRun) -> wit::RefreshRun {
    wit::RefreshRun {
        run_id: r.run_id,
        params: r.params,
        response: r.result,
        created_at: r.created_at.0,
    }
}

pub fn run_in(r: wit::RefreshRun) -> RefreshRun {
    RefreshRun {
        run_id: r.run_id,
        params: r.params,
        result: r.response,
        created_at: Timestamp(r.created_at),
    }
}
