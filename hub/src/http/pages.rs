//! The admin page (`{base}/admin/users`), the user page (`{base}/quota`) and their assets
//! (`{base}/quota-static/...`), built into the binary (hub/build.rs): the pages' scripts, the
//! charting library, and the engine component transpiled by jco, which the admin page runs for
//! quota inputs and refresh previews. The pages sign in with a token that they keep in session
//! storage; these routes need none (they hold no data).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// Where the assets are served, below the base URL.
pub const STATIC_PREFIX: &str = "/quota-static/";
/// The admin page, below the base URL.
pub const ADMIN_PATH: &str = "/admin/users";
/// The user page, below the base URL.
pub const USER_PATH: &str = "/quota";

/// Nothing from elsewhere: scripts, styles, the engine's modules and the API are all this server's.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
    style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// The metrics label of `path` (below the base) when it is a page or an asset.
pub fn route_label(path: &str) -> Option<&'static str> {
    if path == ADMIN_PATH {
        Some(ADMIN_PATH)
    } else if path == USER_PATH {
        Some(USER_PATH)
    } else if path.starts_with(STATIC_PREFIX) {
        Some("/quota-static/{asset}")
    } else {
        None
    }
}

/// The answer for `path` (below the base) when it is a page or an asset; None for the API.
pub fn answer(method: &str, path: &str, base: &str) -> Option<Response> {
    let asset = path.strip_prefix(STATIC_PREFIX);
    if path != ADMIN_PATH && path != USER_PATH && asset.is_none() {
        return None;
    }
    if method != "GET" && method != "HEAD" {
        let mut r = (StatusCode::METHOD_NOT_ALLOWED, "GET only\n").into_response();
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Some(r);
    }
    Some(match asset {
        None if path == USER_PATH => page(base, "Your credits", "user.js", "pages/user-main.html"),
        None => page(base, "Manage credits", "admin.js", "pages/admin-main.html"),
        Some(name) => match ASSETS.iter().find(|(n, _)| *n == name) {
            Some((n, bytes)) => (
                [
                    (header::CONTENT_TYPE, content_type(n)),
                    (header::CACHE_CONTROL, "no-cache"),
                    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                ],
                *bytes,
            )
                .into_response(),
            None => (StatusCode::NOT_FOUND, format!("No asset {name}\n")).into_response(),
        },
    })
}

/// quota-hub's one page shell around a page's content (`main`), which is shared with JupyterHub
/// (it puts the content inside its own page template): the title, the page's script.
fn shell(title: &str, script: &str, main: &str) -> String {
    asset_text("pages/shell.html")
        .replace("{{title}}", title)
        .replace("{{script}}", script)
        .replace("{{main}}", asset_text(main))
}

fn page(base: &str, title: &str, script: &str, main: &str) -> Response {
    let template = shell(title, script, main);
    let statics = format!("{base}{STATIC_PREFIX}");
    let config = serde_json::json!({ "base": base, "auth": "token", "static": statics });
    let html = fill(&template, &statics, &config);
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, PAGE_POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        html,
    )
        .into_response()
}

fn asset_text(name: &str) -> &'static str {
    let bytes = ASSETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, b)| *b)
        .unwrap_or_default();
    std::str::from_utf8(bytes).unwrap_or_default()
}

/// The page template with its holes filled: `{{static}}` (an URL prefix), `{{base}}` (the
/// server's base path, from the config's `base`: the navigation bar's links) and `{{config}}`
/// (JSON inside a `<script type="application/json">`, so `<` is escaped and cannot end it).
pub fn fill(template: &str, statics: &str, config: &serde_json::Value) -> String {
    let base = config.get("base").and_then(|b| b.as_str()).unwrap_or_default();
    let base = html_attr(base.trim_end_matches('/'));
    let config = config.to_string().replace('<', "\\u003c");
    template
        .replace("{{static}}", &html_attr(statics))
        .replace("{{base}}", &base)
        .replace("{{config}}", &config)
}

fn html_attr(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_cannot_close_its_script_element() {
        let cfg = serde_json::json!({ "base": "</script><script>alert(1)</script>" });
        let html = fill(
            "<script type=\"application/json\">{{config}}</script>",
            "/s/",
            &cfg,
        );
        assert_eq!(html.matches("</script>").count(), 1, "{html}");
    }

    #[test]
    fn the_page_is_its_shell_with_the_shared_content_in_it() {
        let template = shell("Users", "admin.js", "pages/admin-main.html");
        let html = fill(&template, "/hub/quota-static/", &serde_json::json!({}));
        assert!(!html.contains("{{"), "a hole is left: {html}");
        assert!(html.contains(r#"<table id="users""#), "{html}");
        assert!(html.contains(r#"<body class="quota-standalone">"#), "{html}");
    }

    #[test]
    fn every_asset_the_page_loads_is_built_in() {
        for name in [
            "pages/shell.html",
            "pages/theme.js",
            "pages/words.js",
            "gen/bootstrap.css",
            "pages/admin-main.html",
            "pages/admin.js",
            "pages/quota.css",
            "pages/user-main.html",
            "pages/user.js",
            "pages/usage-chart.js",
            "gen/chartist.js",
            "gen/chartist.css",
            "src/browser.js",
            "src/component.js",
            "src/contract.js",
            "gen/quota-engine.js",
            "gen/modules.json",
        ] {
            assert!(ASSETS.iter().any(|(n, _)| *n == name), "{name} is not built in");
        }
        let modules: Vec<String> =
            serde_json::from_str(asset_text("gen/modules.json")).expect("modules.json");
        for m in modules {
            assert!(
                ASSETS.iter().any(|(n, _)| *n == format!("gen/{m}")),
                "gen/{m} is not built in"
            );
        }
    }
}
