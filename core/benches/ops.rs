//! Prints ns/op for check_start and end_session, and the time of one refresh over 100,000 users,
//! on the in-memory store. Run: `cargo bench -p quota-core --bench ops`.

use std::time::Instant;

use quota_core::engine_call::EngineCall;
use quota_core::gate::{check_start, StartDecision, StartRequest};
use quota_core::refresh::{refresh, RefreshAction, RefreshParams, RefreshRequest};
use quota_core::sessions::{end_session, EndRequest, EndTarget, Outcome};
use quota_core::store::UserRecord;
use quota_core::store::UserStore;
use quota_core::targets::Targets;
use quota_core::{Config, MemStore, Timestamp};

const USERS: usize = 1000;
const ROUNDS: usize = 200;
const REFRESH_USERS: usize = 100_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let cfg = Config::from_values(&serde_json::json!({"custom": {"authMode": "github",
        "accelerators": {"phx": {"quotaRate": 2.5}}}}))
    .expect("bench config");
    let mut store = MemStore::new();
    let t0 = Timestamp(1_795_000_000);
    let names: Vec<String> = (0..USERS).map(|i| format!("user{i:05}")).collect();
    for n in &names {
        store
            .put_user(&UserRecord {
                username: n.clone(),
                balance: 1_000_000_000,
                unlimited: false,
                updated_at: t0,
            })
            .unwrap();
    }
    let (mut start_ns, mut end_ns) = (Vec::new(), Vec::new());
    let mut now = t0;
    for _ in 0..ROUNDS {
        let mut ids = Vec::with_capacity(USERS);
        let t = Instant::now();
        for n in &names {
            let req = StartRequest {
                username: n.clone(),
                resource: Some("phx".into()),
                runtime_minutes: 60,
                server_name: String::new(),
                started_at: None,
                groups: None,
                budget: None,
            };
            match check_start(&cfg, &mut EngineCall::new(&mut store), &req, now).expect("start") {
                StartDecision::Allowed(s) => ids.push(s.session_id),
                StartDecision::Refused(r) => panic!("refused: {}", r.message),
                StartDecision::Forbidden(m) => panic!("forbidden: {m}"),
            }
        }
        start_ns.push(t.elapsed().as_nanos() as f64 / USERS as f64);
        now = now.plus_seconds(125);
        let t = Instant::now();
        for id in ids {
            let req = EndRequest {
                target: EndTarget::Id(id),
                ended_at: None,
                outcome: Outcome::Completed,
            };
            end_session(&mut EngineCall::new(&mut store), &req, now).expect("end");
        }
        end_ns.push(t.elapsed().as_nanos() as f64 / USERS as f64);
    }
    println!(
        "check_start   median {:>8.0} ns/op  ({} ops)",
        median(start_ns),
        USERS * ROUNDS
    );
    println!(
        "end_session   median {:>8.0} ns/op  ({} ops)",
        median(end_ns),
        USERS * ROUNDS
    );

    let mut big = MemStore::new();
    for i in 0..REFRESH_USERS {
        big.put_user(&UserRecord {
            username: format!("u{i:06}"),
            balance: (i % 500) as i64,
            unlimited: false,
            updated_at: t0,
        })
        .unwrap();
    }
    let params = RefreshParams {
        rule_name: "bench".into(),
        action: RefreshAction::Add,
        amount: 10,
        max_balance: Some(1000),
        min_balance: None,
        targets: Targets::default(),
        expires_after: None,
    };
    let t = Instant::now();
    let r = refresh(
        &quota_core::Config::default(),
        &mut EngineCall::new(&mut big),
        &RefreshRequest {
            params,
            run_id: Some("bench@1".into()),
            dry_run: false,
        },
        now,
    )
    .expect("refresh");
    let el = t.elapsed();
    println!(
        "refresh       {:>8.1} ms for {} users ({} updated, {:.0} ns/user)",
        el.as_secs_f64() * 1e3,
        REFRESH_USERS,
        r.users_updated,
        el.as_nanos() as f64 / REFRESH_USERS as f64
    );
}
