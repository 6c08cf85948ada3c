//! The API document over HTTP: quota-hub serves it to anyone at `{base}/api/quota/openapi.json`,
//! and a 405 names the methods the route answers in `Allow` (RFC 9110), as schemathesis checks.

use crate::common;

fn get(url: &str, method: &str, token: Option<&str>) -> (u16, Option<String>, String) {
    let mut req = ureq::http::Request::builder().method(method).uri(url);
    if let Some(t) = token {
        req = req.header("Authorization", format!("token {t}"));
    }
    let mut resp = common::agent().run(req.body(()).unwrap()).unwrap();
    let allow = resp
        .headers()
        .get("allow")
        .map(|v| v.to_str().unwrap().to_string());
    (
        resp.status().as_u16(),
        allow,
        resp.body_mut().read_to_string().unwrap(),
    )
}

#[test]
fn the_document_is_served_to_anyone_and_a_405_names_the_allowed_methods() {
    let common::GithubServer {
        admin,
        server,
        dir: _dir,
        ..
    } = common::github_server(&[]);

    let (status, _, body) = get(&format!("{}/api/quota/openapi.json", server.url), "GET", None);
    assert_eq!(status, 200);
    assert_eq!(body.trim_end(), quota_core::api::OPENAPI_JSON.trim_end());

    for (method, path, allow) in [
        ("PUT", "/api/quota/me", "GET"),
        ("DELETE", "/admin/api/quota/users/alice", "GET, POST"),
        ("GET", "/admin/api/quota/batch", "POST"),
        ("POST", "/metrics", "GET"),
        ("POST", "/healthz", "GET, HEAD"),
    ] {
        let (status, got, body) = get(&format!("{}{path}", server.url), method, Some(&admin));
        assert_eq!(status, 405, "{method} {path}: {body}");
        assert_eq!(got.as_deref(), Some(allow), "{method} {path}");
    }
    // Not on other answers.
    let (status, got, _) = get(&format!("{}/api/quota/me", server.url), "GET", Some(&admin));
    assert_eq!((status, got), (200, None));
    server.stop();
}
