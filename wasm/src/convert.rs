//! Conversions between `quota-core` types and the generated WIT types.

use quota_core::store::{
    NewSession, NewTransaction, Session, SessionStatus, Transaction, TransactionType, UserRecord,
};
use quota_core::{Milli, Timestamp};

use crate::bindings::types as wit;

pub fn clamp_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

pub fn user_in(u: wit::UserRecord) -> UserRecord {
    UserRecord {
        username: u.username,
        balance: u.balance,
        unlimited: u.unlimited,
        updated_at: Timestamp(u.updated_at),
    }
}

pub fn user_out(u: &UserRecord) -> wit::UserRecord {
    wit::UserRecord {
        username: u.username.clone(),
        balance: u.balance,
        unlimited: u.unlimited,
        updated_at: u.updated_at.seconds(),
    }
}

pub fn tx_type_out(t: TransactionType) -> wit::TransactionType {
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

pub fn new_tx_out(t: &NewTransaction) -> wit::NewTransaction {
    wit::NewTransaction {
        username: t.username.clone(),
        amount: t.amount,
        transaction_type: tx_type_out(t.transaction_type),
        resource_type: t.resource_type.clone(),
        description: t.description.clone(),
        balance_before: t.balance_before,
        balance_after: t.balance_after,
        created_at: t.created_at.seconds(),
        created_by: t.created_by.clone(),
    }
}

pub fn tx_in(t: wit::Transaction) -> Transaction {
    let e = t.entry;
    Transaction {
        id: t.id,
        username: e.username,
        amount: e.amount,
        transaction_type: tx_type_in(e.transaction_type),
        resource_type: e.resource_type,
        description: e.description,
        balance_before: e.balance_before,
        balance_after: e.balance_after,
        created_at: Timestamp(e.created_at),
        created_by: e.created_by,
    }
}

pub fn tx_out(t: &Transaction) -> wit::Transaction {
    let (id, entry) = t.clone().into_parts();
    wit::Transaction {
        id,
        entry: new_tx_out(&entry),
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

fn status_in(s: wit::SessionStatus) -> SessionStatus {
    match s {
        wit::SessionStatus::Active => SessionStatus::Active,
        wit::SessionStatus::Completed => SessionStatus::Completed,
        wit::SessionStatus::Failed => SessionStatus::Failed,
        wit::SessionStatus::CleanedUp => SessionStatus::CleanedUp,
    }
}

pub fn new_session_out(s: &NewSession) -> wit::NewSession {
    wit::NewSession {
        username: s.username.clone(),
        server_name: s.server_name.clone(),
        resource_type: s.resource_type.clone(),
        rate: s.rate.raw(),
        runtime_minutes: s.runtime_minutes,
        estimated_cost: s.estimated_cost.raw(),
        start_time: s.start_time.seconds(),
        billable: s.billable,
    }
}

pub fn session_in(s: wit::Session) -> Session {
    let st = s.start;
    Session {
        id: s.id,
        username: st.username,
        server_name: st.server_name,
        resource_type: st.resource_type,
        rate: Milli(st.rate),
        runtime_minutes: st.runtime_minutes,
        estimated_cost: Milli(st.estimated_cost),
        start_time: Timestamp(st.start_time),
        billable: st.billable,
        status: status_in(s.status),
        end_time: s.end_time.map(Timestamp),
        duration_minutes: s.duration_minutes,
        cost: s.cost,
    }
}

pub fn session_out(s: &Session) -> wit::Session {
    wit::Session {
        id: s.id,
        start: new_session_out(&s.start_record()),
        status: status_out(s.status),
        end_time: s.end_time.map(Timestamp::seconds),
        duration_minutes: s.duration_minutes,
        cost: s.cost,
    }
}
