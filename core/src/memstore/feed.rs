//! Events, session and grant warnings, and webhooks' delivery state in memory: the `Store` calls
//! of credit model 2's events, called by `mod.rs`'s trait implementation.

use super::MemStore;
use crate::store::{AccountKey, EventFilter, EventPage, Grant, NewEvent, Session, SessionStatus};
use crate::store::{StoredEvent, WebhookRow};
use crate::time::Timestamp;

/// Whether `name` is one of a `",a,b,"` list.
fn listed(list: &str, name: &str) -> bool {
    list.contains(&format!(",{name},"))
}

impl MemStore {
    /// Whether the two stores hold the same, events aside (a refused start writes only its event).
    pub fn same_but_events(&self, other: &MemStore) -> bool {
        let mut a = self.clone();
        a.events.clone_from(&other.events);
        a.next_event_id = other.next_event_id;
        a == *other
    }

    pub(super) fn events_insert(&mut self, events: &[NewEvent]) {
        for e in events {
            let id = self.events.last().map_or(0, |l| l.id) + 1;
            let id = id.max(self.next_event_id + 1);
            self.next_event_id = id;
            self.events.push(StoredEvent { id, event: e.clone() });
        }
    }

    pub(super) fn events_page(&self, page: &EventPage<'_>) -> Vec<StoredEvent> {
        let start = self.events.partition_point(|e| e.id <= page.after);
        self.events[start..]
            .iter()
            .filter(|s| matches(&page.filter, &s.event))
            .take(page.limit)
            .cloned()
            .collect()
    }

    pub(super) fn events_count(&self, after: i64, kinds: &str) -> u64 {
        let filter = EventFilter::Kinds(kinds);
        self.events
            .iter()
            .filter(|e| e.id > after && matches(&filter, &e.event))
            .count() as u64
    }

    pub(super) fn events_purge(&mut self, before: Timestamp, limit: usize) -> u64 {
        // The newest stays (as the SQL stores keep it: ids never go back).
        let n = self
            .events
            .iter()
            .take(limit.min(self.events.len().saturating_sub(1)))
            .take_while(|e| e.event.at < before)
            .count();
        self.webhook_failures.retain(|_, (_, at)| *at >= before);
        self.events.drain(..n);
        n as u64
    }

    pub(super) fn sessions_due_warning(&self, now: Timestamp, limit: usize) -> Vec<(Session, Option<i64>)> {
        let mut due: Vec<&Session> = self
            .sessions
            .values()
            .filter(|s| s.status == SessionStatus::Active && s.warn_at.is_some_and(|w| w <= now))
            .collect();
        due.sort_by_key(|s| (s.warn_at, s.id));
        due.into_iter()
            .take(limit)
            .map(|s| (s.clone(), self.session_warned.get(&s.id).copied()))
            .collect()
    }

    pub(super) fn grants_due_warning(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Vec<(AccountKey, Grant, Option<i64>)> {
        let mut due: Vec<(Timestamp, &AccountKey, &Grant)> = self
            .grants
            .values()
            .filter(|(_, g)| g.remaining > 0 && g.expires_at > now)
            .filter_map(|(a, g)| match self.grant_warn.get(&g.grant_id) {
                Some((_, Some(at))) if *at <= now => Some((*at, a, g)),
                _ => None,
            })
            .collect();
        due.sort_by_key(|(at, _, g)| (*at, g.grant_id));
        due.into_iter()
            .take(limit)
            .map(|(_, a, g)| {
                let mark = self.grant_warn.get(&g.grant_id).and_then(|w| w.0);
                (a.clone(), g.clone(), mark)
            })
            .collect()
    }

    pub(super) fn grants_arm(&mut self, lead_seconds: i64) {
        for (_, g) in self.grants.values() {
            if g.remaining > 0 {
                self.grant_warn
                    .entry(g.grant_id)
                    .or_insert((None, Some(g.expires_at.plus_seconds(-lead_seconds))));
            }
        }
    }

    pub(super) fn webhook_put(&mut self, row: &WebhookRow) {
        self.webhooks.insert(row.name.clone(), row.clone());
    }
}

fn matches(filter: &EventFilter<'_>, e: &NewEvent) -> bool {
    match *filter {
        EventFilter::Admin {
            kind,
            username,
            budget,
        } => {
            kind.is_none_or(|k| e.kind == k)
                && username.is_none_or(|u| e.username.as_deref() == Some(u))
                && budget.is_none_or(|b| e.budget.as_deref() == Some(b))
        }
        EventFilter::Mine { username, budgets } => {
            e.username.as_deref() == Some(username)
                || (e.username.is_none() && e.budget.as_deref().is_some_and(|b| listed(budgets, b)))
        }
        EventFilter::Kinds(kinds) => listed(kinds, e.kind.as_str()),
    }
}
