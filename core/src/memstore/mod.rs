//! An in-memory `Store` for tests, benchmarks and hosts that need no persistence: the reference the
//! model test holds the SQL store to. One file per kind of row, as `store/` has them; putting
//! records back after a failed call is `undo.rs`.

mod budgets;
mod credit_requests;
mod events;
mod grants;
mod groups;
mod runs;
mod sessions;
mod undo;
mod usage;
mod users;

use std::collections::BTreeMap;

use crate::store::{
    AccountKey, BudgetRow, CreditRequest, Grant, RefreshRun, Session, StoredEvent, Transaction, Usage,
    UserRecord, WebhookRow,
};
use crate::time::Timestamp;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemStore {
    pub users: BTreeMap<String, UserRecord>,
    pub transactions: Vec<Transaction>,
    pub sessions: BTreeMap<i64, Session>,
    /// Active session ids by username, so the gate reads one user's sessions without a scan.
    active_by_user: BTreeMap<String, Vec<i64>>,
    pub refresh_runs: BTreeMap<String, RefreshRun>,
    pub memberships: BTreeMap<String, crate::store::Membership>,
    /// The running usage sums (see `usage`): by (day, resource type) and (user, day, resource type).
    pub usage_days: BTreeMap<(i64, String), Usage>,
    pub user_usage_days: BTreeMap<(String, i64, String), Usage>,
    /// Dated grants by id, each with its account.
    pub grants: BTreeMap<i64, (AccountKey, Grant)>,
    /// Budgets' rows by name, and their usage sums by (budget, user, day, resource type).
    pub budgets: BTreeMap<String, BudgetRow>,
    pub budget_usage_days: BTreeMap<(String, String, i64, String), Usage>,
    /// Events by id; what each session and grant was told (the smallest mark; a grant's next
    /// warning time); webhooks' delivery state and their failed deliveries by (webhook, event id).
    pub events: Vec<StoredEvent>,
    pub session_warned: BTreeMap<i64, i64>,
    pub grant_warn: BTreeMap<i64, (Option<i64>, Option<Timestamp>)>,
    pub webhooks: BTreeMap<String, WebhookRow>,
    pub webhook_failures: BTreeMap<(String, i64), (String, Timestamp)>,
    /// Credit requests by id.
    pub requests: BTreeMap<i64, CreditRequest>,
    next_session_id: i64,
    next_request_id: i64,
    next_grant_id: i64,
    next_event_id: i64,
}

impl MemStore {
    pub fn new() -> MemStore {
        MemStore::default()
    }

    /// Whether the two stores hold the same, events aside (a refused start writes only its event).
    pub fn same_but_events(&self, other: &MemStore) -> bool {
        let mut a = self.clone();
        a.events.clone_from(&other.events);
        a.next_event_id = other.next_event_id;
        a == *other
    }
}

/// The entries of a map keyed by name with `name > after` (all when `None`), in order.
fn after<'a, V>(
    map: &'a BTreeMap<String, V>,
    after: Option<&str>,
) -> impl Iterator<Item = (&'a String, &'a V)> + 'a {
    use std::ops::Bound::{Excluded, Unbounded};
    map.range::<str, _>((after.map_or(Unbounded, Excluded), Unbounded))
}
