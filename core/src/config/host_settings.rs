//! What the hosts act on: the `custom.quota` keys only a host uses (the spawn form's default
//! runtime, live streams per user, what the gate does when its database fails), and the engine's
//! bounds and rhythms a host needs (the runtime range, the sweep's interval, page sizes, the
//! extension choices, the stop warnings). The component hands them over in its configuration
//! summary (`host-settings`); no host restates one of these numbers.

use serde::Serialize;

use crate::error::QuotaError;
use crate::events::settings::Notify;
use crate::json::Fields;
use crate::limits;

/// `custom.quota.onStorageError`'s values: a gate whose database fails refuses the spawn (the
/// default), or lets it start unbilled.
pub const ON_STORAGE_ERROR_CHOICES: [&str; 2] = ["refuse", "allow"];

/// The `custom.quota` keys only hosts act on, checked here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostValues {
    /// `defaultRuntimeMinutes`: the runtime of a spawn that gives none.
    pub default_runtime_minutes: i64,
    /// `liveStreamsPerUser`: live balance streams a hub keeps open per user (the next is a 429).
    pub live_streams_per_user: i64,
    /// `onStorageError`: `refuse` or `allow` (start unbilled).
    pub on_storage_error: String,
}

pub(super) fn read<'a>(q: &mut Fields<'a>, problems: &mut Vec<QuotaError>) -> HostValues {
    let default_runtime_minutes = q
        .opt_int(
            "defaultRuntimeMinutes",
            limits::RUNTIME_MINUTES_MIN,
            limits::RUNTIME_MINUTES_MAX,
        )
        .unwrap_or(limits::DEFAULT_RUNTIME_MINUTES);
    let live_streams_per_user = q
        .opt_int("liveStreamsPerUser", 1, limits::LIVE_STREAMS_PER_USER_MAX)
        .unwrap_or(limits::LIVE_STREAMS_PER_USER_DEFAULT);
    let on_storage_error = match q.opt_str("onStorageError") {
        None => ON_STORAGE_ERROR_CHOICES[0].to_string(),
        Some(p) if ON_STORAGE_ERROR_CHOICES.contains(&p) => p.to_string(),
        Some(p) => {
            problems.push(QuotaError::invalid(
                "custom.quota.onStorageError",
                format!("`{p}` is not one of refuse, allow"),
            ));
            ON_STORAGE_ERROR_CHOICES[0].to_string()
        }
    };
    HostValues {
        default_runtime_minutes,
        live_streams_per_user,
        on_storage_error,
    }
}

/// Everything a host acts on, in one record (the component's `host-settings`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostSettings {
    /// A start's runtime bounds, in minutes: the gate refuses outside them.
    pub runtime_minutes_min: i64,
    pub runtime_minutes_max: i64,
    /// The runtime of a spawn that gives none.
    pub default_runtime_minutes: i64,
    /// The extensions a user is offered, in minutes.
    pub extend_choices: Vec<i64>,
    /// Minutes before a server's end at which `session.ending` tells its user.
    pub warn_before_stop_minutes: Vec<i64>,
    /// Live balance streams one user may hold open (the next is refused).
    pub live_streams_per_user: i64,
    /// What the gate does when its database fails: `refuse` or `allow` (start unbilled).
    pub on_storage_error: String,
    /// How often a host runs the sweep, in seconds.
    pub sweep_interval_seconds: i64,
    /// The largest page a host asks of the users and memberships lists.
    pub users_page_max: i64,
}

impl HostSettings {
    /// The settings of a configuration: its `custom.quota` keys for hosts, its stop warnings, and
    /// the engine's bounds.
    pub fn of(hosts: &HostValues, notify: &Notify) -> HostSettings {
        HostSettings {
            runtime_minutes_min: limits::RUNTIME_MINUTES_MIN,
            runtime_minutes_max: limits::RUNTIME_MINUTES_MAX,
            default_runtime_minutes: hosts.default_runtime_minutes,
            extend_choices: limits::EXTEND_CHOICES.to_vec(),
            warn_before_stop_minutes: notify.warn_before_stop_minutes.clone(),
            live_streams_per_user: hosts.live_streams_per_user,
            on_storage_error: hosts.on_storage_error.clone(),
            sweep_interval_seconds: i64::from(limits::SWEEP_INTERVAL_SECONDS),
            users_page_max: limits::USERS_PAGE_MAX as i64,
        }
    }
}
