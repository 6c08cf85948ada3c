//! Shared by the host's integration tests: the built components and the fixture values.
#![allow(dead_code)]

pub mod holds;
pub mod interleave;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use quota_host::{Limits, Runtime};

pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn load(rel: &str, limits: Limits) -> Arc<Runtime> {
    let path = workspace().join(rel);
    Runtime::load(&path, limits)
        .unwrap_or_else(|e| panic!("{e}\n(run `bash scripts/build-wasm.sh --fault` first)"))
}

/// The shipped component, compiled once per test binary.
pub fn runtime() -> Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| load(quota_host::COMPONENT_PATH, Limits::default()))
        .clone()
}

/// The fault-injection component with a short call deadline.
pub fn fault_runtime() -> Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        let limits = Limits {
            call_deadline: Some(std::time::Duration::from_millis(300)),
            ..Limits::default()
        };
        load(quota_host::FAULT_COMPONENT_PATH, limits)
    })
    .clone()
}

pub fn fixture_json() -> String {
    quota_scenarios::fixture_values().to_string()
}

pub fn admin() -> quota_core::Caller {
    quota_core::Caller {
        name: "admin".into(),
        admin: true,
        scopes: vec![],
    }
}

pub fn hub() -> quota_core::Caller {
    quota_core::Caller {
        name: "hub".into(),
        admin: false,
        scopes: vec!["quota:sessions".into()],
    }
}

/// One REST request through the component; panics on a host error. Returns status and JSON body.
pub fn request(
    w: &mut quota_host::Worker,
    caller: &quota_core::Caller,
    method: &str,
    path: &str,
    body: &str,
    now: quota_core::Timestamp,
) -> (u16, serde_json::Value) {
    let req = quota_core::Request {
        method,
        path,
        query: "",
        body,
        caller: Some(caller),
    };
    let r = w
        .handle_request(&req, now)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (
        r.status,
        serde_json::from_str(&r.body)
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {}", r.body)),
    )
}

/// Replays scenarios through the wasm component; `fresh` makes the empty database for each scenario.
pub struct ComponentHost {
    runtime: std::sync::Arc<quota_host::Runtime>,
    fresh: Box<dyn FnMut() -> Box<dyn quota_host::Database>>,
    worker: Option<quota_host::Worker>,
}

impl ComponentHost {
    pub fn new(
        runtime: std::sync::Arc<quota_host::Runtime>,
        fresh: Box<dyn FnMut() -> Box<dyn quota_host::Database>>,
    ) -> ComponentHost {
        ComponentHost {
            runtime,
            fresh,
            worker: None,
        }
    }

    pub fn worker(&mut self) -> Option<&mut quota_host::Worker> {
        self.worker.as_mut()
    }
}

impl quota_scenarios::ScenarioHost for ComponentHost {
    fn reset(&mut self, values: &serde_json::Value, _now: quota_core::Timestamp) -> Result<(), String> {
        let backend = (self.fresh)();
        self.worker = Some(
            quota_host::Worker::new(self.runtime.clone(), backend, &values.to_string())
                .map_err(|e| e.to_string())?,
        );
        Ok(())
    }

    fn reconfigure(&mut self, values: &serde_json::Value, _now: quota_core::Timestamp) -> Result<(), String> {
        let w = self.worker.as_mut().ok_or("not started")?;
        w.configure(&values.to_string())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn handle(
        &mut self,
        req: &quota_core::Request<'_>,
        now: quota_core::Timestamp,
    ) -> Result<quota_core::Response, String> {
        let w = self.worker.as_mut().ok_or("not started")?;
        w.handle_request(req, now).map_err(|e| e.to_string())
    }
}

/// Replays every scenario file through the component over databases from `fresh` (one per
/// scenario) and asserts each transcript equals the native core's, byte for byte. Returns
/// (scenarios, requests).
pub fn assert_every_scenario_matches_native(
    fresh: Box<dyn FnMut() -> Box<dyn quota_host::Database>>,
    what: &str,
) -> (usize, usize) {
    let files = quota_scenarios::files(&quota_scenarios::scenario_dir()).expect("scenario dir");
    assert!(files.len() >= 25, "found only {} scenarios", files.len());
    let mut component = ComponentHost::new(runtime(), fresh);
    let mut exchanges = 0;
    for file in &files {
        let name = file.file_name().unwrap_or_default().to_string_lossy().to_string();
        let scenario: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("scenario JSON");
        let native = quota_scenarios::replay(&mut quota_scenarios::NativeHost::default(), &scenario)
            .expect("native replay");
        let got = quota_scenarios::replay(&mut component, &scenario).expect("component replay");
        assert!(
            got.failures.is_empty(),
            "{name} through the component over {what}:\n{}",
            got.failures.join("\n")
        );
        assert_eq!(native.transcript.len(), got.transcript.len(), "{name}");
        for (a, b) in native.transcript.iter().zip(&got.transcript) {
            assert_eq!(a, b, "{name}: step {} differs between native and {what}", a.step);
        }
        exchanges += got.transcript.len();
    }
    (files.len(), exchanges)
}
