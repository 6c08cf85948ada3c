//! Shared by the host's integration tests: the built components and the fixture values.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use quota_host::{Limits, Runtime};

pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn load(rel: &str, limits: Limits) -> Arc<Runtime> {
    let path = workspace().join(rel);
    Runtime::load(&path, limits)
        .unwrap_or_else(|e| panic!("{e}\n(run `bash scripts/build-wasm.sh --fault` first)"))
}

/// The shipped component, compiled once per test binary.
pub fn runtime() -> Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| load(quota_host::component_path, Limits::default()))
        .clone()
}

/// The fault-injection component with a short call deadline.
pub fn fault_runtime() -> Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        let limits = Limits {
            call_deadline: std::time::Duration::from_millis(300),
            ..Limits::default()
        };
        load(quota_host::fault_component_path, limits)
    })
    .clone()
}

pub fn fixture_json() -> String {
    quota_core::scenario::fixture_values().to_string()
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
