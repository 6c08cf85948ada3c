//! A host that undoes a failed call puts records back as they were; the index of each user's active
//! sessions follows every session written.

use super::MemStore;
use crate::store::{Session, SessionStatus, UserRecord};

impl MemStore {
    /// Puts a user record back as it was (`None`: absent). For hosts that undo a failed call.
    pub fn restore_user(&mut self, username: &str, prev: Option<UserRecord>) {
        match prev {
            Some(u) => {
                self.users.insert(username.to_string(), u);
            }
            None => {
                self.users.remove(username);
            }
        }
    }

    /// Puts a session back as it was (`None`: absent). For hosts that undo a failed call.
    pub fn restore_session(&mut self, id: i64, prev: Option<Session>) {
        if let Some(old) = self.sessions.remove(&id) {
            if let Some(ids) = self.active_by_user.get_mut(&old.username) {
                ids.retain(|i| *i != id);
            }
        }
        if let Some(s) = prev {
            self.reindex(&s);
            self.sessions.insert(id, s);
        }
    }

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
