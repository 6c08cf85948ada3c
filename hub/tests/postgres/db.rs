//! The throwaway server's databases, and what the tests read of them.

use quota_host::pg::PgDb;
use quota_host::{Database, SqlCell};

use super::common;

pub fn server_url() -> String {
    std::env::var("QUOTA_TEST_PG_URL").unwrap_or_else(|_| {
        panic!("QUOTA_TEST_PG_URL is not set: run this test through scripts/with-postgres.sh")
    })
}

pub fn fresh_database(name: &str) -> String {
    let url = server_url();
    let mut admin = PgDb::connect(&common::runtime(), &url).expect("connect");
    admin
        .query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), &[])
        .expect("drop");
    admin
        .query(&format!("CREATE DATABASE {name}"), &[])
        .expect("create");
    format!("{}/{name}", url.rsplit_once('/').expect("database in url").0)
}

pub fn values(dir: &std::path::Path) -> std::path::PathBuf {
    common::write_values(
        dir,
        "values.yaml",
        &serde_json::json!({"custom": {"authMode": "github", "quota": {"cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0}}}),
    )
}

pub fn scalar(db: &mut PgDb, sql: &str) -> i64 {
    match db.query(sql, &[]).expect(sql).first().and_then(|r| r.first()) {
        Some(SqlCell::Int(i)) => *i,
        other => panic!("{sql}: {other:?}"),
    }
}

/// Every balance equals the sum of its ledger; returns the users whose do not.
pub fn ledger_mismatches(db: &mut PgDb) -> Vec<Vec<SqlCell>> {
    db.query(
        "SELECT u.username, u.balance, COALESCE(SUM(t.amount), 0) FROM users u
         LEFT JOIN transactions t ON t.username = u.username AND t.budget IS NULL
         GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)",
        &[],
    )
    .expect("ledger check")
}
