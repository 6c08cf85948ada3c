//! How long a session is billed for.

use crate::limits;

/// Billed minutes for an elapsed time: whole minutes, at least one (a clock that went backwards
/// bills one minute).
pub fn billed_minutes(elapsed_seconds: i64) -> i64 {
    (elapsed_seconds.div_euclid(60)).max(limits::BILLED_MINUTES_MIN)
}
