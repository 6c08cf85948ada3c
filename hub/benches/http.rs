//! Requests per second and latency of the real server, with concurrent keep-alive clients on the
//! same machine: `cargo bench -p quota-hub --bench http` (after `bash scripts/build-wasm.sh`).
//! Prints figures; asserts nothing about time. Env: BENCH_CLIENTS (default 4), BENCH_READS
//! (default 40000), BENCH_PAIRS (default 2000). Also: `/api/quota/me` with the access log and
//! metrics on and off, the admin list of 50,000 users, and durable session start + end pairs from
//! BENCH_SHARED_CLIENTS (default 16) clients with shared commit off and on (BENCH_SHARED_PAIRS pairs,
//! default 4000), beside the disk's bare commit rate measured in the same run; then the same on a
//! slow disk (`benches/slow_fsync.c` through `LD_PRELOAD`: every fsync first sleeps
//! BENCH_SLOW_FSYNC_US, default 3000, as on a network volume; BENCH_SLOW_PAIRS pairs, default 1000).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_quota-hub");

fn env_usize(k: &str, d: usize) -> usize {
    std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d)
}

fn token(db: &str, user: &str, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(["token", "issue", "--db", db, "--user", user])
        .args(args)
        .output()
        .expect("token");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn report(what: &str, mut lat: Vec<Duration>, wall: Duration, requests: usize) {
    lat.sort();
    println!(
        "{what}: {requests} requests in {:.2} s = {:.0} req/s; latency p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        wall.as_secs_f64(),
        requests as f64 / wall.as_secs_f64(),
        percentile(&lat, 0.50),
        percentile(&lat, 0.99),
        percentile(&lat, 1.0)
    );
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// Runs `per_client` calls of `f` on each of `clients` threads; returns every call's latency.
fn load<F>(clients: usize, per_client: usize, f: F) -> (Vec<Duration>, Duration)
where
    F: Fn(&ureq::Agent, usize, usize) -> usize + Send + Sync + Copy + 'static,
{
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            std::thread::spawn(move || {
                let a = agent();
                let mut lat = Vec::with_capacity(per_client * 2);
                for i in 0..per_client {
                    let t = Instant::now();
                    let n = f(&a, c, i);
                    let each = t.elapsed() / n as u32;
                    lat.extend(std::iter::repeat_n(each, n));
                }
                lat
            })
        })
        .collect();
    let lat: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("client"))
        .collect();
    (lat, start.elapsed())
}

/// A `quota-hub serve` on `db` with `env`; its URL.
fn start(db: &str, env: &[(&str, &str)]) -> (std::process::Child, String) {
    let values = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/values.yaml");
    let mut child = Command::new(BIN)
        .args(["serve", "--db", db, "--values", values, "--listen", "127.0.0.1:0"])
        .envs(env.iter().copied())
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

fn stop(mut child: std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// `GET /api/quota/me` from `clients` keep-alive clients: requests per second.
fn me_rate(url: &str, alice: &str, clients: usize, reads: usize, what: &str) -> f64 {
    let me: &'static str = Box::leak(format!("{url}/api/quota/me").into_boxed_str());
    let auth: &'static str = Box::leak(format!("token {alice}").into_boxed_str());
    let (lat, wall) = load(clients, reads / clients, move |a, _, _| {
        let mut r = a.get(me).header("Authorization", auth).call().expect("me");
        assert_eq!(r.status().as_u16(), 200);
        let _ = r.body_mut().read_to_string();
        1
    });
    let n = reads / clients * clients;
    report(what, lat, wall, n);
    n as f64 / wall.as_secs_f64()
}

/// Session start + end pairs from `clients` keep-alive clients (users `bench0..`, seeded with
/// credits): requests per second.
fn pairs_rate(url: &str, hub: &str, clients: usize, pairs: usize, what: &str) -> f64 {
    let base: &'static str = Box::leak(url.to_string().into_boxed_str());
    let hub_auth: &'static str = Box::leak(format!("token {hub}").into_boxed_str());
    let (lat, wall) = load(clients, pairs / clients, move |a, c, i| {
        let body = format!(r#"{{"username":"bench{c}","runtime_minutes":1,"server_name":"s{i}"}}"#);
        let mut r = a
            .post(&format!("{base}/api/quota/sessions"))
            .header("Authorization", hub_auth)
            .send(&body)
            .expect("start");
        assert_eq!(r.status().as_u16(), 201);
        let v: serde_json::Value =
            serde_json::from_str(&r.body_mut().read_to_string().expect("body")).expect("json");
        let id = v["session_id"].as_i64().expect("id");
        let mut r = a
            .post(&format!("{base}/api/quota/sessions/{id}/end"))
            .header("Authorization", hub_auth)
            .send("{}")
            .expect("end");
        assert_eq!(r.status().as_u16(), 200);
        let _ = r.body_mut().read_to_string();
        2
    });
    let n = pairs / clients * clients * 2;
    report(what, lat, wall, n);
    n as f64 / wall.as_secs_f64()
}

/// Gives users `bench0..bench{n}` plenty of credits.
fn seed(url: &str, admin: &str, n: usize) {
    let a = agent();
    for c in 0..n {
        a.post(&format!("{url}/admin/api/quota/users/bench{c}"))
            .header("Authorization", &format!("token {admin}"))
            .send(r#"{"action":"set","amount":10000000}"#)
            .expect("seed");
    }
}

/// Commits per second of one row update on a SQLite file in `dir` (WAL, `synchronous=FULL`), one
/// transaction each: what the disk allows a writer that commits every request alone.
fn bare_commits_per_second(dir: &std::path::Path, n: usize) -> f64 {
    let c = rusqlite::Connection::open(dir.join("bare.db")).expect("db");
    c.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS counter (n INTEGER); INSERT INTO counter VALUES (0);",
    )
    .expect("bare db");
    let t = Instant::now();
    for _ in 0..n {
        c.execute_batch("BEGIN IMMEDIATE; UPDATE counter SET n = n + 1; COMMIT;")
            .expect("commit");
    }
    n as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    if let Ok(dir) = std::env::var("BENCH_BARE_COMMITS_IN") {
        // The child of `bare_rate`.
        let n = env_usize("BENCH_BARE_COMMITS", 2000);
        println!("{}", bare_commits_per_second(std::path::Path::new(&dir), n));
        return;
    }
    let clients = env_usize("BENCH_CLIENTS", 4);
    let reads = env_usize("BENCH_READS", 40000);
    let pairs = env_usize("BENCH_PAIRS", 2_000);
    let dir = tempfile::tempdir().expect("dir");
    let db = format!("sqlite://{}", dir.path().join("q.db").display());
    let (child, url) = start(&db, &[]);
    let alice = token(&db, "alice", &[]);
    let hub = token(&db, "hub", &["--scope", "quota:sessions"]);
    let admin = token(&db, "root", &["--admin"]);
    let shared_clients = env_usize("BENCH_SHARED_CLIENTS", 16);
    seed(&url, &admin, clients.max(shared_clients));
    println!("quota-hub over SQLite (WAL, synchronous=FULL), {clients} keep-alive clients on this machine");

    let on = me_rate(
        &url,
        &alice,
        clients,
        reads,
        "GET /api/quota/me (access log and metrics on)",
    );
    pairs_rate(
        &url,
        &hub,
        clients,
        pairs,
        "session start + end, shared commit on (default)",
    );
    stop(child);

    // The same reads with the access log (RUST_LOG) and the metrics off, on the same database.
    let (child, url) = start(
        &db,
        &[("RUST_LOG", "info,access=off"), ("QUOTA_HUB_NO_METRICS", "true")],
    );
    let off = me_rate(
        &url,
        &alice,
        clients,
        reads,
        "GET /api/quota/me (access log and metrics off)",
    );
    println!("access log and metrics on / off: {:.2}", on / off);

    // The admin list of 50,000 users, whole.
    let users = 50_000;
    {
        let c = rusqlite::Connection::open(dir.path().join("q.db")).expect("db");
        c.execute_batch(&format!(
            "BEGIN;
             WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {users})
             INSERT INTO users SELECT printf('u%05d', i), i % 100, 0, 1795000000 FROM n;
             COMMIT;"
        ))
        .expect("seed");
    }
    let a = agent();
    let list = format!("{url}/admin/api/quota/");
    let mut lat = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let mut r = a
            .get(&list)
            .header("Authorization", &format!("token {admin}"))
            .call()
            .expect("list");
        let body = r
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .expect("body");
        lat.push(t.elapsed());
        assert!(body.len() > users * 40, "{} bytes", body.len());
    }
    let wall = lat.iter().sum();
    report(
        &format!("GET /admin/api/quota/ with {users} users, whole"),
        lat,
        wall,
        20,
    );
    stop(child);

    // Shared commit: durable start + end pairs from many clients, committed alone (alone)
    // and in groups, beside the disk's bare commit rate measured now: on this machine's disk, and
    // on a slow disk (every fsync delayed, as on a network volume).
    let shared_pairs = env_usize("BENCH_SHARED_PAIRS", 4_000);
    shared_commit(&db, dir.path(), &hub, shared_clients, shared_pairs, None);
    let slow_us = env_usize("BENCH_SLOW_FSYNC_US", 3_000);
    match slow_disk_shim(dir.path()) {
        Some(shim) => {
            let slow_pairs = env_usize("BENCH_SLOW_PAIRS", 1_000);
            shared_commit(
                &db,
                dir.path(),
                &hub,
                shared_clients,
                slow_pairs,
                Some((&shim, slow_us)),
            );
        }
        None => println!("\n(no C compiler: the slow-disk run is skipped)"),
    }
}

/// Builds `benches/slow_fsync.c` (every fsync first sleeps `SLOW_FSYNC_US`) for `LD_PRELOAD`.
fn slow_disk_shim(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/slow_fsync.c");
    let out = dir.join("slow_fsync.so");
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(src)
        .arg("-ldl")
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(out)
}

/// The bare commit rate in a child process (this bench binary again), so that a slow disk's
/// `LD_PRELOAD` applies to it as it does to the server.
fn bare_rate(dir: &std::path::Path, env: &[(&str, String)], commits: usize) -> f64 {
    let out = Command::new(std::env::current_exe().expect("exe"))
        .env("BENCH_BARE_COMMITS_IN", dir)
        .env("BENCH_BARE_COMMITS", commits.to_string())
        .envs(env.iter().map(|(k, v)| (k, v.as_str())))
        .output()
        .expect("bare commits");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("bare commit rate: {text:?}"))
}

/// Start + end pairs with shared commit off and on, beside the bare commit rate; `slow` is a
/// slow-disk shim and its delay per fsync.
fn shared_commit(
    db: &str,
    dir: &std::path::Path,
    hub: &str,
    clients: usize,
    pairs: usize,
    slow: Option<(&std::path::Path, usize)>,
) {
    let mut env: Vec<(&str, String)> = vec![("RUST_LOG", "info,access=off".into())];
    let disk = match slow {
        Some((shim, us)) => {
            env.push(("LD_PRELOAD", shim.display().to_string()));
            env.push(("SLOW_FSYNC_US", us.to_string()));
            format!("a slow disk (every fsync delayed {us} us)")
        }
        None => "this machine's disk".to_string(),
    };
    let bare = bare_rate(dir, &env, if slow.is_some() { 300 } else { 2000 });
    println!("\nbare commit rate of {disk} (SQLite, WAL, synchronous=FULL): {bare:.0} commits/s");
    let mut rates = Vec::new();
    for (what, max) in [
        ("off (--shared-commit-max 1)", "1"),
        ("on (--shared-commit-max 64)", "64"),
    ] {
        let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        env.push(("QUOTA_HUB_SHARED_COMMIT_MAX", max));
        let (child, url) = start(db, &env);
        let rate = pairs_rate(
            &url,
            hub,
            clients,
            pairs,
            &format!("session start + end, {clients} clients, shared commit {what}"),
        );
        println!("  = {:.2}x the bare commit rate", rate / bare);
        rates.push(rate);
        stop(child);
    }
    println!("shared commit on / off: {:.2}x", rates[1] / rates[0]);
}
