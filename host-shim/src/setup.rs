//! A new connection set up as the hosting contract says: the component's set-up statements (the
//! host's busy wait and durability in them), each answer checked, a busy one retried within the wait.

use std::time::{Duration, Instant};

use crate::contract::{HostingContract, SetupStatement};
use crate::sql::{Database, SqlError};

/// Runs `statements` (from [`crate::Runtime::connection_setup`]) in order; one marked
/// `retry_while_busy` runs again, after the contract's set-up pause, until `busy_wait` has passed.
pub fn set_up(
    db: &mut dyn Database,
    statements: &[SetupStatement],
    contract: &HostingContract,
    busy_wait: Duration,
) -> Result<(), SqlError> {
    for s in statements {
        let deadline = Instant::now() + busy_wait;
        let mut pause = contract.setup_pause_first;
        let rows = loop {
            match db.query(&s.sql, &[]) {
                Err(SqlError::Busy) if s.retry_while_busy && Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(contract.setup_pause_max);
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
                "`{}` answered {got:?}, expected one of {:?}",
                s.sql, s.expect
            )));
        }
    }
    Ok(())
}
