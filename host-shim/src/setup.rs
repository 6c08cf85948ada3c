//! A new connection set up as the hosting contract says: its set-up statements, `{busy_wait_ms}`
//! and `{synchronous}` filled in, each answer checked, a busy one retried within the wait.

use std::time::Duration;

use crate::contract::{Durability, HostingContract};
use crate::sql::{Database, SqlError};

/// Runs the contract's set-up statements on a new connection, `{busy_wait_ms}` and `{synchronous}`
/// filled in; a statement marked `retry_while_busy` runs again until `busy_wait` has passed.
pub fn set_up(
    db: &mut dyn Database,
    contract: &HostingContract,
    busy_wait: Duration,
    durability: Durability,
) -> Result<(), SqlError> {
    let synchronous = match durability {
        Durability::Full => "FULL",
        Durability::Normal => "NORMAL",
    };
    for s in &contract.connection_setup {
        let sql = s
            .sql
            .replace("{busy_wait_ms}", &busy_wait.as_millis().to_string())
            .replace("{synchronous}", synchronous);
        let deadline = std::time::Instant::now() + busy_wait;
        let mut pause = Duration::from_millis(1);
        let rows = loop {
            match db.query(&sql, &[]) {
                Err(SqlError::Busy) if s.retry_while_busy && std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                other => break other?,
            }
        };
        if s.expect.is_empty() {
            continue;
        }
        let got = rows
            .first()
            .and_then(|r| r.first())
            .and_then(|v| v.as_text())
            .unwrap_or_default()
            .to_string();
        if !s.expect.iter().any(|e| e.eq_ignore_ascii_case(&got)) {
            return Err(SqlError::Other(format!(
                "`{sql}` answered {got:?}, expected one of {:?}",
                s.expect
            )));
        }
    }
    Ok(())
}
