//! Where an admin command sends its requests: the engine over the database file directly, or a
//! running server over HTTP. Both answer the same REST routes, so every command has one code path.

use quota_core::{Caller, Timestamp};
use quota_host::Worker;

use crate::cli;
use crate::clock::Clock;
use crate::storage::db;
use crate::{engine, values};

pub enum Target {
    Local(Box<Worker>, Caller),
    Remote {
        agent: ureq::Agent,
        base: String,
        token: String,
    },
}

/// Who local commands act as (the `created_by` of their audit rows).
const LOCAL_CALLER: &str = "cli";

impl Target {
    pub fn open(t: &cli::Target, need_values: bool) -> Result<Target, String> {
        if let Some(url) = &t.url {
            let token = t
                .token
                .clone()
                .ok_or("--url needs an admin token: --token T or QUOTA_HUB_TOKEN")?;
            let config = ureq::Agent::config_builder().http_status_as_error(false).build();
            return Ok(Target::Remote {
                agent: config.into(),
                base: url.trim_end_matches('/').to_string(),
                token,
            });
        }
        // Admin commands work without a values file (records can be managed before quota is
        // switched on); a rule to run needs one.
        let doc = if t.values.exists() || need_values {
            values::read(&t.values)?
        } else {
            serde_json::json!({"custom": {"quota": {"enabled": false}}})
        };
        let rt = engine::runtime()?;
        let w = engine::worker(&rt, &db::parse(&t.db)?, &doc, true, None)?;
        let caller = Caller {
            name: LOCAL_CALLER.into(),
            admin: true,
            scopes: Vec::new(),
        };
        Ok(Target::Local(Box::new(w), caller))
    }

    /// One REST request (path below the base URL): status and JSON body.
    pub fn request(&mut self, method: &str, path: &str, body: &str) -> Result<(u16, String), String> {
        match self {
            Target::Local(w, caller) => {
                let (path, query) = path.split_once('?').unwrap_or((path, ""));
                let req = quota_core::Request {
                    method,
                    path,
                    query,
                    body,
                    caller: Some(caller),
                };
                let now: Timestamp = Clock::system()?.now();
                let r = w.handle_request(&req, now).map_err(|e| e.to_string())?;
                Ok((r.status, r.body))
            }
            Target::Remote { agent, base, token } => {
                let url = format!("{base}{path}");
                let auth = format!("token {token}");
                let req = ureq::http::Request::builder()
                    .method(method)
                    .uri(&url)
                    .header("Authorization", &auth);
                let sent = if method == "GET" || method == "DELETE" {
                    req.body(())
                        .map_err(|e| format!("{url}: {e}"))
                        .map(|r| agent.run(r))?
                } else {
                    req.header("Content-Type", "application/json")
                        .body(body.as_bytes().to_vec())
                        .map_err(|e| format!("{url}: {e}"))
                        .map(|r| agent.run(r))?
                };
                let mut resp = sent.map_err(|e| format!("{url}: {e}"))?;
                let status = resp.status().as_u16();
                let text = resp
                    .body_mut()
                    .read_to_string()
                    .map_err(|e| format!("{url}: reading the answer: {e}"))?;
                Ok((status, text))
            }
        }
    }

    /// A request whose answer must be a success; otherwise the engine's error message.
    pub fn ok(&mut self, method: &str, path: &str, body: &str) -> Result<serde_json::Value, String> {
        let (status, text) = self.request(method, path, body)?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("answer is not JSON ({e}): {text}"))?;
        if (200..300).contains(&status) {
            Ok(v)
        } else {
            Err(error_text(status, &v))
        }
    }
}

pub fn error_text(status: u16, v: &serde_json::Value) -> String {
    match v.get("error").and_then(|e| e.as_str()) {
        Some(m) => format!("{m} (HTTP {status})"),
        None => format!("HTTP {status}: {v}"),
    }
}

/// Percent-encodes a path segment (a username may hold any character but `/` and whitespace).
pub fn segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
