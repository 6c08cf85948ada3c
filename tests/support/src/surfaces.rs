//! The input surfaces of the engine as a fuzzer sees them, each with the invariants a fuzz target
//! checks on every input (`fuzz/`, run by `scripts/fuzz.sh`). The same functions run every saved
//! finding and the seeds under stable `cargo test` (`tests/fuzz_regressions.rs`), so a crash found
//! once stays fixed. Every check panics on a broken invariant: that is what a fuzzer reports.

use quota_core::api::{Caller, Request};
use quota_core::cron::Cron;
use quota_core::store::UserStore;
use quota_core::strict_json::{self, StrictError};
use quota_core::{Config, MemStore, Timestamp};
use serde_json::Value;

// `quota-hub set-quota -f` / `add-quota -f`: the binary's own module, compiled here as well (the
// hub is a binary crate, so this is the one way to reach the exact code it runs).
#[allow(dead_code)]
#[path = "../../../hub/src/commands/quota_file.rs"]
mod quota_file;

/// The fuzz targets, by name: `scripts/fuzz.sh` runs each, and `tests/fuzz-regressions/<name>/`
/// holds each one's findings.
pub const TARGETS: [&str; 5] = [
    "handle_request",
    "values_file",
    "cron",
    "csv_import",
    "strict_json",
];

/// Runs one input through the named target's checks.
pub fn check(target: &str, data: &[u8]) {
    match target {
        "handle_request" => handle_request(data),
        "values_file" => values_file(data),
        "cron" => cron(data),
        "csv_import" => csv_import(data),
        "strict_json" => strict_json(data),
        other => panic!("no fuzz target named {other}"),
    }
}

/// Separates the requests of one `handle_request` input.
pub const REQUEST_SEPARATOR: &str = "\n\u{1e}\n";

/// A `handle_request` input: requests separated by [`request_separator`], each `AS METHOD
/// PATH[?QUERY]` on its first line and the body after it. `AS` is a scenario caller (`admin`,
/// `hub`, `scheduler`, `service-admin`, `anonymous`, or a plain user's name); a request line
/// `+SECONDS` moves the clock instead.
pub fn request_input(steps: &[(String, String, String, String)]) -> String {
    steps
        .iter()
        .map(|(who, method, target, body)| format!("{who} {method} {target}\n{body}"))
        .collect::<Vec<_>>()
        .join(REQUEST_SEPARATOR)
}

const STATUSES: [u16; 10] = [200, 201, 202, 400, 401, 403, 404, 405, 409, 413];

/// Every request over one in-memory store: no panic, a known status, a JSON body, an error body
/// `{"error": "<non-empty>"}` (a 400's naming its field), nothing changed by a refused request (but the spawn refusal, which
/// may record a first start and close an orphan), and the ledger reconciled per account
/// (each amount = after - before, each user's and each budget's balance = the sum of its amounts)
/// after every one. The fixture has two budgets, so grants, budgets and the sweep are reached.
pub fn handle_request(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The fixture, with the budgets the scenarios charge (values-defined; others come over REST).
    let mut values = crate::fixture_values();
    values["custom"]["quota"]["budgets"] = serde_json::json!({
        "course-101": {"users": ["teacher"], "groups": ["course-101"], "accelerators": ["cpu", "phx"], "memberLimit": 100},
        "lab": {"users": ["ann"]}
    });
    // Every kind of event, and the webhooks scenario 46 steps (so extension, the sweep's warnings
    // and the delivery steps are reached).
    values["custom"]["quota"]["warnBeforeStopMinutes"] = serde_json::json!([10, 2]);
    values["custom"]["quota"]["notifyBelow"] = serde_json::json!([50, 20, 0]);
    values["custom"]["quota"]["notifyBeforeExpiryDays"] = serde_json::json!([7, 1]);
    values["custom"]["quota"]["webhooks"] = serde_json::json!([
        {"name": "ops", "url": "https://hooks.example.org/q", "secretEnv": "OPS_SECRET",
         "events": ["session.ending", "session.ended", "balance.low", "grant.expiring"]},
        {"name": "chat", "url": "http://chat.local:8080", "events": ["start.refused"], "format": "slack"}
    ]);
    let config = Config::from_values(&values).expect("the fixture values load");
    let mut store = MemStore::new();
    let mut now = Timestamp::parse("2026-11-22T10:00:00Z").expect("a timestamp");
    for part in text.split(REQUEST_SEPARATOR).take(64) {
        let (line, body) = part.split_once('\n').unwrap_or((part, ""));
        if let Some(secs) = line.strip_prefix('+') {
            if let Ok(s) = secs.trim().parse::<i64>() {
                now = now.plus_seconds(s.clamp(0, 30 * 24 * 3600));
            }
            continue;
        }
        let mut words = line.splitn(3, ' ');
        let (Some(who), Some(method), Some(target)) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let caller: Option<Caller> =
            crate::caller_for(Some(&Value::String(who.to_string()))).expect("a string caller");
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let req = Request {
            method,
            path,
            query,
            body,
            caller: caller.as_ref(),
        };
        let before = store.clone();
        let resp = quota_core::handle_request(&config, &mut store, &req, now)
            .unwrap_or_else(|e| panic!("{method} {target}: storage error from an in-memory store: {e}"))
            .answer;
        assert!(
            STATUSES.contains(&resp.status),
            "{method} {target}: status {} {}",
            resp.status,
            resp.body
        );
        let parsed: Value = serde_json::from_str(&resp.body)
            .unwrap_or_else(|e| panic!("{method} {target}: body is not JSON ({e}): {}", resp.body));
        if resp.status >= 400 {
            let msg = parsed.get("error").and_then(Value::as_str).unwrap_or_default();
            // A start refused for insufficient quota may say when it would pass; nothing else
            // rides along with an error.
            let extra_ok = |k: &String| {
                k == "next_refresh"
                    && resp.status == 403
                    && method == "POST"
                    && quota_core::api::route_template(path) == Some("/api/quota/sessions")
            };
            assert!(
                !msg.is_empty()
                    && parsed
                        .as_object()
                        .is_some_and(|o| o.keys().all(|k| k == "error" || extra_ok(k))),
                "{method} {target}: error body {}",
                resp.body
            );
            // A bad input names its field first (`amount: ...`); the specification's own
            // `Insufficient balance` and an out-of-range result name what they refuse instead.
            if resp.status == 400 {
                let named = msg == "Insufficient balance"
                    || msg.contains("would leave the balance range")
                    || msg.split_once(": ").is_some_and(|(field, _)| !field.is_empty());
                assert!(named, "{method} {target}: a 400 that names no field: {msg}");
            }
            // The one refusal that may write (semantics.md, gate 4 and 8): an insufficient-quota 403
            // (or a budget's refusal) still creates a first-time user's record and closes an
            // orphaned session.
            let spawn_refusal = resp.status == 403
                && (msg.starts_with("Cannot start container: Insufficient quota")
                    || msg.contains(" budget "));
            // Every start the gate refuses is told: one `start.refused` event (beside those of an
            // orphan it closed: its end, its charge's low balance).
            let start_refused = resp.status == 403
                && method == "POST"
                && msg.starts_with("Cannot start container")
                && quota_core::api::route_template(path) == Some("/api/quota/sessions");
            if start_refused {
                use quota_core::store::EventKind;
                let new: Vec<_> = store
                    .events
                    .iter()
                    .filter(|e| !before.events.contains(e))
                    .collect();
                let refused = new
                    .iter()
                    .filter(|e| e.event.kind == EventKind::StartRefused)
                    .count();
                assert!(
                    refused == 1
                        && new.iter().all(|e| matches!(
                            e.event.kind,
                            EventKind::StartRefused | EventKind::SessionEnded | EventKind::BalanceLow
                        )),
                    "{method} {target}: a refused start wrote {new:?}"
                );
            }
            assert!(
                spawn_refusal || store == before || (start_refused && store.same_but_events(&before)),
                "{method} {target}: refused with {} {} but the store changed",
                resp.status,
                resp.body
            );
        }
        ledger_reconciles(&mut store, &format!("{method} {target}"));
        events_are_well_formed(&store, &format!("{method} {target}"));
    }
}

/// Event ids increase, each event's data is a JSON object with the kind's fields.
fn events_are_well_formed(store: &MemStore, after: &str) {
    use quota_core::store::EventKind;
    let mut last = 0;
    for e in &store.events {
        assert!(e.id > last, "after {after}: event ids do not increase");
        last = e.id;
        let data: Value = serde_json::from_str(&e.event.data).expect("event data is JSON");
        let fields: &[&str] = match e.event.kind {
            EventKind::SessionEnding => &[
                "session_id",
                "server_name",
                "ends_at",
                "minutes_left",
                "extend_cost_30",
            ],
            EventKind::SessionEnded => &["session_id", "server_name", "status", "cost", "balance"],
            EventKind::BalanceLow => &["balance", "threshold"],
            EventKind::GrantExpiring => &["grant_id", "remaining", "expires_at"],
            EventKind::StartRefused => &["status", "message", "server_name", "resource_type"],
            EventKind::RequestCreated => &["request_id", "amount", "reason"],
            EventKind::RequestDecided => &[
                "request_id",
                "status",
                "amount",
                "granted",
                "expires_at",
                "note",
                "decided_by",
            ],
        };
        assert!(
            data.as_object()
                .is_some_and(|o| o.len() == fields.len() && fields.iter().all(|f| o.contains_key(*f))),
            "after {after}: event {} ({}) has data {data}",
            e.id,
            e.event.kind.as_str()
        );
        if e.event.kind == EventKind::SessionEnding {
            assert!(
                data["minutes_left"].as_i64().is_some_and(|m| m >= 0),
                "after {after}: {data}"
            );
        }
    }
}

fn ledger_reconciles(store: &mut MemStore, after: &str) {
    // Per account: a personal account's rows by username, a budget's by budget.
    let mut sums = std::collections::BTreeMap::<&str, i64>::new();
    let mut budget_sums = std::collections::BTreeMap::<&str, i64>::new();
    for t in &store.transactions {
        assert_eq!(
            t.amount,
            t.balance_after - t.balance_before,
            "after {after}: transaction {} does not move its amount",
            t.id
        );
        match &t.budget {
            Some(b) => *budget_sums.entry(b).or_default() += t.amount,
            None => *sums.entry(&t.username).or_default() += t.amount,
        }
    }
    for (name, b) in &store.budgets {
        let sum = budget_sums.get(name.as_str()).copied().unwrap_or(0);
        assert_eq!(
            b.balance, sum,
            "after {after}: budget {name}'s balance is not the sum of its ledger"
        );
    }
    for (name, u) in &store.users {
        let sum = sums.get(name.as_str()).copied().unwrap_or(0);
        assert_eq!(
            u.balance, sum,
            "after {after}: {name}'s balance is not the sum of its ledger"
        );
    }
    // The store's own reads agree with its maps (a cheap check that nothing is half-written).
    for name in store.users.keys().cloned().collect::<Vec<_>>() {
        assert!(store.get_user(&name).expect("memstore reads").is_some());
    }
}

/// A values file (YAML) as `quota-hub` reads it, then the engine's configuration: no panic, and a
/// refused configuration names every problem's key path.
pub fn values_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(values) = serde_norway::from_str::<Value>(text) else {
        return;
    };
    match Config::from_values(&values) {
        Ok(config) => {
            let rates = config.rates_json();
            assert!(rates.is_object() || rates.is_array(), "rates are a JSON document");
            let t = Timestamp::parse("2026-11-22T10:00:00Z").expect("a timestamp");
            for rule in config.refresh_rules.keys() {
                if let Some(next) = config.next_fire(rule, t) {
                    assert!(next > t, "rule {rule}: next firing {next:?} is not after {t:?}");
                }
            }
        }
        Err(e) => {
            assert!(!e.0.is_empty(), "a refused configuration names a problem");
            for p in &e.0 {
                match p {
                    quota_core::QuotaError::Invalid { field, message } => assert!(
                        !field.is_empty() && !message.is_empty(),
                        "a configuration problem without its key path: {p}"
                    ),
                    other => panic!("a configuration problem that is not a key path: {other}"),
                }
            }
        }
    }
}

/// A cron expression: no panic; a parsed one's next firing is later than the time asked, fires
/// (`matches`), and no minute between the two fires; a refused one says why.
pub fn cron(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first line is the expression; an optional second line is the time to search from.
    let (expr, at) = text.split_once('\n').unwrap_or((text, ""));
    let t = Timestamp::parse(at)
        .ok()
        .filter(|t| (0..=253_402_300_799).contains(&t.seconds()))
        .unwrap_or(Timestamp(1_795_341_600));
    match Cron::parse(expr) {
        Ok(c) => {
            if let Some(next) = c.next_after(t) {
                assert!(next > t, "{expr:?}: next {next:?} not after {t:?}");
                assert!(c.matches(next), "{expr:?}: next {next:?} does not match");
                assert_eq!(next.seconds() % 60, 0, "{expr:?}: next is not a whole minute");
                let mut m = Timestamp(t.seconds() - t.seconds().rem_euclid(60) + 60);
                let mut checked = 0;
                while m < next && checked < 1500 {
                    assert!(!c.matches(m), "{expr:?}: {m:?} matches before the next {next:?}");
                    m = m.plus_seconds(60);
                    checked += 1;
                }
            }
        }
        Err(e) => assert!(!e.is_empty(), "{expr:?}: refused without a reason"),
    }
}

/// A CSV file for `set-quota -f` / `add-quota -f`: no panic; every refusal and warning names its
/// line; every entry has a username and a line number.
pub fn csv_import(data: &[u8]) {
    for (default, use_column) in [(None, true), (Some(5), true), (Some(5), false)] {
        match quota_file::parse(data, default, use_column) {
            Ok(parsed) => {
                for e in &parsed.entries {
                    assert!(!e.username.is_empty(), "an entry without a username: {e:?}");
                    assert!(e.line >= 1, "an entry without its line: {e:?}");
                }
                for w in &parsed.warnings {
                    assert!(w.starts_with("line "), "a warning without its line: {w}");
                }
                if !use_column {
                    assert!(parsed.entries.iter().all(|e| Some(e.amount) == default));
                }
            }
            Err(e) => assert!(e.starts_with("line "), "a refusal without its line: {e}"),
        }
    }
}

/// The strict JSON reader against serde_json: the same value whenever it accepts; a refusal is a
/// duplicate key (with its path) or text serde_json refuses too.
pub fn strict_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let loose = serde_json::from_str::<Value>(text);
    match strict_json::parse(text) {
        Ok(v) => assert_eq!(
            Some(&v),
            loose.as_ref().ok(),
            "strict accepted what serde_json reads otherwise"
        ),
        Err(StrictError::Duplicate(path)) => {
            // Text that is also malformed may be refused for the duplicate it shows first.
            assert!(!path.is_empty(), "a duplicate key without its path");
        }
        Err(StrictError::Malformed(m)) => {
            assert!(loose.is_err(), "refused valid JSON as malformed: {m}");
            assert!(!m.is_empty());
        }
    }
}
