//! Webhook deliveries from a real `quota-hub serve` to a real HTTP receiver: a receiver that fails
//! (503), is slow (past the 10 s limit), refuses connections, then recovers gets every event, in id
//! order, each with a valid signature; a server killed with SIGKILL while deliveries are pending
//! loses none of them after its restart.

use crate::common;

use std::time::Duration;

use common::receiver::{Mode, Received, Receiver};
use common::{json, with_values, Server};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

const SECRET: &str = "wh-s3cret";

fn setup(receiver: &Receiver) -> common::Setup {
    with_values(serde_json::json!({"custom": {"authMode": "github", "quota": {
        "cpuRate": 1, "minimumToStart": 1,
        "webhooks": [{"name": "ops", "url": receiver.url(), "secretEnv": "WH_SECRET",
                      "events": ["start.refused", "session.ended"]}]}}}))
}

fn start(s: &common::Setup) -> Server {
    Server::start_with_env(&s.db, &s.values, &[], &[("WH_SECRET".into(), SECRET.into())])
}

/// `n` refused starts: `n` events (`start.refused`).
fn refused_starts(server: &Server, hub: &str, n: usize, tag: &str) {
    for i in 0..n {
        let body = format!(r#"{{"username":"{tag}{i}","runtime_minutes":5}}"#);
        let (st, b) = server.post("/api/quota/sessions", hub, &body);
        assert_eq!(st, 403, "{b}");
    }
}

fn verify(r: &Received) {
    let (t, v1) = r
        .signature
        .split_once(',')
        .and_then(|(t, v)| Some((t.strip_prefix("t=")?, v.strip_prefix("v1=")?)))
        .unwrap_or_else(|| panic!("signature header: {:?}", r.signature));
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).expect("key");
    mac.update(format!("{t}.{}", r.body).as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v1, hex, "event {}: signature", r.event_id);
    assert_eq!(json(&r.body)["id"], r.event_id, "the body is the event it names");
}

/// Every event of the webhook's kinds arrived with a 200, every request was in id order (a retry
/// repeats its id, never goes back), each signed.
fn all_arrived_in_order(receiver: &Receiver, server: &Server, admin: &str) {
    let (st, b) = server.get("/admin/api/quota/events?limit=500", admin);
    assert_eq!(st, 200);
    let ids: Vec<i64> = json(&b)["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["id"].as_i64().expect("id"))
        .collect();
    assert!(!ids.is_empty());
    let got = receiver.received();
    let mut last = 0;
    for r in &got {
        verify(r);
        if r.mode == Mode::Slow {
            // Answered after the sender gave up: not a delivery (the sender sends it again).
            continue;
        }
        assert!(r.event_id >= last, "event {} sent after {last}", r.event_id);
        last = r.event_id;
    }
    for id in &ids {
        assert!(
            got.iter().any(|r| r.event_id == *id && r.status == 200),
            "event {id} never delivered"
        );
    }
    assert_eq!(receiver.most_in_flight(), 1, "one request at a time");
}

fn status(server: &Server, admin: &str) -> serde_json::Value {
    let (st, b) = server.get("/admin/api/quota/webhooks", admin);
    assert_eq!(st, 200, "{b}");
    json(&b)["webhooks"][0].clone()
}

#[test]
fn a_receiver_that_fails_is_slow_and_refuses_then_recovers_gets_every_event_in_order() {
    let receiver = Receiver::start();
    let s = setup(&receiver);
    let admin = s.token("root", true, &[]);
    let hub = s.token("hub", false, &["quota:sessions"]);
    let server = start(&s);
    let long = Duration::from_secs(120);

    refused_starts(&server, &hub, 5, "a");
    receiver.wait_until("the first events", long, |g| {
        g.iter().filter(|r| r.status == 200).count() == 5
    });

    receiver.set(Mode::Fail);
    refused_starts(&server, &hub, 3, "b");
    receiver.wait_until("two 503s", long, |g| {
        g.iter().filter(|r| r.status == 503).count() >= 2
    });

    receiver.set(Mode::Slow);
    receiver.wait_until("a request answered slowly", long, |g| {
        g.iter().any(|r| r.mode == Mode::Slow)
    });

    receiver.close();
    refused_starts(&server, &hub, 2, "c");
    common::eventually("a refused connection recorded", || {
        status(&server, &admin)["last_error"]
            .as_str()
            .is_some_and(|e| e.to_lowercase().contains("refused"))
    });
    assert!(status(&server, &admin)["pending"].as_i64().expect("pending") >= 5);

    receiver.reopen();
    receiver.wait_until("the backlog", long, |g| {
        (1..=10).all(|id| g.iter().any(|r| r.event_id == id && r.status == 200))
    });
    common::eventually("nothing pending", || status(&server, &admin)["pending"] == 0);
    all_arrived_in_order(&receiver, &server, &admin);
    let st = status(&server, &admin);
    assert_eq!(st["failed"], 0, "{st}");
    assert_eq!(st["last_delivered_id"], 10, "{st}");
}

#[test]
fn a_server_killed_while_deliveries_are_pending_loses_none() {
    let receiver = Receiver::start();
    let s = setup(&receiver);
    let admin = s.token("root", true, &[]);
    let hub = s.token("hub", false, &["quota:sessions"]);
    let server = start(&s);
    receiver.close();
    refused_starts(&server, &hub, 20, "k");
    common::eventually("a failed attempt", || {
        !status(&server, &admin)["last_error"].is_null()
    });
    server.kill9();
    receiver.reopen();
    let server = start(&s);
    receiver.wait_until("every event after the restart", Duration::from_secs(120), |g| {
        (1..=20).all(|id| g.iter().any(|r| r.event_id == id && r.status == 200))
    });
    common::eventually("nothing pending", || status(&server, &admin)["pending"] == 0);
    all_arrived_in_order(&receiver, &server, &admin);
}
