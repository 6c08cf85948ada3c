//! Starting inputs for each fuzz target (`surfaces.rs`), from the repository's own files; written
//! into the fuzz corpus by `fuzz/src/make_seeds.rs` and replayed by `tests/fuzz_regressions.rs`.

use serde_json::Value;

use crate::surfaces::REQUEST_SEPARATOR;

/// Starting inputs for the named target, from the repository's own files: every scenario's
/// requests, bodies and values, the example and chart values files, their cron schedules, and a
/// few CSV files as `set-quota -f` documents them. `(name, bytes)`.
pub fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenarios: Vec<(String, Value)> = crate::files(&crate::scenario_dir())
        .expect("tests/scenarios is readable")
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).expect("a scenario file is readable");
            (
                name,
                serde_json::from_str(&text).expect("a scenario file is JSON"),
            )
        })
        .collect();
    let yaml_files = [
        "examples/values.yaml",
        "deploy/image/values.yaml",
        "deploy/helm/quota-hub/values.yaml",
    ];
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    match target {
        "handle_request" => {
            for (name, s) in &scenarios {
                let steps = s["steps"].as_array().cloned().unwrap_or_default();
                let mut parts = Vec::new();
                for step in &steps {
                    if let Some(secs) = step.get("advance").and_then(Value::as_i64) {
                        parts.push(format!("+{secs}\n"));
                        continue;
                    }
                    let (Some(method), Some(path)) = (step["method"].as_str(), step["path"].as_str()) else {
                        continue;
                    };
                    let who = match step.get("as") {
                        Some(Value::String(w)) => w.clone(),
                        Some(_) => "admin".into(),
                        None => "admin".into(),
                    };
                    let body = match (step.get("raw_body"), step.get("body")) {
                        (Some(Value::String(raw)), _) => raw.clone(),
                        (_, Some(b)) => b.to_string(),
                        _ => String::new(),
                    };
                    parts.push(format!("{who} {method} {path}\n{body}"));
                }
                out.push((name.clone(), parts.join(REQUEST_SEPARATOR).into_bytes()));
            }
        }
        "values_file" => {
            for f in yaml_files {
                if let Ok(text) = std::fs::read(root.join(f)) {
                    out.push((f.replace('/', "_"), text));
                }
            }
            for (name, s) in &scenarios {
                for v in [s.get("values")].into_iter().flatten() {
                    out.push((
                        name.clone(),
                        serde_norway::to_string(v).unwrap_or_default().into_bytes(),
                    ));
                }
            }
            out.push((
                "fixture".into(),
                serde_norway::to_string(&crate::fixture_values())
                    .unwrap_or_default()
                    .into_bytes(),
            ));
        }
        "cron" => {
            let mut seen = std::collections::BTreeSet::new();
            for f in yaml_files {
                let text = std::fs::read_to_string(root.join(f)).unwrap_or_default();
                for line in text.lines() {
                    if let Some(rest) = line.trim().strip_prefix("schedule:") {
                        let expr = rest.split('#').next().unwrap_or("").trim().trim_matches('"');
                        seen.insert(expr.to_string());
                    }
                }
            }
            for e in [
                "0 6 * * 1",
                "*/15 * * * *",
                "0 0 1 * *",
                "0 0 29 2 *",
                "5-10/2 1,3 * 1-6 0-6",
                "0 0 31 4 *",
            ] {
                seen.insert(e.to_string());
            }
            for (i, e) in seen.into_iter().enumerate() {
                out.push((
                    format!("schedule-{i}"),
                    format!("{e}\n2026-11-22T10:00:00Z").into_bytes(),
                ));
            }
        }
        "csv_import" => {
            for (i, text) in [
                "username,quota\nalice,100\nbob,\n\ncarol,-5\n",
                "username\nalice\nBob \n",
                "quota,username\r\n7,\"a,b\"\r\n",
            ]
            .iter()
            .enumerate()
            {
                out.push((format!("csv-{i}"), text.as_bytes().to_vec()));
            }
        }
        "strict_json" => {
            for (name, s) in &scenarios {
                for (i, step) in s["steps"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                {
                    let body = match (step.get("raw_body"), step.get("body")) {
                        (Some(Value::String(raw)), _) => raw.clone(),
                        (_, Some(b)) => b.to_string(),
                        _ => continue,
                    };
                    out.push((format!("{name}-{i}"), body.into_bytes()));
                }
            }
        }
        other => panic!("no fuzz target named {other}"),
    }
    out
}
