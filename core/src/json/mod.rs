//! A strict reader for JSON objects: every getter names the full key path in its error, unknown keys
//! are reported, and problems are collected (config loading reports all of them at once; the HTTP
//! layer reports the first).

use serde_json::{Map, Value};

use crate::error::QuotaError;
use crate::milli::Milli;

/// Converts a JSON number exactly: integers directly, floats through their shortest
/// round-trip text (what the operator wrote, for any value a human writes).
pub fn milli(v: &serde_json::Value) -> Result<Milli, String> {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Milli::from_int(i).ok_or_else(|| format!("`{i}` is too large"))
            } else if let Some(f) = n.as_f64() {
                if !f.is_finite() {
                    return Err("must be a finite number".into());
                }
                let text = format!("{f}");
                Milli::parse(&text)
            } else {
                Err(format!("`{n}` is too large"))
            }
        }
        other => Err(format!("must be a number, got {}", kind(other))),
    }
}

/// A short name for a JSON value's type, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Joins a key path: `custom.quota` + `cpuRate`.
pub fn join(path: &str, key: &str) -> String {
    // An empty key is spelled `""`, so an error about it still names a field (found by fuzzing:
    // `{"": 1, "": 2}` was refused as `: appears more than once`).
    let key = if key.is_empty() { "\"\"" } else { key };
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Reads the fields of one JSON object.
pub struct Fields<'a> {
    path: String,
    map: Option<&'a Map<String, Value>>,
    seen: Vec<&'a str>,
    pub problems: Vec<QuotaError>,
}

static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();

impl<'a> Fields<'a> {
    /// `value` must be an object (or null/absent, read as empty when `absent_ok`).
    pub fn new(path: &str, value: Option<&'a Value>, absent_ok: bool) -> Fields<'a> {
        let mut f = Fields {
            path: path.to_string(),
            map: None,
            seen: Vec::new(),
            problems: Vec::new(),
        };
        match value {
            Some(Value::Object(m)) => f.map = Some(m),
            None | Some(Value::Null) if absent_ok => f.map = Some(EMPTY.get_or_init(Map::new)),
            None | Some(Value::Null) => f.problem(path, "is required"),
            Some(other) => f.problem(path, format!("must be an object, got {}", kind(other))),
        }
        f
    }

    pub fn is_object(&self) -> bool {
        self.map.is_some()
    }

    pub fn path_of(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub fn problem(&mut self, field: &str, message: impl Into<String>) {
        let field = if field.is_empty() { "body" } else { field };
        self.problems.push(QuotaError::invalid(field, message));
    }

    /// The raw value of `key`, with JSON null read as absent.
    pub fn raw(&mut self, key: &'a str) -> Option<&'a Value> {
        let map = self.map?;
        let (k, v) = map.get_key_value(key)?;
        self.seen.push(k.as_str());
        (!v.is_null()).then_some(v)
    }

    fn required<T>(&mut self, key: &'a str, v: Option<T>, present: bool) -> Option<T> {
        if !present && self.map.is_some() {
            let p = self.path_of(key);
            self.problem(&p, "is required");
        }
        v
    }

    pub fn opt_bool(&mut self, key: &'a str) -> Option<bool> {
        match self.raw(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                let p = self.path_of(key);
                self.problem(&p, format!("must be true or false, got {}", kind(other)));
                None
            }
        }
    }

    pub fn req_bool(&mut self, key: &'a str) -> Option<bool> {
        let present = self.raw_present(key);
        let v = self.opt_bool(key);
        self.required(key, v, present)
    }

    /// An integer within `min..=max`.
    pub fn opt_int(&mut self, key: &'a str, min: i64, max: i64) -> Option<i64> {
        let v = self.raw(key)?;
        let p = self.path_of(key);
        match v {
            Value::Number(n) => match n.as_i64() {
                Some(i) if (min..=max).contains(&i) => Some(i),
                Some(i) => {
                    self.problem(&p, format!("must be between {min} and {max}, got {i}"));
                    None
                }
                None if n.is_u64() => {
                    self.problem(&p, format!("must be between {min} and {max}, got {n}"));
                    None
                }
                None => {
                    self.problem(&p, format!("must be an integer, got {n}"));
                    None
                }
            },
            other => {
                self.problem(&p, format!("must be an integer, got {}", kind(other)));
                None
            }
        }
    }

    pub fn req_int(&mut self, key: &'a str, min: i64, max: i64) -> Option<i64> {
        let present = self.raw_present(key);
        let v = self.opt_int(key, min, max);
        self.required(key, v, present)
    }

    pub fn opt_str(&mut self, key: &'a str) -> Option<&'a str> {
        match self.raw(key)? {
            Value::String(s) => Some(s.as_str()),
            other => {
                let p = self.path_of(key);
                self.problem(&p, format!("must be a string, got {}", kind(other)));
                None
            }
        }
    }

    pub fn req_str(&mut self, key: &'a str) -> Option<&'a str> {
        let present = self.raw_present(key);
        let v = self.opt_str(key);
        self.required(key, v, present)
    }

    /// A non-negative exact decimal with at most three fractional digits, at most `max`.
    pub fn opt_milli(&mut self, key: &'a str, max: Milli) -> Option<Milli> {
        let v = self.raw(key)?;
        let p = self.path_of(key);
        match milli(v) {
            Ok(m) if m.raw() < 0 => {
                self.problem(&p, format!("must not be negative, got {m}"));
                None
            }
            Ok(m) if m > max => {
                self.problem(&p, format!("must be at most {max}, got {m}"));
                None
            }
            Ok(m) => Some(m),
            Err(e) => {
                self.problem(&p, e);
                None
            }
        }
    }

    /// A list of strings.
    pub fn opt_str_list(&mut self, key: &'a str, max_len: usize) -> Option<Vec<&'a str>> {
        let v = self.raw(key)?;
        let p = self.path_of(key);
        let Value::Array(items) = v else {
            self.problem(&p, format!("must be a list of strings, got {}", kind(v)));
            return None;
        };
        if items.len() > max_len {
            self.problem(&p, format!("must have at most {max_len} entries"));
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.as_str()),
                other => {
                    self.problem(
                        &format!("{p}[{i}]"),
                        format!("must be a string, got {}", kind(other)),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    fn raw_present(&self, key: &str) -> bool {
        self.map.and_then(|m| m.get(key)).is_some_and(|v| !v.is_null())
    }

    /// Keys of the object that no getter asked for.
    pub fn unknown_keys(&self) -> Vec<&'a str> {
        self.map.map_or_else(Vec::new, |m| {
            m.keys()
                .map(String::as_str)
                .filter(|k| !self.seen.contains(k))
                .collect()
        })
    }

    /// Reports every key no getter asked for as unknown, and returns all problems.
    pub fn finish(mut self) -> Vec<QuotaError> {
        for k in self.unknown_keys() {
            let p = self.path_of(k);
            self.problem(&p, "unknown field");
        }
        self.problems
    }

    /// Returns all problems, leaving unknown keys alone (for objects that may carry extra keys).
    pub fn finish_lenient(self) -> Vec<QuotaError> {
        self.problems
    }
}

#[cfg(test)]
mod tests;
