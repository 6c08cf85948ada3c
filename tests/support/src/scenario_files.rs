//! Where the scenarios are and what they start from: the scenario files of a directory, and the
//! values document every scenario starts from unless it gives its own.

use serde_json::{json, Value};

/// `tests/scenarios/` of this workspace.
pub fn scenario_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// The scenario files (`*.json`) of a directory, sorted by name.
pub fn files(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The values document every scenario starts from unless it gives its own (`values`); `quota`
/// keys of a scenario are merged into `custom.quota`.
pub fn fixture_values() -> Value {
    json!({
        "custom": {
            "authMode": "github",
            "quota": { "cpuRate": 1, "minimumToStart": 10, "defaultQuota": 0 },
            "accelerators": {
                "phx": { "displayName": "PHX", "description": "PHX accelerator", "nodeSelector": {"accel": "phx"}, "quotaRate": 2 },
                "dgpu": { "displayName": "DGPU", "description": "Discrete GPU", "nodeSelector": {"accel": "dgpu"}, "quotaRate": 4 }
            }
        }
    })
}
