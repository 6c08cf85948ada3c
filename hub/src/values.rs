//! Values files: YAML (the Helm chart's format) read into the JSON document the engine takes.

use std::path::Path;
use std::sync::Arc;

use quota_host::{HostError, Runtime, Worker};

/// Reads a values file; a file that does not parse is refused with the parser's line and column.
pub fn read(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("values file {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("values file {}: {e}", path.display()))
}

pub fn parse(text: &str) -> Result<serde_json::Value, String> {
    if text.trim().is_empty() {
        return Ok(serde_json::json!({}));
    }
    structured(text)
}

/// A YAML document (a JSON one read as JSON: YAML 1.1's parser takes U+0085, U+2028 and U+2029 in
/// a JSON string for line breaks, and a group may have U+2028 in its name; in YAML, write such a
/// character as its escape, `"\u2028"`).
pub fn structured(text: &str) -> Result<serde_json::Value, String> {
    if text.trim_start().starts_with('{') || text.trim_start().starts_with('[') {
        if let Ok(v) = quota_core::strict_json::parse(text) {
            return Ok(v);
        }
    }
    serde_norway::from_str::<serde_json::Value>(text).map_err(|e| e.to_string())
}

/// Checks a values document with the engine (its `configure`, as every host does): a worker that
/// answers configuration questions, or every problem as `key.path: message`.
pub fn check(rt: &Arc<Runtime>, values: &serde_json::Value) -> Result<Worker, Vec<String>> {
    match Worker::without_storage(rt.clone(), &values.to_string()) {
        Ok(w) => Ok(w),
        Err(HostError::Config(problems)) => {
            Err(problems.into_iter().map(|(f, m)| format!("{f}: {m}")).collect())
        }
        Err(e) => Err(vec![e.to_string()]),
    }
}

/// Reads and checks a values file with the engine; prints every problem and refuses the file.
pub fn read_checked(
    path: &Path,
    rt: &Arc<Runtime>,
    refusal: &str,
) -> Result<(serde_json::Value, Worker), String> {
    let doc = read(path)?;
    match check(rt, &doc) {
        Ok(w) => Ok((doc, w)),
        Err(problems) => {
            for p in &problems {
                eprintln!("{}: {p}", path.display());
            }
            Err(format!(
                "{}: {} problem(s){refusal}",
                path.display(),
                problems.len()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_becomes_the_json_document() {
        let v = parse("custom:\n  authMode: github\n  quota:\n    cpuRate: 1.5\n").unwrap();
        assert_eq!(
            v,
            serde_json::json!({"custom": {"authMode": "github", "quota": {"cpuRate": 1.5}}})
        );
    }

    #[test]
    fn accelerators_keep_the_files_order() {
        let v =
            parse("custom:\n  accelerators:\n    zeta: {quotaRate: 1}\n    alpha: {quotaRate: 2}\n").unwrap();
        let keys: Vec<&String> = v["custom"]["accelerators"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["zeta", "alpha"]);
    }

    #[test]
    fn bad_yaml_names_the_place() {
        let e = parse("custom:\n  quota: [1,\n").unwrap_err();
        assert!(e.contains("line"), "{e}");
    }

    #[test]
    fn problems_name_their_key_paths() {
        let v = parse("custom:\n  authMode: github\n  quota:\n    cpuRate: -1\n    bogus: 2\n").unwrap();
        let rt = crate::engine::runtime().unwrap();
        let p = check(&rt, &v).err().expect("refused");
        assert!(p.iter().any(|l| l.starts_with("custom.quota.cpuRate")), "{p:?}");
        assert!(p.iter().any(|l| l.starts_with("custom.quota.bogus")), "{p:?}");
    }
}
