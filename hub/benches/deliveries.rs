//! Webhook delivery from one real `quota-hub serve` to a local receiver:
//! `cargo bench -p quota-hub --bench deliveries` (after `bash scripts/build-wasm.sh`). A backlog of
//! BENCH_EVENTS (default 100,000) pending events, as after an outage (written into the database
//! while the server was down), drains to a receiver that answers 200 at once; meanwhile one
//! client reads `GET /api/quota/me` in a loop. Prints the delivery rate and the reads' latency
//! while it drains (p50, p99, max); asserts nothing about time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_quota-hub");

/// A receiver answering 200 to every POST (keep-alive), counting them.
fn receiver(count: Arc<AtomicUsize>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let count = count.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().expect("clone"));
                let mut w = conn;
                loop {
                    let mut len = 0usize;
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    count.fetch_add(1, Ordering::SeqCst);
                    if w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    port
}

fn serve(db: &str, values: &std::path::Path) -> (std::process::Child, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--db", db, "--values"])
        .arg(values)
        .args(["--listen", "127.0.0.1:0"])
        .env("WH_SECRET", "bench")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("url");
    let url = line
        .split_whitespace()
        .last()
        .expect("url")
        .trim_end_matches('/')
        .to_string();
    (child, url)
}

fn main() {
    let n: usize = std::env::var("BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("dir");
    let count = Arc::new(AtomicUsize::new(0));
    let port = receiver(count.clone());
    let values = dir.path().join("values.json");
    std::fs::write(
        &values,
        serde_json::json!({"custom": {"authMode": "github", "quota": {"webhooks": [{"name": "ops",
            "url": format!("http://127.0.0.1:{port}/hook"), "secretEnv": "WH_SECRET", "events": ["start.refused"]}]}}})
        .to_string(),
    )
    .expect("values");
    let path = dir.path().join("q.db");
    let db = format!("sqlite://{}", path.display());
    // The webhook registered (it starts after the newest event), then the server down.
    let (child, _) = serve(&db, &values);
    let mut child = child;
    let _ = child.kill();
    let _ = child.wait();
    let out = Command::new(BIN)
        .args(["token", "issue", "--db", &db, "--user", "alice"])
        .output()
        .expect("token");
    let alice = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // The outage's backlog: `n` refused starts, as the engine writes them.
    {
        let mut c = rusqlite::Connection::open(&path).expect("open");
        let tx = c.transaction().expect("tx");
        {
            let mut st = tx
                .prepare("INSERT INTO events (kind, at, username, budget, data) VALUES ('start.refused', ?1, ?2, NULL, ?3)")
                .expect("prepare");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs() as i64;
            for i in 0..n {
                let data = r#"{"status":403,"message":"Cannot start container: Insufficient quota. Current balance: 0, estimated cost: 5 (1 quota/min x 5 min). Please contact administrator to add quota.","server_name":"","resource_type":"cpu"}"#;
                st.execute(rusqlite::params![now, format!("user{}", i % 1000), data])
                    .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    println!("{n} events pending; starting the server");
    let t0 = Instant::now();
    let (mut child, url) = serve(&db, &values);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut lat = Vec::new();
    let me = format!("{url}/api/quota/me");
    let auth = format!("token {alice}");
    while count.load(Ordering::SeqCst) < n {
        let t = Instant::now();
        let mut r = agent.get(&me).header("Authorization", &auth).call().expect("me");
        let _ = r.body_mut().read_to_string();
        lat.push(t.elapsed());
        assert!(
            t0.elapsed() < Duration::from_secs(1800),
            "the backlog did not drain"
        );
    }
    let wall = t0.elapsed().as_secs_f64();
    lat.sort();
    let p = |q: f64| lat[((lat.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e3;
    println!(
        "backlog of {n} drained in {wall:.1} s (server start included) = {:.0} events/s; \
         GET /api/quota/me meanwhile ({} reads): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        n as f64 / wall,
        lat.len(),
        p(0.5),
        p(0.99),
        p(1.0)
    );
    let _ = child.kill();
    let _ = child.wait();
}
