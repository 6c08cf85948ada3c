//! What writing events costs the gate and the end: the same fault-injection component with the
//! events written and with them turned off, same run.

use super::*;

/// What writing events costs the gate and the end (an end writes `session.ended`): the same
/// fault-injection component with the events written and with them turned off
/// (`/__fault/events-off`), same run, interleaved rounds.
pub(super) fn cost(names: &[String]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(quota_host::FAULT_COMPONENT_PATH);
    if !path.exists() {
        println!(
            "events: skipped ({} missing: bash scripts/build-wasm.sh --fault)",
            path.display()
        );
        return;
    }
    let rt = Runtime::load(&path, Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    let reqs: Vec<StartRequest> = names.iter().map(|n| start_req(n, "")).collect();
    let (mut on_s, mut on_e, mut off_s, mut off_e) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        let (s, e) = rounds(rich_users_in_memory(&rt, names), &reqs);
        on_s.push(s);
        on_e.push(e);
        let mut off = rich_users_in_memory(&rt, names);
        let caller = quota_core::Caller {
            name: "bench".into(),
            admin: true,
            scopes: vec![],
        };
        let req = quota_core::Request {
            method: "POST",
            path: "/__fault/events-off",
            query: "",
            body: "",
            caller: Some(&caller),
        };
        assert_eq!(
            off.handle_request(&req, Timestamp(1_795_000_000)).unwrap().status,
            200
        );
        let (s, e) = rounds(off, &reqs);
        off_s.push(s);
        off_e.push(e);
    }
    let (on_s, on_e, off_s, off_e) = (median(on_s), median(on_e), median(off_s), median(off_e));
    println!("events written vs not (fault-injection component, in memory, same run, median of 5):");
    println!(
        "  check_start  with events {on_s:>7.0} ns/op   without {off_s:>7.0} ns/op   {:+.1}%",
        (on_s / off_s - 1.0) * 100.0
    );
    println!(
        "  end_session  with events {on_e:>7.0} ns/op   without {off_e:>7.0} ns/op   {:+.1}% (one session.ended each)",
        (on_e / off_e - 1.0) * 100.0
    );
    // On a file (WAL, synchronous=FULL), each call committed: what a hub sees.
    let dir = std::env::temp_dir().join(format!("quota-bench-events-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for i in 0..3 {
        on.push(durable::run_cycles(
            &rt,
            names,
            &dir.join(format!("on{i}.db")),
            false,
            false,
        ));
        off.push(durable::run_cycles(
            &rt,
            names,
            &dir.join(format!("off{i}.db")),
            false,
            true,
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (on, off) = (median(on), median(off));
    println!(
        "  durable start+end cycles (SQLite file, each call committed): with events {on:.0}/s, without {off:.0}/s ({:+.1}% time per cycle)",
        (off / on - 1.0) * 100.0
    );
}
