//! JSON text to a `Value`, refusing an object that has the same key twice. serde_json keeps the last
//! value of a repeated key, so `{"amount": 1, "amount": 1000000}` would add a million while a reader
//! of the body (a log, a proxy's filter, a reviewer) sees 1; a request body is refused instead,
//! naming the key's path.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::json::join;

/// Why a text is not a strict JSON value.
#[derive(Debug, PartialEq, Eq)]
pub enum StrictError {
    /// Not JSON (serde_json's message, with line and column).
    Malformed(String),
    /// An object has this key (full path: `targets.usernames`) more than once.
    Duplicate(String),
}

/// Parses `text` as serde_json does, except that a repeated key in any object is an error.
pub fn parse(text: &str) -> Result<Value, StrictError> {
    let duplicate = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = Node {
        parent: "",
        at: At::Root,
        duplicate: &duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (parsed, duplicate.into_inner()) {
        (_, Some(path)) => Err(StrictError::Duplicate(path)),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(StrictError::Malformed(e.to_string())),
    }
}

/// One value, where it is in its parent (at `parent`'s path); the first repeated key found is
/// noted in `duplicate`. The value's own path is written out only for an object or a list (whose
/// children need it): a list of 50 names once wrote 50 paths nobody read (issue 36).
struct Node<'p> {
    parent: &'p str,
    at: At<'p>,
    duplicate: &'p RefCell<Option<String>>,
}

#[derive(Clone, Copy)]
enum At<'p> {
    Root,
    Key(&'p str),
    Index(usize),
}

impl Node<'_> {
    fn path(&self) -> String {
        match self.at {
            At::Root => String::new(),
            At::Key(key) => join(self.parent, key),
            At::Index(i) => format!("{}[{i}]", self.parent),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // As serde_json's own `Value` does.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let here = self.path();
        let mut out = Vec::new();
        loop {
            let child = Node {
                parent: &here,
                at: At::Index(out.len()),
                duplicate: self.duplicate,
            };
            match seq.next_element_seed(child)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let here = self.path();
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let path = join(&here, &key);
                *self.duplicate.borrow_mut() = Some(path.clone());
                return Err(de::Error::custom(format!("duplicate key `{path}`")));
            }
            let v = map.next_value_seed(Node {
                parent: &here,
                at: At::Key(&key),
                duplicate: self.duplicate,
            })?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_what_serde_json_reads() {
        for text in [
            r#"{"a": 1, "b": [1, 2.5, -3, "x", null, true], "c": {"d": {}}, "e": 1e400}"#,
            "[]",
            "0.1",
            r#""\u00e9""#,
            "18446744073709551615",
        ] {
            let want: Result<Value, _> = serde_json::from_str(text);
            match want {
                Ok(v) => assert_eq!(parse(text), Ok(v), "{text}"),
                Err(_) => assert!(matches!(parse(text), Err(StrictError::Malformed(_))), "{text}"),
            }
        }
    }

    #[test]
    fn a_repeated_key_is_named_by_its_path_at_any_depth() {
        let cases = [
            (r#"{"action":"add","amount":1,"amount":1000000}"#, "amount"),
            // Found by fuzzing (tests/fuzz-regressions/strict_json): an empty key is named `""`.
            (r#"{"":null,"":1}"#, "\"\""),
            (r#"{"targets":{"":1,"":2}}"#, "targets.\"\""),
            (
                r#"{"targets":{"usernames":["a"],"usernames":["b"]}}"#,
                "targets.usernames",
            ),
            (
                r#"{"users":[{"username":"a"},{"username":"b","username":"c"}]}"#,
                "users[1].username",
            ),
            (r#"{"a":{"b":1},"a":{"b":1}}"#, "a"),
            (r#"{"a":["x",[{"y":1}],[1,{"x":1,"x":2}]]}"#, "a[2][1].x"),
            (r#"[{"x":1},{"x":1,"x":1}]"#, "[1].x"),
        ];
        for (text, path) in cases {
            assert_eq!(parse(text), Err(StrictError::Duplicate(path.into())), "{text}");
        }
    }

    #[test]
    fn malformed_text_and_trailing_characters_are_malformed() {
        for text in ["{", r#"{"a":1} x"#, "", r#"{"a" 1}"#] {
            assert!(matches!(parse(text), Err(StrictError::Malformed(_))), "{text}");
        }
    }
}
