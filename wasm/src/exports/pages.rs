//! The exports for the pages, which touch no storage: the spawn form's estimate, the admin page's
//! quota input and its refresh preview, computed by the same core code the server runs.

use quota_core::api::refresh_request_from_json;
use quota_core::gate;
use quota_core::memstore::MemStore;
use quota_core::quota_input::{parse_quota_input, QuotaInput};
use quota_core::refresh;
use quota_core::store::UserRecord;
use quota_core::{Config, QuotaError, StoreError, Timestamp};

use crate::bindings::api as wit;
use quota_core::engine_call::EngineCall;
use quota_core::store::{GroupStore, UserStore};

pub fn estimate(
    cfg: &Config,
    accelerator: Option<String>,
    minutes: i64,
) -> Result<wit::Estimate, QuotaError> {
    let resource = accelerator
        .as_deref()
        .unwrap_or(quota_core::accelerators::CPU_RESOURCE);
    let e = gate::estimate(cfg, resource, minutes)?;
    Ok(wit::Estimate {
        rate: e.rate.raw(),
        estimated_cost: e.estimated_cost.raw(),
    })
}

pub fn quota_input(field: &str, text: &str) -> Result<wit::QuotaInput, wit::Problem> {
    match parse_quota_input(field, text) {
        Ok(QuotaInput::Unlimited) => Ok(wit::QuotaInput::Unlimited),
        Ok(QuotaInput::Set(n)) => Ok(wit::QuotaInput::Set(n)),
        Err(QuotaError::Invalid { field, message }) => Err(wit::Problem { field, message }),
        Err(e) => Err(wit::Problem {
            field: field.to_string(),
            message: e.to_string(),
        }),
    }
}

/// A dry-run refresh over an in-memory store holding only `users` (and their `groups`).
pub fn refresh_preview(
    body_json: &str,
    users: Vec<UserRecord>,
    groups: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Result<String, QuotaError> {
    let mut req = refresh_request_from_json(body_json)?;
    req.dry_run = true;
    req.run_id = None;
    let mut store = MemStore::new();
    for u in &users {
        store.put_user(u)?;
    }
    for (u, g) in groups {
        store.put_membership(&u, &g, Timestamp(0))?;
    }
    // A dry run reads only; the time stamps nothing. The preview knows the users it is given, not
    // the configured budgets (a run over budgets is previewed by the hub's own dry run).
    let r = refresh::refresh(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut store),
        &req,
        Timestamp(0),
    )?;
    serde_json::to_string(&r).map_err(|e| QuotaError::Store(StoreError(e.to_string())))
}
