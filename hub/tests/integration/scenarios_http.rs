//! Every scenario of `tests/scenarios/`, replayed through the real server over HTTP (tokens issued
//! with the CLI, a fresh SQLite file per scenario, a restart for each configuration change), gives
//! exactly the native core's transcript: every endpoint and extension, byte for byte, including the
//! 403 message of the spawn gate.

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::Server;
use quota_core::api::{Request, Response};
use quota_core::Timestamp;
use quota_scenarios::{replay, NativeHost, ScenarioHost};
use serde_json::Value;

struct HttpHost {
    dir: PathBuf,
    n: usize,
    server: Option<Server>,
    tokens: HashMap<String, String>,
    agent: ureq::Agent,
    /// Environment of every server and CLI process (the test override of the system clock).
    env: Vec<(String, String)>,
}

impl HttpHost {
    /// (Re)starts the server on the scenario's clock: its start-up work (stale cleanup, missed
    /// runs) happens at `now`, whatever the date the test runs on.
    fn start(&mut self, values: &Value, now: Timestamp) -> Result<(), String> {
        if let Some(s) = self.server.take() {
            s.stop();
        }
        let db = self.dir.join(format!("s{}.db", self.n));
        let v = common::write_values(&self.dir, &format!("v{}.yaml", self.n), values);
        let start = format!("{now}Z");
        let args = ["--test-clock", "--clock-start", &start];
        self.server = Some(Server::start_with_env(&db, &v, &args, &self.env));
        Ok(())
    }
}

impl ScenarioHost for HttpHost {
    fn reset(&mut self, values: &Value, now: Timestamp) -> Result<(), String> {
        self.n += 1;
        self.tokens.clear();
        self.start(values, now)
    }

    fn reconfigure(&mut self, values: &Value, now: Timestamp) -> Result<(), String> {
        // As an operator does it: check the new values file, then restart on the same database.
        // A refused file leaves the running server as it was.
        let v = common::write_values(&self.dir, &format!("check{}.yaml", self.n), values);
        let (code, _, err) = common::cli(&["check-config", "--values", &v.display().to_string()]);
        if code != 0 {
            return Err(err);
        }
        self.start(values, now)
    }

    fn handle(&mut self, req: &Request<'_>, now: Timestamp) -> Result<Response, String> {
        let (method, path, query, body, caller) = (req.method, req.path, req.query, req.body, req.caller);
        let server = self.server.as_ref().ok_or("not started")?;
        let token = match caller {
            None => None,
            Some(c) => {
                let key = format!("{}|{}|{}", c.name, c.admin, c.scopes.join(","));
                let db = server.db.clone();
                let env = &self.env;
                let t = self.tokens.entry(key).or_insert_with(|| {
                    let scopes: Vec<&str> = c.scopes.iter().map(String::as_str).collect();
                    common::token_with_env(&db, &c.name, c.admin, &scopes, env)
                });
                Some(t.clone())
            }
        };
        let url = if query.is_empty() {
            format!("{}{path}", server.url)
        } else {
            format!("{}{path}?{query}", server.url)
        };
        let when = format!("{now}Z");
        let body = (method != "GET").then_some(body);
        let (status, body) = common::http(
            &self.agent,
            method,
            &url,
            token.as_deref(),
            body,
            &[("X-Quota-Test-Now", &when)],
        );
        // The engine's bytes, and the newline quota-hub adds at the HTTP edge.
        let Some(body) = body.strip_suffix('\n') else {
            return Err(format!(
                "{method} {path}: the answer does not end with a newline: {body:?}"
            ));
        };
        Ok(Response {
            status,
            body: body.to_string(),
        })
    }
}

/// Replays every scenario through the server; `env` goes to every process it starts.
fn every_scenario_over_http(env: &[(&str, &str)]) {
    let dir = tempfile::tempdir().expect("dir");
    let files = quota_scenarios::files(&quota_scenarios::scenario_dir()).expect("scenario dir");
    assert!(files.len() >= 25, "found only {} scenarios", files.len());
    let mut host = HttpHost {
        dir: dir.path().to_path_buf(),
        n: 0,
        server: None,
        tokens: HashMap::new(),
        agent: common::agent(),
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    };
    let mut exchanges = 0;
    for file in &files {
        let name = file.file_name().unwrap_or_default().to_string_lossy().to_string();
        let scenario: Value =
            serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("scenario JSON");
        let native = replay(&mut NativeHost::default(), &scenario).expect("native replay");
        let http = replay(&mut host, &scenario).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            http.failures.is_empty(),
            "{name} over HTTP:\n{}",
            http.failures.join("\n")
        );
        assert_eq!(native.transcript.len(), http.transcript.len(), "{name}");
        for (a, b) in native.transcript.iter().zip(&http.transcript) {
            assert_eq!(a, b, "{name}: step {} differs between native and server", a.step);
        }
        exchanges += http.transcript.len();
    }
    if let Some(s) = host.server.take() {
        s.stop();
    }
    println!(
        "{} scenarios, {exchanges} HTTP requests (environment {env:?}): server == native core",
        files.len()
    );
}

#[test]
fn the_server_answers_every_scenario_exactly_as_the_native_core() {
    every_scenario_over_http(&[]);
}

/// Scenario times are fixed; the date the suite runs on must not matter. With the system clock a
/// year ahead (every server and CLI process), every transcript is still the native core's.
#[test]
fn the_scenarios_do_not_depend_on_the_date_they_run() {
    every_scenario_over_http(&[("QUOTA_HUB_TEST_DAYS_AHEAD", "366")]);
}
