//! Timestamps: whole seconds since the Unix epoch, UTC. The engine never reads a clock; hosts pass
//! `now` into every operation.

use std::fmt;

use chrono::{DateTime, NaiveDateTime};
use serde::{Serialize, Serializer};

use crate::limits;

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
        if !(limits::timestamp_seconds_min..=limits::timestamp_seconds_max).contains(&secs) {
            return Err(format!("`{text}` is outside the years 1970 to 9999"));
        }
        Ok(Timestamp(secs))
    }

    pub fn to_naive(self) -> NaiveDateTime {
        DateTime::from_timestamp(
            self.0
                .clamp(limits::timestamp_seconds_min, limits::timestamp_seconds_max),
            0,
        )
        .unwrap_or_default()
        .naive_utc()
    }

    pub fn from_naive(n: NaiveDateTime) -> Timestamp {
        Timestamp(n.and_utc().timestamp())
    }
}

/// ISO 8601, UTC, no zone suffix, seconds precision: `2026-11-22T10:30:00`.
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_naive().format("%Y-%m-%dT%H:%M:%S"))
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
    fn refuses_garbage_and_out_of_range() {
        assert!(Timestamp::parse("yesterday").is_err());
        assert!(Timestamp::parse("1960-01-01T00:00:00Z").is_err());
    }
}
