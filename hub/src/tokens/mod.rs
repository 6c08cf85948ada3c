//! API tokens: random secrets shown once, stored as SHA-256 hashes, compared in constant time.

pub mod import;
pub mod rows;
pub mod scopes;

use std::collections::HashMap;
use std::sync::Mutex;

use crate::storage::host_tables::Sql;
use quota_core::{Caller, Timestamp};
use quota_host::HostError;
use rows::TokenRecord;
use sha2::{Digest, Sha256};

/// Bytes of randomness in a token.
const TOKEN_RANDOM_BYTES: usize = 32;
/// Every token starts so; a leaked one is easy to recognise in a scan.
pub const TOKEN_PREFIX: &str = "qh_";

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
    let mut buf = [0u8; TOKEN_RANDOM_BYTES];
    getrandom::fill(&mut buf).map_err(|e| format!("no randomness for a token: {e}"))?;
    Ok(format!("{TOKEN_PREFIX}{}", hex(&buf)))
}

/// Characters of the secret after `qh_` kept to tell tokens apart (`token list`, `token revoke`):
/// 32 of its 256 random bits.
pub const PREFIX_CHARS: usize = 8;

/// Creates a token for `name` and returns its secret (stored only as its hash). `expires_in`:
/// seconds from `now` after which it is refused.
pub fn issue(
    db: &mut (impl Sql + ?Sized),
    name: &str,
    admin: bool,
    scopes: &[String],
    now: Timestamp,
    expires_in: Option<i64>,
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
        prefix: Some(secret[TOKEN_PREFIX.len()..TOKEN_PREFIX.len() + PREFIX_CHARS].to_string()),
        expires_at: expires_in.map(|s| Timestamp(now.seconds().saturating_add(s))),
        last_used: None,
        imported: false,
    };
    rows::put_token(db, &record).map_err(|e| e.to_string())?;
    Ok(secret)
}

/// `--expires-in`: a whole number of days (`90d`), hours (`12h`), minutes (`30m`) or seconds
/// (`45s`), in seconds.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let unit = |c: char| match c {
        'd' => Some(86_400),
        'h' => Some(3_600),
        'm' => Some(60),
        's' => Some(1),
        _ => None,
    };
    let bad = || format!("--expires-in: `{text}` is not a duration like 90d, 12h, 30m or 45s");
    let last = t.chars().last().ok_or_else(bad)?;
    let per = unit(last).ok_or_else(bad)?;
    let n: i64 = t[..t.len() - 1].parse().map_err(|_| bad())?;
    if n <= 0 || t[..t.len() - 1].starts_with('+') {
        return Err(format!("--expires-in: `{text}` must be more than zero"));
    }
    n.checked_mul(per)
        .filter(|s| *s <= 100 * 366 * 86_400)
        .ok_or_else(|| format!("--expires-in: `{text}` is more than 100 years"))
}

/// The secret of an `Authorization: token <t>` (or `Bearer <t>`) header.
pub fn from_header(value: Option<&str>) -> Option<&str> {
    let v = value?.trim();
    let (scheme, secret) = v.split_once(' ')?;
    let secret = secret.trim();
    let known = scheme.eq_ignore_ascii_case("token") || scheme.eq_ignore_ascii_case("bearer");
    (known && !secret.is_empty()).then_some(secret)
}

/// The caller a secret stands for and the token's hash; `None` for an unknown or expired secret.
pub fn authenticate(
    db: &mut (impl Sql + ?Sized),
    secret: &str,
    now: Timestamp,
) -> Result<Option<(Caller, String)>, HostError> {
    let hash = sha256_hex(secret.as_bytes());
    let found = rows::find_token(db, &hash)?;
    Ok(found
        .filter(|t| constant_time_eq(&t.hash, &hash) && !t.expired(now))
        .map(|t| {
            (
                Caller {
                    name: t.name,
                    admin: t.admin,
                    scopes: t.scopes.iter().filter_map(|s| scopes::decoded(s)).collect(),
                },
                t.hash,
            )
        }))
}

/// Tokens used since the last write of `last_used`: noted by every request (in memory), written by
/// the server once a minute and at shutdown, so a busy server does not write a row per request.
#[derive(Default)]
pub struct Usage(Mutex<HashMap<String, Timestamp>>);

impl Usage {
    pub fn note(&self, hash: &str, now: Timestamp) {
        let mut used = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let t = used.entry(hash.to_string()).or_insert(now);
        *t = (*t).max(now);
    }

    /// Everything noted so far, forgotten here.
    pub fn take(&self) -> Vec<(String, Timestamp)> {
        let mut used = self.0.lock().unwrap_or_else(|p| p.into_inner());
        used.drain().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::host_tables;
    use quota_host::{Database, SqliteDb};

    #[test]
    fn issued_tokens_authenticate_and_others_do_not() {
        let mut db = SqliteDb::memory(&crate::engine::runtime().unwrap()).unwrap();
        host_tables::ensure_schema(&mut db).unwrap();
        let b: &mut dyn Database = &mut db;
        let scopes = vec!["quota:sessions".to_string()];
        let t = issue(b, " Hub ", false, &scopes, Timestamp(1), None).unwrap();
        assert!(t.starts_with("qh_") && t.len() == 3 + 64, "{t}");
        let (c, _) = authenticate(b, &t, Timestamp(2)).unwrap().expect("known");
        assert_eq!((c.name.as_str(), c.admin, c.scopes), ("hub", false, scopes));
        assert_eq!(authenticate(b, &format!("{t}x"), Timestamp(2)).unwrap(), None);
        assert_ne!(
            issue(b, "hub", false, &[], Timestamp(1), None).unwrap(),
            t,
            "random"
        );
    }

    #[test]
    fn an_expired_token_is_refused_from_its_expiry_on() {
        let mut db = SqliteDb::memory(&crate::engine::runtime().unwrap()).unwrap();
        host_tables::ensure_schema(&mut db).unwrap();
        let b: &mut dyn Database = &mut db;
        let t = issue(b, "cron", false, &[], Timestamp(1_000), Some(60)).unwrap();
        assert!(authenticate(b, &t, Timestamp(1_059)).unwrap().is_some());
        assert_eq!(authenticate(b, &t, Timestamp(1_060)).unwrap(), None);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90d"), Ok(90 * 86_400));
        assert_eq!(parse_duration("12h"), Ok(12 * 3_600));
        assert_eq!(parse_duration("30m"), Ok(1_800));
        assert_eq!(parse_duration(" 45s "), Ok(45));
        for bad in [
            "",
            "d",
            "90",
            "0d",
            "-1d",
            "+1d",
            "1.5d",
            "90 d",
            "99999999999d",
            "1w",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
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
