//! Usage sessions: what a start recorded, how a session ended, and the warnings told about it.

use serde::Serialize;

use super::groups::GroupStore;
use super::users::{UserRecord, UserStore};
use crate::error::StoreError;
use crate::milli::Milli;
use crate::time::Timestamp;

/// Where a usage session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Active,
    Completed,
    Failed,
    CleanedUp,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Active => "active",
            SessionStatus::Completed => "completed",
            SessionStatus::Failed => "failed",
            SessionStatus::CleanedUp => "cleaned_up",
        }
    }

    pub fn parse(s: &str) -> Option<SessionStatus> {
        Some(match s {
            "active" => SessionStatus::Active,
            "completed" => SessionStatus::Completed,
            "failed" => SessionStatus::Failed,
            "cleaned_up" => SessionStatus::CleanedUp,
            _ => return None,
        })
    }
}

/// A usage session before the store gives it an id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSession {
    pub username: String,
    pub server_name: String,
    pub resource_type: String,
    /// Rate snapshot at start: a later rate change never re-prices a running session.
    pub rate: Milli,
    pub runtime_minutes: i64,
    pub estimated_cost: Milli,
    pub start_time: Timestamp,
    /// False when quota was disabled or the user unlimited at start: never charged.
    pub billable: bool,
    /// The budget it charges; `None`: the user's personal account.
    pub budget: Option<String>,
    /// When the next `session.ending` mark passes (`None`: none left to tell).
    pub warn_at: Option<Timestamp>,
}

/// A usage session as stored: what was recorded at start (`start`, read through as if its fields
/// were the session's own), its id and how it ended. The one session type: the routes' two wire
/// shapes are views of it (`sessions::views`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub id: i64,
    pub start: NewSession,
    pub status: SessionStatus,
    pub end_time: Option<Timestamp>,
    pub duration_minutes: Option<i64>,
    /// Credits charged at the end (positive; 0 when not charged).
    pub cost: i64,
}

impl std::ops::Deref for Session {
    type Target = NewSession;

    fn deref(&self) -> &NewSession {
        &self.start
    }
}

impl NewSession {
    pub fn with_id(self, id: i64) -> Session {
        Session {
            id,
            start: self,
            status: SessionStatus::Active,
            end_time: None,
            duration_minutes: None,
            cost: 0,
        }
    }
}

/// What the spawn gate reads of a user in one store call (`SessionStore::gate_state`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GateState {
    pub user: Option<UserRecord>,
    /// The user's active sessions, by id.
    pub active: Vec<Session>,
    /// The user's stored groups, when asked for (None: not asked, or in no group).
    pub groups: Option<crate::groups::text::GroupNames>,
}

/// A page of the sessions: up to `limit` with `id > after_id`, by id, filtered by username and
/// status when given.
#[derive(Clone, Copy, Debug)]
pub struct SessionPage<'a> {
    pub username: Option<&'a str>,
    pub status: Option<SessionStatus>,
    pub after_id: i64,
    pub limit: usize,
}

/// Sessions, and the `session.ending` warnings told about running ones.
pub trait SessionStore: UserStore + GroupStore {
    /// Records a new active session and returns its id (ids increase).
    fn insert_session(&mut self, session: &NewSession) -> Result<i64, StoreError>;
    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError>;
    /// Replaces a stored session (same id).
    fn update_session(&mut self, session: &Session) -> Result<(), StoreError>;
    /// The user's active sessions, by id.
    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError>;
    /// The user's record, active sessions and (`with_groups`) stored groups: the spawn gate's one
    /// read. A backend behind a costly boundary (the component's host calls) answers it in one call.
    fn gate_state(&mut self, username: &str, with_groups: bool) -> Result<GateState, StoreError> {
        Ok(GateState {
            user: self.get_user(username)?,
            active: self.active_sessions(username)?,
            groups: if with_groups {
                self.get_membership(username)?
                    .map(|m| crate::groups::text::GroupNames::from_set(&m.groups))
            } else {
                None
            },
        })
    }
    /// A session and its user's record: the end of a session's one read (see `gate_state`).
    fn session_and_user(&mut self, id: i64) -> Result<Option<(Session, Option<UserRecord>)>, StoreError> {
        match self.get_session(id)? {
            Some(s) => {
                let user = self.get_user(&s.username)?;
                Ok(Some((s, user)))
            }
            None => Ok(None),
        }
    }
    /// Active sessions that started strictly before `cutoff`, by id.
    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError>;
    /// A page of the sessions by id (see [`SessionPage`]).
    fn scan_sessions(&mut self, page: &SessionPage<'_>) -> Result<Vec<Session>, StoreError>;
    /// Up to `limit` of `username`'s sessions with `id < before` (every id when `None`), newest
    /// first: a user's own sessions, a page at a time.
    fn user_sessions(
        &mut self,
        username: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError>;

    /// Up to `limit` active sessions whose `warn_at` has come by `now`, by `warn_at` then id, each
    /// with the smallest mark told so far.
    fn sessions_to_warn(
        &mut self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Session, Option<i64>)>, StoreError>;
    /// Records what a session was told: the smallest mark told (`None`: none) and when the next
    /// one passes (`None`: none left).
    fn set_session_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Option<Timestamp>,
    ) -> Result<(), StoreError>;
    /// A running session extended: its runtime, its reservation and its warnings.
    fn extend_session(&mut self, session: &Session, warned_mark: Option<i64>) -> Result<(), StoreError>;
    /// The smallest mark told to session `id` (`None`: none yet).
    fn session_warned_mark(&mut self, id: i64) -> Result<Option<i64>, StoreError>;
}
