//! One engine call in progress, inside its host's transaction: the store it reads and writes, and
//! what the call produced besides its answer, kept here and nowhere else (no thread-local, no
//! static): the observations returned with the answer for the host's metrics
//! ([`crate::observations`]), and the events noted as things changed, written in the same
//! transaction when the call ends ([`crate::events`]). quinn-proto's habit: outputs are returned,
//! never stashed.
//!
//! Every operation that writes takes `&mut EngineCall`; a read takes `&mut dyn Store`, and a `EngineCall` passes
//! for one (it derefs to its store).

use crate::config::Config;
use crate::error::StoreError;
use crate::events::Noted;
use crate::limits;
use crate::observations::{Observation, Observed};
use crate::store::{AccountKey, NewEvent, Store};
use crate::time::Timestamp;

pub struct EngineCall<'s> {
    store: &'s mut dyn Store,
    observations: Vec<Observation>,
    noted: Vec<Noted>,
    /// Off only in the benchmark that measures what writing events costs (the component's
    /// fault-injection build): never in a host.
    write_events: bool,
}

impl<'s> EngineCall<'s> {
    /// A call starting on `store`, nothing observed or noted yet.
    pub fn new(store: &'s mut dyn Store) -> EngineCall<'s> {
        EngineCall {
            store,
            observations: Vec::new(),
            noted: Vec::new(),
            write_events: true,
        }
    }

    /// The call's store, for a read (`reads`, `usage`, ...) that takes one: a read produces
    /// nothing but its answer.
    pub fn store(&mut self) -> &mut dyn Store {
        self.store
    }

    /// The same call with the writing of events off (see `write_events`).
    pub fn without_events(mut self) -> EngineCall<'s> {
        self.write_events = false;
        self
    }

    /// Records what the call decided (beyond [`limits::OBSERVATIONS_PER_CALL_MAX`] the rest is
    /// dropped: a call records a handful, cleanup aggregates by resource type).
    pub fn observe(&mut self, o: Observation) {
        if self.observations.len() < limits::OBSERVATIONS_PER_CALL_MAX {
            self.observations.push(o);
        }
    }

    /// Notes an event of the call, written when it ends.
    pub fn note(&mut self, e: NewEvent) {
        self.push_note(Noted::Event(e));
    }

    /// Notes that an account's balance moved (the ledger calls this for every change it writes):
    /// whether it crossed a `notifyBelow` mark is decided when the call ends, with the settings.
    pub fn note_move(&mut self, account: AccountKey, before: i64, after: i64) {
        if after < before {
            self.push_note(Noted::Move {
                account,
                before,
                after,
            });
        }
    }

    fn push_note(&mut self, n: Noted) {
        // A refresh of many users notes one move per user; beyond this the rest are dropped rather
        // than hold unbounded memory.
        if self.noted.len() < limits::NOTES_PER_CALL_MAX {
            self.noted.push(n);
        }
    }

    /// Ends a call that did what it answers: writes the events it noted (`balance.low` ones
    /// decided now) in its transaction, and returns its observations with `answer`.
    pub fn finish<T>(
        mut self,
        config: &Config,
        answer: T,
        now: Timestamp,
    ) -> Result<Observed<T>, StoreError> {
        let noted = std::mem::take(&mut self.noted);
        if self.write_events {
            crate::events::write(config, self.store, noted, now)?;
        }
        Ok(self.without_writing(answer))
    }

    /// Ends a call whose changes are not kept (a refusal for bad input, which wrote nothing): its
    /// noted events are dropped, its observations returned with `answer`.
    pub fn without_writing<T>(self, answer: T) -> Observed<T> {
        Observed {
            answer,
            observations: self.observations,
        }
    }
}

impl<'s> std::ops::Deref for EngineCall<'s> {
    type Target = dyn Store + 's;

    fn deref(&self) -> &(dyn Store + 's) {
        self.store
    }
}

impl<'s> std::ops::DerefMut for EngineCall<'s> {
    fn deref_mut(&mut self) -> &mut (dyn Store + 's) {
        self.store
    }
}
