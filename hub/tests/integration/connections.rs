//! Silent and half-sent connections are closed by the server within its documented timeouts
//! (`--header-read-timeout-ms`, `--body-read-timeout-ms`), while a normal client keeps getting
//! answers; past `--connections-max` new connections wait instead of using up the open files.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use common::Server;

/// Reads until the server closes the connection (whatever it sent first); fails if our own
/// patience runs out first.
fn closed_by_server(mut s: TcpStream, what: &str) -> Vec<u8> {
    s.set_read_timeout(Some(common::PATIENCE)).expect("timeout");
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

/// The server's `host:port` and its base path without the leading slash.
fn addr_and_base(server: &Server) -> (String, String) {
    let rest = server.url.strip_prefix("http://").expect("http");
    let (addr, base) = rest.split_once('/').unwrap_or((rest, ""));
    (addr.to_string(), base.to_string())
}

#[test]
fn silent_and_half_sent_connections_are_closed_while_others_are_answered() {
    let common::GithubServer {
        dir: _dir,
        db: _,
        admin,
        server,
    } = common::github_server(&[
        "--header-read-timeout-ms",
        "1000",
        "--body-read-timeout-ms",
        "1000",
    ]);
    let (addr, base) = addr_and_base(&server);

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
    for _ in 0..20 {
        let (st, body) = server.get("/api/quota/rates", &admin);
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
    let (st, body) = server.get("/admin/api/quota/users/alice", &admin);
    assert_eq!(st, 200, "{body}");
    assert!(body.contains(r#""recent_transactions":[]"#), "{body}");
    server.stop();
}

#[test]
fn past_the_connection_cap_new_connections_wait_for_a_slot() {
    let common::GithubServer {
        dir: _dir,
        db: _,
        admin,
        server,
    } = common::github_server(&["--connections-max", "5", "--header-read-timeout-ms", "1000"]);
    let (addr, _) = addr_and_base(&server);
    // Five silent connections take every slot; a request waits until their timeout frees them,
    // then is answered (not refused, not lost).
    let silent: Vec<TcpStream> = (0..5)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    let (st, body) = server.get("/api/quota/rates", &admin);
    assert_eq!(st, 200, "{body}");
    // The cap is logged (the reader of the server's stderr may lag the answer: wait for it).
    server
        .stderr
        .wait_for("the cap in the log", |l| l.contains("--connections-max"));
    drop(silent);
    server.stop();
}

/// A client that sends its whole request and then shuts down its writing side (`nc -N`, some
/// health checkers) is answered; one that shuts down in the middle of a request is closed, and
/// its half request changes nothing.
#[test]
fn a_client_that_half_closes_after_its_request_is_answered() {
    let common::GithubServer {
        admin,
        server,
        dir: _dir,
        ..
    } = common::github_server(&["--header-read-timeout-ms", "1000"]);
    let (addr, base) = addr_and_base(&server);
    let send_then_half_close = |request: String| {
        let mut s = TcpStream::connect(&addr).expect("connect");
        s.write_all(request.as_bytes()).expect("request");
        s.shutdown(std::net::Shutdown::Write).expect("half-close");
        String::from_utf8_lossy(&closed_by_server(s, "half-closed")).into_owned()
    };

    let answer = send_then_half_close(format!("GET /{base}/healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let answer = send_then_half_close(format!(
        "GET /{base}/api/quota/rates HTTP/1.0\r\nAuthorization: token {admin}\r\n\r\n"
    ));
    assert!(
        answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"),
        "{answer}"
    );
    assert!(answer.contains("\"rates\""), "{answer}");
    let body = r#"{"action": "set", "amount": 25}"#;
    let answer = send_then_half_close(format!(
        "POST /{base}/admin/api/quota/users/alice HTTP/1.1\r\nHost: x\r\n\
         Authorization: token {admin}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""balance":25"#), "{answer}");

    // Shut down in the middle: closed, nothing changed.
    send_then_half_close(format!(
        "GET /{base}/api/quota/rates HTTP/1.1\r\nHost: x\r\nAutho"
    ));
    let answer = send_then_half_close(format!(
        "POST /{base}/admin/api/quota/users/alice HTTP/1.1\r\nHost: x\r\n\
         Authorization: token {admin}\r\nContent-Length: 100\r\n\r\n{{\"action\": \"add\", \"amo"
    ));
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (st, body) = server.get("/admin/api/quota/users/alice", &admin);
    assert_eq!(st, 200, "{body}");
    assert!(body.contains(r#""balance":25"#), "{body}");
    server.stop();
}
