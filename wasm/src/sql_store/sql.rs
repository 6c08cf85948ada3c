//! One statement in both dialects (`Sql`), written once where they agree, and the dialect that
//! picks one.
//!
//! A statement both dialects run is written in PostgreSQL's spelling (`$N` parameters, `::type`
//! casts) with [`same!`]; its SQLite spelling (`?N`, the casts dropped) is made at compile time.
//! Where the dialects differ beyond that (a JSON list parameter, a lock, a plan hint), [`each!`]
//! writes both, and the difference is the data.

/// The SQL a database speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// One statement as each dialect runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sql {
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

impl Dialect {
    /// The statement as this dialect runs it.
    pub fn pick(self, s: &Sql) -> &'static str {
        match self {
            Dialect::Sqlite => s.sqlite,
            Dialect::Postgres => s.postgres,
        }
    }
}

const fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Writes PostgreSQL text `pg` as SQLite spells it into `out` (as much as fits) and returns its
/// length: outside quoted strings, `$N` becomes `?N` and a `::type` cast is dropped.
const fn to_sqlite(pg: &str, out: &mut [u8]) -> usize {
    let b = pg.as_bytes();
    let (mut i, mut n, mut quoted) = (0, 0, false);
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            quoted = !quoted;
        }
        if !quoted && c == b':' && i + 1 < b.len() && b[i + 1] == b':' {
            i += 2;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            continue;
        }
        let c = if !quoted && c == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            b'?'
        } else {
            c
        };
        if n < out.len() {
            out[n] = c;
        }
        n += 1;
        i += 1;
    }
    n
}

/// The length of PostgreSQL text `pg` as SQLite spells it.
pub const fn sqlite_len(pg: &str) -> usize {
    to_sqlite(pg, &mut [])
}

/// PostgreSQL text `pg` as SQLite spells it (`N` is [`sqlite_len`]).
pub const fn sqlite_bytes<const N: usize>(pg: &str) -> [u8; N] {
    let mut out = [0u8; N];
    to_sqlite(pg, &mut out);
    out
}

/// The text of bytes made from a `&str` (only ASCII is ever replaced or dropped).
pub const fn text(b: &'static [u8]) -> &'static str {
    match core::str::from_utf8(b) {
        Ok(s) => s,
        Err(_) => panic!("a statement's SQLite spelling is not UTF-8"),
    }
}

/// A statement both dialects run as written: PostgreSQL's spelling, SQLite's made from it.
macro_rules! same {
    ($pg:expr) => {{
        const PG: &str = $pg;
        const LEN: usize = $crate::sql_store::sql::sqlite_len(PG);
        const BYTES: [u8; LEN] = $crate::sql_store::sql::sqlite_bytes::<LEN>(PG);
        $crate::sql_store::sql::Sql {
            sqlite: $crate::sql_store::sql::text(&BYTES),
            postgres: PG,
        }
    }};
}

/// A statement the dialects write differently: each its own.
macro_rules! each {
    (sqlite: $sqlite:expr, postgres: $pg:expr $(,)?) => {
        $crate::sql_store::sql::Sql {
            sqlite: $sqlite,
            postgres: $pg,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_spelling_replaces_parameters_and_drops_casts_outside_strings() {
        const S: Sql = same!(
            "SELECT a FROM t WHERE ($2::text IS NULL OR x = $2) AND y = '$1::x'
            AND z = (-SUM(amount))::bigint AND w = $1::text::jsonb LIMIT $10"
        );
        assert_eq!(
            S.sqlite,
            "SELECT a FROM t WHERE (?2 IS NULL OR x = ?2) AND y = '$1::x'
            AND z = (-SUM(amount)) AND w = ?1 LIMIT ?10"
        );
        assert_eq!(Dialect::Postgres.pick(&S), S.postgres);
        assert_eq!(Dialect::Sqlite.pick(&S), S.sqlite);
    }
}
