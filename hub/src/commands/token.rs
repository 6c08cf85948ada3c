//! `quota-hub token issue | list | revoke`: on the database directly (tokens are quota-hub's rows).

use std::process::ExitCode;

use quota_core::Timestamp;
use quota_host::Database;

use crate::cli::TokenCommand;
use crate::clock::Clock;
use crate::storage::{db, host_tables};
use crate::tokens;
use crate::tokens::rows::{self, TokenRecord};

pub fn run(command: TokenCommand) -> Result<ExitCode, String> {
    let url = match &command {
        TokenCommand::Issue { db, .. } | TokenCommand::List { db } | TokenCommand::Revoke { db, .. } => db,
    };
    let rt = crate::engine::runtime()?;
    let mut conn = db::parse(url)?.open(&rt, true, None)?;
    let conn: &mut dyn Database = conn.as_mut();
    host_tables::ensure_schema(conn).map_err(|e| e.to_string())?;
    let now = Clock::system()?.now();
    match command {
        TokenCommand::Issue {
            user,
            admin,
            scope,
            group,
            expires_in,
            ..
        } => {
            let expires_in = expires_in.as_deref().map(tokens::parse_duration).transpose()?;
            let scopes = tokens::scopes::with_groups(&scope, &group)?;
            let secret = tokens::issue(conn, &user, admin, &scopes, now, expires_in)?;
            println!("{secret}");
        }
        TokenCommand::List { .. } => {
            let all = rows::list_tokens(conn).map_err(|e| e.to_string())?;
            print!("{}", table(&all, now));
        }
        TokenCommand::Revoke { what, .. } => {
            let all = rows::list_tokens(conn).map_err(|e| e.to_string())?;
            let hashes = matching(&all, &what)?;
            conn.begin().map_err(|e| e.to_string())?;
            let n = match rows::delete_tokens(conn, &hashes) {
                Ok(n) => n,
                Err(e) => {
                    let _ = conn.rollback();
                    return Err(e.to_string());
                }
            };
            conn.commit().map_err(|e| e.to_string())?;
            println!("revoked {n} token(s)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The hashes of the tokens `what` names: a whole secret, `qh_` and at least 6 of its first
/// characters, or a user or service name. Naming none is an error (a typo must not look done).
fn matching(all: &[TokenRecord], what: &str) -> Result<Vec<String>, String> {
    let what = what.trim();
    let hashes: Vec<String> = if let Some(rest) = what.strip_prefix("qh_") {
        if rest.len() > tokens::PREFIX_CHARS {
            // The whole secret (or more of it than is kept): by its hash.
            let hash = tokens::sha256_hex(what.as_bytes());
            all.iter()
                .filter(|t| t.hash == hash)
                .map(|t| t.hash.clone())
                .collect()
        } else if rest.len() < 6 {
            return Err(format!(
                "`{what}`: give at least 6 characters after qh_ (as `token list` shows them), or a name"
            ));
        } else {
            let found: Vec<String> = all
                .iter()
                .filter(|t| t.prefix.as_deref().is_some_and(|p| p.starts_with(rest)))
                .map(|t| t.hash.clone())
                .collect();
            if found.len() > 1 {
                return Err(format!(
                    "`{what}` is the start of {} tokens; give more characters, or the name to revoke them all",
                    found.len()
                ));
            }
            found
        }
    } else {
        let name = what.to_lowercase();
        all.iter()
            .filter(|t| t.name == name)
            .map(|t| t.hash.clone())
            .collect()
    };
    if hashes.is_empty() {
        return Err(format!(
            "no token matches `{what}` (see `quota-hub token list`); nothing revoked"
        ));
    }
    Ok(hashes)
}

fn when(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "-".to_string(), |t| format!("{t}Z"))
}

/// `token list`'s table: one line per token, aligned columns.
fn table(all: &[TokenRecord], now: Timestamp) -> String {
    let mut rows = vec![[
        "NAME".to_string(),
        "TOKEN".to_string(),
        "SCOPES".to_string(),
        "ADMIN".to_string(),
        "CREATED".to_string(),
        "EXPIRES".to_string(),
        "LAST USED".to_string(),
    ]];
    for t in all {
        let expires = match t.expires_at {
            Some(_) if t.expired(now) => format!("{} (expired)", when(t.expires_at)),
            other => when(other),
        };
        rows.push([
            t.name.clone(),
            match (&t.prefix, t.imported) {
                (Some(p), false) => format!("qh_{p}..."),
                (Some(p), true) => format!("qh_{p}... (imported)"),
                (None, true) => "(imported)".to_string(),
                (None, false) => "(issued before 0.2)".to_string(),
            },
            if t.scopes.is_empty() {
                "-".to_string()
            } else {
                t.scopes.join(",")
            },
            if t.admin { "yes" } else { "no" }.to_string(),
            when(Some(t.created_at)),
            expires,
            when(t.last_used),
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &str, prefix: Option<&str>, hash: &str) -> TokenRecord {
        TokenRecord {
            hash: hash.into(),
            name: name.into(),
            admin: false,
            scopes: vec![],
            created_at: Timestamp(0),
            prefix: prefix.map(str::to_string),
            expires_at: None,
            last_used: None,
            imported: false,
        }
    }

    #[test]
    fn revoke_names_tokens_by_name_prefix_or_secret_and_never_matches_nothing_silently() {
        let secret = "qh_abcdef0123456789";
        let all = vec![
            token("hub", Some("abcdef01"), &tokens::sha256_hex(secret.as_bytes())),
            token("hub", Some("abcd9999"), "h2"),
            token("cron", None, "h3"),
        ];
        assert_eq!(matching(&all, "HUB").unwrap().len(), 2);
        assert_eq!(matching(&all, "qh_abcdef").unwrap(), vec![all[0].hash.clone()]);
        assert_eq!(matching(&all, secret).unwrap(), vec![all[0].hash.clone()]);
        assert!(matching(&all, "qh_abcd").unwrap_err().contains("at least 6"));
        assert!(matching(&all, "nobody").unwrap_err().contains("nothing revoked"));
        assert!(matching(&all, "qh_abcd99").is_ok());
        let twins = vec![
            token("a", Some("abcdef01"), "x"),
            token("b", Some("abcdef02"), "y"),
        ];
        assert!(matching(&twins, "qh_abcdef").unwrap_err().contains("2 tokens"));
    }
}
