//! Shared commit: several write calls in one transaction, each in its own savepoint, one commit.
//!
//! On SQLite with `synchronous=FULL` every commit waits for the disk (an fsync of the WAL); a spawn
//! storm on a slow volume queues behind it. A server whose write queue holds several calls runs them
//! as one shared commit: a call that fails (a trap, a failed statement, an error the host returns) is rolled
//! back to its savepoint alone and the others go on; the shared commits once; nobody hears an answer
//! before that commit, and a failed commit fails every call that shared it.

use crate::error::HostError;
use crate::sql::{Dialect, SqlError};
use crate::tx::Tx;
use crate::worker::Worker;

/// One call of a shared commit: runs in the shared transaction, inside its own savepoint.
pub type SharedCall<'c, T> = Box<dyn FnMut(&mut Tx<'_>) -> Result<T, HostError> + 'c>;

impl Worker {
    /// Runs `calls` as one write transaction and answers each in order (see the module's text).
    /// One call, or a PostgreSQL database (whose concurrent commits already share their WAL flush
    /// and whose conflicts are retried per call), runs each call in a transaction of its own.
    pub fn shared_commit<T>(&mut self, calls: Vec<SharedCall<'_, T>>) -> Vec<Result<T, HostError>> {
        if calls.len() == 1 || self.db().dialect() == Dialect::Postgres {
            return calls
                .into_iter()
                .map(|mut call| {
                    let answer = self.transaction(false, &mut call);
                    if let (Ok(_), Some(o)) = (&answer, &self.observer) {
                        o.commit_shared(1);
                    }
                    answer
                })
                .collect();
        }
        let n = calls.len();
        if let Err(e) = self.db().begin() {
            let failed: Vec<_> = (0..n).map(|_| Err(HostError::Storage(e.clone()))).collect();
            failed.iter().for_each(|r| self.note_failures(r));
            return failed;
        }
        self.observations.clear();
        let mut answers = Vec::with_capacity(n);
        let mut calls = calls.into_iter();
        while let Some(mut call) = calls.next() {
            match self.in_savepoint(&mut call) {
                Ok(answer) => answers.push(answer),
                Err(e) => {
                    // The transaction is in an unknown state: none of the calls is kept.
                    let _ = self.db().rollback();
                    let not_run = 1 + calls.len();
                    let failed = answers
                        .into_iter()
                        .map(|a| a.and_then(|_| Err(HostError::Storage(e.clone()))))
                        .chain((0..not_run).map(|_| Err(HostError::Storage(e.clone()))))
                        .collect();
                    return self.finish(failed);
                }
            }
        }
        match self.db().commit() {
            Ok(()) => {
                if let Some(o) = &self.observer {
                    if !self.observations.is_empty() {
                        o.committed(&self.observations);
                    }
                    o.commit_shared(answers.iter().filter(|a| a.is_ok()).count());
                }
                self.finish(answers)
            }
            Err(e) => {
                let _ = self.db().rollback();
                let failed = answers
                    .into_iter()
                    .map(|a| a.and_then(|_| Err(HostError::Storage(e.clone()))))
                    .collect();
                self.finish(failed)
            }
        }
    }

    /// Runs one call of a shared commit in a savepoint: `Ok(answer)` whatever the call answered (its
    /// failure undone), `Err` when the savepoint itself could not be set, kept or undone.
    fn in_savepoint<T>(&mut self, call: &mut SharedCall<'_, T>) -> Result<Result<T, HostError>, SqlError> {
        self.db().savepoint()?;
        let mark = self.observations.len();
        let (answer, trapped) = self.run_scoped(call);
        if answer.is_ok() {
            self.db().release_savepoint()?;
            return Ok(answer);
        }
        self.db().rollback_to_savepoint()?;
        self.observations.truncate(mark);
        if trapped {
            // The fresh instance takes over the same connection, its transaction still open.
            if let Err(e) = self.replace_instance() {
                return Ok(Err(e));
            }
        }
        Ok(answer)
    }

    fn note_failures<T>(&self, r: &Result<T, HostError>) {
        if let Err(e) = r {
            self.note_failure(e);
        }
    }

    fn finish<T>(&self, answers: Vec<Result<T, HostError>>) -> Vec<Result<T, HostError>> {
        answers.iter().for_each(|r| self.note_failures(r));
        answers
    }
}
