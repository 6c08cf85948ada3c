//! How far Litestream's replica of the SQLite file is behind (`--litestream-socket`): every
//! `PROBE_EVERY` the server asks Litestream, through its control socket, to sync the database to
//! the replica and wait (`POST /sync {"wait": true}`); when Litestream answers that the replica
//! holds the local transaction id, every change committed before the probe began is off the
//! volume. The lag is the time since the start of the last such probe (or since the server
//! started, before the first): `quota_replication_lag_seconds`, which `QuotaReplicationLagging`
//! watches. Litestream keeps syncing on its own (every second); the probe only asks where it is.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::log::info;

/// How often the replica is asked where it is.
pub const PROBE_EVERY: Duration = Duration::from_secs(10);
/// How long one probe may wait for Litestream's sync.
const SYNC_WAIT_S: u64 = 30;

pub struct ReplicaProbe {
    socket: PathBuf,
    db_path: PathBuf,
    /// When the server started (the lag's origin until a probe succeeds).
    started: i64,
    /// When the last successful probe began (0: none yet).
    in_sync_at: AtomicI64,
}

impl ReplicaProbe {
    pub fn new(socket: PathBuf, db_path: PathBuf, now: i64) -> ReplicaProbe {
        ReplicaProbe {
            socket,
            db_path,
            started: now,
            in_sync_at: AtomicI64::new(0),
        }
    }

    /// Seconds since the replica last held every committed change.
    pub fn lag_seconds(&self, now: i64) -> f64 {
        let at = match self.in_sync_at.load(Ordering::Relaxed) {
            0 => self.started,
            t => t,
        };
        (now - at).max(0) as f64
    }

    /// One probe begun at `began`: Litestream syncs and answers whether the replica holds the
    /// local transaction id; remembered when it does.
    pub fn probe(&self, began: i64) -> Result<(), String> {
        let body = serde_json::json!({
            "path": self.db_path.to_string_lossy(),
            "wait": true,
            "timeout": SYNC_WAIT_S,
        })
        .to_string();
        let answer = post(&self.socket, "/sync", &body)?;
        let v: serde_json::Value =
            serde_json::from_str(&answer).map_err(|e| format!("Litestream answered {answer:?}: {e}"))?;
        let (txid, replicated) = (v["txid"].as_u64(), v["replicated_txid"].as_u64());
        match (txid, replicated) {
            (Some(t), Some(r)) if r >= t => {
                self.in_sync_at.fetch_max(began, Ordering::Relaxed);
                Ok(())
            }
            _ => Err(format!("the replica is behind: {answer}")),
        }
    }
}

/// An HTTP/1.1 POST over a Unix socket, `Connection: close`; the body of a 200.
fn post(socket: &std::path::Path, path: &str, body: &str) -> Result<String, String> {
    let mut s = UnixStream::connect(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(SYNC_WAIT_S + 5)))
        .map_err(|e| e.to_string())?;
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: litestream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut out = String::new();
    s.read_to_string(&mut out).map_err(|e| e.to_string())?;
    let (head, rest) = out.split_once("\r\n\r\n").ok_or("no HTTP answer")?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!("Litestream answered {status}: {rest}"));
    }
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return Ok(dechunk(rest));
    }
    Ok(rest.to_string())
}

/// A chunked body's data.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// Probes the replica for as long as the server runs; a failed probe is logged once until the
/// next success.
pub async fn probe_forever(clock: Clock, probe: Arc<ReplicaProbe>) {
    let mut tick = tokio::time::interval(PROBE_EVERY);
    let mut failing = false;
    loop {
        tick.tick().await;
        let began = clock.now().seconds();
        let p = probe.clone();
        let done = tokio::task::spawn_blocking(move || p.probe(began))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
        match done {
            Ok(()) => {
                if failing {
                    info!("Litestream's replica holds every change again");
                }
                failing = false;
            }
            Err(e) if !failing => {
                failing = true;
                info!("asking Litestream where its replica is failed (quota_replication_lag_seconds grows): {e}");
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_answer_reads_whole() {
        assert_eq!(dechunk("5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n"), "{\"a\": 1}");
    }

    #[test]
    fn the_lag_counts_from_the_start_until_a_probe_succeeds() {
        let p = ReplicaProbe::new("/nowhere".into(), "/db".into(), 100);
        assert_eq!(p.lag_seconds(130), 30.0);
        assert!(p.probe(120).is_err(), "no socket");
        p.in_sync_at.store(125, Ordering::Relaxed);
        assert_eq!(p.lag_seconds(130), 5.0);
    }
}
