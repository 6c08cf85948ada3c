//! `scenario-transcripts` prints every scenario's native transcript as JSON (the Python and Node
//! tests compare with it; building it here also leaves `target/debug/scenario-transcripts` for them).

use serde_json::Value;

#[test]
fn every_scenario_has_a_transcript_with_the_bytes_sent() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scenario-transcripts"))
        .output()
        .expect("run scenario-transcripts");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let files = quota_scenarios::files(&quota_scenarios::scenario_dir()).expect("scenario files");
    assert_eq!(doc.as_object().map(|o| o.len()), Some(files.len()));
    let first = &doc["08-runtime-bounds.json"];
    let step = first
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|x| x["sent"].as_str().is_some_and(|s| s.contains("10.0")))
        })
        .expect("the body with 10.0, as sent");
    assert_eq!(step["status"], 400);
}
