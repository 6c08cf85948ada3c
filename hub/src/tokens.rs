//! API tokens: random secrets shown once, stored as SHA-256 hashes, compared in constant time.

use crate::host_tables::{self, Sql, TokenRecord};
use quota_core::{Caller, Timestamp};
use sha2::{Digest, Sha256};

/// Bytes of randomness in a token.
const token_random_bytes: usize = 32;
/// Every token starts so; a leaked one is easy to recognise in a scan.
const token_prefix: &str = "qh_";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// Equal strings, in time that depends only on their lengths.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A new secret.
pub fn generate() -> Result<String, String> {
    let mut buf = [0u8; token_random_bytes];
    getrandom::fill(&mut buf).map_err(|e| format!("no randomness for a token: {e}"))?;
    Ok(format!("{token_prefix}{}", hex(&buf)))
}

/// Creates a token for `name` and returns its secret (stored only as its hash).
pub fn issue(
    db: &mut (impl Sql + ?Sized),
    name: &str,
    admin: bool,
    scopes: &[String],
    now: Timestamp,
) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("--user: must not be empty".into());
    }
    let secret = generate()?;
    let record = TokenRecord {
        hash: sha256_hex(secret.as_bytes()),
        name: name.to_lowercase(),
        admin,
        scopes: scopes.to_vec(),
        created_at: now,
    };
    host_tables::put_token(db, &record).map_err(|e| e.to_string())?;
    Ok(secret)
}

/// The secret of an `Authorization: token <t>` (or `Bearer <t>`) header.
pub fn from_header(value: Option<&str>) -> Option<&str> {
    let v = value?.trim();
    let (scheme, secret) = v.split_once(' ')?;
    let secret = secret.trim();
    let known = scheme.eq_ignore_ascii_case("token") || scheme.eq_ignore_ascii_case("bearer");
    (known && !secret.is_empty()).then_some(secret)
}

/// The caller a secret stands for; `None` for an unknown secret.
pub fn authenticate(db: &mut (impl Sql + ?Sized), secret: &str) -> Result<Option<Caller>, String> {
    let hash = sha256_hex(secret.as_bytes());
    let found = host_tables::find_token(db, &hash).map_err(|e| e.to_string())?;
    Ok(found
        .filter(|t| constant_time_eq(&t.hash, &hash))
        .map(|t| Caller {
            name: t.name,
            admin: t.admin,
            scopes: t.scopes,
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quota_host::{Database, SqliteDb};

    #[test]
    fn issued_tokens_authenticate_and_others_do_not() {
        let mut db = SqliteDb::memory().unwrap();
        host_tables::ensure_schema(&mut db).unwrap();
        let b: &mut dyn Database = &mut db;
        let scopes = vec!["quota:sessions".to_string()];
        let t = issue(b, " Hub ", false, &scopes, Timestamp(1)).unwrap();
        assert!(t.starts_with("qh_") && t.len() == 3 + 64, "{t}");
        let c = authenticate(b, &t).unwrap().expect("known");
        assert_eq!((c.name.as_str(), c.admin, c.scopes), ("hub", false, scopes));
        assert_eq!(authenticate(b, &format!("{t}x")).unwrap(), None);
        assert_ne!(issue(b, "hub", false, &[], Timestamp(1)).unwrap(), t, "random");
    }

    #[test]
    fn headers() {
        assert_eq!(from_header(Some("token abc")), Some("abc"));
        assert_eq!(from_header(Some("Bearer  abc ")), Some("abc"));
        assert_eq!(from_header(Some("Basic abc")), None);
        assert_eq!(from_header(Some("token")), None);
        assert_eq!(from_header(None), None);
    }

    #[test]
    fn constant_time_comparison_is_equality() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "ab"));
    }
}
