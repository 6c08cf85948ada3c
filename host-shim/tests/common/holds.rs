//! A budget's running holds against the sums they stand for (issue 51): a random mix of starts,
//! extensions, ends and failed spawns on two budgets and personal balances through the engine,
//! with writes of another writer (an engine of the previous schema, an operator's SQL) between
//! them; after every step the totals the triggers keep must equal the sums of the sessions.

use quota_core::Timestamp;
use quota_host::{SqlCell, Worker};

/// The fixture's values with two budgets the members below share: `lab` (a monthly limit per
/// member) and `course`.
pub fn values() -> String {
    let mut v = quota_scenarios::fixture_values();
    v["custom"]["quota"]["budgets"] = serde_json::json!({
        "lab": { "users": MEMBERS, "memberLimit": 1_000_000 },
        "course": { "users": MEMBERS },
    });
    v.to_string()
}

pub const MEMBERS: [&str; 4] = ["ann", "bob", "cy", "dee"];

/// What the triggers keep (non-zero totals) and what the sessions sum to, each as (budget,
/// thousandths), in one order.
pub fn kept_and_summed(w: &mut Worker) -> (Vec<Vec<SqlCell>>, Vec<Vec<SqlCell>>) {
    let kept = w
        .db()
        .query(
            "SELECT budget, held FROM budget_holds WHERE held <> 0 ORDER BY budget",
            &[],
        )
        .expect("the kept totals");
    let summed = w
        .db()
        .query(
            "SELECT budget, CAST(SUM(estimated_cost_milli) AS BIGINT) FROM sessions
             WHERE budget IS NOT NULL AND status = 'active' AND billable = 1
             GROUP BY budget HAVING SUM(estimated_cost_milli) <> 0 ORDER BY budget",
            &[],
        )
        .expect("the sums");
    (kept, summed)
}

/// A small deterministic generator (xorshift), so a failing seed replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn hub() -> quota_core::Caller {
    super::hub()
}

/// What ran: how many steps of each kind were taken.
#[derive(Debug, Default)]
pub struct Ran {
    pub started: u32,
    pub refused: u32,
    pub extended: u32,
    pub ended: u32,
    pub failed: u32,
    pub other_writer: u32,
}

/// Runs `steps` random steps from `seed` on a worker over `values()` whose budgets have credit,
/// asserting after each that the kept totals equal the sums.
pub fn run(w: &mut Worker, seed: u64, steps: u32, now: Timestamp) -> Ran {
    // Each member's balance, then each budget's.
    let users = MEMBERS.map(|u| (format!("users/{u}"), 2_000));
    let budgets = ["lab", "course"].map(|b| (format!("budgets/{b}"), 100_000));
    for (account, amount) in users.iter().chain(budgets.iter()) {
        let (st, b) = super::request(
            w,
            &super::admin(),
            "POST",
            &format!("/admin/api/quota/{account}"),
            &format!(r#"{{"action":"set","amount":{amount}}}"#),
            now,
        );
        assert_eq!(st, 200, "{account}: {b}");
    }
    let mut rng = Rng(seed | 1);
    let mut ran = Ran::default();
    let mut running: Vec<i64> = Vec::new();
    let mut t = now;
    for step in 0..steps {
        t = t.plus_seconds(30);
        let pick = rng.below(10);
        if pick < 4 || running.is_empty() {
            let user = MEMBERS[rng.below(4) as usize];
            let budget = match rng.below(3) {
                0 => String::new(),
                1 => r#","budget":"lab""#.to_string(),
                _ => r#","budget":"course""#.to_string(),
            };
            let body = format!(
                r#"{{"username":"{user}","server_name":"s{step}","runtime_minutes":{}{budget}}}"#,
                1 + rng.below(120)
            );
            let (st, b) = super::request(w, &hub(), "POST", "/api/quota/sessions", &body, t);
            match st {
                201 => {
                    running.push(b["session_id"].as_i64().expect("id"));
                    ran.started += 1;
                }
                403 => ran.refused += 1,
                _ => panic!("start {body}: {st} {b}"),
            }
        } else {
            let at = rng.below(running.len() as u64) as usize;
            let id = running[at];
            match pick {
                4 | 5 => {
                    let body = format!(r#"{{"minutes":{}}}"#, 1 + rng.below(30));
                    let path = format!("/api/quota/sessions/{id}/extend");
                    let (st, b) = super::request(w, &hub(), "POST", &path, &body, t);
                    assert!(st == 200 || st == 403, "extend {id}: {st} {b}");
                    ran.extended += u32::from(st == 200);
                }
                6 | 7 => {
                    let body = if pick == 6 {
                        "{}"
                    } else {
                        r#"{"outcome":"failed"}"#
                    };
                    let path = format!("/api/quota/sessions/{id}/end");
                    let (st, b) = super::request(w, &hub(), "POST", &path, body, t);
                    assert_eq!(st, 200, "end {id}: {b}");
                    running.swap_remove(at);
                    if pick == 6 {
                        ran.ended += 1;
                    } else {
                        ran.failed += 1;
                    }
                }
                _ => {
                    // Another writer: an engine of the previous schema or an operator's SQL, which
                    // knows nothing of the totals.
                    let sql = match rng.below(3) {
                        0 => format!(
                            "UPDATE sessions SET status = 'cleaned_up', end_time = {} WHERE id = {id}",
                            t.0
                        ),
                        1 => format!(
                            "UPDATE sessions SET estimated_cost_milli = estimated_cost_milli + 500,
                             runtime_minutes = runtime_minutes + 1 WHERE id = {id}"
                        ),
                        _ => format!("DELETE FROM sessions WHERE id = {id}"),
                    };
                    w.db().begin().expect("begin");
                    w.db().query(&sql, &[]).expect(&sql);
                    w.db().commit().expect("commit");
                    if !sql.starts_with("UPDATE sessions SET estimated") {
                        running.swap_remove(at);
                    }
                    ran.other_writer += 1;
                }
            }
        }
        let (kept, summed) = kept_and_summed(w);
        assert_eq!(kept, summed, "seed {seed}, after step {step} ({ran:?})");
    }
    ran
}
