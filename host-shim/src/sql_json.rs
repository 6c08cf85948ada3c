//! SQL values as the component sends and reads them: JSON parameters (borrowed where they can be),
//! rows written back as JSON.

use quota_sql_wire::{push_int, push_string};

use crate::sql_error::SqlError;
use quota_sql_wire::SqlCell;

/// A JSON array of values into parameters; anything but integers, strings and null is refused.
pub fn params_from_json(json: &str) -> Result<Vec<SqlCell>, SqlError> {
    serde_json::from_str(json).map_err(|e| SqlError::Other(format!("parameters: {e}")))
}

/// A JSON array of arrays into parameter rows.
pub fn param_rows_from_json(json: &str) -> Result<Vec<Vec<SqlCell>>, SqlError> {
    serde_json::from_str(json).map_err(|e| SqlError::Other(format!("parameter rows: {e}")))
}

/// A parameter as the component sent it, its text borrowed from the JSON unless it had escapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    Int(i64),
    Text(std::borrow::Cow<'a, str>),
    Null,
}

impl<'a> From<&'a SqlCell> for Param<'a> {
    fn from(v: &'a SqlCell) -> Param<'a> {
        match v {
            SqlCell::Int(i) => Param::Int(*i),
            SqlCell::Text(s) => Param::Text(std::borrow::Cow::Borrowed(s)),
            SqlCell::Null => Param::Null,
        }
    }
}

impl From<&Param<'_>> for SqlCell {
    fn from(p: &Param<'_>) -> SqlCell {
        match p {
            Param::Int(i) => SqlCell::Int(*i),
            Param::Text(s) => SqlCell::Text(s.to_string()),
            Param::Null => SqlCell::Null,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Param<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Param<'de>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Param<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer within +-(2^53-1), a string or null")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Param<'de>, E> {
                let max = quota_core::limits::JSON_INT_ABS_MAX;
                if (-max..=max).contains(&v) {
                    Ok(Param::Int(v))
                } else {
                    Err(E::custom(format!("{v} is outside +-(2^53-1)")))
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Param<'de>, E> {
                match i64::try_from(v) {
                    Ok(i) => self.visit_i64(i),
                    Err(_) => Err(E::custom(format!("{v} is outside +-(2^53-1)"))),
                }
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Param<'de>, E> {
                Ok(Param::Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Param<'de>, E> {
                Ok(Param::Text(std::borrow::Cow::Owned(v.to_string())))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Param<'de>, E> {
                Ok(Param::Null)
            }
        }
        d.deserialize_any(V)
    }
}

/// Calls `f` with each parameter row of a bulk write's JSON (an array of arrays), parsing one row
/// at a time into one reused buffer: a 1,000-row write allocates nothing per row.
pub fn for_each_param_row<'a>(
    json: &'a str,
    mut f: impl FnMut(&[Param<'a>]) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};

    struct Rows<'f, 'a, F> {
        f: &'f mut F,
        failed: &'f mut Option<SqlError>,
        _a: std::marker::PhantomData<&'a ()>,
    }
    struct Row<'b, 'a>(&'b mut Vec<Param<'a>>);

    impl<'de, 'b> DeserializeSeed<'de> for Row<'b, 'de> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de, 'b> Visitor<'de> for Row<'b, 'de> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a row: an array of parameters")
        }
        fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
            self.0.clear();
            while let Some(p) = seq.next_element()? {
                self.0.push(p);
            }
            Ok(())
        }
    }
    impl<'de, F: FnMut(&[Param<'de>]) -> Result<(), SqlError>> Visitor<'de> for Rows<'_, 'de, F> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of parameter rows")
        }
        fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
            let mut row = Vec::new();
            while seq.next_element_seed(Row(&mut row))?.is_some() {
                if let Err(e) = (self.f)(&row) {
                    *self.failed = Some(e);
                    return Err(serde::de::Error::custom("statement failed"));
                }
            }
            Ok(())
        }
    }

    let mut failed = None;
    let mut de = serde_json::Deserializer::from_str(json);
    let parsed = de
        .deserialize_seq(Rows {
            f: &mut f,
            failed: &mut failed,
            _a: std::marker::PhantomData,
        })
        .and_then(|()| de.end());
    match (failed, parsed) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(SqlError::Other(format!("parameter rows: {e}"))),
        (None, Ok(())) => Ok(()),
    }
}

/// One row as a JSON array, appended to `out`.
pub fn push_json_row<'a>(out: &mut String, row: impl IntoIterator<Item = Param<'a>>) {
    out.push('[');
    for (j, v) in row.into_iter().enumerate() {
        if j > 0 {
            out.push(',');
        }
        match v {
            Param::Int(n) => push_int(out, n),
            Param::Null => out.push_str("null"),
            Param::Text(s) => push_string(out, &s),
        }
    }
    out.push(']');
}

/// Rows as a JSON array of arrays.
pub fn rows_to_json(rows: &[Vec<SqlCell>]) -> String {
    let mut out = String::with_capacity(2 + rows.len() * 32);
    out.push('[');
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_row(&mut out, row.iter().map(Param::from));
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_carries_every_integer_the_engine_keeps() {
        assert_eq!(quota_sql_wire::INT_ABS_MAX, quota_core::limits::JSON_INT_ABS_MAX);
    }

    #[test]
    fn parameters_are_integers_strings_or_null() {
        assert_eq!(
            params_from_json(r#"[1,"a",null,-9007199254740991]"#).unwrap(),
            vec![
                SqlCell::Int(1),
                SqlCell::Text("a".into()),
                SqlCell::Null,
                SqlCell::Int(-quota_core::limits::JSON_INT_ABS_MAX)
            ]
        );
        for bad in [
            "[1.5]",
            "[true]",
            "[[1]]",
            "[{}]",
            "[9007199254740992]",
            "{}",
            "nope",
        ] {
            assert!(params_from_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parameter_rows_stream_one_at_a_time() {
        let mut seen = Vec::new();
        for_each_param_row(r#"[[1,"a\"b",null],[],["x"]]"#, |row| {
            seen.push(row.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![
                vec![Param::Int(1), Param::Text("a\"b".into()), Param::Null],
                vec![],
                vec![Param::Text("x".into())]
            ]
        );
        for bad in ["[[1.5]]", "[1]", "[[9007199254740992]]", "[[1]] x", "{}", "[[1]"] {
            assert!(for_each_param_row(bad, |_| Ok(())).is_err(), "{bad}");
        }
        // A failing statement stops the rows and its error comes back as it was.
        let mut calls = 0;
        let e = for_each_param_row("[[1],[2],[3]]", |_| {
            calls += 1;
            Err(SqlError::Busy)
        })
        .unwrap_err();
        assert_eq!((e, calls), (SqlError::Busy, 1));
    }

    #[test]
    fn rows_round_trip_through_json() {
        let rows = vec![
            vec![
                SqlCell::Int(-3),
                SqlCell::Text("é\"\n\u{1}\\".into()),
                SqlCell::Null,
            ],
            vec![],
        ];
        let json = rows_to_json(&rows);
        let back: Vec<Vec<serde_json::Value>> = serde_json::from_str(&json).unwrap();
        assert_eq!(back[0][1], "é\"\n\u{1}\\");
        assert_eq!(back[0][0], -3);
        assert!(back[1].is_empty());
    }
}
