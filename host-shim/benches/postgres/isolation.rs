//! Section 3: SERIALIZABLE against READ COMMITTED with `FOR UPDATE` row locks, on the session
//! end's statements in raw SQL.

use super::*;

/// The session end's statements in raw SQL (read the session and the user, write the user, the
/// ledger row and the session), by `WRITERS` connections over `users` users, under SERIALIZABLE
/// (retried on serialization failures, as the hosts do) or READ COMMITTED with `FOR UPDATE` row
/// locks (which cannot fail that way). Returns (ends per second, retries).
pub(super) fn isolation(url: &str, users: i64, serializable: bool) -> (f64, u64) {
    let per_writer: i64 = 1_000;
    let mut db = PgDb::connect(&runtime(), url).expect("connect");
    let sessions = per_writer * WRITERS as i64;
    for sql in [
        "DROP TABLE IF EXISTS iso_users, iso_sessions, iso_ledger".to_string(),
        "CREATE TABLE iso_users (username text PRIMARY KEY, balance bigint NOT NULL)".to_string(),
        "CREATE TABLE iso_sessions (id bigint PRIMARY KEY, username text NOT NULL, status text NOT NULL)".to_string(),
        "CREATE TABLE iso_ledger (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, username text, amount bigint)"
            .to_string(),
        format!("INSERT INTO iso_users SELECT 'u' || i, 1000000 FROM generate_series(0, {users} - 1) AS i"),
        format!(
            "INSERT INTO iso_sessions SELECT i, 'u' || (i % {users}), 'active' FROM generate_series(0, {sessions} - 1) AS i"
        ),
    ] {
        db.query(&sql, &[]).expect("tables");
    }
    let lock = if serializable { "" } else { " FOR UPDATE" };
    let begin = if serializable {
        "BEGIN ISOLATION LEVEL SERIALIZABLE"
    } else {
        "BEGIN ISOLATION LEVEL READ COMMITTED"
    };
    let t = Instant::now();
    let handles: Vec<_> = (0..WRITERS as i64)
        .map(|k| {
            let url = url.to_string();
            std::thread::spawn(move || {
                let mut db = PgDb::connect(&runtime(), &url).expect("connect");
                let mut retries = 0u64;
                for j in 0..per_writer {
                    let id = j * WRITERS as i64 + k;
                    loop {
                        let attempt = (|| -> Result<(), quota_host::SqlError> {
                            db.query(begin, &[])?;
                            let s = db.query(
                                &format!("SELECT username FROM iso_sessions WHERE id = $1{lock}"),
                                &[id.into()],
                            )?;
                            let name = s[0][0].clone();
                            let u = db.query(
                                &format!("SELECT balance FROM iso_users WHERE username = $1{lock}"),
                                std::slice::from_ref(&name),
                            )?;
                            let bal = u[0][0].as_int().unwrap_or(0);
                            db.query(
                                "UPDATE iso_users SET balance = $2 WHERE username = $1",
                                &[name.clone(), (bal - 7).into()],
                            )?;
                            db.query(
                                "INSERT INTO iso_ledger (username, amount) VALUES ($1, $2)",
                                &[name, (-7i64).into()],
                            )?;
                            db.query(
                                "UPDATE iso_sessions SET status = 'completed' WHERE id = $1",
                                &[id.into()],
                            )?;
                            db.commit()
                        })();
                        match attempt {
                            Ok(()) => break,
                            Err(quota_host::SqlError::Conflict(_)) => {
                                let _ = db.rollback();
                                retries += 1;
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                retries
            })
        })
        .collect();
    let retries = handles.into_iter().map(|h| h.join().expect("writer")).sum();
    let secs = t.elapsed().as_secs_f64();
    let rows = db
        .query(
            "SELECT (SELECT COUNT(*) FROM iso_ledger), (SELECT SUM(1000000 - balance)::bigint FROM iso_users)",
            &[],
        )
        .expect("check");
    let n = per_writer * WRITERS as i64;
    assert_eq!(rows[0][0].as_int(), Some(n));
    assert_eq!(rows[0][1].as_int(), Some(7 * n), "the ledger must be exact");
    (n as f64 / secs, retries)
}
