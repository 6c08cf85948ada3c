//! The routes' two wire forms of a session: the listing's (`SessionView`: the admin's and the
//! hub's session reads, `/me/status`) and a user's own (`MySession`: `/me/sessions`, with what ending
//! a running one now would charge). Each is [`Session`], the one session type, written in the
//! route's field order (fixed by the OpenAPI document and the scenarios, byte for byte): no second
//! copy of the fields.

use serde::ser::{Serialize, SerializeStruct, Serializer};

use super::billing::billed_minutes;
use crate::events::sweep::ends_at;
use crate::milli::Milli;
use crate::store::{Session, SessionStatus};
use crate::time::Timestamp;

/// A session as listings show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionView(pub Session);

impl From<&Session> for SessionView {
    fn from(s: &Session) -> SessionView {
        SessionView(s.clone())
    }
}

impl Serialize for SessionView {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        let s = &self.0;
        let mut m = out.serialize_struct("SessionView", 14)?;
        m.serialize_field("session_id", &s.id)?;
        m.serialize_field("username", &s.username)?;
        m.serialize_field("server_name", &s.server_name)?;
        m.serialize_field("resource_type", &s.resource_type)?;
        m.serialize_field("status", &s.status)?;
        m.serialize_field("start_time", &s.start_time)?;
        m.serialize_field("end_time", &s.end_time)?;
        m.serialize_field("duration_minutes", &s.duration_minutes)?;
        m.serialize_field("cost", &s.cost)?;
        m.serialize_field("rate", &s.rate)?;
        // The runtime asked for at start (a host re-arms its auto-stop timer from it), and when it
        // stops: its start plus the runtime (an extension moves it).
        m.serialize_field("runtime_minutes", &s.runtime_minutes)?;
        m.serialize_field("ends_at", &ends_at(s))?;
        m.serialize_field("estimated_cost", &s.estimated_cost)?;
        // The budget it charges; null: the personal account.
        m.serialize_field("budget", &s.budget)?;
        m.end()
    }
}

/// One of a user's own sessions (without `username`); a running one says when its auto-stop ends
/// it and what ending it now would charge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MySession {
    pub session: Session,
    /// The user is unlimited: their own sessions cost nothing so far.
    pub unlimited: bool,
    pub now: Timestamp,
}

impl MySession {
    /// Running: the credits ending it now would charge (0 when it is not billed).
    fn cost_so_far(&self) -> i64 {
        let s = &self.session;
        // An unlimited user's own sessions cost nothing; a budget's are charged whoever runs them.
        if !s.billable || (self.unlimited && s.budget.is_none()) {
            return 0;
        }
        let minutes = billed_minutes(self.now.seconds() - s.start_time.seconds()).min(s.runtime_minutes);
        s.rate.times(minutes).map_or(i64::MAX, Milli::ceil)
    }
}

impl Serialize for MySession {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        let s = &self.session;
        let running = s.status == SessionStatus::Active;
        let mut m = out.serialize_struct("MySession", 14)?;
        m.serialize_field("session_id", &s.id)?;
        m.serialize_field("server_name", &s.server_name)?;
        m.serialize_field("resource_type", &s.resource_type)?;
        m.serialize_field("status", &s.status)?;
        m.serialize_field("start_time", &s.start_time)?;
        m.serialize_field("end_time", &s.end_time)?;
        m.serialize_field("duration_minutes", &s.duration_minutes)?;
        m.serialize_field("cost", &s.cost)?;
        m.serialize_field("rate", &s.rate)?;
        m.serialize_field("runtime_minutes", &s.runtime_minutes)?;
        m.serialize_field("estimated_cost", &s.estimated_cost)?;
        // Running: `start_time + runtime_minutes`, when the hub stops it.
        m.serialize_field(
            "ends_at",
            &running.then(|| s.start_time.plus_seconds(s.runtime_minutes * 60)),
        )?;
        m.serialize_field("cost_so_far", &running.then(|| self.cost_so_far()))?;
        // The budget it charges (null: the personal account).
        m.serialize_field("budget", &s.budget)?;
        m.end()
    }
}
