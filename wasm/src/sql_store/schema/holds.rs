//! Schema 11 in both dialects (issue 51): what the billable running sessions charging each budget
//! hold, kept as running totals (`budget_holds`) by triggers on `sessions`, so a start charging a
//! budget reads one row instead of summing every session running on it.
//!
//! One row per budget that ever had a session holding credit: the budget's reservations (check 3
//! of the gate). A member's own share needs no total: the gate has the member's running sessions
//! already (its one read of the user). Triggers, not the engine, keep the rows: an engine of the previous schema (the floor stays 9) writes sessions during
//! a rolling upgrade or after a rollback, and the totals follow its writes as well as ours. A
//! session holds its estimated cost while it is active, billable and charges a budget; any write
//! that changes one of those (a start, an extension, an end, a delete) moves the totals by the
//! difference, in the statement's own transaction. The migration creates the triggers first, then
//! fills the table from the sessions running (PostgreSQL: `CREATE TRIGGER` holds writers to
//! `sessions` off until the migration commits, so no start falls between the two).

/// A session row `$r` (`NEW` or `OLD`) holds credit on a budget.
macro_rules! holds {
    ($r:literal) => {
        concat!(
            $r,
            ".budget IS NOT NULL AND ",
            $r,
            ".status = 'active' AND ",
            $r,
            ".billable = 1"
        )
    };
}

/// An update changed what decides a session's hold (SQLite: `IS`, null-safe equality).
macro_rules! sqlite_hold_changed {
    () => {
        "NOT (NEW.budget IS OLD.budget AND NEW.status IS OLD.status AND NEW.billable IS OLD.billable
         AND NEW.estimated_cost_milli IS OLD.estimated_cost_milli)"
    };
}

/// Adds `$r`'s estimated cost to its budget's total; `$held` is how the
/// dialect names the row's total in the update (SQLite's triggers take no alias: a table renamed
/// later checks them again and would refuse one).
macro_rules! add_hold {
    ($r:literal, $held:literal) => {
        concat!(
            "INSERT INTO budget_holds (budget, held) VALUES (",
            $r,
            ".budget, ",
            $r,
            ".estimated_cost_milli) ON CONFLICT (budget) DO UPDATE SET held = ",
            $held,
            " + excluded.held;"
        )
    };
}

/// Takes `$r`'s estimated cost off its budget's total.
macro_rules! release_hold {
    ($r:literal) => {
        concat!(
            "UPDATE budget_holds SET held = held - ",
            $r,
            ".estimated_cost_milli WHERE budget = ",
            $r,
            ".budget;"
        )
    };
}

/// The totals from the sessions running now (also for a file whose version was set back by hand,
/// whose triggers may have run meanwhile).
const BACKFILL: [&str; 2] = [
    "DELETE FROM budget_holds",
    concat!(
        "INSERT INTO budget_holds (budget, held) SELECT budget, SUM(estimated_cost_milli) FROM sessions WHERE ",
        holds!("sessions"),
        " GROUP BY budget"
    ),
];

/// SQLite: schema 10 to 11.
pub const SQLITE_FROM_10: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS budget_holds (
        budget TEXT PRIMARY KEY,
        held INTEGER NOT NULL
     ) WITHOUT ROWID",
    concat!(
        "CREATE TRIGGER IF NOT EXISTS budget_holds_started AFTER INSERT ON sessions WHEN ",
        holds!("NEW"),
        " BEGIN ",
        add_hold!("NEW", "held"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS budget_holds_released AFTER UPDATE ON sessions WHEN ",
        holds!("OLD"),
        " AND ",
        sqlite_hold_changed!(),
        " BEGIN ",
        release_hold!("OLD"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS budget_holds_taken AFTER UPDATE ON sessions WHEN ",
        holds!("NEW"),
        " AND ",
        sqlite_hold_changed!(),
        " BEGIN ",
        add_hold!("NEW", "held"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS budget_holds_deleted AFTER DELETE ON sessions WHEN ",
        holds!("OLD"),
        " BEGIN ",
        release_hold!("OLD"),
        " END"
    ),
    BACKFILL[0],
    BACKFILL[1],
    "INSERT INTO quota_schema (version, floor) VALUES (11, 9) ON CONFLICT (version) DO NOTHING",
];

/// PostgreSQL: schema 10 to 11. One function, a trigger per kind of write; the update's fires only
/// when a column deciding the hold changed (a warning's marks do not move the totals). `OLD` is
/// null for an insert and `NEW` for a delete (PostgreSQL 11 and later).
pub const POSTGRES_FROM_10: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS budget_holds (
        budget TEXT COLLATE \"C\" PRIMARY KEY,
        held BIGINT NOT NULL
     )",
    concat!(
        "CREATE OR REPLACE FUNCTION quota_budget_holds() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
         IF TG_OP <> 'INSERT' THEN
             IF ",
        holds!("OLD"),
        " THEN ",
        release_hold!("OLD"),
        " END IF;
         END IF;
         IF TG_OP <> 'DELETE' THEN
             IF ",
        holds!("NEW"),
        " THEN ",
        add_hold!("NEW", "budget_holds.held"),
        " END IF;
         END IF;
         RETURN NULL;
     END
     $$"
    ),
    "DROP TRIGGER IF EXISTS budget_holds_started ON sessions",
    "DROP TRIGGER IF EXISTS budget_holds_changed ON sessions",
    "DROP TRIGGER IF EXISTS budget_holds_deleted ON sessions",
    "CREATE TRIGGER budget_holds_started AFTER INSERT ON sessions FOR EACH ROW
     WHEN (NEW.budget IS NOT NULL) EXECUTE FUNCTION quota_budget_holds()",
    "CREATE TRIGGER budget_holds_changed AFTER UPDATE ON sessions FOR EACH ROW
     WHEN ((OLD.budget IS NOT NULL OR NEW.budget IS NOT NULL) AND (OLD.budget, OLD.status,
     OLD.billable, OLD.estimated_cost_milli) IS DISTINCT FROM (NEW.budget, NEW.status, NEW.billable,
     NEW.estimated_cost_milli)) EXECUTE FUNCTION quota_budget_holds()",
    "CREATE TRIGGER budget_holds_deleted AFTER DELETE ON sessions FOR EACH ROW
     WHEN (OLD.budget IS NOT NULL) EXECUTE FUNCTION quota_budget_holds()",
    BACKFILL[0],
    BACKFILL[1],
    "INSERT INTO quota_schema (version, floor) VALUES (11, 9) ON CONFLICT (version) DO NOTHING",
];
