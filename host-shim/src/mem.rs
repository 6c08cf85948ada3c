//! The in-memory backend: `quota_core::MemStore` plus an undo journal, so a rolled-back call leaves
//! no trace (as with a database), without copying the store at every `begin`.

use quota_core::store::{
    Change, NewSession, RefreshRun, Session, SessionStatus, Store, Transaction, UserRecord,
};
use quota_core::{MemStore, StoreError, Timestamp};

use std::collections::HashMap;

use crate::backend::Backend;
use crate::host_tables::{HostTables, IdempotencyKey, IdempotencyRecord, TokenRecord};

type IdemKey = (String, String, String, String);

fn idem_key(k: &IdempotencyKey) -> IdemKey {
    (k.caller.clone(), k.method.clone(), k.path.clone(), k.key.clone())
}

enum Undo {
    User(String, Option<UserRecord>),
    Transactions(usize),
    Session(i64, Option<Session>),
    Run(String, Option<RefreshRun>),
    Token(String, Option<TokenRecord>),
    Idempotency(IdemKey, Option<IdempotencyRecord>),
}

#[derive(Default)]
pub struct MemBackend {
    pub store: MemStore,
    journal: Vec<Undo>,
    in_tx: bool,
    tokens: HashMap<String, TokenRecord>,
    replays: HashMap<IdemKey, IdempotencyRecord>,
}

impl MemBackend {
    pub fn new() -> MemBackend {
        MemBackend::default()
    }

    fn note(&mut self, u: Undo) {
        if self.in_tx {
            self.journal.push(u);
        }
    }
}

impl Backend for MemBackend {
    fn begin(&mut self) -> Result<(), StoreError> {
        self.journal.clear();
        self.in_tx = true;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.journal.clear();
        self.in_tx = false;
        Ok(())
    }

    fn rollback(&mut self) -> Result<(), StoreError> {
        while let Some(u) = self.journal.pop() {
            match u {
                Undo::User(name, prev) => self.store.restore_user(&name, prev),
                Undo::Transactions(len) => self.store.transactions.truncate(len),
                Undo::Session(id, prev) => self.store.restore_session(id, prev),
                Undo::Run(id, prev) => match prev {
                    Some(r) => {
                        self.store.refresh_runs.insert(id, r);
                    }
                    None => {
                        self.store.refresh_runs.remove(&id);
                    }
                },
                Undo::Token(hash, prev) => match prev {
                    Some(t) => {
                        self.tokens.insert(hash, t);
                    }
                    None => {
                        self.tokens.remove(&hash);
                    }
                },
                Undo::Idempotency(key, prev) => match prev {
                    Some(r) => {
                        self.replays.insert(key, r);
                    }
                    None => {
                        self.replays.remove(&key);
                    }
                },
            }
        }
        self.in_tx = false;
        Ok(())
    }

    fn dump(&mut self) -> Result<String, StoreError> {
        Ok(format!("{:?}", self.store))
    }
}

impl HostTables for MemBackend {
    fn put_token(&mut self, token: &TokenRecord) -> Result<(), StoreError> {
        let prev = self.tokens.insert(token.hash.clone(), token.clone());
        self.note(Undo::Token(token.hash.clone(), prev));
        Ok(())
    }

    fn find_token(&mut self, hash: &str) -> Result<Option<TokenRecord>, StoreError> {
        Ok(self.tokens.get(hash).cloned())
    }

    fn get_idempotent(&mut self, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError> {
        Ok(self.replays.get(&idem_key(key)).cloned())
    }

    fn put_idempotent(&mut self, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<(), StoreError> {
        let k = idem_key(key);
        let prev = self.replays.insert(k.clone(), record.clone());
        self.note(Undo::Idempotency(k, prev));
        Ok(())
    }

    fn purge_idempotent(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let n = self.replays.len();
        self.replays.retain(|_, r| r.created_at >= before);
        Ok((n - self.replays.len()) as u64)
    }
}

impl Store for MemBackend {
    fn get_user(&mut self, username: &str) -> Result<Option<UserRecord>, StoreError> {
        self.store.get_user(username)
    }

    fn put_user(&mut self, user: &UserRecord) -> Result<(), StoreError> {
        let prev = self.store.users.get(&user.username).cloned();
        self.note(Undo::User(user.username.clone(), prev));
        self.store.put_user(user)
    }

    fn scan_users(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<UserRecord>, StoreError> {
        self.store.scan_users(after, limit)
    }

    fn record_changes(&mut self, changes: &[Change]) -> Result<(), StoreError> {
        self.note(Undo::Transactions(self.store.transactions.len()));
        for c in changes {
            let prev = self.store.users.get(&c.user.username).cloned();
            self.note(Undo::User(c.user.username.clone(), prev));
        }
        self.store.record_changes(changes)
    }

    fn recent_transactions(&mut self, username: &str, limit: usize) -> Result<Vec<Transaction>, StoreError> {
        self.store.recent_transactions(username, limit)
    }

    fn scan_transactions(
        &mut self,
        username: Option<&str>,
        after_id: i64,
        limit: usize,
    ) -> Result<Vec<Transaction>, StoreError> {
        self.store.scan_transactions(username, after_id, limit)
    }

    fn insert_session(&mut self, session: &NewSession) -> Result<i64, StoreError> {
        let id = self.store.insert_session(session)?;
        self.note(Undo::Session(id, None));
        Ok(id)
    }

    fn get_session(&mut self, id: i64) -> Result<Option<Session>, StoreError> {
        self.store.get_session(id)
    }

    fn update_session(&mut self, session: &Session) -> Result<(), StoreError> {
        let prev = self.store.sessions.get(&session.id).cloned();
        self.note(Undo::Session(session.id, prev));
        self.store.update_session(session)
    }

    fn active_sessions(&mut self, username: &str) -> Result<Vec<Session>, StoreError> {
        self.store.active_sessions(username)
    }

    fn stale_sessions(&mut self, cutoff: Timestamp) -> Result<Vec<Session>, StoreError> {
        self.store.stale_sessions(cutoff)
    }

    fn scan_sessions(
        &mut self,
        username: Option<&str>,
        status: Option<SessionStatus>,
        after_id: i64,
        limit: usize,
    ) -> Result<Vec<Session>, StoreError> {
        self.store.scan_sessions(username, status, after_id, limit)
    }

    fn get_refresh_run(&mut self, run_id: &str) -> Result<Option<RefreshRun>, StoreError> {
        self.store.get_refresh_run(run_id)
    }

    fn put_refresh_run(&mut self, run: &RefreshRun) -> Result<(), StoreError> {
        let prev = self.store.refresh_runs.get(&run.run_id).cloned();
        self.note(Undo::Run(run.run_id.clone(), prev));
        self.store.put_refresh_run(run)
    }
}
