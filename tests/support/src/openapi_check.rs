//! The published API contract (`core/src/api/openapi.json`) applied to exchanges: every response's
//! status is documented for its operation and its body validates against that status's schema, and
//! every request the engine accepted (2xx) validates against the operation's request schema and
//! names only documented query parameters. [`replay`](crate::replay) checks every exchange of every
//! scenario this way, so each Rust host that replays the scenarios is held to the document; the
//! Python and Node hosts do the same with their own validators (jsonschema, ajv).

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

/// The OpenAPI document, parsed once.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(quota_core::api::OPENAPI_JSON).expect("openapi.json is JSON"))
}

/// The documented path template a concrete path (below the base URL, without query) falls under:
/// segments compared one by one (empty ones ignored, as the engine does), `{param}` matching any;
/// the template with the most literal segments wins (`/admin/api/quota/users` over `/{name}`).
pub fn template_of(path: &str) -> Option<&'static str> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let paths = document()["paths"].as_object()?;
    paths
        .keys()
        .filter_map(|t| {
            let tsegs: Vec<&str> = t.split('/').filter(|s| !s.is_empty()).collect();
            if tsegs.len() != segs.len() {
                return None;
            }
            let mut literal = 0;
            for (a, b) in tsegs.iter().zip(&segs) {
                if a.starts_with('{') {
                    continue;
                }
                if a != b {
                    return None;
                }
                literal += 1;
            }
            Some((literal, t.as_str()))
        })
        .max_by_key(|(literal, _)| *literal)
        .map(|(_, t)| t)
}

fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Validates `value` against the schema at `pointer` (a JSON pointer into the document).
fn validate(pointer: &str, value: &Value) -> Result<(), String> {
    static CACHE: OnceLock<Mutex<BTreeMap<String, std::sync::Arc<jsonschema::Validator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let validator = {
        let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
        match c.get(pointer) {
            Some(v) => v.clone(),
            None => {
                let mut root = document().clone();
                // A URI fragment: the braces of a path template are percent-encoded.
                let fragment = pointer.replace('{', "%7B").replace('}', "%7D");
                root["$ref"] = Value::String(format!("#{fragment}"));
                let v = jsonschema::draft202012::new(&root).map_err(|e| format!("schema {pointer}: {e}"))?;
                let v = std::sync::Arc::new(v);
                c.insert(pointer.to_string(), v.clone());
                v
            }
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at `{}`", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Checks one exchange: `target` is the path below the base URL with its `?query`, `sent` the
/// request body as sent, `body` the response body.
pub fn check(method: &str, target: &str, sent: &str, status: u16, body: &str) -> Result<(), String> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parsed: Value =
        serde_json::from_str(body).map_err(|e| format!("{status} body is not JSON ({e}): {body}"))?;
    let Some(template) = template_of(path) else {
        // No documented route: the engine's 404 (or a 400 for a path it cannot even decode).
        if status != 404 && status != 400 {
            return Err(format!("undocumented path answered {status}"));
        }
        return validate("/components/schemas/Error", &parsed);
    };
    let op_ptr = format!(
        "/paths/{}/{}",
        pointer_escape(template),
        method.to_ascii_lowercase()
    );
    let Some(op) = document().pointer(&op_ptr) else {
        if status != 405 {
            return Err(format!(
                "{method} is not documented for {template} but answered {status}"
            ));
        }
        return validate("/components/schemas/Error", &parsed);
    };
    let code = status.to_string();
    let Some(mut response) = op["responses"].get(&code) else {
        return Err(format!(
            "{method} {template}: status {status} is not documented ({body})"
        ));
    };
    let mut resp_ptr = format!("{op_ptr}/responses/{code}");
    if let Some(r) = response.get("$ref").and_then(Value::as_str) {
        resp_ptr = r.trim_start_matches('#').to_string();
        response = document().pointer(&resp_ptr).ok_or(format!("dangling {r}"))?;
    }
    if response.pointer("/content/application~1json/schema").is_some() {
        validate(&format!("{resp_ptr}/content/application~1json/schema"), &parsed)
            .map_err(|e| format!("{method} {template} {status}: response {body}: {e}"))?;
    }
    if (200..300).contains(&status) {
        if op.get("requestBody").is_some() {
            let request: Value = if sent.trim().is_empty() {
                Value::Object(Default::default())
            } else {
                serde_json::from_str(sent).map_err(|e| format!("accepted a body that is not JSON ({e})"))?
            };
            validate(
                &format!("{op_ptr}/requestBody/content/application~1json/schema"),
                &request,
            )
            .map_err(|e| {
                format!("{method} {template}: accepted request {sent} is not in the document: {e}")
            })?;
        }
        let documented: Vec<&str> = op["parameters"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["in"] == "query")
                    .filter_map(|p| p["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let key = pair.split('=').next().unwrap_or("");
            if !documented.contains(&key) {
                return Err(format!(
                    "{method} {template}: accepted the undocumented query parameter `{key}`"
                ));
            }
        }
    }
    Ok(())
}
