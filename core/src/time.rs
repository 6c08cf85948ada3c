//! Timestamps: whole seconds since the Unix epoch, UTC. The engine never reads a clock; hosts pass
//! `now` into every operation.

use std::fmt;

use chrono::{DateTime, Datelike, NaiveDateTime, Timelike};
use serde::{Serialize, Serializer};

use crate::limits;

/// Seconds in a UTC day (the engine has no leap seconds: timestamps are whole UTC seconds).
pub const DAY_SECONDS: i64 = 86_400;

/// Seconds since 1970-01-01T00:00:00Z.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn seconds(self) -> i64 {
        self.0
    }

    pub fn plus_seconds(self, s: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(s))
    }

    /// Parses RFC 3339 (`Z` or an offset); a timestamp without zone means UTC. Fractional seconds
    /// are truncated (the engine works in whole seconds).
    pub fn parse(text: &str) -> Result<Timestamp, String> {
        let t = text.trim();
        let secs = if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
            dt.timestamp()
        } else {
            let naive = NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f")
                .or_else(|_| NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f"))
                .map_err(|_| format!("`{text}` is not an RFC 3339 timestamp"))?;
            naive.and_utc().timestamp()
        };
        if !(limits::TIMESTAMP_SECONDS_MIN..=limits::TIMESTAMP_SECONDS_MAX).contains(&secs) {
            return Err(format!("`{text}` is outside the years 1970 to 9999"));
        }
        Ok(Timestamp(secs))
    }

    pub fn to_naive(self) -> NaiveDateTime {
        DateTime::from_timestamp(
            self.0
                .clamp(limits::TIMESTAMP_SECONDS_MIN, limits::TIMESTAMP_SECONDS_MAX),
            0,
        )
        .unwrap_or_default()
        .naive_utc()
    }

    pub fn from_naive(n: NaiveDateTime) -> Timestamp {
        Timestamp(n.and_utc().timestamp())
    }
}

/// ISO 8601, UTC, no zone suffix, seconds precision: `2026-11-22T10:30:00`. Written digit by
/// digit: chrono's `format` reads its pattern again at every call, and the admin list of 50,000
/// users writes 50,000 of these (docs/performance.md).
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.to_naive();
        let mut text = *b"0000-00-00T00:00:00";
        // The year is 1970 to 9999 (`to_naive` clamps): four digits.
        let fields = [
            (0..4, n.year().unsigned_abs()),
            (5..7, n.month()),
            (8..10, n.day()),
            (11..13, n.hour()),
            (14..16, n.minute()),
            (17..19, n.second()),
        ];
        for (at, mut value) in fields {
            for digit in text[at].iter_mut().rev() {
                *digit = b'0' + (value % 10) as u8;
                value /= 10;
            }
        }
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_zones_and_prints_utc_without_suffix() {
        let a = Timestamp::parse("2026-11-22T10:30:00Z").unwrap();
        let b = Timestamp::parse("2026-11-22T11:30:00+01:00").unwrap();
        let c = Timestamp::parse("2026-11-22T10:30:00").unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a.to_string(), "2026-11-22T10:30:00");
    }

    #[test]
    fn prints_what_chronos_pattern_prints_from_1970_to_9999_and_clamps_outside() {
        let chrono_text = |t: Timestamp| t.to_naive().format("%Y-%m-%dT%H:%M:%S").to_string();
        let (min, max) = (limits::TIMESTAMP_SECONDS_MIN, limits::TIMESTAMP_SECONDS_MAX);
        let mut t = min;
        while t <= max {
            assert_eq!(Timestamp(t).to_string(), chrono_text(Timestamp(t)), "{t}");
            t += 7_919_993; // a prime step: every field's digits take many values
        }
        for t in [min, max, 951_782_400, 4_107_542_400] {
            assert_eq!(Timestamp(t).to_string(), chrono_text(Timestamp(t)), "{t}");
        }
        assert_eq!(Timestamp(min - 1).to_string(), "1970-01-01T00:00:00");
        assert_eq!(Timestamp(i64::MAX).to_string(), "9999-12-31T23:59:59");
    }

    #[test]
    fn refuses_garbage_and_out_of_range() {
        assert!(Timestamp::parse("yesterday").is_err());
        assert!(Timestamp::parse("1960-01-01T00:00:00Z").is_err());
    }
}
