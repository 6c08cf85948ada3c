//! Crash safety: the server is killed with SIGKILL in the middle of a write load; after a restart on
//! the same file every acknowledged write is there and nothing is half applied.

use crate::common;

use std::sync::mpsc;

use common::json;
use rusqlite::Connection;

const CLIENTS: usize = 4;
/// Acknowledged writes to wait for before the kill.
const ACKS_BEFORE_KILL: usize = 300;

#[derive(Default, Debug)]
struct Seen {
    /// Adds acknowledged (200) and attempted, per client.
    adds_acked: u64,
    adds_tried: u64,
    /// Sessions whose end was acknowledged.
    ended: Vec<i64>,
}

#[test]
fn sigkill_mid_load_loses_no_acknowledged_write_and_half_applies_nothing() {
    let setup = common::example();
    let server = setup.start(&[]);
    let admin = setup.token("root", true, &[]);
    let hub = setup.token("hub", false, &["quota:sessions"]);
    let (tx, rx) = mpsc::channel::<()>();
    let mut handles = Vec::new();
    for c in 0..CLIENTS {
        let (url, admin, hub, tx) = (server.url.clone(), admin.clone(), hub.clone(), tx.clone());
        handles.push(std::thread::spawn(move || {
            let agent = common::agent();
            let user = format!("load{c}");
            let mut seen = Seen::default();
            for i in 0u64.. {
                // Alternate: a credit, then a session start and end for the same user.
                let ok = if i % 2 == 0 {
                    seen.adds_tried += 1;
                    let r = try_http(
                        &agent,
                        "POST",
                        &format!("{url}/admin/api/quota/users/{user}"),
                        &admin,
                        r#"{"action":"add","amount":100}"#,
                    );
                    match r {
                        Some(200) => {
                            seen.adds_acked += 1;
                            true
                        }
                        _ => false,
                    }
                } else {
                    let body = format!(r#"{{"username":"{user}","runtime_minutes":1,"server_name":"s{i}"}}"#);
                    match try_http_body(&agent, "POST", &format!("{url}/api/quota/sessions"), &hub, &body) {
                        Some((201, b)) => {
                            let id = json(&b)["session_id"].as_i64().expect("id");
                            match try_http(
                                &agent,
                                "POST",
                                &format!("{url}/api/quota/sessions/{id}/end"),
                                &hub,
                                "{}",
                            ) {
                                Some(200) => {
                                    seen.ended.push(id);
                                    true
                                }
                                _ => false,
                            }
                        }
                        _ => false,
                    }
                };
                if !ok {
                    return seen; // the server is gone
                }
                let _ = tx.send(());
            }
            seen
        }));
    }
    drop(tx);
    for _ in 0..ACKS_BEFORE_KILL {
        rx.recv().expect("clients stopped before the kill");
    }
    server.kill9();
    let seen: Vec<Seen> = handles.into_iter().map(|h| h.join().expect("client")).collect();

    // Restart on the same file: it must open, recover the WAL and serve.
    let server = setup.start(&[]);
    let (st, _) = server.get("/admin/api/quota/", &admin);
    assert_eq!(st, 200);
    server.stop();

    let conn = Connection::open(&setup.db).expect("open");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("check");
    assert_eq!(check, "ok");
    for (c, s) in seen.iter().enumerate() {
        let user = format!("load{c}");
        let adds: i64 = conn
            .query_row(
                "SELECT count(*) FROM transactions WHERE username = ?1 AND transaction_type = 'add'",
                [&user],
                |r| r.get(0),
            )
            .expect("adds");
        let adds = adds as u64;
        assert!(
            s.adds_acked <= adds && adds <= s.adds_tried,
            "{user}: {adds} adds stored, {} acknowledged, {} tried",
            s.adds_acked,
            s.adds_tried
        );
        // Balance = sum of its audit rows; every row's amount = after - before.
        let (balance, sum): (i64, i64) = conn
            .query_row(
                "SELECT u.balance, (SELECT coalesce(sum(amount), 0) FROM transactions t WHERE t.username = u.username) FROM users u WHERE username = ?1",
                [&user],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("balance");
        assert_eq!(balance, sum, "{user}");
        for id in &s.ended {
            let status: String = conn
                .query_row("SELECT status FROM sessions WHERE id = ?1", [id], |r| r.get(0))
                .expect("acknowledged session is stored");
            assert_eq!(status, "completed", "session {id}");
        }
    }
    let bad: i64 = conn
        .query_row(
            "SELECT count(*) FROM transactions WHERE amount != balance_after - balance_before",
            [],
            |r| r.get(0),
        )
        .expect("rows");
    assert_eq!(bad, 0);
    // Exactly one usage row per completed session; none for a session still active.
    let mismatched: i64 = conn
        .query_row(
            "SELECT count(*) FROM sessions s WHERE (s.status = 'completed') != \
             ((SELECT count(*) FROM transactions t WHERE t.transaction_type = 'usage' AND t.description LIKE 'Session ' || s.id || ':%') = 1)",
            [],
            |r| r.get(0),
        )
        .expect("sessions");
    assert_eq!(mismatched, 0, "a session and its usage row disagree");
    let acked: u64 = seen.iter().map(|s| s.adds_acked + s.ended.len() as u64).sum();
    println!("killed after {acked} acknowledged writes; all present after restart");
}

fn try_http(agent: &ureq::Agent, method: &str, url: &str, token: &str, body: &str) -> Option<u16> {
    try_http_body(agent, method, url, token, body).map(|(s, _)| s)
}

/// A request that may fail because the server was killed.
fn try_http_body(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    token: &str,
    body: &str,
) -> Option<(u16, String)> {
    common::send(agent, method, url, Some(token), Some(body.as_bytes()), &[]).ok()
}
