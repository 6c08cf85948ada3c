//! A start: what the gate is asked and what it answers.

use serde::Serialize;

use crate::forecast::NextRefresh;
use crate::groups::ReportedGroups;
use crate::milli::Milli;
use crate::store::SessionStatus;
use crate::time::Timestamp;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartRequest {
    pub username: String,
    /// An accelerator key, or `None` for CPU only.
    pub resource: Option<String>,
    pub runtime_minutes: i64,
    /// JupyterHub's server name; `""` is the default server.
    pub server_name: String,
    /// When the server starts; `now` when absent.
    pub started_at: Option<Timestamp>,
    /// The user's groups as the host knows them now: stored when they changed, and used for this
    /// decision. `None`: the stored ones.
    pub groups: Option<ReportedGroups>,
    /// The budget to charge; `None`: the user's personal account.
    pub budget: Option<String>,
}

/// A started session, in its wire form.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Started {
    pub session_id: i64,
    pub username: String,
    pub server_name: String,
    pub resource_type: String,
    pub rate: Milli,
    pub runtime_minutes: i64,
    pub estimated_cost: Milli,
    /// The paying account's balance as of now (the budget's, for a start charging one).
    pub balance: i64,
    pub status: SessionStatus,
    /// The budget charged; null: the personal account.
    pub budget: Option<String>,
    /// When its runtime is up: the start plus the minutes (a host's auto-stop reads it here).
    pub ends_at: Timestamp,
}

/// A refused start: nothing was started. `message` is the byte-exact 403 text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub balance: i64,
    pub held: i64,
    pub estimated_cost: Milli,
    /// The first scheduled top-up after which this start would pass, if one within the forecast's
    /// reach does (`forecast::next_start_refresh`).
    pub next_refresh: Option<NextRefresh>,
}

/// The gate's decision. A refusal is a normal outcome, not an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartDecision {
    Allowed(Started),
    Refused(Refusal),
    /// The accelerator is restricted to groups the user is not in; nothing was recorded. The
    /// byte-exact 403 message.
    Forbidden(String),
}

/// The price of a spawn: the resource's rate and `rate x minutes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    pub rate: Milli,
    pub estimated_cost: Milli,
}
