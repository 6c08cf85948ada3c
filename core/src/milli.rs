//! Exact non-float decimals with three fractional digits (rates, estimated costs).
//!
//! A rate like `2.5` is held as `2500` thousandths so that `rate x minutes` is exact and every host
//! (Rust, JavaScript, Python) prints the same digits.

use std::fmt;

use serde::{Serialize, Serializer};

/// A decimal held as an integer number of thousandths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Milli(pub i64);

impl Milli {
    pub const fn from_int(n: i64) -> Option<Milli> {
        match n.checked_mul(1000) {
            Some(v) => Some(Milli(v)),
            None => None,
        }
    }

    /// Thousandths.
    pub const fn raw(self) -> i64 {
        self.0
    }

    /// `self x n`, exact; `None` when it leaves `i64`.
    pub fn times(self, n: i64) -> Option<Milli> {
        self.0.checked_mul(n).map(Milli)
    }

    /// Smallest integer not below the value.
    pub fn ceil(self) -> i64 {
        self.0.div_euclid(1000) + i64::from(self.0.rem_euclid(1000) != 0)
    }

    /// Parses a plain decimal (`"2"`, `"0.5"`, `"-1.25"`, `"1e2"` is refused) with at most three
    /// fractional digits. The error says what is wrong, without the key (the caller adds it).
    pub fn parse(text: &str) -> Result<Milli, String> {
        let t = text.trim();
        let (neg, digits) = match t.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let (int_part, frac_part) = match digits.split_once('.') {
            Some((i, f)) => (i, f),
            None => (digits, ""),
        };
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int_part.is_empty() || !all_digits(int_part) || !all_digits(frac_part) {
            return Err(format!("`{text}` is not a plain decimal number"));
        }
        if digits.contains('.') && frac_part.is_empty() {
            return Err(format!("`{text}` is not a plain decimal number"));
        }
        let frac_trimmed = frac_part.trim_end_matches('0');
        if frac_trimmed.len() > crate::limits::RATE_FRACTION_DIGITS_MAX as usize {
            return Err(format!("`{text}` has more than 3 fractional digits"));
        }
        let too_large = || format!("`{text}` is too large");
        let mut value: i64 = 0;
        for b in int_part.bytes() {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(i64::from(b - b'0')))
                .ok_or_else(too_large)?;
        }
        let mut frac: i64 = 0;
        for i in 0..3 {
            let d = frac_trimmed.as_bytes().get(i).map_or(0, |b| i64::from(b - b'0'));
            frac = frac * 10 + d;
        }
        let magnitude = value
            .checked_mul(1000)
            .and_then(|v| v.checked_add(frac))
            .ok_or_else(too_large)?;
        Ok(Milli(if neg { -magnitude } else { magnitude }))
    }

    /// The JSON number for this value: an integer when whole (`4`, not `4.0`), else the nearest
    /// double, whose shortest form is exactly these digits.
    pub fn to_json(self) -> serde_json::Value {
        if self.0 % 1000 == 0 {
            serde_json::Value::from(self.0 / 1000)
        } else {
            serde_json::Value::from(self.0 as f64 / 1000.0)
        }
    }
}

/// Shortest exact decimal: `4`, `0.5`, `7.25`, `-1.125`.
impl fmt::Display for Milli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let (int, frac) = (abs / 1000, abs % 1000);
        if frac == 0 {
            return write!(f, "{sign}{int}");
        }
        let mut digits = format!("{frac:03}");
        while digits.ends_with('0') {
            digits.pop();
        }
        write!(f, "{sign}{int}.{digits}")
    }
}

impl Serialize for Milli {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_shortest() {
        for (text, raw, shown) in [
            ("2", 2000, "2"),
            ("0.5", 500, "0.5"),
            ("7.250", 7250, "7.25"),
            ("0.001", 1, "0.001"),
            ("-1.125", -1125, "-1.125"),
            ("10.0", 10000, "10"),
        ] {
            let m = Milli::parse(text).unwrap();
            assert_eq!(m.raw(), raw, "{text}");
            assert_eq!(m.to_string(), shown, "{text}");
        }
    }

    #[test]
    fn refuses_bad_decimals() {
        for text in [
            "",
            ".5",
            "5.",
            "1e3",
            "0.0001",
            "abc",
            "1.2.3",
            "99999999999999999999",
        ] {
            assert!(Milli::parse(text).is_err(), "{text} should be refused");
        }
    }

    #[test]
    fn json_form_is_shortest() {
        assert_eq!(Milli(4000).to_json().to_string(), "4");
        assert_eq!(Milli(7500).to_json().to_string(), "7.5");
        assert_eq!(Milli(100).to_json().to_string(), "0.1");
        assert_eq!(Milli(2675).to_json().to_string(), "2.675");
    }

    #[test]
    fn ceil_rounds_up_positive_values() {
        assert_eq!(Milli(7001).ceil(), 8);
        assert_eq!(Milli(7000).ceil(), 7);
        assert_eq!(Milli(1).ceil(), 1);
        assert_eq!(Milli(0).ceil(), 0);
    }
}
