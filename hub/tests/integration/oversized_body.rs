//! A client that writes its whole body before reading (no `Expect: 100-continue`: Python's
//! http.client, curl for small bodies, most libraries) and sends more than the engine takes reads
//! the 413, every time, on a raw socket: the server reads the rest of the body before answering
//! instead of closing with bytes unread (which makes the kernel reset the connection).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// Sends one oversized POST on a fresh connection and returns the status line and body.
fn post_oversized(addr: &str, path: &str, token: &str, body_len: usize) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(common::PATIENCE)).expect("timeout");
    s.set_write_timeout(Some(common::PATIENCE)).expect("timeout");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: token {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {body_len}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).expect("head");
    // The whole body first, as such clients do; a reset here would be the bug.
    let chunk = vec![b' '; 64 * 1024];
    let mut left = body_len;
    while left > 0 {
        let n = left.min(chunk.len());
        s.write_all(&chunk[..n]).expect("body written in full");
        left -= n;
    }
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).expect("status line (a reset loses it)");
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).expect("header");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().expect("length");
            }
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).expect("body");
    (
        status.trim_end().to_string(),
        String::from_utf8(body).expect("utf-8"),
    )
}

#[test]
fn a_client_without_expect_continue_reads_the_413_every_time() {
    let common::GithubServer {
        dir: _dir,
        db: _,
        admin,
        server,
    } = common::github_server(&[]);
    let url = server.url.strip_prefix("http://").expect("http");
    let (addr, base) = url.split_once('/').map_or((url, ""), |(a, b)| (a, b));
    let path = format!("/{base}/admin/api/quota/users/alice");
    for i in 0..50 {
        let (status, body) = post_oversized(addr, &path, &admin, (1 << 20) + 1024);
        assert_eq!(status, "HTTP/1.1 413 Payload Too Large", "attempt {i}: {body}");
        assert!(body.contains("larger than"), "attempt {i}: {body}");
    }
    // Nothing was written, and the server still answers.
    let (st, body) = server.get("/admin/api/quota/users/alice", &admin);
    assert_eq!(st, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        (
            v["balance"].as_i64(),
            v["recent_transactions"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );
    server.stop();
}
