//! Whether the ledger would survive losing its volume (issue 59), read at scrape time: what the
//! scheduled backups of `--backup-dir` last did (`storage::backup_state`), and, with Litestream
//! beside the server (`--litestream-socket`), how far its replica is behind (`schedule::replica`).
//! Series only for what is set up: a server without backups exports no backup series.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::log::info;
use crate::schedule::replica::ReplicaProbe;
use crate::storage::backup_state;

/// What the durability series read.
#[derive(Clone, Default)]
pub struct Sources {
    /// The folder the scheduled backups go to (its `backup-state.json`).
    pub backup_dir: Option<PathBuf>,
    /// Litestream's replica, as the probe last found it.
    pub replica: Option<Arc<ReplicaProbe>>,
}

pub struct Durability {
    sources: Sources,
    last_success: Gauge,
    failures: Counter,
    bytes: Gauge,
    lag: Gauge<f64, AtomicU64>,
}

impl Durability {
    pub fn new(r: &mut Registry, sources: Sources) -> Durability {
        let d = Durability {
            sources,
            last_success: Gauge::default(),
            failures: Counter::default(),
            bytes: Gauge::default(),
            lag: Gauge::default(),
        };
        if d.sources.backup_dir.is_some() {
            r.register(
                "quota_backup_last_success_timestamp_seconds",
                "When the newest scheduled backup was written whole and checked (Unix seconds; 0: none yet)",
                d.last_success.clone(),
            );
            r.register(
                "quota_backup_failures",
                "Scheduled backups that failed (read from the backup folder's backup-state.json)",
                d.failures.clone(),
            );
            r.register(
                "quota_backup_bytes",
                "The size of the newest scheduled backup",
                d.bytes.clone(),
            );
        }
        if d.sources.replica.is_some() {
            r.register(
                "quota_replication_lag_seconds",
                "How long ago Litestream's replica last held every committed change (a change older than this is off the volume)",
                d.lag.clone(),
            );
        }
        d
    }

    /// The replica's probe, if Litestream replicates the database (its task runs while serving).
    pub fn replica(&self) -> Option<Arc<ReplicaProbe>> {
        self.sources.replica.clone()
    }

    /// Reads the sources (at scrape time).
    pub fn refresh(&self, now: i64) {
        if let Some(dir) = &self.sources.backup_dir {
            match backup_state::read(dir) {
                Ok(Some(s)) => {
                    self.last_success.set(s.last_success.unwrap_or(0));
                    self.bytes.set(i64::try_from(s.last_bytes).unwrap_or(i64::MAX));
                    // A counter only rises: the file's count, which only rises too.
                    let seen = self.failures.get();
                    if s.failures > seen {
                        self.failures.inc_by(s.failures - seen);
                    }
                }
                Ok(None) => {}
                Err(e) => info!("metrics: reading the backups' state failed: {e}"),
            }
        }
        if let Some(p) = &self.sources.replica {
            self.lag.set(p.lag_seconds(now));
        }
    }
}
