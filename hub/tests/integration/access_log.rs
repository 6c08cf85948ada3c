//! The access log: one line per request (method, path with query keys only, status, duration,
//! caller), as JSON with `--log-format json`; nothing of a token, a body or a query value in the
//! whole log.

use crate::common;

use common::{http, Server};

#[test]
fn one_json_line_per_request_and_no_secret_anywhere_in_the_log() {
    let setup = common::with_values(serde_json::json!({"custom": {"authMode": "github"}}));
    let admin = setup.token("root", true, &[]);
    let hub = setup.token("hub", false, &["quota:sessions"]);
    let server = setup.start(&["--log-format", "json"]);
    let agent = common::agent();
    let u = &server.url;
    let bad = "qh_0000000000000000000000000000000000000000000000000000000000000000";
    // (method, URL, token, body, status, caller in the log)
    type Sent<'a> = (&'a str, String, Option<&'a str>, Option<&'a str>, u16, &'a str);
    let sent: Vec<Sent> = vec![
        (
            "GET",
            format!("{u}/api/quota/rates"),
            Some(hub.as_str()),
            None,
            200,
            "hub",
        ),
        (
            "POST",
            format!("{u}/admin/api/quota/users/alice"),
            Some(admin.as_str()),
            Some(r#"{"action": "set", "amount": 5, "description": "body-marker-5e1f"}"#),
            200,
            "root",
        ),
        (
            "GET",
            format!("{u}/api/quota/sessions?status=active&after_id=9871234567"),
            Some(admin.as_str()),
            None,
            200,
            "root",
        ),
        ("GET", format!("{u}/api/quota/me"), Some(bad), None, 401, "-"),
        ("GET", format!("{u}/admin/users"), None, None, 200, "-"),
    ];
    for (method, url, token, body, status, _) in &sent {
        let (st, b) = http(&agent, method, url, *token, *body, &[]);
        assert_eq!(st, *status, "{method} {url}: {b}");
    }
    let stderr = server.stderr.clone();
    server.stop();
    // Everything the server wrote, up to its last line (read in order from its stderr).
    stderr.wait_for("the server's last line", |l| l.contains("stopped"));
    let lines = stderr.all();
    let access: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
        })
        .filter(|v| v["target"] == "access")
        .collect();
    assert_eq!(access.len(), sent.len(), "{lines:#?}");
    for (line, (method, url, _, _, status, caller)) in access.iter().zip(&sent) {
        let path = url
            .strip_prefix("http://")
            .and_then(|r| r.find('/').map(|i| &r[i..]))
            .expect("path");
        let path = path.replace("status=active&after_id=9871234567", "status=&after_id=");
        assert_eq!(line["method"], *method, "{line}");
        assert_eq!(line["path"], path, "{line}");
        assert_eq!(line["status"], *status, "{line}");
        assert_eq!(line["caller"], *caller, "{line}");
        assert!(line["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{line}");
        assert_eq!(line["level"], "INFO", "{line}");
        let id = line["request_id"].as_str().unwrap_or_default();
        assert!(
            id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{line}"
        );
    }
    let whole = lines.join("\n");
    for secret in [
        admin.as_str(),
        hub.as_str(),
        bad,
        "body-marker-5e1f",
        "9871234567",
    ] {
        assert!(!whole.contains(secret), "`{secret}` is in the log");
    }
    // Neither is any 16-character stretch of a token's random part.
    for t in [&admin, &hub] {
        for w in t.as_bytes()[3..].windows(16) {
            assert!(!whole.contains(std::str::from_utf8(w).expect("hex")));
        }
    }
}

#[test]
fn rust_log_turns_the_access_log_off() {
    let setup = common::with_values(serde_json::json!({"custom": {"authMode": "github"}}));
    let hub = setup.token("hub", false, &["quota:sessions"]);
    let env = [("RUST_LOG".to_string(), "info,access=off".to_string())];
    let server = Server::start_with_env(&setup.db, &setup.values, &[], &env);
    let (st, _) = server.get("/api/quota/rates", &hub);
    assert_eq!(st, 200);
    let stderr = server.stderr.clone();
    server.stop();
    // Everything the server wrote, up to its last line (read in order from its stderr).
    stderr.wait_for("the server's last line", |l| l.contains("stopped"));
    let lines = stderr.all();
    assert!(
        lines.iter().any(|l| l.contains("stopped")),
        "the server's own lines stay: {lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("access")), "{lines:#?}");
}
