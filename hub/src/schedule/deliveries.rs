//! Webhook deliveries (credit model 2, "Webhooks"): one task per webhook steps the engine's
//! delivery state (`POST .../admin/api/quota/webhooks/<name>/deliveries`), POSTs the events it is
//! handed in id order, signed, each within 10 s, and reports back in its next step. The engine
//! keeps the cursor, the retries and the hold, so a restart or another replica loses nothing and
//! only one replica sends to a webhook at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::app::App;
use crate::engine::pool::Kind;
use crate::log::info;

/// A batch stops being sent after this long and is reported: with one send's 10 s (the hosting
/// contract's webhook timeout) it ends within the engine's 30 s hold.
const BATCH_SECONDS_MAX: u64 = 15;
/// Events asked for per step.
const BATCH_EVENTS: u64 = 200;
/// How often an idle webhook looks for new events.
const IDLE_POLL: Duration = Duration::from_secs(1);

/// The delivery task's caller: the process itself, in process, as a quota admin (the delivery
/// step hands out every event body; no token outside the process may take it).
fn deliverer() -> quota_core::Caller {
    quota_core::Caller {
        name: "quota-hub".into(),
        admin: false,
        scopes: vec![quota_core::api::SCOPE_ADMIN.to_string()],
    }
}

/// This process's name as a holder: unique among replicas and restarts.
pub fn holder_name() -> String {
    let mut r = [0u8; 4];
    let _ = getrandom::fill(&mut r);
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "quota-hub".into());
    format!("{host}-{}-{:08x}", std::process::id(), u32::from_be_bytes(r))
}

/// One step: the report in `body`, the engine's answer.
async fn step(app: &Arc<App>, name: &str, body: Value) -> Result<Value, String> {
    let path = format!("/admin/api/quota/webhooks/{name}/deliveries");
    let r = app
        .pool
        .route(
            Kind::Write,
            deliverer(),
            "POST",
            path,
            body.to_string(),
            app.clock.now(),
        )
        .await?;
    if r.status != 200 {
        return Err(format!("{} {}", r.status, r.body));
    }
    serde_json::from_str(&r.body).map_err(|e| e.to_string())
}

/// The configured webhooks' names (and, once, their state) from the status route.
pub async fn webhook_names(app: &Arc<App>) -> Result<Vec<String>, String> {
    let reader = quota_core::Caller {
        name: "quota-hub".into(),
        admin: true,
        scopes: vec![],
    };
    let r = app
        .pool
        .route(
            Kind::Read,
            reader,
            "GET",
            "/admin/api/quota/webhooks".into(),
            String::new(),
            app.clock.now(),
        )
        .await?;
    let v: Value = serde_json::from_str(&r.body).map_err(|e| e.to_string())?;
    Ok(v["webhooks"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|w| w["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// Registers every webhook before the first request is served (a webhook new to the values file
/// is sent what happens from then on), and starts one delivery task each.
pub async fn start(app: &Arc<App>) -> Result<(), String> {
    let holder = Arc::new(holder_name());
    for name in webhook_names(app).await? {
        step(app, &name, json!({ "holder": *holder, "release": true })).await?;
        info!("webhook {name}: delivering as {holder}");
        tokio::spawn(deliver_forever(app.clone(), name, holder.clone()));
    }
    Ok(())
}

/// What one batch came to: the report of the next step.
#[derive(Default)]
struct Report {
    delivered_through: Option<i64>,
    failed: Option<(i64, String)>,
}

impl Report {
    fn body(&self, holder: &str) -> Value {
        let mut b = json!({ "holder": holder, "limit": BATCH_EVENTS });
        if let Some(d) = self.delivered_through {
            b["delivered_through"] = json!(d);
        }
        if let Some((id, e)) = &self.failed {
            b["failed"] = json!({ "event_id": id, "error": e });
        }
        b
    }
}

async fn deliver_forever(app: Arc<App>, name: String, holder: Arc<String>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        // A receiver has this long to answer (credit model 2: "2xx within 10 s is delivered").
        .timeout_global(Some(app.pool.contract.webhook_timeout))
        .user_agent(concat!("quota-hub/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut report = Report::default();
    let mut last_problem = String::new();
    loop {
        let answer = match step(&app, &name, report.body(&holder)).await {
            Ok(a) => a,
            Err(e) => {
                // The report is kept and sent again (a delivered event may then be sent twice:
                // at least once).
                if e != last_problem {
                    info!("webhook {name}: delivery step failed (tried again): {e}");
                    last_problem = e;
                }
                tokio::time::sleep(IDLE_POLL).await;
                continue;
            }
        };
        last_problem.clear();
        report = Report::default();
        let events = answer["events"].as_array().cloned().unwrap_or_default();
        if let Some(m) = &app.metrics {
            m.deliveries
                .attempts_left(&name, answer["attempts"].as_i64().unwrap_or(0));
        }
        if events.is_empty() {
            let wait = match answer["retry_at"]
                .as_str()
                .and_then(|t| quota_core::Timestamp::parse(t).ok())
            {
                Some(at) => {
                    let secs = at.seconds() - app.clock.now().seconds();
                    Duration::from_secs(secs.clamp(0, 60) as u64).max(Duration::from_millis(200))
                }
                None => IDLE_POLL,
            };
            tokio::time::sleep(wait).await;
            continue;
        }
        let url = answer["url"].as_str().unwrap_or_default().to_string();
        let secret = match answer["secret_env"].as_str() {
            None => Ok(None),
            Some(var) => std::env::var(var)
                .map(Some)
                .map_err(|_| format!("the environment variable {var} (secretEnv) is not set")),
        };
        let (agent, app2, name2) = (agent.clone(), app.clone(), name.clone());
        let sent =
            tokio::task::spawn_blocking(move || send_batch(&agent, &app2, &name2, &url, secret, &events))
                .await;
        // A batch that panicked reports nothing: its events are sent again.
        report = sent.unwrap_or_default();
    }
}

/// Sends `events` in order until one fails or the batch has run long enough.
fn send_batch(
    agent: &ureq::Agent,
    app: &App,
    name: &str,
    url: &str,
    secret: Result<Option<String>, String>,
    events: &[Value],
) -> Report {
    let started = Instant::now();
    let mut report = Report::default();
    for e in events {
        let id = e["id"].as_i64().unwrap_or(0);
        let body = e["body"].as_str().unwrap_or_default();
        if started.elapsed().as_secs() >= BATCH_SECONDS_MAX {
            break;
        }
        let outcome = match &secret {
            Err(problem) => Err(problem.clone()),
            Ok(secret) => send_one(agent, url, id, body, secret.as_deref(), app.clock.now().seconds()),
        };
        let metrics = app.metrics.as_deref();
        match outcome {
            Ok(()) => {
                report.delivered_through = Some(id);
                if let Some(m) = metrics {
                    let at = e["at"]
                        .as_str()
                        .and_then(|t| quota_core::Timestamp::parse(t).ok());
                    let age = at.map_or(0, |at| app.clock.now().seconds() - at.seconds());
                    m.deliveries.delivered(name, age.max(0) as f64);
                }
            }
            Err(problem) => {
                if let Some(m) = metrics {
                    m.deliveries.failed(name);
                }
                report.failed = Some((id, problem));
                break;
            }
        }
    }
    report
}

/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(format!("{t}.{body}").as_bytes());
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={t},v1={hex}")
}

fn send_one(
    agent: &ureq::Agent,
    url: &str,
    id: i64,
    body: &str,
    secret: Option<&str>,
    t: i64,
) -> Result<(), String> {
    let mut req = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Quota-Event-Id", id.to_string());
    if let Some(s) = secret {
        req = req.header("Quota-Signature", signature(s, t, body));
    }
    match req.send(body) {
        Ok(resp) if resp.status().is_success() => Ok(()),
        Ok(resp) => Err(format!("{} from the receiver", resp.status())),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_time_dot_body() {
        // RFC 4231 has no "t.body" vector; this one is computed with Python's hmac module:
        // hmac.new(b"s3cret", b"1700000000.{}", hashlib.sha256).hexdigest()
        assert_eq!(
            signature("s3cret", 1_700_000_000, "{}"),
            "t=1700000000,v1=97926816e98fbb41ccb1673225ff29a2f35369099990e1b1561651e7bd097ebf"
        );
    }
}
