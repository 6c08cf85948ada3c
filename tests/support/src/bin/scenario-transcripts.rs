//! Prints the native core's transcript of every scenario file as one JSON document, for hosts in
//! other languages to compare with byte for byte:
//! `{"01-....json": [{"step": 1, "request": "POST /...", "sent": "...", "status": 201, "body": "..."}, ...]}`
//! (`sent`: the request body exactly as sent).
//!
//! `cargo run -q -p quota-scenarios --bin scenario-transcripts [DIR]` (default: tests/scenarios).

use quota_scenarios::{files, replay, scenario_dir, NativeHost};
use serde_json::{json, Map, Value};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(scenario_dir);
    let mut out = Map::new();
    let paths = files(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let scenario: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut host = NativeHost::default();
        let r = replay(&mut host, &scenario).unwrap_or_else(|e| panic!("{name}: {e}"));
        if !r.failures.is_empty() {
            panic!(
                "{name}: the native core fails its own expectations:\n{}",
                r.failures.join("\n")
            );
        }
        let steps: Vec<Value> = r
            .transcript
            .into_iter()
            .map(|x| json!({"step": x.step, "request": x.request, "sent": x.sent, "status": x.status, "body": x.body}))
            .collect();
        out.insert(name, Value::Array(steps));
    }
    println!("{}", Value::Object(out));
}
