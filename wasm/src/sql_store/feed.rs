//! Events, warnings and webhooks' delivery state over the bridge (schema 7): the `Store` calls of
//! credit model 2's events, called by `store.rs`'s trait implementation.

use quota_core::store::WebhookRow;
use quota_core::store::{
    AccountKey, EventFilter, EventKind, EventPage, Grant, NewEvent, Session, StoredEvent,
};
use quota_core::{StoreError, Timestamp};

use crate::bindings::sql as host;
use crate::dialect;
use crate::sql_json::{Cell, Columns, Params};

use super::bridge::{err, query, SqlStore};
use super::rows::{all, first, limit, session};

/// A `",a,b,"` list as the JSON list the statements take.
fn json_list(list: &str) -> String {
    let names: Vec<&str> = list.split(',').filter(|s| !s.is_empty()).collect();
    serde_json::to_string(&names).unwrap_or_else(|_| "[]".into())
}

fn event(row: &mut [Cell]) -> Result<StoredEvent, StoreError> {
    let mut c = Columns::new(row, "events", dialect::event_column_count)?;
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
    let mut c = Columns::new(row, "webhooks", dialect::webhook_column_count)?;
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

fn one_int(rows: Vec<Vec<Cell>>, what: &str) -> Result<i64, StoreError> {
    rows.first()
        .and_then(|r| r.first())
        .and_then(Cell::as_int)
        .ok_or_else(|| StoreError(format!("{what} returned no integer")))
}

/// Runs one statement with one row of parameters, answering the rows it changed.
fn execute(sql: &str, p: Params) -> Result<u64, StoreError> {
    host::execute_many(sql, &format!("[{}]", p.finish())).map_err(err)
}

impl SqlStore {
    pub(super) fn feed_insert_events(&self, events: &[NewEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let f = self.d.feed;
        if let Some(lock) = f.lock_events {
            query(lock, Params::new())?;
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
        host::execute_many(f.insert_event, &rows.finish()).map_err(err)?;
        Ok(())
    }

    pub(super) fn feed_scan(&self, page: &EventPage<'_>) -> Result<Vec<StoredEvent>, StoreError> {
        let f = self.d.feed;
        let rows = match page.filter {
            EventFilter::Admin {
                kind,
                username,
                budget,
            } => query(
                f.events_admin,
                Params::new()
                    .int(page.after)?
                    .opt_text(kind.map(EventKind::as_str))
                    .opt_text(username)
                    .opt_text(budget)
                    .int(limit(page.limit))?,
            )?,
            EventFilter::Mine { username, budgets } => query(
                f.events_mine,
                Params::new()
                    .int(page.after)?
                    .text(username)
                    .text(&json_list(budgets))
                    .int(limit(page.limit))?,
            )?,
            EventFilter::Kinds(kinds) => query(
                f.events_kinds,
                Params::new()
                    .int(page.after)?
                    .text(&json_list(kinds))
                    .int(limit(page.limit))?,
            )?,
        };
        all(rows, event)
    }

    pub(super) fn feed_count(&self, after: i64, kinds: &str) -> Result<u64, StoreError> {
        let p = Params::new().int(after)?.text(&json_list(kinds));
        Ok(one_int(query(self.d.feed.count_events, p)?, "count_events")?.max(0) as u64)
    }

    pub(super) fn feed_last_id(&self) -> Result<i64, StoreError> {
        one_int(query(self.d.feed.last_event_id, Params::new())?, "last_event_id")
    }

    pub(super) fn feed_purge(&self, before: Timestamp, n: usize) -> Result<u64, StoreError> {
        let f = self.d.feed;
        let purged = execute(
            f.purge_events,
            Params::new().int(before.seconds())?.int(limit(n))?,
        )?;
        execute(f.purge_webhook_failures, Params::new().int(before.seconds())?)?;
        Ok(purged)
    }

    pub(super) fn feed_sessions_to_warn(
        &self,
        now: Timestamp,
        n: usize,
    ) -> Result<Vec<(Session, Option<i64>)>, StoreError> {
        let rows = query(
            self.d.feed.sessions_to_warn,
            Params::new().int(now.seconds())?.int(limit(n))?,
        )?;
        all(rows, |r: &mut [Cell]| {
            let n = r.len().saturating_sub(1);
            let (cols, last) = r.split_at_mut(n);
            let mark = last.first().and_then(Cell::as_int);
            Ok((session(cols)?, mark))
        })
    }

    pub(super) fn feed_set_session_warning(
        &self,
        id: i64,
        mark: Option<i64>,
        at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        let p = Params::new()
            .int(id)?
            .opt_int(mark)?
            .opt_int(at.map(Timestamp::seconds))?;
        execute(self.d.feed.set_session_warning, p).map(drop)
    }

    pub(super) fn feed_extend_session(&self, s: &Session, mark: Option<i64>) -> Result<(), StoreError> {
        let p = Params::new()
            .int(s.id)?
            .int(s.runtime_minutes)?
            .int(s.estimated_cost.raw())?
            .opt_int(s.warn_at.map(Timestamp::seconds))?
            .opt_int(mark)?;
        if execute(self.d.feed.extend_session, p)? != 1 {
            return Err(StoreError(format!("session {} does not exist", s.id)));
        }
        Ok(())
    }

    pub(super) fn feed_session_mark(&self, id: i64) -> Result<Option<i64>, StoreError> {
        let rows = query(self.d.feed.session_warned_mark, Params::new().int(id)?)?;
        Ok(rows.first().and_then(|r| r.first()).and_then(Cell::as_int))
    }

    pub(super) fn feed_arm_grants(&self, lead_seconds: i64) -> Result<(), StoreError> {
        execute(self.d.feed.arm_grant_warnings, Params::new().int(lead_seconds)?).map(drop)
    }

    pub(super) fn feed_grants_to_warn(
        &self,
        now: Timestamp,
        n: usize,
    ) -> Result<Vec<(AccountKey, Grant, Option<i64>)>, StoreError> {
        let rows = query(
            self.d.feed.grants_to_warn,
            Params::new().int(now.seconds())?.int(limit(n))?,
        )?;
        all(rows, |r: &mut [Cell]| {
            let mut c = Columns::new(r, "grants", 8)?;
            let (username, budget) = (c.text(0)?, c.text(1)?);
            let account = if budget.is_empty() {
                AccountKey::User(username)
            } else {
                AccountKey::Budget(budget)
            };
            let g = Grant {
                grant_id: c.int(2)?,
                amount: c.int(3)?,
                remaining: c.int(4)?,
                granted_at: Timestamp(c.int(5)?),
                expires_at: Timestamp(c.int(6)?),
            };
            Ok((account, g, c.opt_int(7)?))
        })
    }

    pub(super) fn feed_set_grant_warning(
        &self,
        id: i64,
        mark: Option<i64>,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        let p = Params::new().int(id)?.opt_int(mark)?.int(at.seconds())?;
        execute(self.d.feed.set_grant_warning, p).map(drop)
    }

    pub(super) fn feed_webhook(&self, name: &str, lock: bool) -> Result<Option<WebhookRow>, StoreError> {
        let sql = if lock {
            self.d.feed.lock_webhook
        } else {
            self.d.feed.get_webhook
        };
        first(query(sql, Params::new().text(name))?, webhook)
    }

    pub(super) fn feed_put_webhook(&self, w: &WebhookRow) -> Result<(), StoreError> {
        let p = Params::new()
            .text(&w.name)
            .int(w.cursor)?
            .opt_text(w.holder.as_deref())
            .opt_int(w.held_until.map(Timestamp::seconds))?
            .int(w.attempts)?
            .opt_int(w.retry_at.map(Timestamp::seconds))?
            .opt_text(w.last_error.as_deref())
            .opt_int(w.last_delivered_id)?;
        execute(self.d.feed.put_webhook, p).map(drop)
    }

    pub(super) fn feed_add_failure(
        &self,
        name: &str,
        id: i64,
        error: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        let p = Params::new().text(name).int(id)?.text(error).int(at.seconds())?;
        execute(self.d.feed.add_webhook_failure, p).map(drop)
    }

    pub(super) fn feed_count_failures(&self, name: &str) -> Result<u64, StoreError> {
        let rows = query(self.d.feed.count_webhook_failures, Params::new().text(name))?;
        Ok(one_int(rows, "count_webhook_failures")?.max(0) as u64)
    }

    pub(super) fn feed_drop_failures(&self, name: &str, from_id: i64) -> Result<(), StoreError> {
        let p = Params::new().text(name).int(from_id)?;
        execute(self.d.feed.drop_webhook_failures, p).map(drop)
    }
}
