//! Admin changes to accounts: one change (`action.rs`: `set`, `add`, `deduct`, `set_unlimited`,
//! checked and applied) and batches of them (`batch.rs`).

mod action;
mod batch;

pub use action::{
    addition, addition_to_user, admin_update, apply_checked, AdminAction, AdminRequest, AdminResult,
};
pub use batch::{batch, BatchDetail, BatchEntry, BatchItem, BatchResult, RejectedEntry};
