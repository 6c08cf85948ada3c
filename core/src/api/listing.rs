//! List answers written straight from their rows.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// `{"<key>": [rows...]}`, and for a paged list `"<next key>": <next>` after the rows (`null` on the
/// last page), written straight from the rows. `json!` would first copy every row into a `Value`
/// tree: for the admin list of 50,000 users that copy took three times as long as writing the
/// bytes (docs/performance.md). The bytes are the same, the keys' order included.
pub(super) struct Listing<'a, T, N> {
    key: &'static str,
    rows: &'a [T],
    next: Option<(&'static str, N)>,
}

impl<'a, T> Listing<'a, T, ()> {
    pub(super) fn all(key: &'static str, rows: &'a [T]) -> Self {
        Listing {
            key,
            rows,
            next: None,
        }
    }
}

impl<'a, T, N> Listing<'a, T, N> {
    pub(super) fn paged(key: &'static str, rows: &'a [T], next_key: &'static str, next: N) -> Self {
        Listing {
            key,
            rows,
            next: Some((next_key, next)),
        }
    }
}

impl<T: Serialize, N: Serialize> Serialize for Listing<'_, T, N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1 + usize::from(self.next.is_some())))?;
        m.serialize_entry(self.key, self.rows)?;
        if let Some((key, next)) = &self.next {
            m.serialize_entry(key, next)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_bytes_are_those_of_the_json_macro() {
        let rows = vec![json!({"b": 1, "a": [2, 3]}), json!({"c": "x"})];
        let all = serde_json::to_string(&Listing::all("users", &rows)).unwrap();
        assert_eq!(all, json!({ "users": rows }).to_string());
        for next in [Some("u9".to_string()), None] {
            let paged = serde_json::to_string(&Listing::paged("users", &rows, "next_after", &next)).unwrap();
            assert_eq!(paged, json!({ "users": rows, "next_after": next }).to_string());
        }
        let none: Vec<i64> = Vec::new();
        assert_eq!(
            serde_json::to_string(&Listing::all("users", &none)).unwrap(),
            r#"{"users":[]}"#
        );
    }
}
