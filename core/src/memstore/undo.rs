//! A host that undoes a failed call puts records back as they were; the index of each user's active
//! sessions follows (`sessions.rs`).

use super::MemStore;
use crate::store::{Session, UserRecord};

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
}
