//! What the scheduled backups of a folder did, kept beside them in `backup-state.json` so that
//! whoever exports metrics (the server, which never takes the backups itself) reads it at scrape
//! time: the last success (its time and the backup's size), and the failures. The JupyterHub
//! package writes the same file (`hub/backups.py`), so one alert reads both.
//!
//! ```json
//! {"last_success": 1796000000, "last_bytes": 81920, "failures": 2,
//!  "last_failure": 1795990000, "last_error": "..."}
//! ```
//!
//! Written whole (a temporary file renamed over it): a reader never sees half of it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in a backup folder.
pub const FILE: &str = "backup-state.json";

/// What the backups into one folder did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupState {
    /// When the newest whole backup was written (Unix seconds).
    pub last_success: Option<i64>,
    /// Its size in bytes.
    pub last_bytes: u64,
    /// Backups that failed, ever (a counter).
    pub failures: u64,
    pub last_failure: Option<i64>,
    /// Why the newest failure failed.
    pub last_error: Option<String>,
}

fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// The folder's state; the default when no backup was tried there yet. A file that does not read
/// is an error (the metrics say so rather than pretend all is well).
pub fn read(dir: &Path) -> Result<Option<BackupState>, String> {
    match std::fs::read_to_string(path(dir)) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path(dir).display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path(dir).display())),
    }
}

/// Records a backup's outcome (`Ok(bytes)` or `Err(why)`) at `now`.
pub fn record(dir: &Path, outcome: Result<u64, &str>, now: i64) -> Result<(), String> {
    let mut s = read(dir).unwrap_or_default().unwrap_or_default();
    match outcome {
        Ok(bytes) => {
            s.last_success = Some(now);
            s.last_bytes = bytes;
        }
        Err(why) => {
            s.failures += 1;
            s.last_failure = Some(now);
            s.last_error = Some(why.chars().take(500).collect());
        }
    }
    let tmp = dir.join(format!(".{FILE}.partial"));
    let text = serde_json::to_string(&s).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, text + "\n").map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path(dir)).map_err(|e| format!("{}: {e}", path(dir).display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successes_and_failures_add_up_and_the_file_reads_back() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(read(dir.path()).unwrap(), None);
        record(dir.path(), Err("disk full"), 100).unwrap();
        record(dir.path(), Ok(4096), 200).unwrap();
        record(dir.path(), Err("busy"), 300).unwrap();
        let s = read(dir.path()).unwrap().unwrap();
        assert_eq!(
            s,
            BackupState {
                last_success: Some(200),
                last_bytes: 4096,
                failures: 2,
                last_failure: Some(300),
                last_error: Some("busy".into()),
            }
        );
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        assert!(read(dir.path()).is_err());
    }
}
