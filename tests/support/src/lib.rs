//! `quota-scenarios` (test support, not shipped): replays scenario files (`tests/scenarios/*.json`,
//! format in `tests/scenarios/README.md`) against any host of the engine. It lives outside
//! `quota-core` because it reads files, and the core does no I/O. A host implements [`ScenarioHost`]; the runner drives the clock, sends
//! each request, checks expectations, and returns the transcript (every status and body, byte for
//! byte) so that two hosts can be compared exactly.

use std::collections::BTreeMap;

pub mod fuzz_seeds;
mod host;
pub mod openapi_check;
mod scenario_files;
pub mod surfaces;

pub use host::{NativeHost, ScenarioHost};
pub use scenario_files::{files, fixture_values, scenario_dir};

use serde_json::{json, Value};

use quota_core::api::{Caller, Request, Response};
use quota_core::Timestamp;

/// The identity behind an `as` value. Strings: `admin` (admin user), `hub` (scope quota:sessions),
/// `scheduler` (scope quota:refresh), `service-admin` (scope quota:admin), `anonymous` (no token);
/// any other string is a plain user of that name. Objects: `{name, admin, scopes}`.
pub fn caller_for(v: Option<&Value>) -> Result<Option<Caller>, String> {
    let plain = |name: &str, admin: bool, scopes: &[&str]| {
        Some(Caller {
            name: name.into(),
            admin,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
        })
    };
    Ok(match v {
        None => plain("admin", true, &[]),
        Some(Value::String(s)) => match s.as_str() {
            "anonymous" => None,
            "admin" => plain("admin", true, &[]),
            "hub" => plain("hub", false, &["quota:sessions"]),
            "scheduler" => plain("scheduler", false, &["quota:refresh"]),
            "service-admin" => plain("service-admin", false, &["quota:admin"]),
            other => plain(other, false, &[]),
        },
        Some(Value::Object(o)) => {
            let name = o
                .get("name")
                .and_then(Value::as_str)
                .ok_or("`as.name` is required")?;
            let admin = o.get("admin").and_then(Value::as_bool).unwrap_or(false);
            let scopes = match o.get("scopes") {
                None => Vec::new(),
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(String::from).collect(),
                Some(_) => return Err("`as.scopes` must be a list".into()),
            };
            Some(Caller {
                name: name.into(),
                admin,
                scopes,
            })
        }
        Some(_) => return Err("`as` must be a string or an object".into()),
    })
}

/// One exchange of a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub step: usize,
    pub request: String,
    /// The request body exactly as sent (a host whose JSON cannot keep `10.0` apart from `10`, as
    /// JavaScript's cannot, replays these bytes).
    pub sent: String,
    pub status: u16,
    pub body: String,
}

/// A scenario's full transcript, and every expectation that did not hold.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    pub transcript: Vec<Exchange>,
    pub failures: Vec<String>,
}

/// Whether `actual` contains `expected`: objects by the keys given, lists element by element with
/// the same length, everything else exactly.
pub fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => e
            .iter()
            .all(|(k, ev)| a.get(k).is_some_and(|av| contains(av, ev))),
        (Value::Array(a), Value::Array(e)) => {
            a.len() == e.len() && a.iter().zip(e).all(|(x, y)| contains(x, y))
        }
        _ => actual == expected,
    }
}

fn merged_values(scenario: &Value) -> Value {
    let mut values = scenario.get("values").cloned().unwrap_or_else(fixture_values);
    if let Some(Value::Object(q)) = scenario.get("quota") {
        if let Some(Value::Object(quota)) = values.pointer_mut("/custom/quota") {
            for (k, v) in q {
                quota.insert(k.clone(), v.clone());
            }
        }
    }
    values
}

/// Replays one parsed scenario.
pub fn replay(host: &mut dyn ScenarioHost, scenario: &Value) -> Result<Replay, String> {
    let mut now = match scenario.get("start").and_then(Value::as_str) {
        Some(s) => Timestamp::parse(s)?,
        None => Timestamp::parse("2026-11-22T10:00:00Z")?,
    };
    host.reset(&merged_values(scenario), now)?;
    let mut out = Replay::default();
    let steps = scenario
        .get("steps")
        .and_then(Value::as_array)
        .ok_or("`steps` must be a list")?;
    for (i, step) in steps.iter().enumerate() {
        let n = i + 1;
        if let Some(secs) = step.get("advance") {
            let secs = secs
                .as_i64()
                .ok_or(format!("step {n}: `advance` must be whole seconds"))?;
            now = now.plus_seconds(secs);
            continue;
        }
        if let Some(at) = step.get("at") {
            now = Timestamp::parse(at.as_str().ok_or(format!("step {n}: `at` must be a timestamp"))?)?;
            continue;
        }
        if let Some(values) = step.get("configure") {
            let mut doc = json!({ "values": values.clone() });
            if let Some(q) = step.get("quota") {
                doc["quota"] = q.clone();
            }
            let merged = merged_values(if values.is_null() { step } else { &doc });
            match (host.reconfigure(&merged, now), step.get("refused")) {
                (Ok(()), None) => {}
                (Err(e), None) => return Err(format!("step {n}: configure failed: {e}")),
                (Ok(()), Some(_)) => return Err(format!("step {n}: configure should have been refused")),
                // Refused: each expected problem is a line (`field: message`) of the host's
                // refusal, and the previous configuration stays in force.
                (Err(e), Some(want)) => {
                    let lines: Vec<&str> = e.lines().map(|l| l.trim()).collect();
                    for p in want.as_array().ok_or(format!("step {n}: `refused` is a list"))? {
                        let p = p.as_str().ok_or(format!("step {n}: `refused` lists strings"))?;
                        if !lines.iter().any(|l| l.ends_with(p)) {
                            return Err(format!("step {n}: the refusal does not say {p:?}:\n{e}"));
                        }
                    }
                }
            }
            continue;
        }
        let method = step
            .get("method")
            .and_then(Value::as_str)
            .ok_or(format!("step {n}: `method` is required"))?;
        let target = step
            .get("path")
            .and_then(Value::as_str)
            .ok_or(format!("step {n}: `path` is required"))?;
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let body = match (step.get("raw_body"), step.get("body")) {
            (Some(Value::String(raw)), _) => raw.clone(),
            (_, Some(b)) => b.to_string(),
            _ => String::new(),
        };
        let caller = caller_for(step.get("as"))?;
        let req = Request {
            method,
            path,
            query,
            body: &body,
            caller: caller.as_ref(),
        };
        let resp = host.handle(&req, now)?;
        let request = format!("{method} {target}");
        if let Some(expect) = step.get("expect") {
            check(n, &request, &resp, expect, &mut out.failures);
        }
        if let Err(e) = openapi_check::check(method, target, &body, resp.status, &resp.body) {
            out.failures.push(format!(
                "step {n} {request}: not as the OpenAPI document says: {e}"
            ));
        }
        out.transcript.push(Exchange {
            step: n,
            request,
            sent: body.clone(),
            status: resp.status,
            body: resp.body,
        });
    }
    if let Some(fin) = scenario.get("final") {
        check_final(host, fin, now, &mut out)?;
    }
    check_ledger_reconciles(host, now, &mut out)?;
    Ok(out)
}

fn check(n: usize, request: &str, resp: &Response, expect: &Value, failures: &mut Vec<String>) {
    if let Some(status) = expect.get("status").and_then(Value::as_u64) {
        if u64::from(resp.status) != status {
            failures.push(format!(
                "step {n} {request}: status {} (expected {status}), body {}",
                resp.status, resp.body
            ));
        }
    }
    if let Some(body) = expect.get("body") {
        match serde_json::from_str::<Value>(&resp.body) {
            Ok(actual) if contains(&actual, body) => {}
            Ok(actual) => failures.push(format!(
                "step {n} {request}: body {actual}\n    does not contain {body}"
            )),
            Err(e) => failures.push(format!(
                "step {n} {request}: body is not JSON ({e}): {}",
                resp.body
            )),
        }
    }
}

fn admin_get(host: &mut dyn ScenarioHost, path: &str, query: &str, now: Timestamp) -> Result<Value, String> {
    let admin = caller_for(None)?;
    let req = Request {
        method: "GET",
        path,
        query,
        body: "",
        caller: admin.as_ref(),
    };
    let r = host.handle(&req, now)?;
    if r.status != 200 {
        return Err(format!("GET {path}?{query}: status {} {}", r.status, r.body));
    }
    serde_json::from_str(&r.body).map_err(|e| e.to_string())
}

/// Every transaction, oldest first, read page by page through the API.
pub fn full_ledger(host: &mut dyn ScenarioHost, now: Timestamp) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let page = admin_get(
            host,
            "/admin/api/quota/transactions",
            &format!("after_id={after}"),
            now,
        )?;
        let txs = page["transactions"].as_array().cloned().unwrap_or_default();
        out.extend(txs);
        match page["next_after_id"].as_i64() {
            Some(next) => after = next,
            None => return Ok(out),
        }
    }
}

fn check_final(
    host: &mut dyn ScenarioHost,
    fin: &Value,
    now: Timestamp,
    out: &mut Replay,
) -> Result<(), String> {
    if let Some(Value::Object(expected)) = fin.get("balances") {
        let users = admin_get(host, "/admin/api/quota/", "", now)?;
        let actual: BTreeMap<String, i64> = users["users"]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|u| Some((u["username"].as_str()?.to_string(), u["balance"].as_i64()?)))
                    .collect()
            })
            .unwrap_or_default();
        let expected: BTreeMap<String, i64> = expected
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_i64()?)))
            .collect();
        if actual != expected {
            out.failures
                .push(format!("final balances {actual:?}, expected {expected:?}"));
        }
    }
    if let Some(Value::Array(expected)) = fin.get("ledger") {
        let actual: Vec<Value> = full_ledger(host, now)?
            .iter()
            .map(|t| {
                json!([
                    t["username"],
                    t["transaction_type"],
                    t["amount"],
                    t["balance_before"],
                    t["balance_after"]
                ])
            })
            .collect();
        if &actual != expected {
            out.failures.push(format!(
                "final ledger [username, type, amount, before, after]:\n    actual   {}\n    expected {}",
                Value::from(actual),
                Value::from(expected.clone())
            ));
        }
    }
    Ok(())
}

/// The invariants that hold after any scenario: each account's balance (a user's, a budget's)
/// equals the sum of its transaction amounts, and every transaction's amount equals after - before.
fn check_ledger_reconciles(
    host: &mut dyn ScenarioHost,
    now: Timestamp,
    out: &mut Replay,
) -> Result<(), String> {
    let mut sums: BTreeMap<String, i64> = BTreeMap::new();
    for t in full_ledger(host, now)? {
        let (amount, before, after) = (
            t["amount"].as_i64(),
            t["balance_before"].as_i64(),
            t["balance_after"].as_i64(),
        );
        if let (Some(a), Some(b), Some(c)) = (amount, before, after) {
            if a != c - b {
                out.failures.push(format!(
                    "transaction {} has amount {a} but moves {b} -> {c}",
                    t["id"]
                ));
            }
            // Per account: a budget's rows are its own, whoever ran the session.
            let account = match t["budget"].as_str() {
                Some(b) => format!("budget {b}"),
                None => t["username"].as_str().unwrap_or_default().to_string(),
            };
            *sums.entry(account).or_default() += a;
        }
    }
    let budgets = admin_get(host, "/admin/api/quota/budgets", "", now)?;
    for b in budgets["budgets"].as_array().cloned().unwrap_or_default() {
        let name = b["name"].as_str().unwrap_or_default();
        let balance = b["balance"].as_i64().unwrap_or_default();
        let sum = sums.get(&format!("budget {name}")).copied().unwrap_or(0);
        if sum != balance {
            out.failures.push(format!(
                "budget {name}: balance {balance} but its transactions sum to {sum}"
            ));
        }
    }
    let users = admin_get(host, "/admin/api/quota/", "", now)?;
    for u in users["users"].as_array().cloned().unwrap_or_default() {
        let name = u["username"].as_str().unwrap_or_default();
        let balance = u["balance"].as_i64().unwrap_or_default();
        let sum = sums.get(name).copied().unwrap_or(0);
        if sum != balance {
            out.failures.push(format!(
                "user {name}: balance {balance} but transactions sum to {sum}"
            ));
        }
    }
    Ok(())
}
