//! The time-driven events, written by the minute sweep (`POST .../admin/api/quota/expire`):
//! `session.ending` before a running session's end and `grant.expiring` before a grant's expiry,
//! each by the "smallest passed mark" rule; and the purge of events older than the retention.
//!
//! A session or grant keeps the smallest mark it was told (every larger one counts as told) and
//! when its next untold mark passes (`warn_at`), so a sweep reads only what is due.

use serde::Serialize;
use serde_json::json;

use crate::config::Config;
use crate::engine_call::EngineCall;
use crate::error::QuotaError;
use crate::limits;
use crate::store::{EventKind, Session};
use crate::time::{Timestamp, DAY_SECONDS};

/// What a sweep call told and purged; `more`: some were left for the next call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Told {
    pub warnings: u64,
    pub events_purged: u64,
    #[serde(skip)]
    pub more: bool,
}

/// When the next untold mark passes: the largest mark below the smallest one told (all of them
/// when none was told), `unit` seconds each before `end`. `marks` is sorted largest first.
pub fn next_warning(marks: &[i64], end: Timestamp, told: Option<i64>, unit: i64) -> Option<Timestamp> {
    marks
        .iter()
        .find(|m| told.is_none_or(|t| **m < t))
        .map(|m| end.plus_seconds(-m * unit))
}

/// The smallest mark passed by `now` and not yet told, if any.
fn smallest_untold(
    marks: &[i64],
    end: Timestamp,
    told: Option<i64>,
    unit: i64,
    now: Timestamp,
) -> Option<i64> {
    marks
        .iter()
        .rev()
        .find(|m| told.is_none_or(|t| **m < t) && end.plus_seconds(-*m * unit) <= now)
        .copied()
}

/// After `end` moved (an extension): the marks told that are ahead again are untold; the
/// smallest told mark still passed, if any.
pub fn still_told(
    marks: &[i64],
    end: Timestamp,
    told: Option<i64>,
    unit: i64,
    now: Timestamp,
) -> Option<i64> {
    let t = told?;
    marks
        .iter()
        .rev()
        .find(|m| **m >= t && end.plus_seconds(-*m * unit) <= now)
        .copied()
}

/// A running session's end: its start plus the runtime asked for (and extended).
pub fn ends_at(s: &Session) -> Timestamp {
    s.start_time.plus_seconds(s.runtime_minutes * 60)
}

/// The first `warn_at` of a session that ends at `end`.
pub fn first_session_warning(config: &Config, end: Timestamp) -> Option<Timestamp> {
    next_warning(&config.notify.warn_before_stop_minutes, end, None, 60)
}

/// One sweep call's warnings and purge (at most `limit` of each when given).
pub fn tell(
    config: &Config,
    tx: &mut EngineCall<'_>,
    now: Timestamp,
    limit: Option<usize>,
) -> Result<Told, QuotaError> {
    let mut out = Told::default();
    let chunk = limit.unwrap_or(usize::MAX).min(limits::WARN_CHUNK);
    loop {
        let purged = tx.purge_events(
            now.plus_seconds(-limits::EVENT_RETENTION_DAYS * DAY_SECONDS),
            limits::EVENT_PURGE_CHUNK,
        )?;
        out.events_purged += purged;
        if purged < limits::EVENT_PURGE_CHUNK as u64 {
            break;
        }
        if limit.is_some() {
            out.more = true;
            break;
        }
    }
    let marks = &config.notify.warn_before_stop_minutes;
    loop {
        let due = tx.sessions_to_warn(now, chunk)?;
        let full = due.len() == chunk;
        for (s, told) in due {
            let end = ends_at(&s);
            let mut told_now = told;
            if let Some(m) = smallest_untold(marks, end, told, 60, now) {
                let left = (end.seconds() - now.seconds()).max(0) / 60;
                let extend_cost_30 = s.rate.times(30).unwrap_or(s.rate);
                let data = json!({
                    "session_id": s.id,
                    "server_name": s.server_name,
                    "ends_at": end,
                    "minutes_left": left,
                    "extend_cost_30": extend_cost_30,
                });
                tx.note(super::about_user(
                    EventKind::SessionEnding,
                    &s.username,
                    s.budget.as_deref(),
                    data,
                    now,
                ));
                out.warnings += 1;
                told_now = Some(m);
            }
            tx.set_session_warning(s.id, told_now, next_warning(marks, end, told_now, 60))?;
        }
        if !full {
            break;
        }
        if limit.is_some() {
            out.more = true;
            break;
        }
    }
    let days = &config.notify.notify_before_expiry_days;
    if let Some(largest) = days.first() {
        tx.arm_grant_warnings(largest * DAY_SECONDS)?;
        loop {
            let due = tx.grants_to_warn(now, chunk)?;
            let full = due.len() == chunk;
            for (account, g, told) in due {
                let mut told_now = told;
                if let Some(m) = smallest_untold(days, g.expires_at, told, DAY_SECONDS, now) {
                    let data = json!({
                        "grant_id": g.grant_id,
                        "remaining": g.remaining,
                        "expires_at": g.expires_at,
                    });
                    tx.note(super::grant_expiring(&account, data, now));
                    out.warnings += 1;
                    told_now = Some(m);
                }
                // None left: its expiry (the expiry sweep then writes it off).
                let next = next_warning(days, g.expires_at, told_now, DAY_SECONDS).unwrap_or(g.expires_at);
                tx.set_grant_warning(g.grant_id, told_now, next)?;
            }
            if !full {
                break;
            }
            if limit.is_some() {
                out.more = true;
                break;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: Timestamp = Timestamp(1_795_003_600);
    const MARKS: [i64; 3] = [10, 5, 2];

    #[test]
    fn the_next_warning_is_the_largest_mark_not_told() {
        assert_eq!(next_warning(&MARKS, END, None, 60), Some(END.plus_seconds(-600)));
        assert_eq!(
            next_warning(&MARKS, END, Some(10), 60),
            Some(END.plus_seconds(-300))
        );
        assert_eq!(next_warning(&MARKS, END, Some(2), 60), None);
        assert_eq!(next_warning(&[], END, None, 60), None);
    }

    #[test]
    fn a_late_sweep_tells_the_smallest_passed_mark_once() {
        // 3 minutes left, nothing told: marks 10 and 5 passed, 5 is told (one warning).
        let now = END.plus_seconds(-180);
        assert_eq!(smallest_untold(&MARKS, END, None, 60, now), Some(5));
        assert_eq!(smallest_untold(&MARKS, END, Some(5), 60, now), None);
        assert_eq!(
            smallest_untold(&MARKS, END, Some(5), 60, END.plus_seconds(-120)),
            Some(2)
        );
    }

    #[test]
    fn an_extension_re_arms_the_marks_ahead_again() {
        // Told 2 (two minutes left), extended to 7 minutes left: 5 and 2 are ahead, 10 passed.
        let now = END.plus_seconds(-120);
        let later = END.plus_seconds(300);
        assert_eq!(still_told(&MARKS, later, Some(2), 60, now), Some(10));
        assert_eq!(
            next_warning(&MARKS, later, Some(10), 60),
            Some(later.plus_seconds(-300))
        );
        // Extended far: nothing told any more.
        assert_eq!(still_told(&MARKS, END.plus_seconds(3600), Some(2), 60, now), None);
        assert_eq!(still_told(&MARKS, later, None, 60, now), None);
    }
}
