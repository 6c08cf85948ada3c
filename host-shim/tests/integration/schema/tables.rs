//! What the schema tests read a database with: a worker over a file, rows, the schema version, and
//! every table's rows whatever its schema (to compare before and after a migration).

use std::collections::BTreeMap;

use quota_host::{Database, SqlCell, SqliteDb, SqliteOptions, Worker};

use crate::common;

pub fn worker(path: &std::path::Path) -> Worker {
    let db = SqliteDb::open(&common::runtime(), path, SqliteOptions::default()).expect("open");
    Worker::new(common::runtime(), Box::new(db), &common::fixture_json()).expect("worker")
}

/// The schema version of the file at `path`, read on a connection of its own.
pub fn version_of(path: &std::path::Path) -> i64 {
    SqliteDb::open(&common::runtime(), path, SqliteOptions::default())
        .expect("open")
        .schema_version()
        .expect("schema version")
}

pub fn rows(db: &mut dyn Database, sql: &str) -> Vec<Vec<SqlCell>> {
    db.query(sql, &[]).expect(sql)
}

pub fn int(v: &SqlCell) -> i64 {
    v.as_int().expect("integer")
}

/// The schema version as the engine reads it: the newest row of `quota_schema` (schema 10 on),
/// else `PRAGMA user_version` (which holds the floor from schema 10 on).
pub trait SchemaVersion {
    fn schema_version(&mut self) -> Result<i64, quota_host::SqlError>;
}

impl<D: Database> SchemaVersion for D {
    fn schema_version(&mut self) -> Result<i64, quota_host::SqlError> {
        let floor = int(&self.query("PRAGMA user_version", &[])?[0][0]);
        let recorded = self.query(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'quota_schema'",
            &[],
        )?;
        if int(&recorded[0][0]) == 0 {
            return Ok(floor);
        }
        let newest = int(&self.query("SELECT COALESCE(MAX(version), 0) FROM quota_schema", &[])?[0][0]);
        Ok(newest.max(floor))
    }
}

/// Every table's rows (whatever their schema: before a migration too) keyed by table, each in
/// the order of all its columns, for comparing before and after a migration.
pub fn tables(db: &mut dyn Database) -> BTreeMap<String, Vec<String>> {
    let names = rows(
        db,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    );
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in names.iter().filter_map(|r| r[0].as_text()) {
        let n = rows(db, &format!("SELECT COUNT(*) FROM pragma_table_info('{name}')"))[0][0]
            .as_int()
            .expect("columns");
        let order: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        let sql = format!("SELECT * FROM \"{name}\" ORDER BY {}", order.join(", "));
        let rows = rows(db, &sql).into_iter().map(|r| format!("{r:?}")).collect();
        out.insert(name.to_string(), rows);
    }
    out
}

/// The ledger's index of a member's rows on a budget, as schemas 6 to 11 had it.
pub const MEMBER_INDEX: &str = "CREATE INDEX transactions_by_budget_member ON transactions \
     (budget, username, created_at) WHERE budget IS NOT NULL";

/// Schema 11 as the previous release wrote it: the member index of the ledger still there.
pub fn back_to_schema_11(db: &mut dyn Database) {
    for sql in [MEMBER_INDEX, "DELETE FROM quota_schema WHERE version = 12"] {
        db.query(sql, &[]).expect(sql);
    }
}

/// The indexes of the file's tables, by name.
pub fn indexes(db: &mut dyn Database) -> Vec<String> {
    rows(
        db,
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .iter()
    .filter_map(|r| r[0].as_text().map(str::to_string))
    .collect()
}

/// Schema 10 as the release before it wrote it: no running holds of the budgets, nor their triggers.
pub fn back_to_schema_10(db: &mut dyn Database) {
    back_to_schema_11(db);
    for sql in [
        "DROP TRIGGER budget_holds_started",
        "DROP TRIGGER budget_holds_released",
        "DROP TRIGGER budget_holds_taken",
        "DROP TRIGGER budget_holds_deleted",
        "DROP TABLE budget_holds",
        "DELETE FROM quota_schema WHERE version = 11",
    ] {
        db.query(sql, &[]).expect(sql);
    }
}

/// The record a migration to schema 12 adds (it adds no rows), left out.
pub fn without_schema_12(mut t: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    let versions = t.get_mut("quota_schema").expect("quota_schema");
    assert_eq!(
        versions.pop().as_deref(),
        Some("[Int(12), Int(9)]"),
        "schema 12 records itself: version 12, floor 9"
    );
    t
}

/// The rows a migration to schema 11 adds: the holds of the sessions running on budgets (`held`:
/// what the test expects of them) and its record of the version, left out (with schema 12's).
pub fn without_schema_11(t: BTreeMap<String, Vec<String>>, held: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut t = without_schema_12(t);
    assert_eq!(
        t.remove("budget_holds").as_deref(),
        Some(held),
        "schema 11 holds what runs on budgets"
    );
    let versions = t.get_mut("quota_schema").expect("quota_schema");
    assert_eq!(
        versions.pop().as_deref(),
        Some("[Int(11), Int(9)]"),
        "schema 11 records itself: version 11, floor 9"
    );
    t
}

/// Schema 9 as the engines before schema 10 wrote it: no record of the schema's versions.
pub fn back_to_schema_9(db: &mut dyn Database) {
    back_to_schema_10(db);
    for sql in ["DROP TABLE quota_schema", "PRAGMA user_version = 9"] {
        db.query(sql, &[]).expect(sql);
    }
}

/// The rows a migration to schema 10 adds: its record of the version and the floor, left out.
pub fn without_schema_10(t: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    let mut t = without_schema_11(t, &[]);
    assert_eq!(
        t.remove("quota_schema"),
        Some(vec!["[Int(10), Int(9)]".to_string()]),
        "schema 10 records itself: version 10, floor 9"
    );
    t
}

/// Schema 8 as the previous release wrote it: no credit requests.
pub fn back_to_schema_8(db: &mut dyn Database) {
    back_to_schema_9(db);
    for sql in ["DROP TABLE credit_requests", "PRAGMA user_version = 8"] {
        db.query(sql, &[]).expect(sql);
    }
}

/// The rows a migration to schema 9 adds nothing to: its table (empty) left out.
pub fn without_schema_9(t: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    let mut t = without_schema_10(t);
    assert_eq!(
        t.remove("credit_requests"),
        Some(Vec::new()),
        "schema 9 adds credit_requests, empty"
    );
    t
}

/// Schema 7 as the previous release wrote it: no triggers keeping the day totals.
pub fn back_to_schema_7(db: &mut dyn Database) {
    back_to_schema_8(db);
    for sql in [
        "DROP TRIGGER usage_days_added",
        "DROP TRIGGER usage_days_changed",
        "PRAGMA user_version = 7",
    ] {
        db.query(sql, &[]).expect(sql);
    }
}

/// Schema 6 as the previous release wrote it: no events, warnings or webhooks.
pub fn back_to_schema_6(db: &mut dyn Database) {
    back_to_schema_7(db);
    for sql in [
        "DROP INDEX sessions_warn",
        "DROP INDEX grants_warn",
        "ALTER TABLE sessions DROP COLUMN warn_at",
        "ALTER TABLE sessions DROP COLUMN warned_mark",
        "ALTER TABLE grants DROP COLUMN warn_at",
        "ALTER TABLE grants DROP COLUMN warned_mark",
        "DROP TABLE events",
        "DROP TABLE webhooks",
        "DROP TABLE webhook_failures",
        "PRAGMA user_version = 6",
    ] {
        db.query(sql, &[]).expect(sql);
    }
}

/// The rows a migration to schema 7 adds nothing to: its new tables (empty) left out, the new
/// columns of the sessions and grants (null on older rows) cut off.
pub fn as_before_schema_7(t: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    let mut t = without_schema_9(t);
    for new in ["events", "webhooks", "webhook_failures"] {
        assert_eq!(t.remove(new), Some(Vec::new()), "schema 7 adds {new}, empty");
    }
    for table in ["sessions", "grants"] {
        if let Some(rows) = t.get_mut(table) {
            for r in rows.iter_mut() {
                let cut = r.strip_suffix(", Null, Null]").map(|s| format!("{s}]"));
                *r = cut.unwrap_or_else(|| panic!("{table}: {r} has values in schema 7's columns"));
            }
        }
    }
    t
}

/// Every table as schema 6 had it, whatever schema 7's parts hold: for comparing databases taken
/// back to an older schema and migrated again.
pub fn without_schema_7(mut t: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    for new in ["events", "webhooks", "webhook_failures", "credit_requests"] {
        t.remove(new);
    }
    for table in ["sessions", "grants"] {
        if let Some(rows) = t.get_mut(table) {
            for r in rows.iter_mut() {
                // The last two columns: `, <warn_at>, <warned_mark>]`.
                let mut cut = r.as_str();
                for _ in 0..2 {
                    cut = &cut[..cut.rfind(", ").expect("a column")];
                }
                *r = format!("{cut}]");
            }
        }
    }
    t
}

/// Takes a schema 6 file back to what schema 5 had (the tests that migrate an older file make it
/// from a current one): the budgets' tables, indexes and columns and the grants go.
pub fn back_to_schema_5(db: &mut dyn Database) {
    back_to_schema_6(db);
    for sql in [
        "DROP INDEX transactions_by_budget",
        "DROP INDEX sessions_active_by_budget",
        "DROP INDEX transactions_by_budget_member",
        "ALTER TABLE transactions DROP COLUMN budget",
        "ALTER TABLE transactions DROP COLUMN expires_at",
        "ALTER TABLE sessions DROP COLUMN budget",
        "DROP TABLE budgets",
        "DROP TABLE budget_usage_days",
        "DROP TABLE grants",
    ] {
        db.query(sql, &[]).expect(sql);
    }
}

/// The rows a migration to schema 6 adds nothing to: its new tables (which must be empty) left
/// out, and the new columns of the ledger and the sessions (null on older rows) cut off.
pub fn as_before_schema_6(t: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> {
    let mut t = as_before_schema_7(t);
    for new in ["budgets", "budget_usage_days", "grants"] {
        assert_eq!(t.remove(new), Some(Vec::new()), "schema 6 adds {new}, empty");
    }
    for (table, nulls) in [("transactions", ", Null, Null]"), ("sessions", ", Null]")] {
        if let Some(rows) = t.get_mut(table) {
            for r in rows.iter_mut() {
                let cut = r.strip_suffix(nulls).map(|s| format!("{s}]"));
                *r = cut.unwrap_or_else(|| panic!("{table}: {r} has values in schema 6's columns"));
            }
        }
    }
    t
}
