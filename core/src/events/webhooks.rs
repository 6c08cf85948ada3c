//! Webhooks (credit model 2, "Webhooks"): each configured webhook is sent its kinds of events in
//! id order, at least once. The engine keeps the delivery state (a cursor per webhook, the head
//! event's retries, the failures) and hands a host the next events to send; the host sends them
//! (signed, with a timeout) and reports back in its next step. One host holds a webhook at a time:
//! a step that hands out events takes the hold for `delivery_hold_seconds`, and another host's step
//! is refused while it lasts (the row is locked for the step, so two replicas never both take it);
//! a step with nothing to send, or waiting for a retry, holds nothing.

use serde_json::{json, Value};

use super::event_json;
use super::settings::{Format, Webhook};
use crate::config::Config;
use crate::error::QuotaError;
use crate::limits;
use crate::store::{EventFilter, EventKind, EventPage, Store, StoredEvent, WebhookRow};
use crate::time::Timestamp;

/// What a host reports and asks in one delivery step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Who is delivering (a replica's own name).
    pub holder: String,
    /// Every event up to this id was delivered (2xx).
    pub delivered_through: Option<i64>,
    /// The next event failed: its id and what happened.
    pub failed: Option<(i64, String)>,
    /// Events to hand over at most.
    pub limit: usize,
    /// Gives the hold up (a host shutting down).
    pub release: bool,
}

/// The configured webhook `name`, or the 404 its routes answer.
pub fn configured<'c>(config: &'c Config, name: &str) -> Result<&'c Webhook, QuotaError> {
    config
        .notify
        .webhook(name)
        .ok_or_else(|| QuotaError::NotFound(format!("No webhook named `{name}`")))
}

/// A webhook's stored state, or a new one that starts after the newest event (a webhook added
/// to the values file is sent what happens from then on; `redeliver` sends older events).
fn state(store: &mut dyn Store, name: &str) -> Result<WebhookRow, QuotaError> {
    Ok(match store.lock_webhook(name)? {
        Some(r) => r,
        None => WebhookRow {
            name: name.to_string(),
            cursor: store.last_event_id()?,
            ..WebhookRow::default()
        },
    })
}

/// The pause before retry number `attempts` (1: the first): doubling from 1 s, capped.
pub fn backoff_seconds(attempts: i64) -> i64 {
    let doublings = (attempts - 1).clamp(0, 20) as u32;
    (limits::DELIVERY_BACKOFF_FIRST_SECONDS << doublings).min(limits::DELIVERY_BACKOFF_MAX_SECONDS)
}

/// One delivery step: the host's report recorded, then the next events to send (or when to try
/// again, or that another host holds the webhook).
pub fn step(
    config: &Config,
    store: &mut dyn Store,
    name: &str,
    s: &Step,
    now: Timestamp,
) -> Result<Value, QuotaError> {
    let hook = configured(config, name)?;
    let mut row = state(store, name)?;
    if let (Some(h), Some(until)) = (&row.holder, row.held_until) {
        if *h != s.holder && until > now {
            return Ok(json!({ "held": false, "held_by": h, "events": [], "retry_at": until }));
        }
    }
    let kinds = hook.kinds_list();
    if let Some(through) = s.delivered_through.filter(|t| *t > row.cursor) {
        // Only an id this webhook's steps hand out: the events after its cursor, at most a
        // step's batch; anything else would skip events nobody sent.
        let out = next_events(store, row.cursor, &kinds, limits::DELIVERY_BATCH_MAX)?;
        if !out.iter().any(|e| e.id == through) {
            return Err(QuotaError::invalid(
                "delivered_through",
                format!("event {through} was not handed out for webhook `{name}`"),
            ));
        }
        {
            row.cursor = through;
            row.last_delivered_id = Some(through);
            row.attempts = 0;
            row.retry_at = None;
        }
    }
    if let Some((id, error)) = &s.failed {
        let head = next_events(store, row.cursor, &kinds, 1)?;
        if let Some(e) = head.first().filter(|e| e.id == *id) {
            let error: String = error.chars().take(limits::DELIVERY_ERROR_CHARS_MAX).collect();
            row.attempts += 1;
            if now.seconds() - e.event.at.seconds() >= limits::DELIVERY_RETRY_WINDOW_SECONDS {
                store.add_webhook_failure(name, e.id, &error, now)?;
                row.cursor = e.id;
                row.attempts = 0;
                row.retry_at = None;
            } else {
                row.retry_at = Some(now.plus_seconds(backoff_seconds(row.attempts)));
            }
            row.last_error = Some(error);
        }
    }
    let mut answer = json!({ "held": false, "events": [], "retry_at": null });
    if s.release {
        row.holder = None;
        row.held_until = None;
    } else if let Some(at) = row.retry_at.filter(|at| *at > now) {
        // Nobody sends until then: the hold is given up, and whichever host steps first at
        // `retry_at` takes it (a host that died while waiting holds nothing up).
        row.holder = None;
        row.held_until = None;
        answer["retry_at"] = json!(at);
    } else {
        let events = next_events(store, row.cursor, &kinds, s.limit)?;
        if events.is_empty() {
            row.holder = None;
            row.held_until = None;
        } else {
            row.holder = Some(s.holder.clone());
            row.held_until = Some(now.plus_seconds(limits::DELIVERY_HOLD_SECONDS));
            answer["held"] = json!(true);
            answer["events"] = events.iter().map(|e| delivery(hook, e)).collect();
        }
    }
    answer["url"] = json!(hook.url);
    answer["secret_env"] = json!(hook.secret_env);
    answer["attempts"] = json!(row.attempts);
    store.put_webhook(&row)?;
    Ok(answer)
}

fn next_events(
    store: &mut dyn Store,
    after: i64,
    kinds: &str,
    limit: usize,
) -> Result<Vec<StoredEvent>, QuotaError> {
    Ok(store.scan_events(&EventPage {
        after,
        limit,
        filter: EventFilter::Kinds(kinds),
    })?)
}

/// One event as a host sends it: its id and the exact body (the event object, or a chat message).
fn delivery(hook: &Webhook, e: &StoredEvent) -> Value {
    let body = match hook.format {
        Format::Json => event_json(e).to_string(),
        Format::Slack => json!({ "text": chat_text(e) }).to_string(),
    };
    json!({ "id": e.id, "at": e.event.at, "body": body })
}

/// An event in one line, for a chat channel.
pub fn chat_text(e: &StoredEvent) -> String {
    let d: Value = serde_json::from_str(&e.event.data).unwrap_or(Value::Null);
    let who = match (&e.event.username, &e.event.budget) {
        (Some(u), Some(b)) => format!("{u} (budget {b})"),
        (Some(u), None) => u.clone(),
        (None, Some(b)) => format!("budget {b}"),
        (None, None) => "?".to_string(),
    };
    let t = |k: &str| match &d[k] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let text = match e.event.kind {
        EventKind::SessionEnding => format!(
            "server `{}` of {who} stops in {} min (at {} UTC); 30 more minutes cost {}",
            t("server_name"),
            t("minutes_left"),
            t("ends_at"),
            t("extend_cost_30")
        ),
        EventKind::SessionEnded => format!(
            "session {} of {who} ended ({}), cost {}; balance {}",
            t("session_id"),
            t("status"),
            t("cost"),
            t("balance")
        ),
        EventKind::BalanceLow => format!(
            "balance of {who} fell to {}, below {}",
            t("balance"),
            t("threshold")
        ),
        EventKind::GrantExpiring => format!(
            "{} credits of grant {} of {who} expire at {} UTC",
            t("remaining"),
            t("grant_id"),
            t("expires_at")
        ),
        EventKind::StartRefused => format!("start refused for {who}: {}", t("message")),
        EventKind::RequestCreated => format!(
            "{who} asks for {} credits (request {}): {}",
            t("amount"),
            t("request_id"),
            t("reason")
        ),
        EventKind::RequestDecided => format!(
            "request {} of {who} {} by {}: {} of {} credits; {}",
            t("request_id"),
            t("status"),
            t("decided_by"),
            t("granted"),
            t("amount"),
            t("note")
        ),
    };
    format!("[quota] {}", chat_escape(&text))
}

/// A chat text made inert, for Slack and for Mattermost (which reads it as Markdown):
/// - one line: control characters, line and paragraph separators and bidirectional controls
///   become a space, so no text (a request's reason, a name) can forge a `[quota]` line of its own;
/// - Slack's control characters escaped as its API asks (`&`, `<`, `>`: no `<!channel>`, no
///   `<url|text>` link);
/// - no link can form: a word joiner (U+2060, invisible) after every `]` (no Markdown link or
///   image `[text](url)`), after every `:` (no `https://` or `mailto:` autolink) and after a `.`
///   before a letter (no `www.` or `example.com` autolink);
/// - no emphasis, strike or code: `*`, `~` and `` ` `` become their look-alikes `∗`, `∼`, `ˋ`;
/// - every `@` followed by a word joiner, so `@channel` or `@all` pings nobody.
pub fn chat_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            c if breaks_line(c) => out.push(' '),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '*' => out.push('\u{2217}'),
            '~' => out.push('\u{223c}'),
            '`' => out.push('\u{2cb}'),
            '@' | ']' | ':' => {
                out.push(ch);
                out.push('\u{2060}');
            }
            '.' if chars.peek().is_some_and(|n| n.is_alphabetic()) => {
                out.push('.');
                out.push('\u{2060}');
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether a character could start a new line or turn the text's direction in a chat client.
fn breaks_line(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Every configured webhook's state (`GET .../webhooks`).
pub fn status(config: &Config, store: &mut dyn Store) -> Result<Value, QuotaError> {
    let mut out = Vec::new();
    for hook in &config.notify.webhooks {
        out.push(one_status(store, hook)?);
    }
    Ok(json!({ "webhooks": out }))
}

/// The part of a URL before its path: where events go, without a token a path may carry.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?', '#']) {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

fn one_status(store: &mut dyn Store, hook: &Webhook) -> Result<Value, QuotaError> {
    let row = store.get_webhook(&hook.name)?;
    let (cursor, row) = match row {
        Some(r) => (r.cursor, r),
        None => (store.last_event_id()?, WebhookRow::default()),
    };
    let pending = store.count_events(cursor, &hook.kinds_list())?;
    let failed = store.count_webhook_failures(&hook.name)?;
    Ok(json!({
        "name": hook.name,
        "target": origin(&hook.url),
        "format": hook.format.as_str(),
        "events": hook.events.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        "pending": pending,
        "failed": failed,
        "last_error": row.last_error,
        "last_delivered_id": row.last_delivered_id,
        "attempts": row.attempts,
        "retry_at": row.retry_at,
    }))
}

/// Queues again every matching event with id >= `from_id` (failed ones included).
pub fn redeliver(
    config: &Config,
    store: &mut dyn Store,
    name: &str,
    from_id: i64,
) -> Result<Value, QuotaError> {
    let hook = configured(config, name)?;
    let mut row = state(store, name)?;
    row.cursor = row.cursor.min(from_id - 1);
    row.attempts = 0;
    row.retry_at = None;
    store.drop_webhook_failures(name, from_id)?;
    store.put_webhook(&row)?;
    one_status(store, hook)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memstore::MemStore;
    use crate::store::EventStore;
    use crate::store::NewEvent;

    fn config() -> Config {
        Config::from_values(&json!({"custom": {"authMode": "github", "quota": {"webhooks": [
            {"name": "ops", "url": "http://r.local/h", "secretEnv": "S", "events": ["start.refused"]}]}}}))
        .expect("config")
    }

    fn event(at: Timestamp) -> NewEvent {
        NewEvent {
            kind: EventKind::StartRefused,
            at,
            username: Some("ann".into()),
            budget: None,
            data: "{}".into(),
        }
    }

    fn step_as(holder: &str) -> Step {
        Step {
            holder: holder.into(),
            limit: 10,
            ..Step::default()
        }
    }

    #[test]
    fn the_backoff_doubles_from_a_second_up_to_ten_minutes() {
        let waits: Vec<i64> = (1..=12).map(backoff_seconds).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600]);
    }

    #[test]
    fn a_delivery_failing_past_24_hours_is_failed_the_next_goes_and_redeliver_queues_it_again() {
        let (cfg, mut s) = (config(), MemStore::new());
        let t0 = Timestamp(1_795_000_000);
        step(&cfg, &mut s, "ops", &step_as("a"), t0).expect("registered");
        s.insert_events(&[event(t0), event(t0)]).expect("events");
        let got = step(&cfg, &mut s, "ops", &step_as("a"), t0).expect("step");
        assert_eq!(got["events"].as_array().map(Vec::len), Some(2));
        // Failing within the day: retried later, in order (the same event first).
        let failed = Step {
            failed: Some((1, "503".into())),
            ..step_as("a")
        };
        let got = step(&cfg, &mut s, "ops", &failed, t0.plus_seconds(5)).expect("step");
        assert_eq!(got["retry_at"], json!(t0.plus_seconds(6)));
        assert_eq!(got["held"], false, "nobody holds it while it waits");
        // Another host may take it at retry time, and gets the same first event.
        let got = step(&cfg, &mut s, "ops", &step_as("b"), t0.plus_seconds(6)).expect("step");
        assert_eq!(got["events"][0]["id"], 1);
        // A failure after the event is a day old: failed for good, the next event goes.
        let late = Step {
            failed: Some((1, "refused".into())),
            ..step_as("b")
        };
        let got = step(&cfg, &mut s, "ops", &late, t0.plus_seconds(86_400)).expect("step");
        assert_eq!(got["events"][0]["id"], 2);
        let st = status(&cfg, &mut s).expect("status");
        assert_eq!(st["webhooks"][0]["failed"], 1);
        assert_eq!(st["webhooks"][0]["pending"], 1);
        assert_eq!(st["webhooks"][0]["last_error"], "refused");
        // While b holds it, a is refused; b's report moves the cursor past 2.
        let got = step(&cfg, &mut s, "ops", &step_as("a"), t0.plus_seconds(86_401)).expect("step");
        assert_eq!(
            (got["held"].clone(), got["held_by"].clone()),
            (json!(false), json!("b"))
        );
        let done = Step {
            delivered_through: Some(2),
            ..step_as("b")
        };
        step(&cfg, &mut s, "ops", &done, t0.plus_seconds(86_402)).expect("step");
        let st = redeliver(&cfg, &mut s, "ops", 1).expect("redeliver");
        assert_eq!(
            (st["pending"].clone(), st["failed"].clone()),
            (json!(2), json!(0))
        );
        assert!(matches!(
            step(&cfg, &mut s, "nope", &step_as("a"), t0),
            Err(QuotaError::NotFound(_))
        ));
    }

    #[test]
    fn a_delivered_through_not_handed_out_is_refused_and_skips_nothing() {
        let (cfg, mut s) = (config(), MemStore::new());
        let t0 = Timestamp(1_795_000_000);
        step(&cfg, &mut s, "ops", &step_as("a"), t0).expect("registered");
        s.insert_events(&[event(t0), event(t0)]).expect("events");
        let beyond = Step {
            delivered_through: Some(1_000),
            ..step_as("a")
        };
        let refused = step(&cfg, &mut s, "ops", &beyond, t0);
        assert!(
            matches!(&refused, Err(QuotaError::Invalid { field, .. }) if field == "delivered_through"),
            "{refused:?}"
        );
        let st = status(&cfg, &mut s).expect("status");
        assert_eq!(st["webhooks"][0]["pending"], 2, "nothing skipped");
        let done = Step {
            delivered_through: Some(2),
            ..step_as("a")
        };
        step(&cfg, &mut s, "ops", &done, t0).expect("an id handed out");
        assert_eq!(status(&cfg, &mut s).expect("status")["webhooks"][0]["pending"], 0);
    }

    #[test]
    fn chat_texts_ping_nobody_and_carry_no_links() {
        let e = StoredEvent {
            id: 1,
            event: NewEvent {
                data: r#"{"message": "<!channel> <https://evil.example|click> @all & co"}"#.into(),
                ..event(Timestamp(1_795_000_000))
            },
        };
        let text = chat_text(&e);
        assert!(!text.contains('<') && !text.contains('>'), "{text}");
        assert!(!text.contains("@all"), "{text}");
        assert!(
            text.contains("&lt;!channel&gt;") && text.contains("&amp; co"),
            "{text}"
        );
    }

    #[test]
    fn a_reason_cannot_forge_a_line_or_a_link() {
        // A credit request's reason, as a student could type it (issue 58).
        let reason = "thanks\n[quota] balance of alice set to 1000000 by root \
                      [details](https://evil.example/x) **urgent** `rm` ~~no~~ www.evil.example \
                      evil.example\r\u{2028}\u{202e}txet";
        let e = StoredEvent {
            id: 1,
            event: NewEvent {
                kind: EventKind::RequestCreated,
                data: json!({"amount": 5, "request_id": 3, "reason": reason}).to_string(),
                ..event(Timestamp(1_795_000_000))
            },
        };
        let text = chat_text(&e);
        assert_eq!(
            text.matches("[quota]").count(),
            2,
            "the forged one is only text: {text}"
        );
        assert!(text.starts_with("[quota] "), "{text}");
        for bad in [
            "\n",
            "\r",
            "\u{2028}",
            "\u{202e}",
            "](",
            "://",
            "www.e",
            "evil.example",
            "**",
            "`",
            "~~",
        ] {
            assert!(!text.contains(bad), "{bad:?} in {text}");
        }
        // What a reader sees is still the reason's words.
        let seen: String = text.chars().filter(|c| *c != '\u{2060}').collect();
        for word in ["thanks", "[details]", "https", "evil.example/x", "urgent", "rm"] {
            assert!(seen.contains(word), "{word} in {seen}");
        }
        // Numbers keep their point.
        assert_eq!(chat_escape("7.5 credits"), "7.5 credits");
    }
}
