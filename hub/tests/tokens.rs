//! Token management: `token list` shows what was issued and never a secret, a revoked token is
//! refused from the next request, an expired one too, and `last_used` is recorded.

mod common;

use common::{cli, http, Server};

fn values(dir: &std::path::Path) -> std::path::PathBuf {
    common::write_values(
        dir,
        "values.json",
        &serde_json::json!({"custom": {"authMode": "github"}}),
    )
}

fn list(db: &str) -> String {
    let (code, out, err) = cli(&["token", "list", "--db", db]);
    assert_eq!(code, 0, "{err}");
    out
}

/// The request's clock, `secs` from now, as `X-Quota-Test-Now` takes it.
fn from_now(secs: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    format!("{}Z", quota_core::Timestamp(now + secs))
}

#[test]
fn tokens_are_listed_without_secrets_revoked_at_once_and_refused_after_expiry() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let db = format!("sqlite://{}", path.display());
    let issue = |args: &[&str]| {
        let mut all = vec!["token", "issue", "--db", db.as_str()];
        all.extend_from_slice(args);
        let (code, out, err) = cli(&all);
        assert_eq!(code, 0, "{err}");
        out.trim().to_string()
    };
    let admin = issue(&["--user", "root", "--admin", "--expires-in", "1h"]);
    let hub = issue(&["--user", "hub", "--scope", "quota:sessions"]);
    let hub2 = issue(&["--user", "hub", "--scope", "quota:sessions"]);
    let cron = issue(&["--user", "cron", "--scope", "quota:refresh"]);

    let table = list(&db);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 5, "{table}");
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("LAST USED"),
        "{table}"
    );
    for (name, secret, scopes) in [
        ("cron", &cron, "quota:refresh"),
        ("hub", &hub, "quota:sessions"),
        ("root", &admin, "-"),
    ] {
        let shown = format!("{}...", &secret[..11]);
        let line = lines
            .iter()
            .find(|l| l.contains(&shown))
            .unwrap_or_else(|| panic!("{shown} not listed:\n{table}"));
        assert!(line.starts_with(name) && line.contains(scopes), "{line}");
        // Nothing of the secret past the shown prefix.
        assert!(!table.contains(&secret[11..19]), "{table}");
    }
    assert!(lines.iter().any(|l| l.starts_with("root") && l.contains(" yes ")));

    let values = values(dir.path());
    let server = Server::start(&path, &values, &["--test-clock"]);
    let agent = common::agent();
    let rates = format!("{}/api/quota/rates", server.url);
    let get = |token: &str, now: &str| {
        http(
            &agent,
            "GET",
            &rates,
            Some(token),
            None,
            &[("X-Quota-Test-Now", now)],
        )
        .0
    };
    let now = from_now(0);
    assert_eq!(get(&hub, &now), 200);
    assert_eq!(get(&hub2, &now), 200);
    assert_eq!(get(&cron, &now), 200);

    // One token by its first characters; the other token of the same name still works.
    let (code, out, err) = cli(&["token", "revoke", "--db", &db, &hub[..11]]);
    assert_eq!((code, out.trim()), (0, "revoked 1 token(s)"), "{err}");
    assert_eq!(get(&hub, &now), 401);
    assert_eq!(get(&hub2, &now), 200);
    // Every token of a name.
    let (code, _, err) = cli(&["token", "revoke", "--db", &db, "HUB"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(get(&hub2, &now), 401);
    // A name or prefix that matches nothing is an error, not a silent success.
    let (code, _, err) = cli(&["token", "revoke", "--db", &db, "hub"]);
    assert_ne!(code, 0);
    assert!(err.contains("nothing revoked"), "{err}");

    // Expiry: an hour after issue.
    assert_eq!(get(&admin, &from_now(3_500)), 200);
    assert_eq!(get(&admin, &from_now(3_700)), 401);

    // `last_used` is written at shutdown (and once a minute while serving).
    server.stop();
    let table = list(&db);
    let used = |secret: &str| {
        let shown = format!("{}...", &secret[..11]);
        let line = table
            .lines()
            .find(|l| l.contains(&shown))
            .expect("listed")
            .to_string();
        !line.trim_end().ends_with(" -")
    };
    assert!(used(&cron), "{table}");
    assert!(used(&admin), "{table}");
    for secret in [&admin, &cron] {
        assert!(!table.contains(&secret[11..]), "{table}");
    }
}

#[test]
fn bad_expiry_is_refused_and_nothing_is_issued() {
    let dir = tempfile::tempdir().expect("dir");
    let db = format!("sqlite://{}", dir.path().join("q.db").display());
    for bad in ["0d", "90", "1w", "1.5h"] {
        let (code, out, err) = cli(&["token", "issue", "--db", &db, "--user", "x", "--expires-in", bad]);
        assert_ne!(code, 0, "{bad}: {out}");
        assert!(err.contains("--expires-in"), "{bad}: {err}");
    }
    assert_eq!(list(&db).lines().count(), 1, "only the header");
}
