//! Events and webhooks' delivery state over SQL (schema 7): their statements and `EventStore`.

use quota_core::store::{EventFilter, EventKind, EventPage, EventStore, NewEvent, StoredEvent, WebhookRow};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::columns::{EVENT_COLUMN_COUNT, WEBHOOK_COLUMN_COUNT};
use super::rows::{all, first, limit};
use super::sql::{Dialect, Sql};
use crate::sql_json::{Cell, Columns, Params};

/// Run before a call's first event is written, on a database several writers share: makes ids
/// follow commit order (a webhook's cursor never passes an id still to be committed). Held to the
/// end of the transaction: a writer takes its event ids only after every earlier event writer
/// committed. SQLite has one writer at a time already.
const LOCK_EVENTS: &str = "SELECT COUNT(*) FROM (SELECT pg_advisory_xact_lock(7302006001)) AS held";
/// (kind, at, username, budget, data).
const INSERT_EVENT: Sql =
    same!("INSERT INTO events (kind, at, username, budget, data) VALUES ($1, $2, $3, $4, $5)");
/// Events after id `$1`, of kind `$2`, user `$3`, budget `$4` (each when not null), at most `$5`.
const EVENTS_ADMIN: Sql = same!(concat!(
    "SELECT ",
    event_columns!(),
    " FROM events WHERE id > $1 AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR username = $3)
         AND ($4::text IS NULL OR budget = $4) ORDER BY id LIMIT $5"
));
/// Events after id `$1` of user `$2`, or a budget's own in the JSON list `$3`, at most `$4`.
const EVENTS_MINE: Sql = each!(
    sqlite: concat!(
        "SELECT ",
        event_columns!(),
        " FROM events WHERE id > ?1 AND username = ?2
         UNION ALL SELECT ",
        event_columns!(),
        " FROM events WHERE id > ?1 AND username IS NULL AND budget IN (SELECT value FROM json_each(?3))
         ORDER BY id LIMIT ?4"
    ),
    postgres: concat!(
        "SELECT ",
        event_columns!(),
        " FROM events WHERE id > $1 AND username = $2
         UNION ALL SELECT ",
        event_columns!(),
        " FROM events WHERE id > $1 AND username IS NULL AND budget = ANY (ARRAY(SELECT jsonb_array_elements_text($3::text::jsonb)))
         ORDER BY id LIMIT $4"
    ),
);
/// Events after id `$1` of the kinds in the JSON list `$2`, at most `$3`.
const EVENTS_KINDS: Sql = each!(
    sqlite: concat!(
        "SELECT ",
        event_columns!(),
        " FROM events WHERE id > ?1 AND kind IN (SELECT value FROM json_each(?2)) ORDER BY id LIMIT ?3"
    ),
    postgres: concat!(
        "SELECT ",
        event_columns!(),
        " FROM events WHERE id > $1 AND kind = ANY (ARRAY(SELECT jsonb_array_elements_text($2::text::jsonb))) ORDER BY id LIMIT $3"
    ),
);
/// One integer: how many events after id `$1` have a kind in the JSON list `$2`.
const COUNT_EVENTS: Sql = each!(
    sqlite: "SELECT COUNT(*) FROM events WHERE id > ?1 AND kind IN (SELECT value FROM json_each(?2))",
    postgres: "SELECT COUNT(*) FROM events WHERE id > $1 AND kind = ANY (ARRAY(SELECT jsonb_array_elements_text($2::text::jsonb)))",
);
const LAST_EVENT_ID: Sql = same!("SELECT COALESCE(MAX(id), 0) FROM events");
/// Deletes the events written before `$1` among the `$2` oldest (by id): among the oldest ids
/// only (ids follow time: an index on `at` would cost every insert), and never the newest: on
/// SQLite, without AUTOINCREMENT (its sequence row costs every insert), the next id is the largest
/// one plus one, so the largest stays and ids never go back.
const PURGE_EVENTS: Sql = each!(
    sqlite: "DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT ?2) AND at < ?1
         AND id < (SELECT MAX(id) FROM events)",
    postgres: "DELETE FROM events WHERE id = ANY (ARRAY(SELECT id FROM events ORDER BY id LIMIT $2)) AND at < $1
         AND id < (SELECT MAX(id) FROM events)",
);
/// Failures recorded before `$1` go with their events.
const PURGE_WEBHOOK_FAILURES: Sql = same!("DELETE FROM webhook_failures WHERE failed_at < $1");
const GET_WEBHOOK: Sql = same!(concat!(
    "SELECT ",
    webhook_columns!(),
    " FROM webhooks WHERE name = $1"
));
const LOCK_WEBHOOK: Sql = each!(
    // The write transaction already holds the database's one write lock.
    sqlite: GET_WEBHOOK.sqlite,
    postgres: concat!("SELECT ", webhook_columns!(), " FROM webhooks WHERE name = $1 FOR UPDATE"),
);
/// (name, after id, holder, held until, attempts, retry at, last error, last delivered id).
const PUT_WEBHOOK: Sql = same!(concat!(
    "INSERT INTO webhooks (",
    webhook_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO UPDATE SET
         after_id = excluded.after_id, holder = excluded.holder, held_until = excluded.held_until,
         attempts = excluded.attempts, retry_at = excluded.retry_at, last_error = excluded.last_error,
         last_delivered_id = excluded.last_delivered_id"
));
/// (webhook, event id, error, failed at).
const ADD_WEBHOOK_FAILURE: Sql = same!(
    "INSERT INTO webhook_failures (webhook, event_id, error, failed_at)
         VALUES ($1, $2, $3, $4) ON CONFLICT (webhook, event_id) DO UPDATE SET
         error = excluded.error, failed_at = excluded.failed_at"
);
const COUNT_WEBHOOK_FAILURES: Sql = same!("SELECT COUNT(*) FROM webhook_failures WHERE webhook = $1");
/// Webhook `$1`'s failures of events from `$2` on.
const DROP_WEBHOOK_FAILURES: Sql =
    same!("DELETE FROM webhook_failures WHERE webhook = $1 AND event_id >= $2");

/// A `",a,b,"` list as the JSON list the statements take.
fn json_list(list: &str) -> String {
    let names: Vec<&str> = list.split(',').filter(|s| !s.is_empty()).collect();
    serde_json::to_string(&names).unwrap_or_else(|_| "[]".into())
}

fn event(row: &mut [Cell]) -> Result<StoredEvent, StoreError> {
    let mut c = Columns::new(row, "events", EVENT_COLUMN_COUNT)?;
    let kind = c.text(1)?;
    Ok(StoredEvent {
        id: c.int(0)?,
        event: NewEvent {
            kind: EventKind::parse(&kind)
                .ok_or_else(|| StoreError(format!("events: unknown kind `{kind}`")))?,
            at: Timestamp(c.int(2)?),
            username: c.opt_text(3)?,
            budget: c.opt_text(4)?,
            data: c.text(5)?,
        },
    })
}

fn webhook(row: &mut [Cell]) -> Result<WebhookRow, StoreError> {
    let mut c = Columns::new(row, "webhooks", WEBHOOK_COLUMN_COUNT)?;
    Ok(WebhookRow {
        name: c.text(0)?,
        cursor: c.int(1)?,
        holder: c.opt_text(2)?,
        held_until: c.opt_int(3)?.map(Timestamp),
        attempts: c.int(4)?,
        retry_at: c.opt_int(5)?.map(Timestamp),
        last_error: c.opt_text(6)?,
        last_delivered_id: c.opt_int(7)?,
    })
}

impl EventStore for SqlStore {
    fn insert_events(&mut self, events: &[NewEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        if self.d == Dialect::Postgres {
            super::bridge::query(LOCK_EVENTS, Params::new())?;
        }
        let mut rows = Params::new();
        for e in events {
            rows.begin_row();
            rows.push_text(e.kind.as_str());
            rows.push_int(e.at.seconds())?;
            match &e.username {
                Some(u) => rows.push_text(u),
                None => rows.push_null(),
            }
            match &e.budget {
                Some(b) => rows.push_text(b),
                None => rows.push_null(),
            }
            rows.push_text(&e.data);
            rows.end_row();
        }
        self.execute_many(&INSERT_EVENT, rows).map(drop)
    }

    fn scan_events(&mut self, page: &EventPage<'_>) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = match page.filter {
            EventFilter::Admin {
                kind,
                username,
                budget,
            } => self.query(
                &EVENTS_ADMIN,
                Params::new()
                    .int(page.after)?
                    .opt_text(kind.map(EventKind::as_str))
                    .opt_text(username)
                    .opt_text(budget)
                    .int(limit(page.limit))?,
            )?,
            EventFilter::Mine { username, budgets } => self.query(
                &EVENTS_MINE,
                Params::new()
                    .int(page.after)?
                    .text(username)
                    .text(&serde_json::to_string(budgets).unwrap_or_else(|_| "[]".into()))
                    .int(limit(page.limit))?,
            )?,
            EventFilter::Kinds(kinds) => self.query(
                &EVENTS_KINDS,
                Params::new()
                    .int(page.after)?
                    .text(&json_list(kinds))
                    .int(limit(page.limit))?,
            )?,
        };
        all(rows, event)
    }

    fn last_event_id(&mut self) -> Result<i64, StoreError> {
        self.one_int(&LAST_EVENT_ID, Params::new(), "last_event_id")
    }

    fn count_events(&mut self, after: i64, kinds: &str) -> Result<u64, StoreError> {
        let p = Params::new().int(after)?.text(&json_list(kinds));
        Ok(self.one_int(&COUNT_EVENTS, p, "count_events")?.max(0) as u64)
    }

    fn purge_events(&mut self, before: Timestamp, n: usize) -> Result<u64, StoreError> {
        let purged = self.execute(&PURGE_EVENTS, Params::new().int(before.seconds())?.int(limit(n))?)?;
        self.execute(&PURGE_WEBHOOK_FAILURES, Params::new().int(before.seconds())?)?;
        Ok(purged)
    }

    fn get_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError> {
        first(self.query(&GET_WEBHOOK, Params::new().text(name))?, webhook)
    }

    fn lock_webhook(&mut self, name: &str) -> Result<Option<WebhookRow>, StoreError> {
        first(self.query(&LOCK_WEBHOOK, Params::new().text(name))?, webhook)
    }

    fn put_webhook(&mut self, w: &WebhookRow) -> Result<(), StoreError> {
        let p = Params::new()
            .text(&w.name)
            .int(w.cursor)?
            .opt_text(w.holder.as_deref())
            .opt_int(w.held_until.map(Timestamp::seconds))?
            .int(w.attempts)?
            .opt_int(w.retry_at.map(Timestamp::seconds))?
            .opt_text(w.last_error.as_deref())
            .opt_int(w.last_delivered_id)?;
        self.execute(&PUT_WEBHOOK, p).map(drop)
    }

    fn add_webhook_failure(
        &mut self,
        name: &str,
        id: i64,
        error: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        let p = Params::new().text(name).int(id)?.text(error).int(at.seconds())?;
        self.execute(&ADD_WEBHOOK_FAILURE, p).map(drop)
    }

    fn count_webhook_failures(&mut self, name: &str) -> Result<u64, StoreError> {
        let n = self.one_int(
            &COUNT_WEBHOOK_FAILURES,
            Params::new().text(name),
            "count_webhook_failures",
        )?;
        Ok(n.max(0) as u64)
    }

    fn drop_webhook_failures(&mut self, name: &str, from_id: i64) -> Result<(), StoreError> {
        let p = Params::new().text(name).int(from_id)?;
        self.execute(&DROP_WEBHOOK_FAILURES, p).map(drop)
    }
}
