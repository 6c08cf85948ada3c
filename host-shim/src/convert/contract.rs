//! The component's hosting contract, from its WIT records into the host's own types
//! (`crate::contract`): statements, waits, retries, error kinds and what each means, the tables.

use crate::bindings::{hosting as wit, sql as wsql};
use crate::contract::{ErrorKind, Handling, HostingContract, SetupStatement, Table, TransactionStatements};
use crate::sql::Dialect;
use std::time::Duration;

fn kind(k: wit::StorageErrorKind) -> ErrorKind {
    match k {
        wit::StorageErrorKind::Busy => ErrorKind::Busy,
        wit::StorageErrorKind::Conflict => ErrorKind::Conflict,
        wit::StorageErrorKind::Constraint => ErrorKind::Constraint,
        wit::StorageErrorKind::Other => ErrorKind::Other,
    }
}

impl From<wit::HostingContract> for HostingContract {
    fn from(c: wit::HostingContract) -> HostingContract {
        let t = c.transactions;
        HostingContract {
            dialect: match c.dialect {
                wsql::Dialect::Sqlite => Dialect::Sqlite,
                wsql::Dialect::Postgres => Dialect::Postgres,
            },
            setup_pause_first: Duration::from_millis(c.setup_pause.first_ms.into()),
            setup_pause_max: Duration::from_millis(c.setup_pause.max_ms.into()),
            transactions: TransactionStatements {
                begin_write: t.begin_write,
                begin_read: t.begin_read,
                commit: t.commit,
                rollback: t.rollback,
                savepoint: t.savepoint,
                release_savepoint: t.release_savepoint,
                rollback_to_savepoint: t.rollback_to_savepoint,
                migration_lock: t.migration_lock,
            },
            busy_wait: Duration::from_millis(c.busy_wait_ms.into()),
            retry_attempts: c.retry.attempts,
            backoff_base: Duration::from_micros(c.retry.backoff_base_us.into()),
            backoff_max: Duration::from_micros(c.retry.backoff_max_us.into()),
            jitter_percent: c.retry.jitter_percent.min(100),
            refresh_chunk_users: c.refresh_chunk_users,
            call_deadline: Duration::from_millis(c.call_deadline_ms.into()),
            migration_deadline: Duration::from_millis(c.migration_deadline_ms.into()),
            memory_limit_bytes: c.memory_limit_bytes,
            sweep_interval: Duration::from_millis(u64::from(c.sweep_interval_ms)),
            webhook_timeout: Duration::from_millis(u64::from(c.webhook_timeout_ms)),
            users_page_max: c.users_page_max,
            error_codes: c
                .error_codes
                .into_iter()
                .map(|e| (e.code_prefix, kind(e.kind)))
                .collect(),
            error_handling: c
                .error_handling
                .into_iter()
                .map(|h| Handling {
                    kind: kind(h.kind),
                    retry: h.retry,
                    http_status: h.http_status,
                    transient: h.transient,
                })
                .collect(),
            tables: c
                .tables
                .into_iter()
                .map(|t| Table {
                    name: t.name,
                    columns: t.columns,
                    key: t.key,
                    identity: t.identity,
                })
                .collect(),
        }
    }
}

impl From<wit::SetupStatement> for SetupStatement {
    fn from(s: wit::SetupStatement) -> SetupStatement {
        SetupStatement {
            sql: s.sql,
            expect: s.expect,
            retry_while_busy: s.retry_while_busy,
        }
    }
}
