//! Sessions and their `session.ending` warnings in memory.

use super::MemStore;
use crate::error::StoreError;
use crate::store::{NewSession, Session, SessionPage, SessionStatus, SessionStore};
use crate::time::Timestamp;

impl SessionStore for MemStore {
    fn insert_session(&mut self, session: &NewSession) -> Result<i64, StoreError> {
        self.next_session_id += 1;
        let s = session.clone().with_id(self.next_session_id);
        self.reindex(&s);
        self.sessions.insert(s.id, s);
        Ok(self.next_session_id)
    }

    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError> {
        Ok(self.sessions.get(&id).cloned())
    }

    fn update_session(&mut self, session: &Session) -> Result<(), StoreError> {
        if !self.sessions.contains_key(&session.id) {
            return Err(StoreError(format!("session {} does not exist", session.id)));
        }
        self.reindex(session);
        self.sessions.insert(session.id, session.clone());
        Ok(())
    }

    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError> {
        Ok(self
            .active_by_user
            .get(username)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| self.sessions.get(id).cloned())
                    .collect()
            })
            .unwrap_or_default())
    }

    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError> {
        Ok(self
            .sessions
            .values()
            .filter(|s| s.status == SessionStatus::Active && s.start_time < cutoff)
            .cloned()
            .collect())
    }

    fn scan_sessions(&mut self, page: &SessionPage<'_>) -> Result<Vec<Session>, StoreError> {
        let (username, status, after_id, limit) = (page.username, page.status, page.after_id, page.limit);
        Ok(self
            .sessions
            .range(after_id.saturating_add(1)..)
            .map(|(_, s)| s)
            .filter(|s| username.is_none_or(|u| s.username == u) && status.is_none_or(|st| s.status == st))
            .take(limit)
            .cloned()
            .collect())
    }

    fn user_sessions(
        &mut self,
        username: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError> {
        let upper = before.map_or(i64::MAX, |b| b.saturating_sub(1));
        Ok(self
            .sessions
            .range(..=upper)
            .rev()
            .map(|(_, s)| s)
            .filter(|s| s.username == username)
            .take(limit)
            .cloned()
            .collect())
    }

    fn sessions_to_warn(
        &mut self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Session, Option<i64>)>, StoreError> {
        let mut due: Vec<&Session> = self
            .sessions
            .values()
            .filter(|s| s.status == SessionStatus::Active && s.warn_at.is_some_and(|w| w <= now))
            .collect();
        due.sort_by_key(|s| (s.warn_at, s.id));
        Ok(due
            .into_iter()
            .take(limit)
            .map(|s| (s.clone(), self.session_warned.get(&s.id).copied()))
            .collect())
    }

    fn set_session_warning(
        &mut self,
        id: i64,
        warned_mark: Option<i64>,
        warn_at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        let s = self
            .sessions
            .get_mut(&id)
            .ok_or_else(|| StoreError(format!("session {id} does not exist")))?;
        s.start.warn_at = warn_at;
        match warned_mark {
            Some(m) => self.session_warned.insert(id, m),
            None => self.session_warned.remove(&id),
        };
        Ok(())
    }

    fn extend_session(&mut self, session: &Session, warned_mark: Option<i64>) -> Result<(), StoreError> {
        self.update_session(session)?;
        self.set_session_warning(session.id, warned_mark, session.warn_at)
    }

    fn session_warned_mark(&mut self, id: i64) -> Result<Option<i64>, StoreError> {
        Ok(self.session_warned.get(&id).copied())
    }
}

impl MemStore {
    /// Keeps the index of each user's active sessions up to date with a session written.
    pub(super) fn reindex(&mut self, session: &Session) {
        // Look the user up before inserting, so the common case allocates no key.
        if !self.active_by_user.contains_key(&session.username) {
            if session.status != SessionStatus::Active {
                return;
            }
            self.active_by_user.insert(session.username.clone(), Vec::new());
        }
        let Some(ids) = self.active_by_user.get_mut(&session.username) else {
            return;
        };
        ids.retain(|id| *id != session.id);
        if session.status == SessionStatus::Active {
            ids.push(session.id);
            ids.sort_unstable();
        }
    }
}
