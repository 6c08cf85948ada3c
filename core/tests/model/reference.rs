//! The reference model: deliberately simple bookkeeping of balances, sessions and groups that the
//! engine's answers are checked against, and the model's own rules (rates, grants, billing).

use std::collections::{BTreeMap, BTreeSet};

use quota_core::store::SessionStatus;
use quota_core::{Config, QuotaError};

use crate::rng::Rng;
use crate::GROUP_NAMES;

pub fn config() -> Config {
    Config::from_values(&serde_json::json!({"custom": {"authMode": "github",
        "quota": {"cpuRate": 1, "minimumToStart": 10, "defaultQuota": 20, "notifyBelow": [50, 10, 0],
            "groups": {"g1": {"defaultQuota": 35, "accelerators": ["dgpu"],
                "staffAllowance": {"perChange": 50, "perMonth": 150}}, "g2": {"defaultQuota": 60}, "g3": {}}},
        "accelerators": {"phx": {"quotaRate": 2.5}, "dgpu": {"quotaRate": 4}}}}))
    .expect("model config loads")
}

/// Rates in thousandths, as the model knows them.
pub fn model_rate(resource: Option<&str>) -> Option<i64> {
    match resource {
        None | Some("cpu") => Some(1000),
        Some("phx") => Some(2500),
        Some("dgpu") => Some(4000),
        _ => None,
    }
}

#[derive(Clone, Debug)]
pub struct MSession {
    pub user: String,
    pub server: String,
    pub rate: i64,
    pub est: i64,
    pub runtime: i64,
    pub start: i64,
    pub billable: bool,
    pub status: SessionStatus,
    pub minutes: i64,
    pub cost: i64,
}

#[derive(Default, Clone, Debug)]
pub struct Model {
    pub balance: BTreeMap<String, i64>,
    pub unlimited: BTreeSet<String>,
    pub sessions: BTreeMap<i64, MSession>,
    pub next_id: i64,
    pub runs: BTreeMap<String, (String, (u64, i64, u64))>,
    /// Each user's groups (absent: none).
    pub groups: BTreeMap<String, BTreeSet<String>>,
    /// Starts the gate refused (403): each must have made one `start.refused` event.
    pub refused_starts: usize,
    /// What course staff (`staff.rs`) added, by (the month's first second, user).
    pub staff_added: BTreeMap<(i64, String), i64>,
}

/// A random set of the model's groups.
pub fn some_groups(rng: &mut Rng) -> BTreeSet<String> {
    GROUP_NAMES
        .iter()
        .filter(|_| rng.chance(40))
        .map(|g| g.to_string())
        .collect()
}

/// The model's rule for a new member's grant: the highest group grant, else the default (20).
pub fn model_grant(groups: &BTreeSet<String>) -> i64 {
    let mut grant = None;
    for (g, q) in [("g1", 35), ("g2", 60)] {
        if groups.contains(g) {
            grant = Some(grant.map_or(q, |x: i64| x.max(q)));
        }
    }
    grant.unwrap_or(20)
}

impl Model {
    pub fn charge(&mut self, id: i64, end: i64, minutes: i64, status: SessionStatus) {
        let s = self.sessions.get_mut(&id).expect("model session");
        s.status = status;
        s.minutes = minutes;
        let _ = end;
        if s.billable && status == SessionStatus::Completed && !self.unlimited.contains(&s.user) {
            let exact = s.rate * minutes;
            s.cost = exact.div_euclid(1000) + i64::from(exact.rem_euclid(1000) != 0);
            *self.balance.entry(s.user.clone()).or_default() -= s.cost;
        }
    }
    pub fn active(&self, user: &str) -> impl Iterator<Item = (&i64, &MSession)> {
        let user = user.to_string();
        self.sessions
            .iter()
            .filter(move |(_, s)| s.user == user && s.status == SessionStatus::Active)
    }
}

pub fn billed(elapsed: i64) -> i64 {
    elapsed.div_euclid(60).max(1)
}

pub fn is_input_refusal(e: &QuotaError) -> bool {
    !matches!(e, QuotaError::Store(_))
}
