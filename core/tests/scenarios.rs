//! Replays every scenario file of `tests/scenarios/` against the native core.

use std::path::PathBuf;

use quota_scenarios::{replay, NativeHost};

#[test]
fn every_scenario_replays_on_the_native_core() {
    let files: Vec<PathBuf> =
        quota_scenarios::files(&quota_scenarios::scenario_dir()).expect("tests/scenarios exists");
    assert!(
        files.len() >= 25,
        "expected at least 25 scenarios, found {}",
        files.len()
    );
    let mut failed = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable scenario");
        let scenario: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", file.display()));
        let mut host = NativeHost::default();
        let name = file.file_name().unwrap_or_default().to_string_lossy().to_string();
        match replay(&mut host, &scenario) {
            Ok(r) if r.failures.is_empty() => println!("ok   {name} ({} requests)", r.transcript.len()),
            Ok(r) => failed.push(format!("{name}:\n  {}", r.failures.join("\n  "))),
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}
