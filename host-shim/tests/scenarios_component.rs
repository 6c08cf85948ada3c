//! Every scenario replayed through the wasm component over a real SQLite file gives exactly the
//! native core's transcript (status and body of every request, byte for byte).

mod common;

use common::ComponentHost;
use quota_host::{Database, Durability, SqliteDb};
use quota_scenarios::{replay, NativeHost};

#[test]
fn component_over_sqlite_matches_the_native_core_byte_for_byte() {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = quota_scenarios::files(&quota_scenarios::scenario_dir()).expect("scenario dir");
    assert!(files.len() >= 25, "found only {} scenarios", files.len());
    let mut n = 0;
    let base = dir.path().to_path_buf();
    let fresh = Box::new(move || -> Box<dyn Database> {
        n += 1;
        Box::new(SqliteDb::open(&base.join(format!("s{n}.db")), Durability::Normal).expect("sqlite file"))
    });
    let mut component = ComponentHost::new(common::runtime(), fresh);
    let mut exchanges = 0;
    for file in &files {
        let name = file.file_name().unwrap_or_default().to_string_lossy().to_string();
        let scenario: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("scenario JSON");
        let native = replay(&mut NativeHost::default(), &scenario).expect("native replay");
        let wasm = replay(&mut component, &scenario).expect("component replay");
        assert!(
            wasm.failures.is_empty(),
            "{name} through the component:\n{}",
            wasm.failures.join("\n")
        );
        assert_eq!(native.transcript.len(), wasm.transcript.len(), "{name}");
        for (a, b) in native.transcript.iter().zip(&wasm.transcript) {
            assert_eq!(
                a, b,
                "{name}: step {} differs between native and component",
                a.step
            );
        }
        exchanges += wasm.transcript.len();
    }
    println!(
        "{} scenarios, {exchanges} requests: component over SQLite == native core",
        files.len()
    );
}
