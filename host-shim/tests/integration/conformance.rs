//! The host conformance suite (tests/conformance/faults.json), as quota-host meets it: storage
//! faults through a wrapper around its own SQLite bridge, guest faults through the fault-injection
//! component, every expectation as the file states it for every host.

use crate::common;

use std::sync::{Arc, Mutex};

use quota_host::{
    Database, HostError, HostingContract, Limits, Runtime, SqlCell, SqlError, SqliteDb, SqliteOptions, Worker,
};
use serde_json::Value;

/// The `write`-th write of each run (transaction; of the `run`-th only, when given) fails with
/// `kind`, `left` more runs.
#[derive(Default)]
struct Plan {
    kind: Option<String>,
    write: u64,
    run: Option<u64>,
    left: u64,
    seen: u64,
    runs: u64,
}

struct Faulty {
    inner: SqliteDb,
    plan: Arc<Mutex<Plan>>,
}

fn is_write(sql: &str) -> bool {
    let s = sql.trim_start().to_ascii_uppercase();
    ["INSERT", "UPDATE", "DELETE"].iter().any(|w| s.starts_with(w))
}

impl Faulty {
    fn fault(&self, sql: &str) -> Result<(), SqlError> {
        let mut p = self.plan.lock().expect("plan");
        let Some(kind) = p.kind.clone() else { return Ok(()) };
        if !is_write(sql) || p.left == 0 || p.run.is_some_and(|r| r != p.runs) {
            return Ok(());
        }
        p.seen += 1;
        if p.seen != p.write {
            return Ok(());
        }
        p.left -= 1;
        let m = format!("injected: {kind}");
        Err(match kind.as_str() {
            "busy" => SqlError::Busy,
            "conflict" => SqlError::Conflict(m),
            "constraint" => SqlError::Constraint(m),
            _ => SqlError::Other(m),
        })
    }
}

impl Database for Faulty {
    fn contract(&self) -> &Arc<HostingContract> {
        self.inner.contract()
    }
    fn in_transaction(&self) -> bool {
        self.inner.in_transaction()
    }
    fn query(&mut self, sql: &str, params: &[SqlCell]) -> Result<Vec<Vec<SqlCell>>, SqlError> {
        self.fault(sql)?;
        self.inner.query(sql, params)
    }
    fn execute_many(&mut self, sql: &str, rows: &[Vec<SqlCell>]) -> Result<u64, SqlError> {
        self.fault(sql)?;
        self.inner.execute_many(sql, rows)
    }
    fn query_json(&mut self, sql: &str, params_json: &str) -> Result<String, SqlError> {
        self.fault(sql)?;
        self.inner.query_json(sql, params_json)
    }
    fn execute_many_json(&mut self, sql: &str, rows_json: &str) -> Result<u64, SqlError> {
        self.fault(sql)?;
        self.inner.execute_many_json(sql, rows_json)
    }
    fn begin(&mut self) -> Result<(), SqlError> {
        let mut p = self.plan.lock().expect("plan");
        p.seen = 0;
        p.runs += 1;
        drop(p);
        self.inner.begin()
    }
}

fn send(w: &mut Worker, r: &Value) -> Result<quota_core::Response, HostError> {
    let c = &r["caller"];
    let caller = quota_core::Caller {
        name: c["name"].as_str().expect("caller").into(),
        admin: c["admin"].as_bool().unwrap_or(false),
        scopes: c["scopes"]
            .as_array()
            .map(|s| s.iter().map(|x| x.as_str().expect("scope").to_string()).collect())
            .unwrap_or_default(),
    };
    let req = quota_core::Request {
        method: r["method"].as_str().expect("method"),
        path: r["path"].as_str().expect("path"),
        query: "",
        body: r["body"].as_str().unwrap_or(""),
        caller: Some(&caller),
    };
    w.handle_request(&req, quota_core::Timestamp(1_795_000_000))
}

/// A runtime of its own for a case that needs other bounds than the contract's.
fn runtime_with(path: &str, limits: Limits) -> Arc<Runtime> {
    Runtime::load(&common::workspace().join(path), limits)
        .unwrap_or_else(|e| panic!("{e} (bash scripts/build-wasm.sh --fault)"))
}

fn balances(w: &mut Worker, want: &serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    want.keys()
        .map(|u| {
            let rows = w
                .db()
                .query(
                    "SELECT balance FROM users WHERE username = ?1",
                    &[SqlCell::Text(u.clone())],
                )
                .expect("balance");
            let b = rows
                .first()
                .and_then(|r| r[0].as_int())
                .map_or(Value::Null, Value::from);
            (u.clone(), b)
        })
        .collect()
}

fn run_case(suite: &Value, case: &Value, write: u64) {
    let name = case["name"].as_str().expect("name");
    let fault = &case["fault"];
    let dir = tempfile::tempdir().expect("dir");
    let guest = fault.get("guest").is_some();
    let rt = if guest {
        let deadline = std::time::Duration::from_millis(fault["deadline_ms"].as_u64().unwrap_or(30_000));
        let limits = Limits {
            call_deadline: Some(deadline),
            ..Limits::default()
        };
        runtime_with(quota_host::FAULT_COMPONENT_PATH, limits)
    } else if let Some(n) = case["chunk_users"].as_u64() {
        let limits = Limits {
            refresh_chunk_users: Some(u32::try_from(n).expect("chunk_users")),
            ..Limits::default()
        };
        runtime_with(quota_host::COMPONENT_PATH, limits)
    } else {
        common::runtime()
    };
    let plan = Arc::new(Mutex::new(Plan::default()));
    let db = SqliteDb::open(&rt, &dir.path().join("q.db"), SqliteOptions::default()).expect("db");
    let db = Faulty {
        inner: db,
        plan: plan.clone(),
    };
    let mut w = Worker::new(rt, Box::new(db), &suite["values"].to_string()).expect("worker");
    for r in case["before"].as_array().expect("before") {
        let answer = send(&mut w, r).expect("before");
        assert!(answer.status < 300, "{name}: {}", answer.body);
    }
    let before = quota_host::dump(w.db(), &[]).expect("dump");
    if let Some(kind) = fault["storage"].as_str() {
        *plan.lock().expect("plan") = Plan {
            kind: Some(kind.into()),
            write,
            run: fault["run"].as_u64(),
            runs: 0,
            left: match &fault["times"] {
                Value::String(s) if s == "always" => u64::MAX,
                t => t.as_u64().unwrap_or(1),
            },
            seen: 0,
        };
    }
    let x = &case["expect"];
    let answer = send(&mut w, &case["request"]);
    let contract = w.db().contract().clone();
    if let Some(kind) = x["error"].as_str() {
        let Err(HostError::Storage(e)) = &answer else {
            panic!("{name}: expected a storage error, got {answer:?}")
        };
        let h = contract.handling(e.kind());
        let got = (
            format!("{:?}", e.kind()).to_lowercase(),
            h.transient,
            h.http_status,
        );
        let want = (
            kind.to_string(),
            x["transient"].as_bool().expect("transient"),
            x["http_status"].as_u64().expect("status") as u16,
        );
        assert_eq!(got, want, "{name}");
    } else if x["engine_error"].as_bool() == Some(true) {
        assert!(
            matches!(answer, Err(HostError::Trap(_))),
            "{name}: expected a trap, got {answer:?}"
        );
    } else {
        let answer = answer.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            u64::from(answer.status),
            x["status"].as_u64().expect("status"),
            "{name}: {}",
            answer.body
        );
    }
    match &x["retries"] {
        Value::String(s) if s == "contract" => {
            assert_eq!(w.conflicts_retried, u64::from(contract.retry_attempts), "{name}")
        }
        Value::Number(n) => assert_eq!(Some(w.conflicts_retried), n.as_u64(), "{name}"),
        _ => {}
    }
    if x["unchanged"].as_bool() == Some(true) {
        assert_eq!(
            quota_host::dump(w.db(), &[]).expect("dump"),
            before,
            "{name}: a write was left behind"
        );
    }
    if let Some(b) = x["balance"].as_array() {
        let rows = w
            .db()
            .query(
                "SELECT balance FROM users WHERE username = ?1",
                &[SqlCell::Text(b[0].as_str().expect("user").into())],
            )
            .expect("balance");
        assert_eq!(
            rows,
            vec![vec![SqlCell::Int(b[1].as_i64().expect("balance"))]],
            "{name}"
        );
    }
    if let Some(want) = x["balances"].as_object() {
        assert_eq!(&balances(&mut w, want), want, "{name}");
    }
    if let Some(then) = case.get("then") {
        let answer = send(&mut w, then).unwrap_or_else(|e| panic!("{name}: then: {e}"));
        let status = then["status"].as_u64().expect("status");
        assert_eq!(u64::from(answer.status), status, "{name}: then: {}", answer.body);
        let body: Value = serde_json::from_str(&answer.body).expect("json");
        for (k, v) in then["json"].as_object().into_iter().flatten() {
            assert_eq!(&body[k], v, "{name}: then: {k}");
        }
        if let Some(want) = then["balances"].as_object() {
            assert_eq!(&balances(&mut w, want), want, "{name}: then");
        }
    }
}

#[test]
fn every_host_conformance_case() {
    let text =
        std::fs::read_to_string(common::workspace().join("tests/conformance/faults.json")).expect("suite");
    let suite: Value = serde_json::from_str(&text).expect("json");
    let mut ran = 0;
    for case in suite["cases"].as_array().expect("cases") {
        let writes: Vec<u64> = match &case["fault"]["write"] {
            Value::Array(ws) => ws.iter().map(|w| w.as_u64().expect("write")).collect(),
            w => vec![w.as_u64().unwrap_or(0)],
        };
        for write in writes {
            run_case(&suite, case, write);
            ran += 1;
        }
    }
    assert!(ran > 0, "the suite has no cases");
}
