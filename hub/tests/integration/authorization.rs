//! The authorization matrix on quota-hub (issue 48): every route of `tests/authorization/matrix.json`
//! against every kind of caller quota-hub has (no token, a bad token, a user for self and for
//! another, an admin, course staff of group `g` for a member and for a non-member, each service
//! scope), on a real `quota-hub serve` over a SQLite file. Every cell's status is asserted, and every
//! refusal (a 4xx) leaves the engine's tables byte for byte as they were. The columns only a hub
//! has (an admin's narrowed token, `admin:users`) are JupyterHub's (`test_authorization.py`).
//!
//! `QUOTA_MATRIX_RECORD=1` writes the statuses seen into the file instead (then review them and
//! `python3 scripts/security_table.py --write` prints them in docs/security.md).

use crate::common;

use common::{cli, http, json, Server};
use quota_host::{SqliteDb, SqliteOptions};
use serde_json::{json, Value};

const MATRIX: &str = "tests/authorization/matrix.json";
const HOST: &str = "quota-hub";

/// The engine's tables, in order (quota-hub's own tokens are left out: a request notes its use).
fn engine_tables(db: &std::path::Path) -> String {
    let rt = common::runtime();
    let mut conn = SqliteDb::open(&rt, db, SqliteOptions::default()).expect("open db");
    quota_host::dump(&mut conn, &[]).expect("dump")
}

struct Callers {
    root: String,
    ann: String,
    cat: String,
    tina: String,
    /// Course staff of a group named like a scope, `g\u{a0}quota:admin` (issue 58's finding).
    mona: String,
    /// A token whose stored scope is `quota:manage` with no group (a row written by hand).
    lou: String,
    hub: String,
    cron: String,
    svc: String,
}

/// A column's caller and the user it acts on (`None`: the column is JupyterHub's only).
fn column<'a>(c: &'a Callers, name: &str) -> Option<(Option<&'a str>, &'static str)> {
    const BAD: &str = "qh_0000000000000000000000000000000000000000000000000000000000000000";
    Some(match name {
        "none" => (None, "ann"),
        "bad" => (Some(BAD), "ann"),
        "self" => (Some(&c.ann), "ann"),
        "other" => (Some(&c.ann), "cat"),
        "admin" => (Some(&c.root), "ann"),
        "manager_member" => (Some(&c.tina), "ann"),
        "manager_other" => (Some(&c.tina), "cat"),
        "manager_self" => (Some(&c.tina), "tina"),
        "manager_nbsp" => (Some(&c.mona), "ann"),
        "unfiltered" => (Some(&c.lou), "ann"),
        "sessions" => (Some(&c.hub), "ann"),
        "refresh" => (Some(&c.cron), "ann"),
        "service_admin" => (Some(&c.svc), "ann"),
        "narrowed" | "admin_users" => return None,
        other => panic!("unknown column {other}"),
    })
}

/// Fills a row's placeholders for a cell acting on `who`, making what they name: a new running
/// session (`{sid}`, `{sid_server}`), a pending request (`{rid}`), a shared budget, a server name.
fn fill(server: &Server, c: &Callers, text: &str, who: &str, n: usize) -> String {
    let mut t = text
        .replace("{who}", who)
        .replace("{budget}", if who == "cat" { "bo" } else { "bg" })
        .replace("{server}", &format!("m{n}"));
    if t.contains("{sid}") || t.contains("{sid_server}") {
        let name = format!("fx{n}");
        let body = json!({"username": who, "runtime_minutes": 1, "server_name": name}).to_string();
        let (st, b) = server.post("/api/quota/sessions", &c.hub, &body);
        assert_eq!(st, 201, "a session for {who}: {b}");
        t = t
            .replace("{sid}", &json(&b)["session_id"].to_string())
            .replace("{sid_server}", &name);
    }
    if t.contains("{rid}") {
        let (st, b) = server.get("/admin/api/quota/requests?status=pending", &c.root);
        assert_eq!(st, 200, "{b}");
        let pending = json(&b)["requests"].as_array().and_then(|rs| {
            rs.iter()
                .find(|r| r["username"] == who && r["budget"].is_null())
                .cloned()
        });
        let id = match pending {
            Some(r) => r["id"].to_string(),
            None => {
                let token = match who {
                    "ann" => &c.ann,
                    "tina" => &c.tina,
                    _ => &c.cat,
                };
                let (st, b) = server.post(
                    "/api/quota/me/requests",
                    token,
                    r#"{"amount":1,"reason":"fixture"}"#,
                );
                assert_eq!(st, 201, "a request of {who}: {b}");
                json(&b)["id"].to_string()
            }
        };
        t = t.replace("{rid}", &id);
    }
    t
}

#[test]
fn every_route_against_every_caller_as_the_matrix_says_and_a_refusal_changes_nothing() {
    let setup = common::with_values(json!({"custom": {"authMode": "github", "quota": {
    // No warnings: the sweep must write nothing while the cells compare the database.
    "cpuRate": 1, "minimumToStart": 1, "warnBeforeStopMinutes": [],
    "budgets": {
        "bg": {"description": "g's", "groups": ["g"], "accelerators": ["cpu"]},
        "bo": {"description": "h's", "groups": ["h"], "accelerators": ["cpu"]}
    }}}}));
    let db = setup.db.display().to_string();
    let (code, out, err) = cli(&[
        "token",
        "issue",
        "--db",
        &format!("sqlite://{db}"),
        "--user",
        "tina",
        "--scope",
        "quota:manage",
        "--group",
        "g",
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, mona, err) = cli(&[
        "token",
        "issue",
        "--db",
        &format!("sqlite://{db}"),
        "--user",
        "mona",
        "--scope",
        "quota:manage",
        "--group",
        "g\u{a0}quota:admin",
    ]);
    assert_eq!(code, 0, "{err}");
    // quota-hub issues no unfiltered manage scope: the row an older tool or a hand edit left.
    let lou = setup.token("lou", false, &["quota:manage"]);
    let c = Callers {
        root: setup.token("root", true, &[]),
        ann: setup.token("ann", false, &[]),
        cat: setup.token("cat", false, &[]),
        tina: out.trim().to_string(),
        mona: mona.trim().to_string(),
        lou,
        hub: setup.token("hub", false, &["quota:sessions"]),
        cron: setup.token("cron", false, &["quota:refresh"]),
        svc: setup.token("svc", false, &["quota:admin"]),
    };
    let server = setup.start(&[]);
    // Course staff are often members of the group they manage (tina of g); a group named like a
    // scope has a member of its own (nia), never ann.
    for (group, members) in [
        ("g", &["ann", "tina"][..]),
        ("h", &["cat"][..]),
        ("g%C2%A0quota%3Aadmin", &["nia"][..]),
    ] {
        let (st, b) = server.call(
            "PUT",
            &format!("/admin/api/quota/groups/{group}"),
            Some(&c.root),
            Some(&json!({ "members": members }).to_string()),
        );
        assert_eq!(st, 200, "{b}");
    }
    let (st, b) = server.post(
        "/admin/api/quota/batch",
        &c.root,
        r#"{"users":[{"username":"ann","amount":1000},{"username":"cat","amount":1000},{"username":"tina","amount":1000}]}"#,
    );
    assert_eq!(st, 200, "{b}");

    let path = common::workspace().join(MATRIX);
    let mut matrix: Value = json(&std::fs::read_to_string(&path).expect("matrix"));
    let columns: Vec<String> = matrix["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|v| v.as_str().expect("name").to_string())
        .collect();
    let record = std::env::var("QUOTA_MATRIX_RECORD").is_ok_and(|v| v == "1");
    let agent = common::agent();
    let mut wrong = Vec::new();
    let mut n = 0;
    let rows = matrix["rows"].as_array_mut().expect("rows");
    for row in rows.iter_mut() {
        let ours = row["hosts"]
            .as_array()
            .is_none_or(|h| h.iter().any(|x| x == HOST));
        if !ours {
            continue;
        }
        let method = row["method"].as_str().expect("method").to_string();
        let mut seen = Vec::new();
        for col in &columns {
            let Some((token, who)) = column(&c, col) else {
                seen.push(Value::Null);
                continue;
            };
            n += 1;
            let target = fill(&server, &c, row["path"].as_str().expect("path"), who, n);
            let body = (!row["body"].is_null()).then(|| fill(&server, &c, &row["body"].to_string(), who, n));
            let before = engine_tables(&setup.db);
            let url = format!("{}{target}", server.url);
            let (st, answer) = http(&agent, &method, &url, token, body.as_deref(), &[]);
            if st >= 400 {
                assert_eq!(
                    engine_tables(&setup.db),
                    before,
                    "{method} {target} as {col} was refused ({st} {answer}) but changed the database"
                );
            }
            if !record && row[HOST].as_array().and_then(|s| s.get(seen.len())) != Some(&json!(st)) {
                wrong.push(format!(
                    "{method} {target} as {col}: {st} (the matrix: {}) {answer}",
                    row[HOST]
                        .as_array()
                        .and_then(|s| s.get(seen.len()))
                        .unwrap_or(&Value::Null)
                ));
            }
            seen.push(json!(st));
        }
        if record {
            row[HOST] = Value::Array(seen);
        }
    }
    if record {
        let text = serde_json::to_string_pretty(&matrix).expect("json");
        std::fs::write(&path, text + "\n").expect("write matrix");
    }
    assert!(
        wrong.is_empty(),
        "{} cell(s) differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
