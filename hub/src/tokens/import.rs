//! `serve --tokens FILE`: tokens whose secrets the operator sets, as JupyterHub services take an
//! `api_token`, so that a Helm install needs no `kubectl exec` to issue the refresh CronJobs'
//! token: the chart renders FILE, the secret comes from a Kubernetes Secret (a mounted file or an
//! environment variable), and the server stores only its hash at start.
//!
//! ```yaml
//! - name: cron                 # the token's user or service name
//!   scopes: [quota:refresh]    # quota:sessions, quota:refresh, quota:admin, quota:metrics, quota:manage
//!   groups: [course-101]       # with quota:manage: the groups it manages
//!   admin: false               # optional
//!   secretFile: /etc/quota/refresh-token/token   # or secretEnv: QUOTA_REFRESH_TOKEN
//! ```
//!
//! With `--tokens`, the imported tokens are exactly the file's: an imported token whose secret
//! changed (a rotated Secret) or whose entry is gone is deleted at the next start. Tokens issued with
//! `token issue` are never touched.

use std::path::Path;

use quota_core::Timestamp;
use quota_host::HostError;

use super::rows::{self, TokenRecord};
use crate::storage::host_tables::Sql;
use crate::tokens;

/// The scopes a token may have (as `token issue --scope`).
pub const SCOPES_KNOWN: [&str; 5] = [
    "quota:sessions",
    "quota:refresh",
    "quota:admin",
    "quota:metrics",
    "quota:manage",
];
/// A secret shorter than this is refused: it could be guessed (`token issue` makes 67 characters).
pub const SECRET_CHARS_MIN: usize = 32;
pub const SECRET_CHARS_MAX: usize = 1024;

/// One token to import: its record without times, and its secret's hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    pub name: String,
    pub admin: bool,
    pub scopes: Vec<String>,
    pub hash: String,
    /// The first characters of a `qh_` secret (as `token issue` keeps), else none.
    pub prefix: Option<String>,
}

/// Reads FILE and every secret it names; every problem is reported, each with its place.
pub fn read(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Imported>, Vec<String>> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("{shown}: {e}")])?;
    let doc: serde_json::Value =
        crate::values::structured(&text).map_err(|e| vec![format!("{shown}: not YAML: {e}")])?;
    let entries = match doc {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Null => Vec::new(),
        _ => return Err(vec![format!("{shown}: must be a list of tokens")]),
    };
    let mut problems = Vec::new();
    let mut out: Vec<Imported> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{shown}: [{i}]");
        match one(entry, &at, env) {
            Ok(t) => {
                if out.iter().any(|o| o.name == t.name) {
                    problems.push(format!("{at}.name: `{}` is imported twice", t.name));
                } else if out.iter().any(|o| o.hash == t.hash) {
                    problems.push(format!("{at}: the same secret as another entry"));
                } else {
                    out.push(t);
                }
            }
            Err(mut p) => problems.append(&mut p),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

fn one(
    entry: &serde_json::Value,
    at: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Imported, Vec<String>> {
    let Some(map) = entry.as_object() else {
        return Err(vec![format!(
            "{at}: must be a mapping (name, scopes, secretFile or secretEnv)"
        )]);
    };
    let mut problems = Vec::new();
    for key in map.keys() {
        if !["name", "scopes", "groups", "admin", "secretFile", "secretEnv"].contains(&key.as_str()) {
            problems.push(format!(
                "{at}.{key}: unknown key (name, scopes, groups, admin, secretFile, secretEnv)"
            ));
        }
    }
    let name = match map.get("name").and_then(|v| v.as_str()).map(str::trim) {
        Some(n) if !n.is_empty() => n.to_lowercase(),
        _ => {
            problems.push(format!("{at}.name: required, a non-empty string"));
            String::new()
        }
    };
    let scopes: Vec<String> = strings(map, "scopes", at, "a scope", &mut problems)
        .into_iter()
        .enumerate()
        .filter_map(|(j, s)| {
            if SCOPES_KNOWN.contains(&s.as_str()) {
                Some(s)
            } else {
                problems.push(format!(
                    "{at}.scopes[{j}]: \"{s}\" is not a scope ({})",
                    SCOPES_KNOWN.join(", ")
                ));
                None
            }
        })
        .collect();
    // Course staff: `scopes: [quota:manage]` with the `groups` it manages.
    let groups = strings(map, "groups", at, "a group's name", &mut problems);
    let scopes = match super::scopes::with_groups(&scopes, &groups) {
        Ok(s) => s,
        Err(e) => {
            problems.push(format!(
                "{at}: {}",
                e.replace("--scope ", "scopes: ").replace("--group", "groups")
            ));
            Vec::new()
        }
    };
    let admin = match map.get("admin") {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(_) => {
            problems.push(format!("{at}.admin: must be true or false"));
            false
        }
    };
    let secret = secret_of(map, at, env);
    match secret {
        Ok(secret) if problems.is_empty() => Ok(Imported {
            name,
            admin,
            scopes,
            hash: tokens::sha256_hex(secret.as_bytes()),
            prefix: secret
                .strip_prefix(tokens::TOKEN_PREFIX)
                .and_then(|rest| rest.get(..tokens::PREFIX_CHARS))
                .map(str::to_string),
        }),
        Ok(_) => Err(problems),
        Err(e) => {
            problems.push(e);
            Err(problems)
        }
    }
}

/// The list of strings under `key` (none when absent or null); each item that is not a string,
/// and a value that is not a list, is a problem naming its path.
fn strings(
    map: &serde_json::Map<String, serde_json::Value>,
    key: &str,
    at: &str,
    what: &str,
    problems: &mut Vec<String>,
) -> Vec<String> {
    match map.get(key) {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .enumerate()
            .filter_map(|(j, v)| match v.as_str() {
                Some(s) => Some(s.to_string()),
                None => {
                    problems.push(format!("{at}.{key}[{j}]: must be {what}, got {v}"));
                    None
                }
            })
            .collect(),
        Some(_) => {
            problems.push(format!("{at}.{key}: must be a list"));
            Vec::new()
        }
    }
}

/// The token's secret, from `secretFile` or `secretEnv` (exactly one), its trailing newline
/// dropped, checked for length and characters.
fn secret_of(
    map: &serde_json::Map<String, serde_json::Value>,
    at: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let secret = match (map.get("secretFile"), map.get("secretEnv")) {
        (Some(f), None) => match f.as_str() {
            Some(f) => std::fs::read_to_string(f).map_err(|e| format!("{at}.secretFile: {f}: {e}")),
            None => Err(format!("{at}.secretFile: must be a path")),
        },
        (None, Some(v)) => match v.as_str() {
            Some(v) => env(v).ok_or_else(|| format!("{at}.secretEnv: the environment has no {v}")),
            None => Err(format!("{at}.secretEnv: must be a variable's name")),
        },
        _ => Err(format!("{at}: give exactly one of secretFile and secretEnv")),
    };
    secret.and_then(|s| {
        // A file (or a Secret's key) usually ends with a newline.
        let s = s.trim_end_matches(['\n', '\r']).to_string();
        let n = s.chars().count();
        if !(SECRET_CHARS_MIN..=SECRET_CHARS_MAX).contains(&n) {
            Err(format!(
                "{at}: the secret is {n} characters; it must be {SECRET_CHARS_MIN} to {SECRET_CHARS_MAX}"
            ))
        } else if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            Err(format!("{at}: the secret holds whitespace or control characters"))
        } else {
            Ok(s)
        }
    })
}

/// What the import changed, for the start-up log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub added: usize,
    pub kept: usize,
    pub removed: usize,
}

/// Makes the imported tokens exactly `tokens`, in the caller's transaction.
pub fn apply(
    db: &mut (impl Sql + ?Sized),
    tokens: &[Imported],
    now: Timestamp,
) -> Result<Summary, HostError> {
    let mut summary = Summary::default();
    let current = rows::list_tokens(db)?;
    for old in current.iter().filter(|t| t.imported) {
        if !tokens.iter().any(|t| t.hash == old.hash) {
            summary.removed += rows::delete_tokens(db, std::slice::from_ref(&old.hash))? as usize;
        }
    }
    for t in tokens {
        let record = TokenRecord {
            hash: t.hash.clone(),
            name: t.name.clone(),
            admin: t.admin,
            scopes: t.scopes.clone(),
            created_at: now,
            prefix: t.prefix.clone(),
            expires_at: None,
            last_used: None,
            imported: true,
        };
        match current.iter().find(|c| c.hash == t.hash) {
            Some(c) if c.name == t.name && c.admin == t.admin && c.scopes == t.scopes && c.imported => {
                summary.kept += 1
            }
            Some(c) => {
                // The same secret, now described otherwise by the file: the file wins.
                let record = TokenRecord {
                    created_at: c.created_at,
                    last_used: c.last_used,
                    ..record
                };
                rows::delete_tokens(db, std::slice::from_ref(&c.hash))?;
                rows::put_token(db, &record)?;
                summary.added += 1;
            }
            None => {
                rows::put_token(db, &record)?;
                summary.added += 1;
            }
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_file_and_its_secrets_are_read_and_every_problem_named() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "qh_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        write(dir.path(), "s", &format!("{secret}\n"));
        let file = write(
            dir.path(),
            "tokens.yaml",
            &format!(
                "- name: Cron\n  scopes: [quota:refresh]\n  secretFile: {}\n- name: hub\n  secretEnv: HUB_TOKEN\n  admin: true\n",
                dir.path().join("s").display()
            ),
        );
        let env = |k: &str| (k == "HUB_TOKEN").then(|| "x".repeat(40));
        let got = read(&file, &env).unwrap();
        assert_eq!(got[0].name, "cron");
        assert_eq!(
            got[0].hash,
            tokens::sha256_hex(secret.as_bytes()),
            "the newline is not the secret's"
        );
        assert_eq!(got[0].prefix.as_deref(), Some("01234567"));
        assert_eq!((got[1].admin, got[1].prefix.clone()), (true, None));

        let bad = write(
            dir.path(),
            "bad.yaml",
            "- name: a\n  scopes: [quota:everything]\n  secretEnv: SHORT\n  color: red\n- secretFile: /no/such/file\n- name: c\n",
        );
        let env = |k: &str| (k == "SHORT").then(|| "abc".to_string());
        let problems = read(&bad, &env).unwrap_err();
        let p = |s: &str| format!("{}: {s}", bad.display());
        assert_eq!(
            problems,
            [
                p("[0].color: unknown key (name, scopes, groups, admin, secretFile, secretEnv)"),
                p("[0].scopes[0]: \"quota:everything\" is not a scope (quota:sessions, quota:refresh, quota:admin, quota:metrics, quota:manage)"),
                p("[0]: the secret is 3 characters; it must be 32 to 1024"),
                p("[1].name: required, a non-empty string"),
                p("[1].secretFile: /no/such/file: No such file or directory (os error 2)"),
                p("[2]: give exactly one of secretFile and secretEnv"),
            ]
        );
    }
}
