//! Query strings of the REST routes: percent-decoding and strict parameters (unknown or repeated
//! ones are refused).

use super::*;

/// Decodes `%XX` escapes (and `+` as space in queries). `None` when the result is not UTF-8.
pub(super) fn percent_decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let v = u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                out.push(v);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

pub(super) fn parse_query(q: &str) -> Result<Vec<(String, String)>, QuotaError> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match (percent_decode(k, true), percent_decode(v, true)) {
                (Some(k), Some(v)) => Ok((k, v)),
                _ => Err(QuotaError::invalid("query", "invalid percent-encoding")),
            }
        })
        .collect()
}

pub(super) fn no_query(q: &[(String, String)]) -> Result<(), QuotaError> {
    QueryFields::new(q).finish()
}

/// Reads query parameters strictly: unknown or repeated parameters are refused.
pub(super) struct QueryFields<'q> {
    pairs: &'q [(String, String)],
    taken: Vec<&'q str>,
}

impl<'q> QueryFields<'q> {
    pub(super) fn new(pairs: &'q [(String, String)]) -> Self {
        QueryFields {
            pairs,
            taken: Vec::new(),
        }
    }

    pub(super) fn take(&mut self, key: &'q str) -> Option<String> {
        self.taken.push(key);
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    }

    pub(super) fn int(&mut self, key: &'q str, min: i64, max: i64) -> Result<Option<i64>, QuotaError> {
        let Some(v) = self.take(key) else { return Ok(None) };
        match v.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(QuotaError::invalid(
                key,
                format!("must be an integer from {min} to {max}, got `{v}`"),
            )),
        }
    }

    pub(super) fn finish(self) -> Result<(), QuotaError> {
        for (i, (k, _)) in self.pairs.iter().enumerate() {
            // An empty name (`?=1`) is spelled `""`, as in a body's key paths.
            let name = crate::json::join("", k);
            if !self.taken.contains(&k.as_str()) {
                return Err(QuotaError::invalid(name, "unknown query parameter"));
            }
            if self.pairs[..i].iter().any(|(p, _)| p == k) {
                return Err(QuotaError::invalid(name, "given more than once"));
            }
        }
        Ok(())
    }
}
