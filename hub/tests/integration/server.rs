//! The server as a whole: the authorisation matrix, Idempotency-Key, the base URL, start-up
//! refusal of a bad values file, stale cleanup at start, and a clean SIGTERM.

use crate::common;

use common::{http, json, Server};

const EVERYONE: [&str; 8] = [
    "none",
    "bad",
    "alice",
    "bob",
    "admin",
    "sessions",
    "refresh",
    "service-admin",
];

/// Route, body, and the principals allowed (everyone else authenticated gets 403; no or bad token
/// gets 401).
fn routes() -> Vec<(
    &'static str,
    &'static str,
    Option<&'static str>,
    &'static [&'static str],
)> {
    const ADMINS: &[&str] = &["admin", "service-admin"];
    const USERS: &[&str] = &["alice", "bob", "admin", "sessions", "refresh", "service-admin"];
    vec![
        ("GET", "/admin/api/quota/", None, ADMINS),
        ("GET", "/admin/api/quota/users", None, ADMINS),
        ("GET", "/admin/api/quota/transactions", None, ADMINS),
        (
            "GET",
            "/admin/api/quota/alice",
            None,
            &["alice", "admin", "service-admin"],
        ),
        (
            "GET",
            "/admin/api/quota/users/alice",
            None,
            &["alice", "admin", "service-admin"],
        ),
        (
            "POST",
            "/admin/api/quota/alice",
            Some(r#"{"action":"add","amount":1}"#),
            ADMINS,
        ),
        (
            "POST",
            "/admin/api/quota/users/alice",
            Some(r#"{"action":"add","amount":1}"#),
            ADMINS,
        ),
        (
            "POST",
            "/admin/api/quota/batch",
            Some(r#"{"users":[{"username":"carol","amount":5}]}"#),
            ADMINS,
        ),
        (
            "POST",
            "/admin/api/quota/refresh",
            Some(r#"{"action":"add","amount":1,"dry_run":true}"#),
            &["admin", "refresh", "service-admin"],
        ),
        ("POST", "/admin/api/quota/cleanup", Some("{}"), ADMINS),
        ("GET", "/api/quota/me", None, USERS),
        ("GET", "/api/quota/rates", None, USERS),
        ("GET", "/api/accelerators", None, USERS),
        (
            "POST",
            "/api/quota/sessions",
            Some(r#"{"username":"alice","runtime_minutes":1}"#),
            &["admin", "sessions"],
        ),
        ("GET", "/api/quota/sessions", None, ADMINS),
        ("GET", "/api/quota/sessions/1", None, ADMINS),
        (
            "POST",
            "/api/quota/sessions/1/end",
            Some("{}"),
            &["admin", "sessions"],
        ),
        (
            "POST",
            "/api/quota/sessions/end",
            Some(r#"{"username":"alice","server_name":""}"#),
            &["admin", "sessions"],
        ),
    ]
}

#[test]
fn authorisation_matrix_every_route_by_every_principal() {
    let setup = common::example();
    let server = setup.start(&[]);
    let t = |u: &str, admin: bool, scopes: &[&str]| setup.token(u, admin, scopes);
    let tokens: Vec<(&str, Option<String>)> = vec![
        ("none", None),
        ("bad", Some("qh_not-a-token".to_string())),
        ("alice", Some(t("alice", false, &[]))),
        ("bob", Some(t("bob", false, &[]))),
        ("admin", Some(t("root", true, &[]))),
        ("sessions", Some(t("hub", false, &["quota:sessions"]))),
        ("refresh", Some(t("scheduler", false, &["quota:refresh"]))),
        ("service-admin", Some(t("ops", false, &["quota:admin"]))),
    ];
    assert_eq!(tokens.len(), EVERYONE.len());
    let agent = common::agent();
    let admin = tokens[4].1.clone();
    let (st, b) = server.call(
        "POST",
        "/admin/api/quota/alice",
        admin.as_deref(),
        Some(r#"{"action":"set","amount":100000}"#),
    );
    assert_eq!(st, 200, "{b}");
    let (st, b) = server.call(
        "POST",
        "/api/quota/sessions",
        admin.as_deref(),
        Some(r#"{"username":"alice","runtime_minutes":1,"server_name":"s1"}"#),
    );
    assert_eq!(st, 201, "{b}");

    let mut checked = 0;
    for (method, path, body, allowed) in routes() {
        for (who, token) in &tokens {
            let (status, text) = http(
                &agent,
                method,
                &format!("{}{path}", server.url),
                token.as_deref(),
                body,
                &[],
            );
            let expected = match *who {
                "none" | "bad" => Some(401),
                w if allowed.contains(&w) => None,
                _ => Some(403),
            };
            match expected {
                Some(code) => assert_eq!(status, code, "{method} {path} as {who}: {text}"),
                // Allowed: a success, or for ending by server name a 404 once nothing is active.
                None => assert!(
                    (200..300).contains(&status) || (status == 404 && path.ends_with("/sessions/end")),
                    "{method} {path} as {who}: {status} {text}"
                ),
            }
            assert!(
                json(&text).is_object(),
                "{method} {path} as {who}: not JSON: {text}"
            );
            checked += 1;
        }
    }
    println!("authorisation matrix: {checked} requests");
    // Tokens are never logged.
    let log = server.stderr.all().join("\n");
    for (_, t) in &tokens {
        if let Some(t) = t {
            assert!(!log.contains(t.as_str()), "a token appears in the log");
        }
    }
    server.stop();
}

#[test]
fn idempotency_key_replays_the_first_response_and_refuses_another_body() {
    let setup = common::example();
    let server = setup.start(&[]);
    let admin = setup.token("root", true, &[]);
    let other_admin = setup.token("ops", true, &[]);
    let agent = common::agent();
    let url = format!("{}/admin/api/quota/alice", server.url);
    let add = r#"{"action":"add","amount":7}"#;
    let key = [("Idempotency-Key", "req-1")];
    let first = http(&agent, "POST", &url, Some(&admin), Some(add), &key);
    assert_eq!(first.0, 200, "{}", first.1);
    assert_eq!(http(&agent, "POST", &url, Some(&admin), Some(add), &key), first);
    let conflict = http(
        &agent,
        "POST",
        &url,
        Some(&admin),
        Some(r#"{"action":"add","amount":8}"#),
        &key,
    );
    assert_eq!(conflict.0, 409, "{}", conflict.1);
    // The key is scoped to the caller: another admin's same key applies again.
    assert_eq!(
        http(&agent, "POST", &url, Some(&other_admin), Some(add), &key).0,
        200
    );
    let (_, detail) = http(&agent, "GET", &url, Some(&admin), None, &[]);
    let v = json(&detail);
    assert_eq!(v["balance"], 14, "{detail}");
    assert_eq!(
        v["recent_transactions"].as_array().map(Vec::len),
        Some(2),
        "{detail}"
    );
    server.stop();
}

#[test]
fn routes_live_under_the_base_url_only() {
    let setup = common::example();
    let server = setup.start(&["--base-url", "/jhub/"]);
    assert!(server.url.ends_with("/jhub"), "{}", server.url);
    let admin = setup.token("root", true, &[]);
    let agent = common::agent();
    assert_eq!(server.get("/api/quota/rates", &admin).0, 200);
    let root = server.url.trim_end_matches("/jhub");
    let (st, body) = http(
        &agent,
        "GET",
        &format!("{root}/hub/api/quota/rates"),
        Some(&admin),
        None,
        &[],
    );
    assert_eq!(st, 404, "{body}");
    assert!(
        json(&body)["error"]
            .as_str()
            .is_some_and(|m| m.contains("/jhub/")),
        "{body}"
    );
    server.stop();
}

#[test]
fn a_bad_values_file_stops_the_server_before_it_listens_and_names_every_key() {
    let dir = tempfile::tempdir().expect("dir");
    let values = common::write_values(
        dir.path(),
        "bad.yaml",
        &serde_json::json!({"custom": {"authMode": "github", "quota": {"cpuRate": -1, "colour": 1},
            "accelerators": {"cpu": {"quotaRate": 2}, "dgpu": {"quotaRate": 4,
                "resources": {"limits": {"nvidia.com/gpu": "one"}},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Sometimes"}]}}}}),
    );
    let db = format!("sqlite://{}", dir.path().join("q.db").display());
    let v = values.to_string_lossy().to_string();
    for args in [
        vec!["serve", "--db", &db, "--values", &v, "--listen", "127.0.0.1:0"],
        vec!["check-config", "--values", &v],
    ] {
        let (code, out, err) = common::cli(&args);
        assert_ne!(code, 0, "{args:?} accepted a bad file");
        assert!(!out.contains("listening"), "{out}");
        for key in [
            "custom.quota.cpuRate",
            "custom.quota.colour",
            "custom.accelerators.cpu",
            "custom.accelerators.dgpu.resources.limits.nvidia.com/gpu: `one` is not a Kubernetes quantity",
            "custom.accelerators.dgpu.tolerations[0].operator: `Sometimes` is not `Exists` or `Equal`",
        ] {
            assert!(err.contains(key), "{args:?}: `{key}` not named in:\n{err}");
        }
    }
    let (code, out, _) = common::cli(&["check-config", "--values", "examples/values.yaml"]);
    assert_eq!(code, 0);
    assert!(out.contains("OK"), "{out}");
}

#[test]
fn stale_sessions_are_cleaned_at_start_and_logged() {
    let setup = common::example();
    // A session started nine hours before the server's clock.
    let server = setup.start(&["--clock-start", "2026-11-22T01:00:00Z"]);
    let hub = setup.token("hub", false, &["quota:sessions"]);
    let admin = setup.token("root", true, &[]);
    server.post(
        "/admin/api/quota/alice",
        &admin,
        r#"{"action":"set","amount":1000}"#,
    );
    let (st, b) = server.post(
        "/api/quota/sessions",
        &hub,
        r#"{"username":"alice","runtime_minutes":60}"#,
    );
    assert_eq!(st, 201, "{b}");
    server.stop();
    let server = setup.start(&["--clock-start", "2026-11-22T10:00:00Z"]);
    let line = server.stderr.wait_for("about the stale session", |l| {
        l.contains("stale session 1 of alice")
    });
    assert!(line.contains("not charged"), "{line}");
    let (_, b) = server.get("/api/quota/sessions/1", &admin);
    assert_eq!(json(&b)["status"], "cleaned_up", "{b}");
    server.stop();
}

/// The README's "First steps with the server" block, run as written (the binary path and the URL
/// pointed at this test's server): a newcomer's token, quota, session and ledger.
#[test]
fn the_readme_walkthrough_works_as_written() {
    let readme = std::fs::read_to_string(common::workspace().join("README.md")).expect("README");
    let section = readme
        .split("## First steps with the server")
        .nth(1)
        .expect("README has the walkthrough");
    let script = section
        .split("```sh\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a sh block");
    assert!(script.contains("Q=target/release/quota-hub"), "{script}");
    assert!(script.contains("URL=http://127.0.0.1:8765/hub"), "{script}");
    let dir = tempfile::tempdir().expect("dir");
    // The walkthrough uses the default database, quota.db in the current directory.
    let server = Server::start(
        &dir.path().join("quota.db"),
        &common::workspace().join("examples/values.yaml"),
        &[],
    );
    let script = script
        .replace("Q=target/release/quota-hub", &format!("Q={}", common::BIN))
        .replace("URL=http://127.0.0.1:8765/hub", &format!("URL={}", server.url))
        .replace("curl -s", "curl -sS --fail-with-body")
        + "\necho\n";
    let out = std::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // curl prints the answers back to back: read them as a stream of JSON values.
    let answers: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("JSON answers");
    assert_eq!(answers.len(), 8, "{stdout}");
    assert_eq!(answers[1]["status"], "active", "{stdout}");
    let last = &answers[3];
    // 300, then one billed minute at 2/min.
    assert_eq!(last["balance"], 298, "{stdout}");
    let kinds: Vec<&str> = last["recent_transactions"]
        .as_array()
        .expect("ledger")
        .iter()
        .filter_map(|t| t["transaction_type"].as_str())
        .collect();
    assert_eq!(kinds, ["usage", "set"], "{stdout}");
    // Groups: two members; the preview tops up alice (bob has no record yet) and writes nothing.
    assert_eq!(
        (&answers[4]["added"], &answers[4]["members"]),
        (&2.into(), &2.into()),
        "{stdout}"
    );
    assert_eq!(
        (&answers[5]["users_updated"], &answers[5]["dry_run"]),
        (&1.into(), &true.into()),
        "{stdout}"
    );
    // alice's own view, and today's usage by user: her one billed minute at 2/min.
    assert_eq!(
        (&answers[6]["username"], &answers[6]["balance"]),
        (&"alice".into(), &298.into()),
        "{stdout}"
    );
    assert!(answers[6]["lasts_minutes"]["phx"].is_number(), "{stdout}");
    let rows = &answers[7]["rows"];
    assert_eq!(
        (&rows[0]["key"], &rows[0]["credits"], &rows[0]["minutes"]),
        (&"alice".into(), &2.into(), &1.into()),
        "{stdout}"
    );
    server.stop();
}

/// A SIGTERM sent the moment the server says it is listening stops it cleanly (exit 0): the signal
/// handlers are installed before that line, not when the server first waits for a signal.
#[test]
fn a_sigterm_right_after_listening_stops_the_server_cleanly() {
    let setup = common::example();
    for _ in 0..5 {
        setup.start(&[]).stop(); // stop() asserts exit status 0
    }
}
