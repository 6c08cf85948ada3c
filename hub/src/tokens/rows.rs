//! The `api_tokens` rows: issued tokens by the hash of their secret (the secret is never stored).

use quota_core::Timestamp;
use quota_host::{HostError, SqlCell};

use crate::storage::host_tables::{bad_row, int, text, Sql};

/// An API token, by the hash of its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRecord {
    /// Hex SHA-256 of the secret.
    pub hash: String,
    /// The user or service the token acts as.
    pub name: String,
    pub admin: bool,
    /// Scopes as stored (`quota:sessions`, `quota:refresh`, `quota:admin`, `quota:metrics`,
    /// `quota:manage!group=<g>` with `<g>` encoded: `scopes.rs`).
    pub scopes: Vec<String>,
    pub created_at: Timestamp,
    /// The secret's first characters after `qh_`, to tell tokens apart in a list and revoke one
    /// (None for tokens issued before quota-hub kept it).
    pub prefix: Option<String>,
    /// After this time the token is refused.
    pub expires_at: Option<Timestamp>,
    /// When a request last used it (written at most once a minute).
    pub last_used: Option<Timestamp>,
    /// Imported from `serve --tokens` (its secret is the operator's), not issued here.
    pub imported: bool,
}

impl TokenRecord {
    pub fn expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|t| now >= t)
    }
}

const COLUMNS: &str = "hash, name, admin, scopes, created_at, prefix, expires_at, last_used, imported";

fn opt_int(v: &SqlCell) -> Result<Option<Timestamp>, HostError> {
    match v {
        SqlCell::Null => Ok(None),
        v => Ok(Some(Timestamp(int(v, "api_tokens")?))),
    }
}

fn record(r: &[SqlCell]) -> Result<TokenRecord, HostError> {
    let [hash, name, admin, scopes, created_at, prefix, expires_at, last_used, imported] = r else {
        return Err(bad_row("api_tokens"));
    };
    Ok(TokenRecord {
        hash: text(hash, "api_tokens")?,
        name: text(name, "api_tokens")?,
        admin: int(admin, "api_tokens")? != 0,
        scopes: crate::tokens::scopes::parse_stored(&text(scopes, "api_tokens")?),
        created_at: Timestamp(int(created_at, "api_tokens")?),
        prefix: match prefix {
            SqlCell::Null => None,
            v => Some(text(v, "api_tokens")?),
        },
        expires_at: opt_int(expires_at)?,
        last_used: opt_int(last_used)?,
        // NULL in rows written before the column existed: issued.
        imported: matches!(imported, SqlCell::Int(1)),
    })
}

fn opt_seconds(t: Option<Timestamp>) -> SqlCell {
    t.map_or(SqlCell::Null, |t| t.seconds().into())
}

pub fn put_token(db: &mut (impl Sql + ?Sized), t: &TokenRecord) -> Result<(), HostError> {
    db.run(
        &format!("INSERT INTO api_tokens ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
        &[
            t.hash.as_str().into(),
            t.name.as_str().into(),
            i64::from(t.admin).into(),
            crate::tokens::scopes::stored(&t.scopes).into(),
            t.created_at.seconds().into(),
            t.prefix.as_deref().map_or(SqlCell::Null, SqlCell::from),
            opt_seconds(t.expires_at),
            opt_seconds(t.last_used),
            i64::from(t.imported).into(),
        ],
    )
    .map(|_| ())
}

pub fn find_token(db: &mut (impl Sql + ?Sized), hash: &str) -> Result<Option<TokenRecord>, HostError> {
    let rows = db.run(
        &format!("SELECT {COLUMNS} FROM api_tokens WHERE hash = ?1"),
        &[hash.into()],
    )?;
    rows.first().map(|r| record(r)).transpose()
}

/// Every token, by name, then creation time.
pub fn list_tokens(db: &mut (impl Sql + ?Sized)) -> Result<Vec<TokenRecord>, HostError> {
    db.run(
        &format!("SELECT {COLUMNS} FROM api_tokens ORDER BY name, created_at, hash"),
        &[],
    )?
    .iter()
    .map(|r| record(r))
    .collect()
}

/// Deletes the tokens with these hashes; returns how many.
pub fn delete_tokens(db: &mut (impl Sql + ?Sized), hashes: &[String]) -> Result<u64, HostError> {
    let mut n = 0;
    for h in hashes {
        n += db
            .run(
                "DELETE FROM api_tokens WHERE hash = ?1 RETURNING 1",
                &[h.as_str().into()],
            )?
            .len() as u64;
    }
    Ok(n)
}

/// Records that these tokens were used at `when` (a later time than the recorded one only).
pub fn touch_tokens(db: &mut (impl Sql + ?Sized), used: &[(String, Timestamp)]) -> Result<(), HostError> {
    for (hash, when) in used {
        db.run(
            "UPDATE api_tokens SET last_used = ?2 WHERE hash = ?1 AND (last_used IS NULL OR last_used < ?2)",
            &[hash.as_str().into(), when.seconds().into()],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::host_tables;
    use quota_host::{Database, SqliteDb};

    #[test]
    fn a_table_from_quota_hub_0_1_gains_the_new_columns_and_its_tokens_keep_working() {
        let mut db = SqliteDb::memory(&crate::engine::runtime().unwrap()).unwrap();
        let b: &mut dyn Database = &mut db;
        b.query(
            "CREATE TABLE api_tokens (hash TEXT PRIMARY KEY, name TEXT NOT NULL, admin INTEGER NOT NULL,
             scopes TEXT NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID",
            &[],
        )
        .unwrap();
        b.query(
            "INSERT INTO api_tokens VALUES ('h1', 'hub', 0, 'quota:sessions', 5)",
            &[],
        )
        .unwrap();
        host_tables::ensure_schema(b).unwrap();
        host_tables::ensure_schema(b).unwrap();
        let t = find_token(b, "h1").unwrap().expect("kept");
        assert_eq!(
            (t.name.as_str(), t.prefix, t.expires_at, t.last_used, t.imported),
            ("hub", None, None, None, false)
        );
        touch_tokens(b, &[("h1".into(), Timestamp(70)), ("h1".into(), Timestamp(60))]).unwrap();
        assert_eq!(
            find_token(b, "h1").unwrap().unwrap().last_used,
            Some(Timestamp(70))
        );
        assert_eq!(delete_tokens(b, &["h1".into(), "nope".into()]).unwrap(), 1);
        assert!(list_tokens(b).unwrap().is_empty());
    }
}
