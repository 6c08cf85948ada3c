//! Stored events (credit model 2, "Events") and webhooks' delivery state ("Webhooks").

use crate::error::StoreError;
use crate::time::Timestamp;

/// What an event tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    SessionEnding,
    SessionEnded,
    BalanceLow,
    GrantExpiring,
    StartRefused,
    RequestCreated,
    RequestDecided,
}

impl EventKind {
    pub const ALL: [EventKind; 7] = [
        EventKind::SessionEnding,
        EventKind::SessionEnded,
        EventKind::BalanceLow,
        EventKind::GrantExpiring,
        EventKind::StartRefused,
        EventKind::RequestCreated,
        EventKind::RequestDecided,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionEnding => "session.ending",
            EventKind::SessionEnded => "session.ended",
            EventKind::BalanceLow => "balance.low",
            EventKind::GrantExpiring => "grant.expiring",
            EventKind::StartRefused => "start.refused",
            EventKind::RequestCreated => "request.created",
            EventKind::RequestDecided => "request.decided",
        }
    }

    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// An event before the store gives it an id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEvent {
    pub kind: EventKind,
    pub at: Timestamp,
    /// The user it is about (null for a budget's own: its balance, its grants).
    pub username: Option<String>,
    /// The budget it is about, or the budget a session charged.
    pub budget: Option<String>,
    /// The kind's fields, as a JSON object's text.
    pub data: String,
}

/// An event as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    pub id: i64,
    pub event: NewEvent,
}

/// Which events a page holds (ids greater than `after`, by id, at most `limit`).
#[derive(Clone, Copy, Debug)]
pub struct EventPage<'a> {
    pub after: i64,
    pub limit: usize,
    pub filter: EventFilter<'a>,
}

/// The events a reader sees.
#[derive(Clone, Copy, Debug)]
pub enum EventFilter<'a> {
    /// The admin route's filters, each when given.
    Admin {
        kind: Option<EventKind>,
        username: Option<&'a str>,
        budget: Option<&'a str>,
    },
    /// A user's own events, and the own events (no user) of the budgets named in `budgets`,
    /// each matched exactly (a name may hold any character a budget's name may).
    Mine {
        username: &'a str,
        budgets: &'a [String],
    },
    /// The kinds listed in `kinds` (`",k1,k2,"`): what a webhook is sent.
    Kinds(&'a str),
}

/// A webhook's delivery state: where it is in the events, who holds it, the head event's retries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebhookRow {
    pub name: String,
    /// Every matching event with an id up to this one was delivered or failed.
    pub cursor: i64,
    /// The host delivering now, until `held_until`.
    pub holder: Option<String>,
    pub held_until: Option<Timestamp>,
    /// Failed attempts of the event after the cursor, and when to try it again.
    pub attempts: i64,
    pub retry_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub last_delivered_id: Option<i64>,
}

/// Events and webhooks' delivery state.
pub trait EventStore {
    /// Appends events (ids increase, in this order). On a database several writers share, the
    /// ids are handed out in commit order (credit model 2: a webhook's cursor never skips one).
    fn insert_events(&mut self, events: &[NewEvent]) -> Result<(), StoreError>;
    /// A page of events (see [`EventPage`]).
    fn scan_events(&mut self, page: &EventPage<'_>) -> Result<Vec<StoredEvent>, StoreError>;
    /// The newest event's id (0: none).
    fn last_event_id(&mut self) -> Result<i64, StoreError>;
    /// How many events of the kinds in `kinds` (`",k1,k2,"`) have an id greater than `after`.
    fn count_events(&mut self, after: i64, kinds: &str) -> Result<u64, StoreError>;
    /// Deletes the events written before `before` among the `limit` oldest, never the newest one,
    /// and the webhook failures recorded before `before`; returns how many events.
    fn purge_events(&mut self, before: Timestamp, limit: usize) -> Result<u64, StoreError>;

    /// A webhook's delivery state (`None`: never delivered to).
    fn get_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError>;
    /// The same, held against other writers until the call's transaction ends (two replicas
    /// stepping one webhook at once: the second sees what the first wrote).
    fn lock_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError> {
        self.get_webhook(name)
    }
    /// Inserts or replaces a webhook's delivery state.
    fn put_webhook(&mut self, row: &WebhookRow) -> Result<(), StoreError>;
    /// Records that delivering event `event_id` to webhook `name` failed for good.
    fn add_webhook_failure(
        &mut self,
        name: &str,
        event_id: i64,
        error: &str,
        at: Timestamp,
    ) -> Result<(), StoreError>;
    /// How many deliveries to webhook `name` failed for good (of events still kept).
    fn count_webhook_failures(&mut self, name: &str) -> Result<u64, StoreError>;
    /// Forgets the failures of webhook `name` from event `from_id` on (they are queued again).
    fn drop_webhook_failures(&mut self, name: &str, from_id: i64) -> Result<(), StoreError>;
}
