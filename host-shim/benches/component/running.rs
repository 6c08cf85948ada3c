//! The gate charging a shared budget while a fixed number of its members already run (10, 1,000,
//! 10,000): what one more start and end cost, beside the personal gate's, so a start's cost that
//! grows with the sessions running on the budget shows (issue 51). In memory, through the
//! component; the running sessions stay for the whole measure.

use std::sync::Arc;
use std::time::Instant;

use quota_core::gate::StartRequest;
use quota_core::Timestamp;
use quota_host::Runtime;

use super::{budget_worker, end, median, start, start_req};

/// Members started and ended one after the other in each round, on top of those running.
const PROBES: usize = 200;
const ROUNDS: usize = 15;

/// Prints the budget gate with 10, 1,000 and 10,000 members running, against `personal_ns`.
pub fn budget_with_running(rt: &Arc<Runtime>, personal_ns: f64) {
    println!("the gate charging a budget while its members run (component, in memory, median of {ROUNDS} rounds x {PROBES} starts and ends):");
    for running in [10usize, 1_000, 10_000] {
        let (bs, be) = measure(rt, running, false);
        let (ls, le) = measure(rt, running, true);
        println!(
            "  {running:>6} running: check_start budget {bs:>7.0} ns/op ({:.2}x personal), with memberLimit {ls:>7.0} ns/op ({:.2}x); end_session {be:>7.0} ns/op, with memberLimit {le:>7.0} ns/op",
            bs / personal_ns,
            ls / personal_ns
        );
    }
}

fn measure(rt: &Arc<Runtime>, running: usize, limit: bool) -> (f64, f64) {
    let names: Vec<String> = (0..running + PROBES).map(|i| format!("m{i:06}")).collect();
    let mut w = budget_worker(rt, &names, limit);
    let req = |n: &String| StartRequest {
        budget: Some("lab".into()),
        runtime_minutes: 480,
        ..start_req(n, "")
    };
    let mut now = Timestamp(1_795_000_000);
    for n in &names[..running] {
        start(&mut w, &req(n), now);
    }
    let probes: Vec<StartRequest> = names[running..]
        .iter()
        .map(|n| StartRequest {
            runtime_minutes: 60,
            ..req(n)
        })
        .collect();
    let (mut s_ns, mut e_ns) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let ids: Vec<i64> = probes.iter().map(|r| start(&mut w, r, now)).collect();
        s_ns.push(t.elapsed().as_nanos() as f64 / PROBES as f64);
        now = now.plus_seconds(125);
        let t = Instant::now();
        for id in ids {
            end(&mut w, id, now);
        }
        e_ns.push(t.elapsed().as_nanos() as f64 / PROBES as f64);
    }
    (median(s_ns), median(e_ns))
}
