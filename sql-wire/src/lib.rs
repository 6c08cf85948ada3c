//! `quota-sql-wire`: the values the component's `sql` import carries between the component and its
//! host, as JSON text: [`SqlCell`] (an integer within +-(2^53-1), a string, or null), read without
//! an intermediate tree, and the integers and strings written by hand (`core::fmt` costs several
//! times more inside the component). Both sides of the bridge use it: `quota-wasm` (the rows it
//! reads) and `quota-host` (the parameters it binds); the engine's rules (`quota-core`) never do.

/// The largest integer the wire carries: every integer JSON readers agree on (2^53 - 1); the
/// engine's `limits::json_int_abs_max` is the same (a host-shim test holds them equal).
pub const INT_ABS_MAX: i64 = (1 << 53) - 1;

/// One value as the engine stores it and the SQL bridge carries it: an integer within
/// +-(2^53-1), a string, or null (flags are 0/1). Read from JSON without an intermediate tree;
/// anything else (a float, a boolean, an array) is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SqlCell {
    Int(i64),
    Text(String),
    Null,
}

impl SqlCell {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            SqlCell::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            SqlCell::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl From<i64> for SqlCell {
    fn from(v: i64) -> SqlCell {
        SqlCell::Int(v)
    }
}

impl From<&str> for SqlCell {
    fn from(v: &str) -> SqlCell {
        SqlCell::Text(v.to_string())
    }
}

impl From<String> for SqlCell {
    fn from(v: String) -> SqlCell {
        SqlCell::Text(v)
    }
}

impl std::fmt::Display for SqlCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SqlCell::Int(i) => write!(f, "{i}"),
            SqlCell::Text(s) => write!(f, "{s:?}"),
            SqlCell::Null => f.write_str("null"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for SqlCell {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SqlCell, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SqlCell;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer within +-(2^53-1), a string or null")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SqlCell, E> {
                let max = INT_ABS_MAX;
                if (-max..=max).contains(&v) {
                    Ok(SqlCell::Int(v))
                } else {
                    Err(E::custom(format!("{v} is outside +-(2^53-1)")))
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SqlCell, E> {
                match i64::try_from(v) {
                    Ok(i) => self.visit_i64(i),
                    Err(_) => Err(E::custom(format!("{v} is outside +-(2^53-1)"))),
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SqlCell, E> {
                Ok(SqlCell::Text(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<SqlCell, E> {
                Ok(SqlCell::Text(v))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<SqlCell, E> {
                Ok(SqlCell::Null)
            }
        }
        d.deserialize_any(V)
    }
}

/// Appends `v` in decimal: JSON text without `core::fmt`, which costs several times more in the
/// component (the SQL bridge writes every parameter and row this way).
pub fn push_int(out: &mut String, v: i64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push('-');
    }
    for &d in &buf[i..] {
        out.push(char::from(d));
    }
}

/// Appends `s` as a JSON string: quoted, with `"`, `\\` and control characters escaped and every
/// other character as it is, copied in runs.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_strings_are_written_as_json() {
        for v in [0, 7, -7, 1234567890, i64::MAX, i64::MIN, -(1 << 53) + 1] {
            let mut out = String::new();
            push_int(&mut out, v);
            assert_eq!(out, v.to_string());
        }
        let text = "a\"b\\c\nd\r\te\u{1}\u{1f}é✓";
        let mut out = String::new();
        push_string(&mut out, text);
        assert_eq!(out, serde_json::to_string(text).unwrap());
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), text);
    }

    #[test]
    fn values_outside_the_exact_integer_range_are_refused() {
        assert_eq!(
            serde_json::from_str::<SqlCell>("9007199254740991").unwrap(),
            SqlCell::Int((1 << 53) - 1)
        );
        assert!(serde_json::from_str::<SqlCell>("9007199254740992").is_err());
        assert!(serde_json::from_str::<SqlCell>("1.5").is_err());
        assert_eq!(serde_json::from_str::<SqlCell>("null").unwrap(), SqlCell::Null);
    }
}
