//! The values file's accelerators (`custom.accelerators`): what each is called, costs and needs,
//! read and checked; `cpu` is the resource of a server without one.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use crate::accelerator_pod::{read_resources, read_tolerations, Resources, Toleration};
use crate::error::QuotaError;
use crate::json::{kind, Fields};
use crate::limits;
use crate::milli::Milli;
use crate::values_read::{entry_fields, mapping};

/// The resource type of a CPU-only server.
pub const CPU_RESOURCE: &str = "cpu";

/// One `custom.accelerators.<key>` entry. Unknown keys are kept in `extra` but never exposed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Accelerator {
    #[serde(rename = "displayName")]
    pub display_name: String,
    pub description: String,
    #[serde(rename = "nodeSelector")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(rename = "quotaRate")]
    pub quota_rate: Milli,
    /// What the pod is given (`nvidia.com/gpu: 1`): see `accelerator_pod`.
    #[serde(skip_serializing_if = "Resources::is_empty")]
    pub resources: Resources,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(skip)]
    pub extra: serde_json::Map<String, Value>,
}

/// Kubernetes' rule for an environment variable's name (`[-._a-zA-Z][-._a-zA-Z0-9]*`).
pub(crate) fn valid_env_name(name: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    name.len() <= limits::ENV_NAME_LEN_MAX
        && name.chars().next().is_some_and(|c| ok(c) && !c.is_ascii_digit())
        && name.chars().all(ok)
}

pub(crate) fn read_accelerators(
    v: Option<&Value>,
    problems: &mut Vec<QuotaError>,
) -> IndexMap<String, Accelerator> {
    let mut out = IndexMap::new();
    let Some(map) = mapping(v, "custom.accelerators", "a mapping", problems) else {
        return out;
    };
    for (key, entry) in map {
        let path = format!("custom.accelerators.{key}");
        if key == CPU_RESOURCE {
            problems.push(QuotaError::invalid(
                &path,
                "`cpu` is reserved for CPU-only servers",
            ));
            continue;
        }
        let Some(mut f) = entry_fields(&path, key, entry, problems) else {
            continue;
        };
        let display_name = f.opt_str("displayName").unwrap_or(key).to_string();
        let description = f.opt_str("description").unwrap_or("").to_string();
        let quota_rate_present = f.raw("quotaRate").is_some();
        let quota_rate = f.opt_milli("quotaRate", Milli(limits::RATE_MAX_MILLI));
        if !quota_rate_present {
            let p = f.path_of("quotaRate");
            f.problem(&p, "is required (credits per minute)");
        }
        let node_selector = node_selector(&mut f, &path);
        let mut pod_problems = Vec::new();
        let resources = read_resources(
            f.raw("resources"),
            &format!("{path}.resources"),
            &mut pod_problems,
        );
        let tolerations = read_tolerations(
            f.raw("tolerations"),
            &format!("{path}.tolerations"),
            &mut pod_problems,
        );
        for (field, message) in pod_problems {
            f.problem(&field, message);
        }
        // `env` stays among the unknown keys (never exposed), but a host adds it to the server's
        // environment, so it is checked here, for every host (and `quota-hub check-config`).
        check_env(&mut f, &path);
        let extra = entry
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| {
                        ![
                            "displayName",
                            "description",
                            "quotaRate",
                            "nodeSelector",
                            "resources",
                            "tolerations",
                        ]
                        .contains(&k.as_str())
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let errs = f.finish_lenient();
        if errs.is_empty() {
            if let Some(quota_rate) = quota_rate {
                out.insert(
                    key.clone(),
                    Accelerator {
                        display_name,
                        description,
                        node_selector,
                        quota_rate,
                        resources,
                        tolerations,
                        extra,
                    },
                );
            }
        }
        problems.extend(errs);
    }
    out
}

/// An accelerator's `nodeSelector`: a mapping of label names to strings.
fn node_selector(f: &mut Fields<'_>, path: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    match f.raw("nodeSelector") {
        None => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match v {
                    Value::String(s) => {
                        out.insert(k.clone(), s.clone());
                    }
                    other => f.problem(
                        &format!("{path}.nodeSelector.{k}"),
                        format!("must be a string (quote it), got {}", kind(other)),
                    ),
                }
            }
        }
        Some(other) => {
            let p = f.path_of("nodeSelector");
            f.problem(&p, format!("must be a mapping of strings, got {}", kind(other)));
        }
    }
    out
}

/// An accelerator's `env`: variable names to strings (a host adds them to the server's
/// environment; they are never shown).
fn check_env(f: &mut Fields<'_>, path: &str) {
    match f.raw("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let p = format!("{path}.env.{k}");
                if !valid_env_name(k) {
                    f.problem(
                        &p,
                        "is not an environment variable name (letters, digits, `_`, `-` and `.`, not starting with a digit)",
                    );
                } else if !v.is_string() {
                    f.problem(&p, format!("must be a string (quote it), got {}", kind(v)));
                }
            }
        }
        Some(other) => {
            let p = f.path_of("env");
            f.problem(
                &p,
                format!(
                    "must be a mapping of variable names to strings, got {}",
                    kind(other)
                ),
            );
        }
    }
}
