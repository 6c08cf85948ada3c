//! `migrate-db --from sqlite://a.db --to postgres://...`: copies every engine table (users, the
//! whole ledger, sessions, refresh runs) and quota-hub's own (tokens, replays) in one transaction
//! on the target, with their ids, then checks row counts and every balance against its ledger.

use std::time::Instant;

use quota_host::contract::Table;
use quota_host::{Database, SqlCell};

use crate::storage::db::{self, Db};
use crate::storage::host_tables;
use crate::{engine, values};

/// Rows read from the source and written to the target at a time.
const PAGE_ROWS: i64 = 5_000;

/// The engine's tables (as its hosting contract lists them), then quota-hub's own.
fn tables(db: &dyn Database) -> Vec<Table> {
    let mut all = db.contract().tables.clone();
    all.extend(host_tables::tables());
    all
}

fn sql(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn count(db: &mut dyn Database, table: &str) -> Result<i64, String> {
    match db
        .query(&format!("SELECT COUNT(*) FROM {table}"), &[])
        .map_err(sql)?
        .first()
        .and_then(|r| r.first())
    {
        Some(SqlCell::Int(n)) => Ok(*n),
        other => Err(format!("{table}: count: {other:?}")),
    }
}

/// Accounts whose balance differs from the sum of their ledger: users by name, budgets as
/// `budget <name>` (a budget's `usage` rows name the member, and count for the budget).
pub fn ledger_mismatches(db: &mut dyn Database) -> Result<Vec<String>, String> {
    let rows = db
        .query(
            "SELECT u.username FROM users u
             LEFT JOIN transactions t ON t.username = u.username AND t.budget IS NULL
             GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)
             UNION ALL SELECT 'budget ' || b.name FROM budgets b LEFT JOIN transactions t ON t.budget = b.name
             GROUP BY b.name, b.balance HAVING b.balance <> COALESCE(SUM(t.amount), 0) ORDER BY 1",
            &[],
        )
        .map_err(sql)?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.first().and_then(|v| v.as_text().map(str::to_string)))
        .collect())
}

pub fn run(from: &str, to: &str, values_path: &std::path::Path, replace: bool) -> Result<(), String> {
    let started = Instant::now();
    let (Db::Sqlite(_), target) = (db::parse(from)?, db::parse(to)?) else {
        return Err("--from: give the SQLite file to copy (sqlite://FILE)".into());
    };
    let rt = engine::runtime()?;
    let doc = values::read(values_path)?;
    // Both databases at the engine's current schema (the engine's migrate, as at any start).
    let mut source = engine::worker(&rt, &db::parse(from)?, &doc, true, None)?;
    let mut dest = engine::worker(&rt, &target, &doc, true, None)?;
    let src = source.db();
    let dst = dest.db();
    let mut existing = 0;
    for t in tables(dst) {
        existing += count(dst, &t.name)?;
    }
    if existing > 0 && !replace {
        return Err(format!(
            "--to {}: the target already holds {existing} row(s); nothing copied (give --replace to empty it first)",
            db::redact(to)
        ));
    }
    dst.begin().map_err(sql)?;
    let copied = copy_all(src, dst, replace);
    let copied = match copied {
        Ok(c) => {
            dst.commit().map_err(sql)?;
            c
        }
        Err(e) => {
            let _ = dst.rollback();
            return Err(format!("{e}; nothing was written to the target"));
        }
    };
    // Verify what was committed.
    for (table, n) in &copied {
        let there = count(dst, table)?;
        if there != *n {
            return Err(format!(
                "verification: {table} has {there} row(s) in the target, {n} in the source"
            ));
        }
    }
    let wrong = ledger_mismatches(dst)?;
    if !wrong.is_empty() {
        return Err(format!(
            "verification: {} balance(s) differ from their ledger, e.g. {}",
            wrong.len(),
            wrong[0]
        ));
    }
    let src_balances = src
        .query(
            "SELECT username, balance, unlimited FROM users ORDER BY username",
            &[],
        )
        .map_err(sql)?;
    let dst_balances = dst
        .query(
            "SELECT username, balance, unlimited FROM users ORDER BY username",
            &[],
        )
        .map_err(sql)?;
    if src_balances != dst_balances {
        return Err("verification: the balances in the target differ from the source".into());
    }
    let summary: Vec<String> = copied.iter().map(|(t, n)| format!("{t} {n}")).collect();
    println!(
        "copied {} to {} in {:.1} s: {}; every balance equals its ledger",
        from,
        db::redact(to),
        started.elapsed().as_secs_f64(),
        summary.join(", ")
    );
    Ok(())
}

fn copy_all(
    src: &mut dyn Database,
    dst: &mut dyn Database,
    replace: bool,
) -> Result<Vec<(String, i64)>, String> {
    let dialect = dst.dialect();
    let all = tables(dst);
    if replace {
        for t in all.iter().rev() {
            dst.query(&format!("DELETE FROM {}", t.name), &[]).map_err(sql)?;
        }
    }
    let mut copied = Vec::new();
    // The day totals are the target's own trigger's, written as the users' sums are copied: copied
    // too, they counted twice (the budgets' holds, kept from the sessions, are not in the list).
    for t in all.iter().filter(|t| t.name != "usage_days") {
        let (table, cols, order) = (&t.name, t.columns.join(", "), t.key.join(", "));
        let n_cols = t.columns.len();
        let total = count(src, table)?;
        let numbered: Vec<String> = (1..=n_cols).map(|i| format!("?{i}")).collect();
        let insert = format!("INSERT INTO {table} ({cols}) VALUES ({})", numbered.join(", "));
        let insert = host_tables::in_dialect(&insert, dialect);
        let mut offset = 0;
        while offset < total {
            let rows = src
                .query(
                    &format!("SELECT {cols} FROM {table} ORDER BY {order} LIMIT {PAGE_ROWS} OFFSET {offset}"),
                    &[],
                )
                .map_err(|e| format!("reading {table}: {e}"))?;
            if rows.is_empty() {
                break;
            }
            dst.execute_many(&insert, &rows)
                .map_err(|e| format!("writing {table}: {e}"))?;
            offset += rows.len() as i64;
            eprintln!("{table}: {offset} / {total}");
        }
        if let (quota_host::Dialect::Postgres, Some(id)) = (dialect, &t.identity) {
            // Ids continue after the largest one copied (never reused).
            dst.query(
                &format!(
                    "SELECT setval(pg_get_serial_sequence('{table}', '{id}'), COALESCE((SELECT MAX({id}) FROM {table}), 0) + 1, false)"
                ),
                &[],
            )
            .map_err(sql)?;
        }
        copied.push((table.clone(), offset));
    }
    Ok(copied)
}
