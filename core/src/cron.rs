//! Five-field cron expressions (UTC) for refresh rules: minute 0-59, hour 0-23, day of month 1-31,
//! month 1-12, day of week 0-6 (Sunday = 0). Each field takes `*`, `N`, `N-M`, a `/step` on any of
//! those, and comma lists. As in Vixie cron, when both day fields are restricted a day matches
//! either of them.

use std::fmt;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Timelike};

use crate::time::Timestamp;

const FIELD_NAMES: [&str; 5] = ["minute", "hour", "day of month", "month", "day of week"];
const FIELD_RANGES: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];
/// A parsed schedule. Each field is a bit set of the values it allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cron {
    text: String,
    sets: [u64; 5],
    day_of_month_any: bool,
    day_of_week_any: bool,
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Cron {
    /// Parses an expression; the error names the field and the problem.
    pub fn parse(text: &str) -> Result<Cron, String> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(format!(
                "`{text}` must have 5 fields (minute hour day-of-month month day-of-week), found {}",
                parts.len()
            ));
        }
        let mut sets = [0u64; 5];
        for (i, part) in parts.iter().enumerate() {
            sets[i] =
                parse_field(part, FIELD_RANGES[i]).map_err(|e| format!("{} field: {e}", FIELD_NAMES[i]))?;
        }
        let cron = Cron {
            text: parts.join(" "),
            sets,
            day_of_month_any: parts[2] == "*",
            day_of_week_any: parts[4] == "*",
        };
        let probe = Timestamp(946_684_800); // 2000-01-01, before a leap day
        if cron.next_after(probe).is_none() {
            return Err(format!("`{text}` never fires (no such date)"));
        }
        Ok(cron)
    }

    fn allows(&self, field: usize, value: u32) -> bool {
        self.sets[field] & (1u64 << value) != 0
    }

    fn day_matches(&self, date: NaiveDate) -> bool {
        let dom = self.allows(2, date.day());
        let dow = self.allows(4, date.weekday().num_days_from_sunday());
        if self.day_of_month_any || self.day_of_week_any {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// Whether the schedule fires in the minute that contains `t`.
    pub fn matches(&self, t: Timestamp) -> bool {
        let n = t.to_naive();
        self.allows(3, n.month())
            && self.day_matches(n.date())
            && self.allows(1, n.hour())
            && self.allows(0, n.minute())
    }

    /// The first firing minute strictly after `t`, or `None` within the search horizon.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let start = t.to_naive();
        let mut cur = start.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let limit = start + Duration::days(crate::limits::CRON_SEARCH_HORIZON_DAYS);
        while cur <= limit {
            let date = cur.date();
            if !self.allows(3, cur.month()) {
                let (y, m) = if cur.month() == 12 {
                    (cur.year() + 1, 1)
                } else {
                    (cur.year(), cur.month() + 1)
                };
                cur = NaiveDate::from_ymd_opt(y, m, 1)?.and_hms_opt(0, 0, 0)?;
                continue;
            }
            if !self.day_matches(date) {
                cur = midnight(date.succ_opt()?)?;
                continue;
            }
            if !self.allows(1, cur.hour()) {
                cur = cur.with_minute(0)? + Duration::hours(1);
                continue;
            }
            if !self.allows(0, cur.minute()) {
                cur += Duration::minutes(1);
                continue;
            }
            return Some(Timestamp::from_naive(cur));
        }
        None
    }
}

fn midnight(d: NaiveDate) -> Option<NaiveDateTime> {
    d.and_hms_opt(0, 0, 0)
}

fn parse_field(field: &str, (lo, hi): (u32, u32)) -> Result<u64, String> {
    let mut set = 0u64;
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s.parse().map_err(|_| format!("step `{s}` is not a number"))?;
                if step == 0 || step > hi {
                    return Err(format!("step `{s}` must be between 1 and {hi}"));
                }
                (r, step)
            }
            None => (item, 1),
        };
        let (start, end) = if range == "*" {
            (lo, hi)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (number(a, lo, hi)?, number(b, lo, hi)?);
            if a > b {
                return Err(format!("range `{range}` runs backwards"));
            }
            (a, b)
        } else {
            let a = number(range, lo, hi)?;
            // `N/step` means N, N+step, ... up to the field's maximum.
            (a, if item.contains('/') { hi } else { a })
        };
        let mut v = start;
        while v <= end {
            set |= 1u64 << v;
            v += step;
        }
    }
    Ok(set)
}

fn number(text: &str, lo: u32, hi: u32) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a number"));
    }
    match text.parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is out of range {lo}-{hi}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn next(expr: &str, after: &str) -> String {
        Cron::parse(expr)
            .unwrap()
            .next_after(ts(after))
            .unwrap()
            .to_string()
    }

    #[test]
    fn next_fire_times() {
        assert_eq!(next("* * * * *", "2026-01-01T00:00:30Z"), "2026-01-01T00:01:00");
        assert_eq!(next("0 0 * * *", "2026-01-01T00:00:00Z"), "2026-01-02T00:00:00");
        assert_eq!(
            next("*/15 * * * *", "2026-01-01T10:07:00Z"),
            "2026-01-01T10:15:00"
        );
        assert_eq!(next("0 3 1 * *", "2026-01-15T00:00:00Z"), "2026-02-01T03:00:00");
        // 2026-11-22 is a Sunday; next Monday 09:00.
        assert_eq!(next("0 9 * * 1", "2026-11-22T12:00:00Z"), "2026-11-23T09:00:00");
        assert_eq!(next("0 0 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T00:00:00");
        assert_eq!(
            next("30 23 31 12 *", "2026-12-31T23:30:00Z"),
            "2027-12-31T23:30:00"
        );
        assert_eq!(
            next("5-10/5 1,2 * * *", "2026-01-01T01:06:00Z"),
            "2026-01-01T01:10:00"
        );
    }

    #[test]
    fn restricted_day_fields_combine_with_or() {
        // The 1st of the month or any Monday.
        let c = Cron::parse("0 0 1 * 1").unwrap();
        assert!(c.matches(ts("2026-11-23T00:00:00Z"))); // Monday
        assert!(c.matches(ts("2026-12-01T00:00:00Z"))); // Tuesday, the 1st
        assert!(!c.matches(ts("2026-11-24T00:00:00Z")));
    }

    #[test]
    fn errors_name_the_field() {
        for (expr, field) in [
            ("60 * * * *", "minute"),
            ("* 24 * * *", "hour"),
            ("* * 0 * *", "day of month"),
            ("* * 32 * *", "day of month"),
            ("* * * 13 *", "month"),
            ("* * * * 7", "day of week"),
            ("* * * * MON", "day of week"),
            ("*/0 * * * *", "minute"),
            ("5-1 * * * *", "minute"),
        ] {
            let err = Cron::parse(expr).unwrap_err();
            assert!(err.starts_with(&format!("{field} field")), "{expr}: {err}");
        }
        assert!(Cron::parse("* * * *").unwrap_err().contains("5 fields"));
        assert!(Cron::parse("* * * * * *").unwrap_err().contains("5 fields"));
        assert!(Cron::parse("0 0 31 4 *").unwrap_err().contains("never fires"));
    }
}
