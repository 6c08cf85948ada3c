//! Every scenario of `tests/scenarios/`, replayed through the real server over HTTP (tokens issued
//! with the CLI, a fresh SQLite file per scenario, a restart for each configuration change), gives
//! exactly the native core's transcript: every endpoint and extension, byte for byte, including the
//! 403 message of the spawn gate.

#![allow(non_upper_case_globals)]

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::Server;
use quota_core::api::{Caller, Response};
use quota_core::scenario::{replay, NativeHost, ScenarioHost};
use quota_core::Timestamp;
use serde_json::Value;

struct HttpHost {
    dir: PathBuf,
    n: usize,
    server: Option<Server>,
    tokens: HashMap<String, String>,
    agent: ureq::Agent,
}

impl HttpHost {
    fn start(&mut self, values: &Value) -> Result<(), String> {
        if let Some(s) = self.server.take() {
            s.stop();
        }
        let db = self.dir.join(format!("s{}.db", self.n));
        let v = common::write_values(&self.dir, &format!("v{}.yaml", self.n), values);
        self.server = Some(Server::start(&db, &v, &["--test-clock"]));
        Ok(())
    }
}

impl ScenarioHost for HttpHost {
    fn reset(&mut self, values: &Value) -> Result<(), String> {
        self.n += 1;
        self.tokens.clear();
        self.start(values)
    }

    fn reconfigure(&mut self, values: &Value) -> Result<(), String> {
        self.start(values) // same database, new values file: a restart, as an operator does it
    }

    fn handle(
        &mut self,
        method: &str,
        path: &str,
        query: &str,
        body: &str,
        caller: Option<&Caller>,
        now: Timestamp,
    ) -> Result<Response, String> {
        let server = self.server.as_ref().ok_or("not started")?;
        let token = match caller {
            None => None,
            Some(c) => {
                let key = format!("{}|{}|{}", c.name, c.admin, c.scopes.join(","));
                let db = server.db.clone();
                let t = self.tokens.entry(key).or_insert_with(|| {
                    let scopes: Vec<&str> = c.scopes.iter().map(String::as_str).collect();
                    common::token(&db, &c.name, c.admin, &scopes)
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
        Ok(Response { status, body })
    }
}

#[test]
fn the_server_answers_every_scenario_exactly_as_the_native_core() {
    let dir = tempfile::tempdir().expect("dir");
    let files =
        quota_core::scenario::files(&common::workspace().join("tests/scenarios")).expect("scenario dir");
    assert!(files.len() >= 25, "found only {} scenarios", files.len());
    let mut host = HttpHost {
        dir: dir.path().to_path_buf(),
        n: 0,
        server: None,
        tokens: HashMap::new(),
        agent: common::agent(),
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
        "{} scenarios, {exchanges} HTTP requests: server == native core",
        files.len()
    );
}
