//! What an accelerator asks of the server's pod beside its node labels: `resources` (limits and
//! requests of any resource, `nvidia.com/gpu: 1` above all: the device is allocated, not only the
//! node chosen) and `tolerations` (KubeSpawner's form, Kubernetes' own), read and checked with
//! each problem's path. The hosts apply them (the hub's KubeSpawner integration); `/api/accelerators`
//! shows them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::json::kind;

/// Limits and requests, by resource name, as Kubernetes quantities (`"1"`, `"500m"`, `"16Gi"`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Resources {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, String>,
}

impl Resources {
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty() && self.requests.is_empty()
    }
}

/// One toleration, as Kubernetes (and KubeSpawner's `tolerations`) write it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Toleration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub operator: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    #[serde(rename = "tolerationSeconds", skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

const QUANTITY_SUFFIXES: [&str; 13] = [
    "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T",
];
const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const NAME_LEN_MAX: usize = 253;

/// A Kubernetes quantity (a decimal number and an optional suffix), as written or from a number.
fn quantity(v: &Value) -> Result<String, String> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(format!(
                "must be a quantity (`1`, `500m`, `16Gi`), got {}",
                kind(other)
            ))
        }
    };
    let digits = QUANTITY_SUFFIXES
        .iter()
        .find_map(|s| text.strip_suffix(s))
        .unwrap_or(&text);
    let number_ok = !digits.is_empty()
        && digits.chars().filter(|c| *c == '.').count() <= 1
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.chars().any(|c| c.is_ascii_digit());
    if number_ok {
        Ok(text)
    } else {
        Err(format!(
            "`{text}` is not a Kubernetes quantity (a non-negative number with an optional suffix: `1`, `500m`, `16Gi`)"
        ))
    }
}

/// A resource name: `name` or `domain/name` (`cpu`, `memory`, `nvidia.com/gpu`, `amd.com/gpu`).
fn resource_name_ok(name: &str) -> bool {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
            && p.starts_with(|c: char| c.is_ascii_alphanumeric())
            && p.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    name.len() <= NAME_LEN_MAX
        && match name.split_once('/') {
            Some((domain, rest)) => part_ok(domain) && part_ok(rest) && !rest.contains('/'),
            None => part_ok(name),
        }
}

fn quantities(v: &Value, path: &str, problems: &mut Vec<(String, String)>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Value::Object(m) = v else {
        problems.push((
            path.to_string(),
            format!(
                "must be a mapping of resource names to quantities, got {}",
                kind(v)
            ),
        ));
        return out;
    };
    for (name, q) in m {
        let p = format!("{path}.{name}");
        if !resource_name_ok(name) {
            problems.push((
                p,
                "is not a resource name (`nvidia.com/gpu`, `amd.com/gpu`, `memory`)".into(),
            ));
            continue;
        }
        match quantity(q) {
            Ok(q) => {
                out.insert(name.clone(), q);
            }
            Err(m) => problems.push((p, m)),
        }
    }
    out
}

/// `resources`: `limits` and `requests`, nothing else; an extended resource (a name with a
/// domain) cannot be overcommitted: a request of one needs its limit too (Kubernetes refuses the
/// pod otherwise), and where both give it they must be equal.
pub fn read_resources(v: Option<&Value>, path: &str, problems: &mut Vec<(String, String)>) -> Resources {
    let mut out = Resources::default();
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return out;
    };
    let Value::Object(m) = v else {
        problems.push((
            path.to_string(),
            format!("must be a mapping with `limits` and `requests`, got {}", kind(v)),
        ));
        return out;
    };
    for (k, v) in m {
        match k.as_str() {
            "limits" => out.limits = quantities(v, &format!("{path}.limits"), problems),
            "requests" => out.requests = quantities(v, &format!("{path}.requests"), problems),
            other => problems.push((
                format!("{path}.{other}"),
                "unknown key (resources take `limits` and `requests`)".into(),
            )),
        }
    }
    for (name, request) in &out.requests {
        if name.contains('/') && !out.limits.contains_key(name) {
            problems.push((
                format!("{path}.requests.{name}"),
                format!(
                    "needs `{path}.limits.{name}: {request}` too: Kubernetes refuses a pod that requests an extended resource without a limit (give the limit alone: the request follows it)"
                ),
            ));
        }
    }
    for (name, limit) in &out.limits {
        if let (true, Some(request)) = (name.contains('/'), out.requests.get(name)) {
            if request != limit {
                problems.push((
                    format!("{path}.requests.{name}"),
                    format!(
                        "must equal its limit ({limit}): Kubernetes does not overcommit an extended resource"
                    ),
                ));
            }
        }
    }
    out
}

fn opt_string(
    m: &serde_json::Map<String, Value>,
    key: &str,
    path: &str,
    problems: &mut Vec<(String, String)>,
) -> Option<String> {
    match m.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            problems.push((
                format!("{path}.{key}"),
                format!("must be a string, got {}", kind(other)),
            ));
            None
        }
    }
}

/// `tolerations`: a list of Kubernetes tolerations (`key`, `operator` Exists or Equal, `value`,
/// `effect`, `tolerationSeconds`), each checked as the API server would.
pub(crate) fn read_tolerations(
    v: Option<&Value>,
    path: &str,
    problems: &mut Vec<(String, String)>,
) -> Vec<Toleration> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    let Value::Array(items) = v else {
        problems.push((
            path.to_string(),
            format!("must be a list of tolerations, got {}", kind(v)),
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Value::Object(m) = item else {
            problems.push((
                p,
                format!(
                    "must be a mapping (key, operator, value, effect), got {}",
                    kind(item)
                ),
            ));
            continue;
        };
        let before = problems.len();
        for k in m.keys() {
            if !["key", "operator", "value", "effect", "tolerationSeconds"].contains(&k.as_str()) {
                problems.push((
                    format!("{p}.{k}"),
                    "unknown key (key, operator, value, effect, tolerationSeconds)".into(),
                ));
            }
        }
        let key = opt_string(m, "key", &p, problems);
        let operator = opt_string(m, "operator", &p, problems).unwrap_or_else(|| "Equal".into());
        let value = opt_string(m, "value", &p, problems);
        let effect = opt_string(m, "effect", &p, problems).filter(|e| !e.is_empty());
        if operator != "Equal" && operator != "Exists" {
            problems.push((
                format!("{p}.operator"),
                format!("`{operator}` is not `Exists` or `Equal`"),
            ));
        }
        if operator == "Exists" && value.as_deref().is_some_and(|v| !v.is_empty()) {
            problems.push((
                format!("{p}.value"),
                "must be absent with operator `Exists`".into(),
            ));
        }
        if key.is_none() && operator != "Exists" {
            problems.push((
                format!("{p}.key"),
                "is required unless operator is `Exists` (which tolerates every taint)".into(),
            ));
        }
        if let Some(e) = &effect {
            if !EFFECTS.contains(&e.as_str()) {
                problems.push((
                    format!("{p}.effect"),
                    format!("`{e}` is not one of {}", EFFECTS.join(", ")),
                ));
            }
        }
        let toleration_seconds = match m.get("tolerationSeconds") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_i64().is_some() => {
                if effect.as_deref() != Some("NoExecute") {
                    problems.push((
                        format!("{p}.tolerationSeconds"),
                        "only with effect `NoExecute`".into(),
                    ));
                }
                n.as_i64()
            }
            Some(other) => {
                problems.push((
                    format!("{p}.tolerationSeconds"),
                    format!("must be a whole number of seconds, got {}", kind(other)),
                ));
                None
            }
        };
        if problems.len() == before {
            out.push(Toleration {
                key,
                operator,
                value,
                effect,
                toleration_seconds,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resources(v: Value) -> (Resources, Vec<(String, String)>) {
        let mut p = Vec::new();
        (read_resources(Some(&v), "r", &mut p), p)
    }

    fn tolerations(v: Value) -> (Vec<Toleration>, Vec<(String, String)>) {
        let mut p = Vec::new();
        (read_tolerations(Some(&v), "t", &mut p), p)
    }

    #[test]
    fn a_gpu_limit_and_requests_are_read_as_quantities() {
        let (r, p) = resources(
            json!({"limits": {"nvidia.com/gpu": 1, "memory": "16Gi"}, "requests": {"cpu": "500m", "nvidia.com/gpu": "1"}}),
        );
        assert_eq!(p, vec![]);
        assert_eq!(r.limits["nvidia.com/gpu"], "1");
        assert_eq!(r.limits["memory"], "16Gi");
        assert_eq!(r.requests["cpu"], "500m");
    }

    #[test]
    fn bad_resources_name_the_field_and_the_problem() {
        let (_, p) = resources(
            json!({"limits": {"nvidia.com/gpu": "one", "bad name": 1, "amd.com/gpu": true}, "request": {}}),
        );
        let fields: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "r.limits.nvidia.com/gpu",
                "r.limits.bad name",
                "r.limits.amd.com/gpu",
                "r.request"
            ]
        );
        assert!(p[0].1.contains("`one` is not a Kubernetes quantity"), "{p:?}");
        let (_, p) = resources(json!({"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 2}}));
        assert_eq!(p[0].0, "r.requests.nvidia.com/gpu");
        assert!(p[0].1.contains("must equal its limit (1)"), "{p:?}");
        // Only requested: Kubernetes refuses the pod, so the values are refused, naming the path.
        let (_, p) =
            resources(json!({"requests": {"nvidia.com/gpu": 1, "cpu": "2"}, "limits": {"memory": "4Gi"}}));
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].0, "r.requests.nvidia.com/gpu");
        assert!(p[0].1.contains("needs `r.limits.nvidia.com/gpu: 1` too"), "{p:?}");
        // A plain resource may be requested alone (it can be overcommitted).
        let (_, p) = resources(json!({"requests": {"cpu": "2", "memory": "1Gi"}}));
        assert_eq!(p, vec![]);
        let (_, p) = resources(json!(1));
        assert!(p[0].1.contains("must be a mapping"), "{p:?}");
    }

    #[test]
    fn tolerations_are_checked_as_the_api_server_would() {
        let (t, p) = tolerations(json!([
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "pool", "operator": "Equal", "value": "gpu", "effect": "NoExecute", "tolerationSeconds": 30}
        ]));
        assert_eq!(p, vec![]);
        assert_eq!(t.len(), 2);
        assert_eq!(
            serde_json::to_value(&t[0]).unwrap(),
            json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
        );
        let (t, p) = tolerations(json!([
            {"key": "a", "operator": "Maybe"},
            {"key": "a", "operator": "Exists", "value": "x"},
            {"operator": "Equal", "value": "x"},
            {"key": "a", "effect": "Never"},
            {"key": "a", "effect": "NoSchedule", "tolerationSeconds": 5},
            {"key": "a", "colour": "red"},
            "nvidia.com/gpu"
        ]));
        assert!(t.is_empty());
        let fields: Vec<&str> = p.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "t[0].operator",
                "t[1].value",
                "t[2].key",
                "t[3].effect",
                "t[4].tolerationSeconds",
                "t[5].colour",
                "t[6]"
            ]
        );
    }
}
