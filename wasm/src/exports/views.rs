//! The typed read exports' views: a user's detail, the rates, a user's own view and the
//! accelerators, from `quota-core`'s reads into the component's records.

use quota_core::Timestamp;

use super::configured::{config, error_out, rates_list, with_config};
use crate::bindings::api as wit;
use crate::convert as cv;
use crate::sql_store::SqlStore;

pub(super) fn user_detail(username: &str, now: i64) -> Result<wit::UserView, wit::QuotaError> {
    let d =
        quota_core::reads::user_detail(&mut SqlStore::host(), username, Timestamp(now)).map_err(error_out)?;
    Ok(wit::UserView {
        username: d.username,
        balance: d.balance,
        unlimited: d.unlimited,
        recent_transactions: d.recent_transactions.iter().map(cv::tx_out).collect(),
        groups: d.groups.into_iter().collect(),
        grants: d.grants.iter().map(cv::grant_out).collect(),
    })
}

pub(super) fn rates() -> wit::Rates {
    match config() {
        Some(cfg) => wit::Rates {
            enabled: cfg.enabled,
            rates: rates_list(&cfg),
            minimum_to_start: cfg.minimum_to_start.raw(),
        },
        None => wit::Rates {
            enabled: false,
            rates: Vec::new(),
            minimum_to_start: 0,
        },
    }
}

pub(super) fn me(username: &str, now: i64) -> Result<wit::MeView, wit::QuotaError> {
    with_config(|cfg| {
        let m = quota_core::reads::me(cfg, &mut SqlStore::host(), username, Timestamp(now), false)?;
        Ok(wit::MeView {
            username: m.username,
            balance: m.balance,
            held: m.held.raw(),
            available: m.available.map(|a| a.raw()),
            unlimited: m.unlimited,
            enabled: m.enabled,
            rates: rates_list(cfg),
            grants: m.grants.iter().map(cv::grant_out).collect(),
        })
    })
}

pub(super) fn accelerators() -> Vec<wit::Accelerator> {
    config().map_or_else(Vec::new, |cfg| {
        cfg.accelerators
            .iter()
            .map(|(key, a)| wit::Accelerator {
                key: key.clone(),
                display_name: a.display_name.clone(),
                description: a.description.clone(),
                node_selector: a
                    .node_selector
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                quota_rate: a.quota_rate.raw(),
            })
            .collect()
    })
}
