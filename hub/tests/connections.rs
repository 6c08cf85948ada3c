//! Silent and half-sent connections are closed by the server within its documented timeouts
//! (`--header-read-timeout-ms`, `--body-read-timeout-ms`), while a normal client keeps getting
//! answers; past `--connections-max` new connections wait instead of using up the open files.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use common::{http, Server};

/// Reads until the server closes the connection (whatever it sent first); fails if our own
/// patience runs out first.
fn closed_by_server(mut s: TcpStream, what: &str) -> Vec<u8> {
    s.set_read_timeout(Some(common::patience)).expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("{what}: the server did not close the connection: {e}"),
        }
    }
}

#[test]
fn silent_and_half_sent_connections_are_closed_while_others_are_answered() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let values = common::write_values(
        dir.path(),
        "values.json",
        &serde_json::json!({"custom": {"authMode": "github"}}),
    );
    let admin = common::token(&db, "root", true, &[]);
    let server = Server::start(
        &db,
        &values,
        &[
            "--header-read-timeout-ms",
            "1000",
            "--body-read-timeout-ms",
            "1000",
        ],
    );
    let addr = server
        .url
        .strip_prefix("http://")
        .expect("http")
        .split('/')
        .next()
        .expect("addr")
        .to_string();
    let base = server
        .url
        .split_once("//")
        .expect("url")
        .1
        .split_once('/')
        .map_or("", |(_, b)| b)
        .to_string();

    let silent: Vec<TcpStream> = (0..500)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    let half_head: Vec<TcpStream> = (0..25)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).expect("connect");
            s.write_all(format!("GET /{base}/api/quota/rates HTTP/1.1\r\nHost: x\r\nAutho").as_bytes())
                .expect("half a head");
            s
        })
        .collect();
    let half_body: Vec<TcpStream> = (0..25)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).expect("connect");
            s.write_all(
                format!(
                    "POST /{base}/admin/api/quota/users/alice HTTP/1.1\r\nHost: x\r\n\
                     Authorization: token {admin}\r\nContent-Length: 100\r\n\r\n{{\"action\": \"se"
                )
                .as_bytes(),
            )
            .expect("half a body");
            s
        })
        .collect();

    // A normal client is answered meanwhile.
    let agent = common::agent();
    for _ in 0..20 {
        let (st, body) = http(
            &agent,
            "GET",
            &format!("{}/api/quota/rates", server.url),
            Some(&admin),
            None,
            &[],
        );
        assert_eq!(st, 200, "{body}");
    }

    for s in silent {
        assert!(closed_by_server(s, "silent").is_empty());
    }
    for s in half_head {
        closed_by_server(s, "half a head");
    }
    for s in half_body {
        let answer = String::from_utf8_lossy(&closed_by_server(s, "half a body")).into_owned();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.contains("--body-read-timeout-ms"), "{answer}");
    }
    // An idle kept-alive connection is closed too, after answering.
    let mut kept = TcpStream::connect(&addr).expect("connect");
    kept.write_all(
        format!("GET /{base}/api/quota/rates HTTP/1.1\r\nHost: x\r\nAuthorization: token {admin}\r\n\r\n")
            .as_bytes(),
    )
    .expect("request");
    let answer = String::from_utf8_lossy(&closed_by_server(kept, "idle keep-alive")).into_owned();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Nothing was changed by the half-sent writes, and the server still answers.
    let (st, body) = http(
        &agent,
        "GET",
        &format!("{}/admin/api/quota/users/alice", server.url),
        Some(&admin),
        None,
        &[],
    );
    assert_eq!(st, 200, "{body}");
    assert!(body.contains(r#""recent_transactions":[]"#), "{body}");
    server.stop();
}

#[test]
fn past_the_connection_cap_new_connections_wait_for_a_slot() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let values = common::write_values(
        dir.path(),
        "values.json",
        &serde_json::json!({"custom": {"authMode": "github"}}),
    );
    let admin = common::token(&db, "root", true, &[]);
    let server = Server::start(
        &db,
        &values,
        &["--connections-max", "5", "--header-read-timeout-ms", "1000"],
    );
    let addr = server
        .url
        .strip_prefix("http://")
        .expect("http")
        .split('/')
        .next()
        .expect("addr")
        .to_string();
    // Five silent connections take every slot; a request waits until their timeout frees them,
    // then is answered (not refused, not lost).
    let silent: Vec<TcpStream> = (0..5)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    let (st, body) = http(
        &common::agent(),
        "GET",
        &format!("{}/api/quota/rates", server.url),
        Some(&admin),
        None,
        &[],
    );
    assert_eq!(st, 200, "{body}");
    // The cap is logged (the reader of the server's stderr may lag the answer: wait for it).
    server
        .stderr
        .wait_for("the cap in the log", |l| l.contains("--connections-max"));
    drop(silent);
    server.stop();
}
