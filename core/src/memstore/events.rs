//! Events and webhooks' delivery state in memory.

use super::MemStore;
use crate::error::StoreError;
use crate::store::{EventFilter, EventPage, EventStore, NewEvent, StoredEvent, WebhookRow};
use crate::time::Timestamp;

impl EventStore for MemStore {
    fn insert_events(&mut self, events: &[NewEvent]) -> Result<(), StoreError> {
        for e in events {
            let id = self.events.last().map_or(0, |l| l.id) + 1;
            let id = id.max(self.next_event_id + 1);
            self.next_event_id = id;
            self.events.push(StoredEvent { id, event: e.clone() });
        }
        Ok(())
    }

    fn scan_events(&mut self, page: &EventPage<'_>) -> Result<Vec<StoredEvent>, StoreError> {
        let start = self.events.partition_point(|e| e.id <= page.after);
        Ok(self.events[start..]
            .iter()
            .filter(|s| matches(&page.filter, &s.event))
            .take(page.limit)
            .cloned()
            .collect())
    }

    fn last_event_id(&mut self) -> Result<i64, StoreError> {
        Ok(self.next_event_id)
    }

    fn count_events(&mut self, after: i64, kinds: &str) -> Result<u64, StoreError> {
        let filter = EventFilter::Kinds(kinds);
        Ok(self
            .events
            .iter()
            .filter(|e| e.id > after && matches(&filter, &e.event))
            .count() as u64)
    }

    fn purge_events(&mut self, before: Timestamp, limit: usize) -> Result<u64, StoreError> {
        // The newest stays (as the SQL stores keep it: ids never go back).
        let n = self
            .events
            .iter()
            .take(limit.min(self.events.len().saturating_sub(1)))
            .take_while(|e| e.event.at < before)
            .count();
        self.webhook_failures.retain(|_, (_, at)| *at >= before);
        self.events.drain(..n);
        Ok(n as u64)
    }

    fn get_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError> {
        Ok(self.webhooks.get(name).cloned())
    }

    fn put_webhook(&mut self, row: &WebhookRow) -> Result<(), StoreError> {
        self.webhooks.insert(row.name.clone(), row.clone());
        Ok(())
    }

    fn add_webhook_failure(
        &mut self,
        name: &str,
        event_id: i64,
        error: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        self.webhook_failures
            .insert((name.to_string(), event_id), (error.to_string(), at));
        Ok(())
    }

    fn count_webhook_failures(&mut self, name: &str) -> Result<u64, StoreError> {
        Ok(self.webhook_failures.keys().filter(|(n, _)| n == name).count() as u64)
    }

    fn drop_webhook_failures(&mut self, name: &str, from_id: i64) -> Result<(), StoreError> {
        self.webhook_failures
            .retain(|(n, id), _| n != name || *id < from_id);
        Ok(())
    }
}

/// Whether `name` is one of a `",a,b,"` list.
fn listed(list: &str, name: &str) -> bool {
    list.contains(&format!(",{name},"))
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
                || (e.username.is_none() && e.budget.as_ref().is_some_and(|b| budgets.contains(b)))
        }
        EventFilter::Kinds(kinds) => listed(kinds, e.kind.as_str()),
    }
}
