//! Token management: `token list` shows what was issued and never a secret, a revoked token is
//! refused from the next request, an expired one too, and `last_used` is recorded; `serve
//! --tokens` imports tokens whose secrets the operator set (a rotated or removed one stops
//! working at the next start, issued ones are untouched), and a bad file stops the start.

use crate::common;

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

#[test]
fn imported_tokens_follow_the_file_across_restarts_and_issued_ones_stay() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let db = format!("sqlite://{}", path.display());
    let values = values(dir.path());
    let admin = common::token(&path, "root", true, &[]);
    let secret_a = format!("qh_{}", "a1".repeat(32));
    let secret_b = "a-secret-from-a-kubernetes-secret-0123456789".to_string();
    std::fs::write(dir.path().join("refresh-token"), format!("{secret_a}\n")).expect("secret");
    let tokens = dir.path().join("tokens.yaml");
    let write_tokens = |text: &str| std::fs::write(&tokens, text).expect("tokens.yaml");
    write_tokens(&format!(
        "- name: cron\n  scopes: [quota:refresh]\n  secretFile: {}\n",
        dir.path().join("refresh-token").display()
    ));
    let refresh = |server: &Server, token: &str| {
        server
            .post(
                "/admin/api/quota/refresh",
                token,
                r#"{"action": "add", "amount": 1, "dry_run": true}"#,
            )
            .0
    };
    let tokens_arg = tokens.to_str().expect("path");

    let server = Server::start(&path, &values, &["--tokens", tokens_arg]);
    assert_eq!(refresh(&server, &secret_a), 200);
    let (st, _) = server.get("/admin/api/quota/", &secret_a);
    assert_eq!(st, 403, "only its scope");
    server.stop();
    let table = list(&db);
    let cron = table.lines().find(|l| l.starts_with("cron")).expect("listed");
    assert!(
        cron.contains(&format!("{}... (imported)", &secret_a[..11])),
        "{table}"
    );
    assert!(!table.contains(&secret_a), "never the secret: {table}");

    // The Secret rotated, from an environment variable now: the old secret stops working.
    write_tokens("- name: cron\n  scopes: [quota:refresh]\n  secretEnv: QUOTA_REFRESH_TOKEN\n");
    let env = [("QUOTA_REFRESH_TOKEN".to_string(), secret_b.clone())];
    let server = Server::start_with_env(&path, &values, &["--tokens", tokens_arg], &env);
    assert_eq!(refresh(&server, &secret_b), 200);
    assert_eq!(refresh(&server, &secret_a), 401);
    server.stop();

    // The entry removed: the imported token goes, the issued admin token stays.
    write_tokens("[]\n");
    let server = Server::start(&path, &values, &["--tokens", tokens_arg]);
    assert_eq!(refresh(&server, &secret_b), 401);
    assert_eq!(refresh(&server, &admin), 200);
    server.stop();
}

#[test]
fn a_secret_rotated_while_serving_is_imported_again_without_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let values = values(dir.path());
    // A Secret mounted as kubelet lays it out: `refresh -> ..data/refresh`, `..data -> v1`; an update
    // writes a new folder and swaps the `..data` link in one rename.
    let mount = dir.path().join("secret");
    let version = |n: &str, secret: &str| {
        std::fs::create_dir_all(mount.join(n)).expect("dir");
        std::fs::write(mount.join(n).join("refresh"), format!("{secret}\n")).expect("secret");
        std::os::unix::fs::symlink(n, mount.join("..data_tmp")).expect("link");
        std::fs::rename(mount.join("..data_tmp"), mount.join("..data")).expect("swap");
    };
    let (old, new) = (
        "an-old-secret-from-a-kubernetes-secret-012345",
        "a-new-secret-from-a-kubernetes-secret-6789ab",
    );
    version("v1", old);
    std::os::unix::fs::symlink("..data/refresh", mount.join("refresh")).expect("link");
    let tokens = dir.path().join("tokens.yaml");
    std::fs::write(
        &tokens,
        format!(
            "- name: cron\n  scopes: [quota:refresh]\n  secretFile: {}\n",
            mount.join("refresh").display()
        ),
    )
    .expect("tokens.yaml");
    let server = Server::start(&path, &values, &["--tokens", tokens.to_str().expect("path")]);
    let refresh = |token: &str| {
        server
            .post(
                "/admin/api/quota/refresh",
                token,
                r#"{"action": "add", "amount": 1, "dry_run": true}"#,
            )
            .0
    };
    assert_eq!(refresh(old), 200);

    // A secret the file cannot take (too short) is refused, said once, and changes nothing.
    version("v2", "short");
    server.stderr.wait_for("the refused change", |l| {
        l.contains("changed and is refused") && l.contains("must be 32 to")
    });
    assert_eq!(refresh(old), 200, "the imported token stays");

    version("v3", new);
    server.stderr.wait_for("the re-import", |l| {
        l.contains("changed: 1 token(s) imported, 0 kept, 1 removed")
    });
    assert_eq!(refresh(new), 200);
    assert_eq!(refresh(old), 401, "the rotated secret stops working");
    server.stop();
}

#[test]
fn a_bad_tokens_file_stops_the_start_naming_every_problem() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("q.db");
    let values = values(dir.path());
    let tokens = dir.path().join("tokens.yaml");
    std::fs::write(
        &tokens,
        "- name: cron\n  scopes: [quota:nothing]\n  secretEnv: NOT_SET_ANYWHERE_42\n",
    )
    .expect("write");
    let (code, _out, err) = common::cli(&[
        "serve",
        "--db",
        &format!("sqlite://{}", path.display()),
        "--values",
        values.to_str().expect("path"),
        "--listen",
        "127.0.0.1:0",
        "--tokens",
        tokens.to_str().expect("path"),
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("[0].scopes[0]: \"quota:nothing\" is not a scope"),
        "{err}"
    );
    assert!(
        err.contains("[0].secretEnv: the environment has no NOT_SET_ANYWHERE_42"),
        "{err}"
    );
    assert!(err.contains("not serving"), "{err}");
}
