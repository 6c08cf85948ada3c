//! `GET {base}/metrics`: authenticated, then the exposition with what the database says now.

use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use quota_core::Timestamp;

use super::respond::{error, with_allow};
use crate::app::App;
use crate::engine::pool::Kind;
use crate::log::info;
use crate::metrics::{self, Metrics};
use crate::tokens;

/// `GET {base}/metrics`, for an administrator or a token with the `quota:metrics` scope.
pub(super) async fn scrape(
    app: &App,
    metrics: &Metrics,
    method: &str,
    secret: Option<String>,
    now: Timestamp,
    caller_name: Arc<std::sync::OnceLock<String>>,
) -> Response {
    if method != "GET" {
        return with_allow(error(405, "GET only"), &["GET"]);
    }
    let Some(secret) = secret else {
        return error(
            401,
            "Authentication required (a token with the quota:metrics scope)",
        );
    };
    let read = app
        .pool
        .run_in_tx(Kind::Read, move |tx| {
            let caller = tokens::authenticate(tx, &secret, now)?;
            let Some((caller, _)) = caller else {
                return Ok(Err(401));
            };
            let _ = caller_name.set(caller.name.clone());
            if !caller.admin && !caller.scopes.iter().any(|s| s == metrics::SCOPE_METRICS) {
                return Ok(Err(403));
            }
            let active = tx.active_sessions()?;
            let budgets = budget_balances(tx, now)?;
            let webhooks = webhook_states(tx, now)?;
            Ok(Ok((active, budgets, webhooks)))
        })
        .await;
    match read {
        Ok(Ok(Ok((active, budgets, webhooks)))) => {
            metrics.deliveries.set_state(&webhooks);
            metrics.durability.refresh(now.seconds());
            let rules: Vec<String> = app
                .pool
                .summary
                .rules
                .iter()
                .filter(|r| r.enabled)
                .map(|r| r.name.clone())
                .collect();
            let statuses = app
                .pool
                .run(Kind::Read, move |w| {
                    crate::schedule::rule_statuses(w, &rules, now)
                })
                .await;
            let statuses = match statuses {
                Ok(Ok(s)) => s,
                other => {
                    info!("metrics: reading the refresh rules' runs failed: {other:?}");
                    Vec::new()
                }
            };
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
                metrics.render(&active, &budgets, &statuses, app.pool.write_load.now()),
            )
                .into_response()
        }
        Ok(Ok(Err(401))) => error(401, "Invalid or expired token"),
        Ok(Ok(Err(_))) => error(
            403,
            "Forbidden: needs the quota:metrics scope or an administrator",
        ),
        Ok(Err(e)) => {
            info!("metrics failed: {e}");
            error(500, "Internal error (see the server log)")
        }
        Err(e) => {
            info!("metrics failed: {e}");
            error(500, "Internal error (see the server log)")
        }
    }
}

/// Every budget's balance as of now, through the engine's own list (`GET .../budgets`).
/// Each webhook's (name, pending, failed), from the engine's status route.
fn webhook_states(
    tx: &mut quota_host::Tx<'_>,
    now: Timestamp,
) -> Result<Vec<(String, i64, i64)>, quota_host::HostError> {
    let v = admin_read(tx, "/admin/api/quota/webhooks", now)?;
    Ok(v["webhooks"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|w| {
                    Some((
                        w["name"].as_str()?.to_string(),
                        w["pending"].as_i64()?,
                        w["failed"].as_i64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default())
}

/// An admin route's answer, read by the scrape.
fn admin_read(
    tx: &mut quota_host::Tx<'_>,
    path: &str,
    now: Timestamp,
) -> Result<serde_json::Value, quota_host::HostError> {
    let reader = quota_core::Caller {
        name: "metrics".into(),
        admin: true,
        scopes: Vec::new(),
    };
    let req = quota_core::Request {
        method: "GET",
        path,
        query: "",
        body: "",
        caller: Some(&reader),
    };
    let r = tx.handle_request(&req, now)?;
    Ok(serde_json::from_str(&r.body).unwrap_or_default())
}

fn budget_balances(
    tx: &mut quota_host::Tx<'_>,
    now: Timestamp,
) -> Result<Vec<(String, i64)>, quota_host::HostError> {
    let v = admin_read(tx, "/admin/api/quota/budgets", now)?;
    Ok(v["budgets"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|b| Some((b["name"].as_str()?.to_string(), b["balance"].as_i64()?)))
                .collect()
        })
        .unwrap_or_default())
}
