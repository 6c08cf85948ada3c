//! Sessions and their warnings over SQL: their statements and `SessionStore`, with the spawn
//! gate's one read and a session end's one read (issue 36: each a single statement where they took
//! two or three, each a crossing of the host boundary).

use quota_core::store::{
    GateState, NewSession, Session, SessionPage, SessionStatus, SessionStore, UserRecord,
};
use quota_core::{StoreError, Timestamp};

use super::bridge::SqlStore;
use super::columns::{MEMBERSHIP_COLUMN_COUNT, SESSION_COLUMN_COUNT, USER_COLUMN_COUNT};
use super::rows::{all, first, limit, membership_text, session, user};
use super::sql::Sql;
use crate::sql_json::{Cell, Params};

const INSERT_SESSION: Sql = same!(
    "INSERT INTO sessions (username, server_name, resource_type, rate_milli,
         runtime_minutes, estimated_cost_milli, start_time, billable, status, cost, budget, warn_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'active', 0, $9, $10) RETURNING id"
);
const GET_SESSION: Sql = same!(concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE id = $1"
));
const UPDATE_SESSION: Sql = same!(
    "UPDATE sessions SET status = $2, end_time = $3, duration_minutes = $4, cost = $5
         WHERE id = $1"
);
// No ORDER BY (the store sorts the few rows): a statement whose plan depends on its bindings, as
// these ORDER BY plans do, is re-prepared after every use once rusqlite clears the bindings in its
// statement cache, and this is the spawn gate's read.
const ACTIVE_SESSIONS: Sql = same!(concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE username = $1 AND status = 'active'"
));
/// The spawn gate's one read of `$1`: user columns, membership columns, then session columns, a
/// row per active session (or one with the session columns null), each part null when absent. The
/// sessions as a subquery: its columns are `s.*`, in the order the session reader expects.
const GATE_STATE: Sql = same!(concat!(
    "SELECT u.username, u.balance, u.unlimited, u.updated_at, m.username, m.group_names, m.since, s.*
         FROM (SELECT $1::text AS k) q
         LEFT JOIN users u ON u.username = q.k
         LEFT JOIN memberships m ON m.username = q.k
         LEFT JOIN (SELECT ",
    session_columns!(),
    " FROM sessions WHERE status = 'active') s ON s.username = q.k"
));
/// Session `$1` (session columns), then its user's (null when the user has no row).
const SESSION_AND_USER: Sql = same!(concat!(
    "SELECT s.*, u.username, u.balance, u.unlimited, u.updated_at FROM (SELECT ",
    session_columns!(),
    " FROM sessions WHERE id = $1) s LEFT JOIN users u ON u.username = s.username"
));
const STALE_SESSIONS: Sql = same!(concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE status = 'active' AND start_time < $1 ORDER BY id"
));
const SCAN_SESSIONS: Sql = same!(concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE id > $1 AND ($2::text IS NULL OR username = $2)
         AND ($3::text IS NULL OR status = $3) ORDER BY id LIMIT $4"
));
/// A user's sessions with `id < $2`, newest first, at most `$3`.
const USER_SESSIONS: Sql = same!(concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE username = $1 AND id < $2 ORDER BY id DESC LIMIT $3"
));
/// The session columns and `warned_mark` of at most `$2` active sessions warned by `$1`.
const SESSIONS_TO_WARN: Sql = same!(concat!(
    "SELECT ",
    session_columns!(),
    ", warned_mark FROM sessions WHERE status = 'active' AND warn_at <= $1 ORDER BY warn_at, id LIMIT $2"
));
/// (id, warned mark, warn at).
const SET_SESSION_WARNING: Sql = same!("UPDATE sessions SET warned_mark = $2, warn_at = $3 WHERE id = $1");
/// (id, runtime minutes, estimated cost, warn at, warned mark).
const EXTEND_SESSION: Sql = same!(
    "UPDATE sessions SET runtime_minutes = $2, estimated_cost_milli = $3, warn_at = $4,
         warned_mark = $5 WHERE id = $1"
);
const SESSION_WARNED_MARK: Sql = same!("SELECT warned_mark FROM sessions WHERE id = $1");

impl SessionStore for SqlStore {
    fn insert_session(&mut self, s: &NewSession) -> Result<i64, StoreError> {
        let p = Params::new()
            .text(&s.username)
            .text(&s.server_name)
            .text(&s.resource_type)
            .int(s.rate.raw())?
            .int(s.runtime_minutes)?
            .int(s.estimated_cost.raw())?
            .int(s.start_time.seconds())?
            .flag(s.billable)
            .opt_text(s.budget.as_deref())
            .opt_int(s.warn_at.map(Timestamp::seconds))?;
        self.one_int(&INSERT_SESSION, p, "inserting a session")
    }

    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError> {
        first(self.query(&GET_SESSION, Params::new().int(id)?)?, session)
    }

    fn update_session(&mut self, s: &Session) -> Result<(), StoreError> {
        let p = Params::new()
            .int(s.id)?
            .text(s.status.as_str())
            .opt_int(s.end_time.map(Timestamp::seconds))?
            .opt_int(s.duration_minutes)?
            .int(s.cost)?;
        // One parameter row, through `execute-many`, which reports the rows changed.
        if self.execute(&UPDATE_SESSION, p)? != 1 {
            return Err(StoreError(format!("session {} does not exist", s.id)));
        }
        Ok(())
    }

    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError> {
        let mut list = all(
            self.query(&ACTIVE_SESSIONS, Params::new().text(username))?,
            session,
        )?;
        list.sort_unstable_by_key(|s| s.id);
        Ok(list)
    }

    fn gate_state(&mut self, username: &str, with_groups: bool) -> Result<GateState, StoreError> {
        let rows = self.query(&GATE_STATE, Params::new().text(username))?;
        let mut out = GateState::default();
        for (i, mut row) in rows.into_iter().enumerate() {
            let expected = USER_COLUMN_COUNT + MEMBERSHIP_COLUMN_COUNT + SESSION_COLUMN_COUNT;
            if row.len() != expected {
                return Err(StoreError(format!(
                    "gate state: a row has {} columns, expected {expected}",
                    row.len()
                )));
            }
            let (u, rest) = row.split_at_mut(USER_COLUMN_COUNT);
            let (g, s) = rest.split_at_mut(MEMBERSHIP_COLUMN_COUNT);
            if i == 0 {
                if !matches!(u[0], Cell::Null) {
                    out.user = Some(user(u)?);
                }
                if with_groups && !matches!(g[0], Cell::Null) {
                    out.groups = Some(membership_text(g)?);
                }
            }
            if !matches!(s[0], Cell::Null) {
                out.active.push(session(s)?);
            }
        }
        out.active.sort_unstable_by_key(|s| s.id);
        Ok(out)
    }

    fn session_and_user(&mut self, id: i64) -> Result<Option<(Session, Option<UserRecord>)>, StoreError> {
        let Some(mut row) = self
            .query(&SESSION_AND_USER, Params::new().int(id)?)?
            .into_iter()
            .next()
        else {
            return Ok(None);
        };
        let expected = SESSION_COLUMN_COUNT + USER_COLUMN_COUNT;
        if row.len() != expected {
            return Err(StoreError(format!(
                "a session and its user: a row has {} columns, expected {expected}",
                row.len()
            )));
        }
        let (s, u) = row.split_at_mut(SESSION_COLUMN_COUNT);
        let user = if matches!(u[0], Cell::Null) {
            None
        } else {
            Some(user(u)?)
        };
        Ok(Some((session(s)?, user)))
    }

    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError> {
        all(
            self.query(&STALE_SESSIONS, Params::new().int(cutoff.seconds())?)?,
            session,
        )
    }

    fn scan_sessions(&mut self, page: &SessionPage<'_>) -> Result<Vec<Session>, StoreError> {
        let p = Params::new()
            .int(page.after_id)?
            .opt_text(page.username)
            .opt_text(page.status.map(SessionStatus::as_str))
            .int(limit(page.limit))?;
        all(self.query(&SCAN_SESSIONS, p)?, session)
    }

    fn user_sessions(
        &mut self,
        username: &str,
        before: Option<i64>,
        n: usize,
    ) -> Result<Vec<Session>, StoreError> {
        let p = Params::new()
            .text(username)
            .int(before.unwrap_or(quota_core::limits::JSON_INT_ABS_MAX))?
            .int(limit(n))?;
        all(self.query(&USER_SESSIONS, p)?, session)
    }

    fn sessions_to_warn(
        &mut self,
        now: Timestamp,
        n: usize,
    ) -> Result<Vec<(Session, Option<i64>)>, StoreError> {
        let rows = self.query(
            &SESSIONS_TO_WARN,
            Params::new().int(now.seconds())?.int(limit(n))?,
        )?;
        all(rows, |r: &mut [Cell]| {
            let n = r.len().saturating_sub(1);
            let (cols, last) = r.split_at_mut(n);
            let mark = last.first().and_then(Cell::as_int);
            Ok((session(cols)?, mark))
        })
    }

    fn set_session_warning(
        &mut self,
        id: i64,
        mark: Option<i64>,
        at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        let p = Params::new()
            .int(id)?
            .opt_int(mark)?
            .opt_int(at.map(Timestamp::seconds))?;
        self.execute(&SET_SESSION_WARNING, p).map(drop)
    }

    fn extend_session(&mut self, s: &Session, mark: Option<i64>) -> Result<(), StoreError> {
        let p = Params::new()
            .int(s.id)?
            .int(s.runtime_minutes)?
            .int(s.estimated_cost.raw())?
            .opt_int(s.warn_at.map(Timestamp::seconds))?
            .opt_int(mark)?;
        if self.execute(&EXTEND_SESSION, p)? != 1 {
            return Err(StoreError(format!("session {} does not exist", s.id)));
        }
        Ok(())
    }

    fn session_warned_mark(&mut self, id: i64) -> Result<Option<i64>, StoreError> {
        let rows = self.query(&SESSION_WARNED_MARK, Params::new().int(id)?)?;
        Ok(rows.first().and_then(|r| r.first()).and_then(Cell::as_int))
    }
}
