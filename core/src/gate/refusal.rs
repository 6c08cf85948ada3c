//! The gate's refusals: a personal account that cannot afford a start (the decision and its
//! words are `account::decide`'s; here, the first top-up after which it could), and a restricted
//! accelerator.

use super::start::Refusal;
use crate::account::{afford, Payer, Paying, Price};
use crate::config::Config;
use crate::error::QuotaError;
use crate::forecast::next_start_refresh;
use crate::groups::{self, GroupNames};
use crate::store::{Store, UserRecord};
use crate::time::Timestamp;

/// The personal account's refusal, if `u` (as of now, its running servers holding `held`
/// thousandths) cannot pay for `price`. `groups`: the user's groups when the caller has them all
/// (read for the gate, or reported by the host); otherwise they are read here, for the forecast
/// (refresh targets may name groups the gate did not need).
pub(crate) fn personal_refusal(
    config: &Config,
    store: &mut dyn Store,
    u: &UserRecord,
    groups: Option<&GroupNames>,
    price: Price,
    held: i64,
    now: Timestamp,
) -> Result<Option<Refusal>, QuotaError> {
    let paying = Paying {
        balance: u.balance,
        held,
    };
    let Err(short) = afford(Payer::Personal, paying, price, config.minimum_to_start) else {
        return Ok(None);
    };
    let member_of = match groups {
        Some(g) => g.to_set(),
        None => groups::of(store, &u.username)?,
    };
    let next_refresh = i64::try_from(short.needed)
        .ok()
        .and_then(|n| next_start_refresh(config, u, &member_of, held, n, now));
    Ok(Some(Refusal {
        message: short.message,
        balance: short.balance,
        held: short.held,
        estimated_cost: short.estimated_cost,
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
