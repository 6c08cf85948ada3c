//! The server's clock: the system clock, or (testing only) a clock that starts at a given instant.
//!
//! Two test hooks, both announced in the log when used:
//! - `--clock-start T`: the clock reads `T` the first time it is read (after the slow start-up work:
//!   compiling the component, opening the database), then advances in real time. A test that aims
//!   at a time just after `T` therefore cannot miss it on a slow or busy machine.
//! - `QUOTA_HUB_TEST_DAYS_AHEAD=N` in the environment: the system clock reads N days ahead, in the
//!   server and every command, to show that no test depends on the date it runs.

use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use quota_core::Timestamp;

/// The environment variable that moves the system clock (testing only).
pub const DAYS_AHEAD_VAR: &str = "QUOTA_HUB_TEST_DAYS_AHEAD";

#[derive(Clone, Debug)]
pub struct Clock {
    /// Milliseconds added to the system clock: fixed for the system clock, set at the first reading
    /// for a clock started at an instant.
    offset_ms: Arc<OnceLock<i64>>,
    start_ms: Option<i64>,
}

fn real_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The test shift of the system clock, in days (0 unless `QUOTA_HUB_TEST_DAYS_AHEAD` is set).
pub fn days_ahead() -> Result<i64, String> {
    match std::env::var(DAYS_AHEAD_VAR) {
        Err(_) => Ok(0),
        Ok(s) => s
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|d| (0..=36_500).contains(d))
            .ok_or(format!(
                "{DAYS_AHEAD_VAR}: `{s}` is not a whole number of days from 0 to 36500"
            )),
    }
}

impl Clock {
    /// The system clock (shifted by `QUOTA_HUB_TEST_DAYS_AHEAD` days when that is set).
    pub fn system() -> Result<Clock, String> {
        let shift = days_ahead()? * 86_400_000;
        Ok(Clock {
            offset_ms: Arc::new(OnceLock::from(shift)),
            start_ms: None,
        })
    }

    /// A clock that reads `start` at its first reading and then advances in real time.
    pub fn starting_at(start: Timestamp) -> Clock {
        Clock {
            offset_ms: Arc::new(OnceLock::new()),
            start_ms: Some(start.seconds() * 1000),
        }
    }

    pub fn now_ms(&self) -> i64 {
        let real = real_ms();
        let offset = self
            .offset_ms
            .get_or_init(|| self.start_ms.map_or(0, |s| s - real));
        real + offset
    }

    pub fn now(&self) -> Timestamp {
        Timestamp(self.now_ms().div_euclid(1000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_clock_reads_its_start_at_the_first_reading_however_late() {
        let start = Timestamp::parse("2026-11-22T09:59:57Z").unwrap();
        let c = Clock::starting_at(start);
        std::thread::sleep(std::time::Duration::from_millis(1100)); // a slow start-up
        let first = c.now();
        assert_eq!(first, start);
        // Clones share the anchor.
        let d = c.clone();
        assert!(d.now() >= start && d.now() < start.plus_seconds(60));
    }
}
