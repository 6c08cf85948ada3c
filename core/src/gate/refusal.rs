//! The gate's refusal texts: a personal account that cannot afford a start (with the first
//! top-up after which it could), and a restricted accelerator.

use super::types::Refusal;
use crate::config::Config;
use crate::error::QuotaError;
use crate::forecast::next_start_refresh;
use crate::groups::{self, GroupNames};
use crate::milli::Milli;
use crate::store::{Store, UserRecord};
use crate::time::Timestamp;

/// What a start (or an extension) asks of the personal account: its price, and what running
/// servers hold.
pub(crate) struct Ask {
    pub rate: Milli,
    pub runtime_minutes: i64,
    pub estimated_cost: Milli,
    pub held: i64,
}

/// The personal account's refusal, if `u` (as of now) cannot afford the start.
pub(crate) fn personal_refusal(
    config: &Config,
    store: &mut dyn Store,
    reported: bool,
    u: &UserRecord,
    groups: &GroupNames,
    ask: &Ask,
    now: Timestamp,
) -> Result<Option<Refusal>, QuotaError> {
    let Ask {
        rate,
        runtime_minutes,
        estimated_cost,
        held,
    } = *ask;
    let available = i128::from(u.balance) * 1000 - i128::from(held);
    let needed = i128::from(estimated_cost.raw()).max(i128::from(config.minimum_to_start.raw()));
    if available >= needed {
        return Ok(None);
    }
    let held = Milli(held);
    let balance_text = if held.raw() > 0 {
        format!("{} ({held} reserved by running servers)", u.balance)
    } else {
        u.balance.to_string()
    };
    let message = format!(
        "Cannot start container: Insufficient quota. Current balance: {balance_text}, estimated cost: {estimated_cost} ({rate} quota/min x {runtime_minutes} min). Please contact administrator to add quota."
    );
    // Refresh targets may name groups the gate did not need to read.
    let member_of = match (reported, config.groups.matter_for_start()) {
        (false, false) => groups::of(store, &u.username)?,
        _ => groups.to_set(),
    };
    let next_refresh = i64::try_from(needed)
        .ok()
        .and_then(|n| next_start_refresh(config, u, &member_of, held.raw(), n, now));
    Ok(Some(Refusal {
        message,
        balance: u.balance,
        held: held.ceil(),
        estimated_cost,
        next_refresh,
    }))
}

/// The 403 text of a start of a restricted accelerator by a user in none of its groups.
pub fn forbidden_message(config: &Config, resource: &str) -> String {
    let display = config
        .accelerators
        .get(resource)
        .map_or(resource, |a| a.display_name.as_str());
    let groups: Vec<&str> = config
        .groups
        .restricted
        .get(resource)
        .map(|g| g.iter().map(String::as_str).collect())
        .unwrap_or_default();
    format!(
        "Cannot start container: accelerator `{resource}` ({display}) is only for members of the groups {}. Please contact administrator for access.",
        groups.join(", ")
    )
}
