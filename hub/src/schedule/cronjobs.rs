//! Refresh rules as Kubernetes CronJobs (`render-cronjobs`), and what such a Job runs: the rule's
//! refresh request sent to a hub over HTTP with a run id derived from its scheduled minute, so a
//! retried or duplicated Job applies once (and the same ids as quota-hub's own scheduler).

use serde_json::{json, Map, Value};

/// Longest CronJob name Kubernetes accepts (its Jobs get an 11-character suffix).
const CRONJOB_NAME_CHARS_MAX: usize = 52;

/// `<prefix>-refresh-<rule>`: the prefix is the Helm release's full name in the chart, `quota` by
/// default here, so two installations in one namespace never share a CronJob.
pub fn cronjob_name(prefix: &str, rule: &str) -> String {
    format!("{prefix}-refresh-{rule}")
}
/// How long after its scheduled time a Job may still start; its run id is the latest fire time
/// within this window (plus a minute of clock skew).
pub const STARTING_DEADLINE_SECONDS: i64 = 300;

/// The values file's rules (`custom.quota.refreshRules`), in the file's order.
pub fn rules(values: &Value) -> Vec<(String, Value)> {
    values
        .pointer("/custom/quota/refreshRules")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// A values document holding only `rule` (what a Job needs to know its schedule and request).
pub fn one_rule_values(rule: &str, fragment: &Value) -> Value {
    json!({"custom": {"authMode": "github", "quota": {"refreshRules": {rule: fragment}}}})
}

/// The REST refresh body of a rule (the values file's camelCase keys to the route's fields).
pub fn refresh_body(rule: &str, fragment: &Value, run_id: Option<&str>) -> Value {
    let mut body = Map::new();
    body.insert("rule_name".into(), rule.into());
    for (from, to) in [
        ("action", "action"),
        ("amount", "amount"),
        ("maxBalance", "max_balance"),
        ("minBalance", "min_balance"),
        ("targets", "targets"),
    ] {
        if let Some(v) = fragment.get(from).filter(|v| !v.is_null()) {
            body.insert(to.into(), v.clone());
        }
    }
    if let Some(id) = run_id {
        body.insert("run_id".into(), id.into());
    }
    Value::Object(body)
}

/// Why `rule` cannot name a CronJob (`<prefix>-refresh-<rule>` must be a DNS-1123 label of at most
/// 52 characters), or None.
pub fn bad_name(prefix: &str, rule: &str) -> Option<String> {
    let name = cronjob_name(prefix, rule);
    let ok_chars = rule
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if rule.is_empty() || !ok_chars || rule.ends_with('-') {
        return Some(format!(
            "refresh rule `{rule}`: a CronJob name may hold only lowercase letters, digits and `-`, and must end \
             with a letter or digit (rename the rule, e.g. `{}`)",
            suggest(rule)
        ));
    }
    if name.len() > CRONJOB_NAME_CHARS_MAX {
        return Some(format!(
            "refresh rule `{rule}`: the CronJob name `{name}` is {} characters, Kubernetes allows {CRONJOB_NAME_CHARS_MAX}",
            name.len()
        ));
    }
    None
}

fn suggest(rule: &str) -> String {
    let s: String = rule
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "topup".into()
    } else {
        s
    }
}

pub struct Options<'a> {
    /// CronJob names are `<name_prefix>-refresh-<rule>`.
    pub name_prefix: &'a str,
    pub namespace: &'a str,
    pub hub_url: &'a str,
    pub token_secret: &'a str,
    pub token_key: &'a str,
    pub image: &'a str,
    /// Secrets the Job pods pull the image with (none: the namespace's default).
    pub image_pull_secrets: &'a [String],
    /// Labels of the Job pods beside the CronJob's own (the hub access label among them).
    pub pod_labels: &'a [(String, String)],
    /// Annotations of the Job pods (e.g. `sidecar.istio.io/inject: "false"`).
    pub pod_annotations: &'a [(String, String)],
    /// The refresh container's `resources` (`resources()` makes them).
    pub resources: &'a Value,
}

/// The refresh container's requests and limits when none are given: the chart's
/// `cronjobs.resources` (a refresh is one HTTP call).
pub const DEFAULT_REQUESTS: [(&str, &str); 2] = [("cpu", "10m"), ("memory", "32Mi")];
pub const DEFAULT_LIMITS: [(&str, &str); 1] = [("memory", "128Mi")];

/// The container's `resources`: the defaults, each overridden by a `--request` or `--limit` of
/// the same resource; every quantity and name checked as Kubernetes would (the problems name the
/// option), an extended resource requested without a limit refused.
pub fn resources(requests: &[(String, String)], limits: &[(String, String)]) -> Result<Value, Vec<String>> {
    let merged = |defaults: &[(&str, &str)], given: &[(String, String)]| -> Map<String, Value> {
        let mut m: Map<String, Value> = defaults
            .iter()
            .map(|(k, v)| (k.to_string(), Value::from(*v)))
            .collect();
        for (k, v) in given {
            m.insert(k.clone(), Value::from(v.as_str()));
        }
        m
    };
    let v =
        json!({"requests": merged(&DEFAULT_REQUESTS, requests), "limits": merged(&DEFAULT_LIMITS, limits)});
    let mut problems = Vec::new();
    quota_core::accelerator_pod::read_resources(Some(&v), "resources", &mut problems);
    if problems.is_empty() {
        Ok(v)
    } else {
        Err(problems
            .into_iter()
            .map(|(path, why)| {
                let option = if path.starts_with("resources.requests") {
                    "--request"
                } else {
                    "--limit"
                };
                let name = path.split_once('.').map_or(path.as_str(), |(_, rest)| rest);
                let name = name.split_once('.').map_or(name, |(_, n)| n);
                let why = match why.strip_prefix("needs `resources.limits.") {
                    // The same advice in the command line's words.
                    Some(rest) => format!("needs `--limit {}", rest.replacen(": ", "=", 1)),
                    None => why,
                };
                format!("{option} {name}: {why}")
            })
            .collect())
    }
}

/// `KEY=VALUE` (a label or an annotation on the command line), or why not.
pub fn parse_pair(arg: &str) -> Result<(String, String), String> {
    let (k, v) = arg
        .split_once('=')
        .ok_or_else(|| format!("`{arg}`: expected KEY=VALUE"))?;
    if k.is_empty() {
        return Err(format!("`{arg}`: the key is empty"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Why `(key, value)` cannot be a pod label (Kubernetes: an optional DNS prefix and `/`, a name of
/// at most 63 characters; a value of at most 63 characters), or None.
pub fn bad_label(key: &str, value: &str) -> Option<String> {
    let name = key.rsplit_once('/').map_or(key, |(_, n)| n);
    let part_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && s.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric())
    };
    if !part_ok(name) {
        return Some(format!(
            "label `{key}`: the name must be 1-63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit"
        ));
    }
    if !value.is_empty() && !part_ok(value) {
        return Some(format!(
            "label `{key}`: the value `{value}` must be at most 63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit"
        ));
    }
    None
}

/// One `batch/v1` CronJob per enabled rule (none for a disabled one); every rule name and pod label
/// is checked first, and all problems are reported together.
pub fn render(values: &Value, o: &Options<'_>) -> Result<Vec<Value>, Vec<String>> {
    let rules = rules(values);
    let bad: Vec<String> = rules
        .iter()
        .filter_map(|(name, _)| bad_name(o.name_prefix, name))
        .chain(o.pod_labels.iter().filter_map(|(k, v)| bad_label(k, v)))
        .collect();
    if !bad.is_empty() {
        return Err(bad);
    }
    Ok(rules
        .iter()
        .filter(|(_, r)| r.get("enabled").and_then(Value::as_bool).unwrap_or(false))
        .map(|(name, r)| cronjob(name, r, o))
        .collect())
}

fn cronjob(rule: &str, fragment: &Value, o: &Options<'_>) -> Value {
    let labels = json!({
        "app.kubernetes.io/name": "quota-hub",
        "app.kubernetes.io/component": "quota-refresh",
        "quota.engine/rule": rule,
    });
    let mut pod_labels = labels.clone();
    for (k, v) in o.pod_labels {
        pod_labels[k.as_str()] = v.as_str().into();
    }
    let annotations: Map<String, Value> = o
        .pod_annotations
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().into()))
        .collect();
    let schedule = fragment
        .get("schedule")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": cronjob_name(o.name_prefix, rule), "namespace": o.namespace, "labels": labels},
        "spec": {
            "schedule": schedule,
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "metadata": {"labels": labels},
                "spec": {
                    "backoffLimit": 3,
                    "template": {
                        "metadata": {"labels": pod_labels, "annotations": annotations},
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "automountServiceAccountToken": false,
                            "securityContext": {
                                "runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                                "seccompProfile": {"type": "RuntimeDefault"},
                            },
                            "containers": [{
                                "name": "refresh",
                                "image": o.image,
                                "securityContext": {
                                    "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                                "args": [
                                    "refresh", rule,
                                    "--url", o.hub_url,
                                    "--rule-json", fragment.to_string(),
                                    "--scheduled-within", (STARTING_DEADLINE_SECONDS + 60).to_string(),
                                ],
                                "env": [{
                                    "name": "QUOTA_HUB_TOKEN",
                                    "valueFrom": {"secretKeyRef": {"name": o.token_secret, "key": o.token_key}},
                                }],
                                "resources": o.resources,
                            }],
                        },
                    },
                },
            },
        },
    });
    if !o.image_pull_secrets.is_empty() {
        let secrets: Vec<Value> = o.image_pull_secrets.iter().map(|n| json!({"name": n})).collect();
        job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["imagePullSecrets"] = secrets.into();
    }
    job
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(bad_name("quota", "weekly-topup"), None);
        assert!(bad_name("quota", "Weekly_TopUp")
            .unwrap()
            .contains("`weekly-topup`"));
        assert!(bad_name("quota", "a.b").is_some());
        assert!(bad_name("quota", "x-").is_some());
        assert!(bad_name("quota", &"a".repeat(39))
            .unwrap()
            .contains("53 characters"));
        assert_eq!(bad_name("quota", &"a".repeat(38)), None);
        assert!(bad_name("a-long-release-quota-hub", &"a".repeat(30)).is_some());
    }

    #[test]
    fn resources_default_small_take_overrides_and_refuse_what_kubernetes_would() {
        let r = resources(&[], &[]).unwrap();
        assert_eq!(
            r,
            json!({"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}})
        );
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let r = resources(&[pair("cpu", "50m")], &[pair("cpu", "200m")]).unwrap();
        assert_eq!(
            r,
            json!({"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}})
        );
        let bad = resources(
            &[pair("memory", "lots"), pair("nvidia.com/gpu", "1")],
            &[pair("bad name", "1")],
        )
        .unwrap_err();
        assert_eq!(bad.len(), 3, "{bad:?}");
        assert!(
            bad.iter()
                .any(|b| b.starts_with("--request memory: `lots` is not a Kubernetes quantity")),
            "{bad:?}"
        );
        assert!(
            bad.iter()
                .any(|b| b.starts_with("--limit bad name: is not a resource name")),
            "{bad:?}"
        );
        assert!(
            bad.iter()
                .any(|b| b.starts_with("--request nvidia.com/gpu: needs `--limit nvidia.com/gpu=1` too")),
            "{bad:?}"
        );
    }

    #[test]
    fn bodies_keep_zero_and_skip_what_is_absent() {
        let b = refresh_body(
            "r",
            &json!({"action": "add", "amount": 0, "schedule": "0 3 * * *"}),
            Some("r@x"),
        );
        assert_eq!(
            b,
            json!({"rule_name": "r", "action": "add", "amount": 0, "run_id": "r@x"})
        );
    }
}
