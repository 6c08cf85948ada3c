//! Many members starting sessions against one shared budget at once, through one server or
//! several replicas on one database: never overspent, no member past its monthly limit, every
//! refusal one of the two exact texts, and every account's balance the sum of its ledger.

use std::sync::Arc;

use super::{http, json};

/// Credits the budget holds: room for exactly `funded / cost` running sessions.
pub const FUNDED: i64 = 500;
/// Every start asks 20 minutes of CPU at 1 credit a minute.
pub const COST: i64 = 20;
/// A member may hold three such sessions at once.
pub const MEMBER_LIMIT: i64 = 60;
pub const CLIENTS: usize = 16;
/// Starts per client: 16 x 4 = 64 attempts for 25 places.
const STARTS_EACH: usize = 4;

/// The values file the servers run with.
pub fn values() -> serde_json::Value {
    serde_json::json!({"custom": {"authMode": "github", "quota": {
        "cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0,
        "budgets": {"course": {"groups": ["students"], "memberLimit": MEMBER_LIMIT}}}}})
}

/// What the load saw: starts allowed, and every refusal's text.
pub struct Seen {
    pub allowed: Vec<(String, i64)>,
    pub refused: Vec<String>,
}

/// Funds the budget through `urls[0]`, then `clients` members (s0..) start sessions charging it,
/// each client through the replicas in turn, all at once.
pub fn run(urls: &[String], admin: &str, hub: &str) -> Seen {
    let agent = super::agent();
    let body = format!(r#"{{"action": "set", "amount": {FUNDED}}}"#);
    let (st, b) = http(
        &agent,
        "POST",
        &format!("{}/admin/api/quota/budgets/course", urls[0]),
        Some(admin),
        Some(&body),
        &[],
    );
    assert_eq!(st, 200, "{b}");
    let urls = Arc::new(urls.to_vec());
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (urls, hub) = (urls.clone(), hub.to_string());
            std::thread::spawn(move || {
                let agent = super::agent();
                let mut out = Vec::new();
                for r in 0..STARTS_EACH {
                    let base = &urls[(c + r) % urls.len()];
                    let start = format!(
                        r#"{{"username": "s{c}", "runtime_minutes": {COST}, "server_name": "r{r}",
                            "groups": ["students"], "budget": "course"}}"#
                    );
                    let answer = http(
                        &agent,
                        "POST",
                        &format!("{base}/api/quota/sessions"),
                        Some(&hub),
                        Some(&start),
                        &[],
                    );
                    out.push((format!("s{c}"), answer));
                }
                out
            })
        })
        .collect();
    let mut seen = Seen {
        allowed: Vec::new(),
        refused: Vec::new(),
    };
    for t in threads {
        for (user, (st, body)) in t.join().expect("client") {
            match st {
                201 => seen
                    .allowed
                    .push((user, json(&body)["session_id"].as_i64().expect("id"))),
                403 => seen
                    .refused
                    .push(json(&body)["error"].as_str().expect("error").to_string()),
                _ => panic!("{user}: {st} {body}"),
            }
        }
    }
    seen
}

/// The two refusals a start may meet, word for word.
pub fn refusal_texts() -> [String; 2] {
    [
        format!(
            "Cannot start container: Insufficient quota in budget course. Current balance: {FUNDED} ({FUNDED} reserved by running servers), estimated cost: {COST} (1 quota/min x {COST} min). Please contact administrator to add quota."
        ),
        format!(
            "Cannot start container: monthly limit of budget course reached. Spent this month: 0 ({MEMBER_LIMIT} reserved), limit: {MEMBER_LIMIT}, estimated cost: {COST}."
        ),
    ]
}

/// Checks what the load saw: exactly as many starts as the budget holds, none of a member past
/// its limit, every refusal exact; then ends every session (through the replicas in turn) and
/// returns how many were ended.
pub fn check_and_end(seen: &Seen, urls: &[String], hub: &str) -> usize {
    assert_eq!(
        seen.allowed.len() as i64,
        FUNDED / COST,
        "the budget held exactly what it could pay for"
    );
    let mut per_member = std::collections::BTreeMap::<&str, i64>::new();
    for (user, _) in &seen.allowed {
        *per_member.entry(user).or_default() += COST;
    }
    assert!(
        per_member.values().all(|r| *r <= MEMBER_LIMIT),
        "a member past its limit: {per_member:?}"
    );
    let texts = refusal_texts();
    for r in &seen.refused {
        assert!(texts.contains(r), "not one of the exact refusals: {r}");
    }
    let agent = super::agent();
    for (i, (_, id)) in seen.allowed.iter().enumerate() {
        let base = &urls[i % urls.len()];
        let (st, body) = http(
            &agent,
            "POST",
            &format!("{base}/api/quota/sessions/{id}/end"),
            Some(hub),
            Some("{}"),
            &[],
        );
        assert_eq!(st, 200, "{body}");
    }
    seen.allowed.len()
}

/// Every account (user or budget) whose balance is not the sum of its ledger: none after the load.
pub const MISMATCHES_SQL: &str = "SELECT u.username FROM users u
     LEFT JOIN transactions t ON t.username = u.username AND t.budget IS NULL
     GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)
     UNION ALL SELECT b.name FROM budgets b LEFT JOIN transactions t ON t.budget = b.name
     GROUP BY b.name, b.balance HAVING b.balance <> COALESCE(SUM(t.amount), 0)";

/// The budget's balance after every session ended at once: each billed one minute.
pub fn balance_after(ended: usize) -> i64 {
    FUNDED - ended as i64
}
