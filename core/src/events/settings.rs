//! What the values file says about events (credit model 2, "Events", "Webhooks"):
//! `custom.quota.warnBeforeStopMinutes`, `notifyBelow`, `notifyBeforeExpiryDays` and `webhooks`,
//! every problem with its key path.

use serde_json::Value;

use crate::error::QuotaError;
use crate::json::{kind, Fields};
use crate::limits;
use crate::store::EventKind;

/// The settings, each list sorted from the largest value down, without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notify {
    /// Minutes before a session's end that `session.ending` tells.
    pub warn_before_stop_minutes: Vec<i64>,
    /// Balances (credits) whose downward crossing `balance.low` tells.
    pub notify_below: Vec<i64>,
    /// Days before a grant's expiry that `grant.expiring` tells.
    pub notify_before_expiry_days: Vec<i64>,
    pub webhooks: Vec<Webhook>,
}

impl Default for Notify {
    fn default() -> Notify {
        Notify {
            warn_before_stop_minutes: vec![10, 2],
            notify_below: Vec::new(),
            notify_before_expiry_days: vec![7, 1],
            webhooks: Vec::new(),
        }
    }
}

/// What a webhook is sent: the event object, or a chat message (`{"text": ...}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Slack,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Slack => "slack",
        }
    }
}

/// One `custom.quota.webhooks` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    pub name: String,
    pub url: String,
    pub events: Vec<EventKind>,
    /// The environment variable holding the signing secret (the host reads it).
    pub secret_env: Option<String>,
    pub format: Format,
}

impl Webhook {
    /// Its kinds as a `",k1,k2,"` list (what the store filters by).
    pub fn kinds_list(&self) -> String {
        let mut s = String::from(",");
        for k in &self.events {
            s.push_str(k.as_str());
            s.push(',');
        }
        s
    }
}

impl Notify {
    pub fn webhook(&self, name: &str) -> Option<&Webhook> {
        self.webhooks.iter().find(|w| w.name == name)
    }
}

/// Reads the four keys from `custom.quota` (`q`), pushing every problem.
pub(crate) fn read(q: &mut Fields<'_>, problems: &mut Vec<QuotaError>) -> Notify {
    let d = Notify::default();
    let warn = marks(
        q,
        "warnBeforeStopMinutes",
        1,
        limits::RUNTIME_MINUTES_MAX,
        problems,
    );
    let below = marks(
        q,
        "notifyBelow",
        -limits::AMOUNT_ABS_MAX,
        limits::AMOUNT_ABS_MAX,
        problems,
    );
    let days = marks(q, "notifyBeforeExpiryDays", 1, limits::GRANT_DAYS_MAX, problems);
    let path = q.path_of("webhooks");
    let webhooks = webhooks(&path, q.raw("webhooks"), problems);
    Notify {
        warn_before_stop_minutes: warn.unwrap_or(d.warn_before_stop_minutes),
        notify_below: below.unwrap_or(d.notify_below),
        notify_before_expiry_days: days.unwrap_or(d.notify_before_expiry_days),
        webhooks,
    }
}

/// A list of whole numbers from `min` to `max` (null or absent: the default), largest first.
fn marks(
    q: &mut Fields<'_>,
    key: &'static str,
    min: i64,
    max: i64,
    problems: &mut Vec<QuotaError>,
) -> Option<Vec<i64>> {
    let path = q.path_of(key);
    let v = q.raw(key)?;
    let Value::Array(items) = v else {
        if !v.is_null() {
            problems.push(QuotaError::invalid(
                &path,
                format!("must be a list of whole numbers, got {}", kind(v)),
            ));
        }
        return None;
    };
    if items.len() > limits::NOTIFY_MARKS_MAX {
        problems.push(QuotaError::invalid(
            &path,
            format!(
                "has {} entries; at most {}",
                items.len(),
                limits::NOTIFY_MARKS_MAX
            ),
        ));
        return None;
    }
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.as_i64().filter(|n| (min..=max).contains(n)) {
            Some(n) if item.is_i64() || item.is_u64() => out.push(n),
            _ => problems.push(QuotaError::invalid(
                format!("{path}[{i}]"),
                format!("must be a whole number from {min} to {max}, got {item}"),
            )),
        }
    }
    out.sort_unstable_by(|a, b| b.cmp(a));
    out.dedup();
    Some(out)
}

/// A webhook's name: what its routes and metrics call it.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// An http or https URL with a host and no spaces.
fn valid_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| {
        let host = r.split(['/', '?', '#']).next().unwrap_or("");
        !host.is_empty() && !host.starts_with(':')
    }) && url.chars().count() <= limits::WEBHOOK_URL_CHARS_MAX
        && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn webhooks(path: &str, v: Option<&Value>, problems: &mut Vec<QuotaError>) -> Vec<Webhook> {
    let mut out: Vec<Webhook> = Vec::new();
    let items = match v {
        None | Some(Value::Null) => return out,
        Some(Value::Array(items)) => items,
        Some(other) => {
            problems.push(QuotaError::invalid(
                path,
                format!("must be a list of webhooks, got {}", kind(other)),
            ));
            return out;
        }
    };
    if items.len() > limits::WEBHOOKS_MAX {
        problems.push(QuotaError::invalid(
            path,
            format!("has {} webhooks; at most {}", items.len(), limits::WEBHOOKS_MAX),
        ));
        return out;
    }
    for (i, item) in items.iter().enumerate() {
        let path = format!("{path}[{i}]");
        let mut f = Fields::new(&path, Some(item), false);
        let name = f.req_str("name").map(str::to_string);
        let url = f.req_str("url").map(str::to_string);
        let secret_env = f.opt_str("secretEnv").map(str::to_string);
        let format = f.opt_str("format");
        let events_path = f.path_of("events");
        let events = f.raw("events");
        let mut errs = f.finish();
        if let Some(n) = &name {
            if !valid_name(n) {
                errs.push(QuotaError::invalid(
                    format!("{path}.name"),
                    format!("`{n}` is not a webhook name (1 to 64 of a-z, 0-9, `-`, `_`)"),
                ));
            } else if out.iter().any(|w| &w.name == n) {
                errs.push(QuotaError::invalid(
                    format!("{path}.name"),
                    format!("`{n}` is named twice"),
                ));
            }
        }
        if let Some(u) = &url {
            if !valid_url(u) {
                errs.push(QuotaError::invalid(
                    format!("{path}.url"),
                    format!("`{u}` is not an http or https URL with a host"),
                ));
            }
        }
        let format = match format {
            None | Some("json") => Format::Json,
            Some("slack") => Format::Slack,
            Some(other) => {
                errs.push(QuotaError::invalid(
                    format!("{path}.format"),
                    format!("`{other}` is not one of json, slack"),
                ));
                Format::Json
            }
        };
        match &secret_env {
            Some(e) if !crate::accelerators::valid_env_name(e) => errs.push(QuotaError::invalid(
                format!("{path}.secretEnv"),
                format!("`{e}` is not an environment variable name"),
            )),
            None if format == Format::Json => errs.push(QuotaError::invalid(
                format!("{path}.secretEnv"),
                "is required: the environment variable holding the signing secret (optional only with format: slack)",
            )),
            _ => {}
        }
        let kinds = event_kinds(events, &events_path, &mut errs);
        if errs.is_empty() {
            if let (Some(name), Some(url)) = (name, url) {
                out.push(Webhook {
                    name,
                    url,
                    events: kinds,
                    secret_env,
                    format,
                });
            }
        }
        problems.extend(errs);
    }
    out
}

/// A webhook's `events`: a non-empty list of event kinds, each once, in order.
fn event_kinds(events: Option<&Value>, events_path: &str, errs: &mut Vec<QuotaError>) -> Vec<EventKind> {
    let mut kinds = Vec::new();
    match events {
        Some(Value::Array(list)) if !list.is_empty() => {
            for (j, k) in list.iter().enumerate() {
                match k.as_str().and_then(EventKind::parse) {
                    Some(k) if !kinds.contains(&k) => kinds.push(k),
                    Some(_) => {}
                    None => errs.push(QuotaError::invalid(
                        format!("{events_path}[{j}]"),
                        format!(
                            "{k} is not an event kind (one of {})",
                            EventKind::ALL.map(EventKind::as_str).join(", ")
                        ),
                    )),
                }
            }
        }
        Some(other) => errs.push(QuotaError::invalid(
            events_path,
            format!("must be a non-empty list of event kinds, got {other}"),
        )),
        None => errs.push(QuotaError::invalid(
            events_path,
            "is required (a list of event kinds)",
        )),
    }
    kinds.sort();
    kinds
}
