//! Rights an auditor would sign (issue 58), on a real `quota-hub serve` over a SQLite file:
//! - names are data: a group named like a scope (`g\u{a0}quota:admin`) issued with `token issue`
//!   or imported from a tokens file manages that group only, `token list` shows its name encoded,
//!   and a row quota-hub 0.2 wrote with the raw U+00A0 widens nothing;
//! - the property test: generated group names (every Unicode space, invisible characters, every
//!   separator, several scripts; `tests/authorization/name-pools.json`) each work as one group
//!   through the command line, the tokens file, the values file, REST paths and queries;
//! - an `Idempotency-Key` is scoped to the token: a narrower token of the same user never replays
//!   a wider one's answer.

use crate::common;

use common::{cli, json, Server};
use quota_host::{SqliteDb, SqliteOptions};
use serde_json::{json, Value};

/// A path segment or query value percent-encoded (every byte but unreserved ones).
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn issue(db: &str, user: &str, group: &str) -> String {
    let (code, out, err) = cli(&[
        "token",
        "issue",
        "--db",
        db,
        "--user",
        user,
        "--scope",
        "quota:manage",
        "--group",
        group,
    ]);
    assert_eq!(code, 0, "{group:?}: {err}");
    out.trim().to_string()
}

#[test]
fn a_group_named_like_a_scope_manages_that_group_only() {
    let setup = common::with_values(json!({"custom": {"authMode": "github"}}));
    let db = format!("sqlite://{}", setup.db.display());
    let root = setup.token("root", true, &[]);
    let mona = issue(&db, "mona", "g\u{a0}quota:admin");
    let pasted = issue(&db, "pete", "Physics\u{a0}101");
    let (code, table, err) = cli(&["token", "list", "--db", &db]);
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("quota:manage!group=g%C2%A0quota:admin") && !table.contains("g\u{a0}quota"),
        "{table}"
    );
    // The row quota-hub 0.2 wrote for the same group: the U+00A0 raw in the stored list.
    let legacy = setup.token("lee", false, &["quota:metrics"]);
    {
        let rt = common::runtime();
        let mut conn = SqliteDb::open(&rt, &setup.db, SqliteOptions::default()).expect("open db");
        quota_host::Database::query(
            &mut conn,
            "UPDATE api_tokens SET scopes = 'quota:manage!group=g\u{a0}quota:admin' WHERE name = 'lee'",
            &[],
        )
        .expect("legacy row");
    }
    // The same through the tokens file.
    let secret = format!("qh_{}", "b2".repeat(32));
    std::fs::write(setup.dir.path().join("secret"), &secret).expect("secret");
    let tokens = setup.dir.path().join("tokens.yaml");
    std::fs::write(
        &tokens,
        format!(
            "- name: imo\n  scopes: [quota:manage]\n  groups: [\"g\\u00a0quota:admin\"]\n  secretFile: {}\n",
            setup.dir.path().join("secret").display()
        ),
    )
    .expect("tokens");
    let server = setup.start(&["--tokens", tokens.to_str().expect("path")]);
    for (group, members) in [
        ("g\u{a0}quota:admin", &["nia"][..]),
        ("Physics", &["phil"][..]),
        ("Physics\u{a0}101", &["paula"][..]),
    ] {
        let (st, b) = server.call(
            "PUT",
            &format!("/admin/api/quota/groups/{}", enc(group)),
            Some(&root),
            Some(&json!({ "members": members }).to_string()),
        );
        assert_eq!(st, 200, "{b}");
        assert_eq!(json(&b)["name"], group);
    }
    for (who, token) in [("mona", &mona), ("lee", &legacy), ("imo", &secret)] {
        let (st, b) = server.get("/api/quota/me/rights", token);
        assert_eq!(st, 200, "{b}");
        assert_eq!(json(&b)["quota_admin"], false, "{who}: {b}");
        assert_eq!(json(&b)["manages"], json!(["g\u{a0}quota:admin"]), "{who}: {b}");
        for (method, path, body) in [
            (
                "POST",
                "/admin/api/quota/users/ann",
                r#"{"action": "set_unlimited", "unlimited": true}"#,
            ),
            ("POST", "/admin/api/quota/cleanup", "{}"),
            ("GET", "/admin/api/quota/events", ""),
            (
                "POST",
                "/admin/api/quota/users/ann",
                r#"{"action": "add", "amount": 5}"#,
            ),
        ] {
            let body = (method == "POST").then_some(body);
            assert_eq!(
                server.call(method, path, Some(token), body).0,
                403,
                "{who}: {method} {path}"
            );
        }
        let (st, b) = server.post(
            "/admin/api/quota/users/nia",
            token,
            r#"{"action": "add", "amount": 1}"#,
        );
        assert_eq!(st, 200, "{who}: {b}");
    }
    // A pasted U+00A0 stays in the name: Physics's members are out of reach, Physics 101's in.
    let (st, b) = server.get("/api/quota/me/rights", &pasted);
    assert_eq!(json(&b)["manages"], json!(["Physics\u{a0}101"]), "{st} {b}");
    assert_eq!(
        server
            .post(
                "/admin/api/quota/users/phil",
                &pasted,
                r#"{"action": "add", "amount": 1}"#
            )
            .0,
        403
    );
    assert_eq!(
        server
            .post(
                "/admin/api/quota/users/paula",
                &pasted,
                r#"{"action": "add", "amount": 1}"#
            )
            .0,
        200
    );
    server.stop();
}

/// A small seeded generator (xorshift64*): the same names on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// Group names from the pools: name `i` holds the `i`th space, invisible character and separator
/// (so every one is used), letters around them, and more of each at random; some begin or end
/// with a space, some are Keycloak-style paths.
fn generated_names() -> Vec<String> {
    let pools: Value = json(
        &std::fs::read_to_string(common::workspace().join("tests/authorization/name-pools.json"))
            .expect("pools"),
    );
    let pool = |k: &str| -> Vec<String> {
        pools[k]
            .as_array()
            .expect("pool")
            .iter()
            .map(|v| v.as_str().expect("text").to_string())
            .collect()
    };
    let (spaces, invisible, seps, letters) = (
        pool("spaces"),
        pool("invisible"),
        pool("separators"),
        pool("letters"),
    );
    let n = spaces.len().max(invisible.len()).max(seps.len());
    let mut rng = Rng(0x5eed_0058);
    let mut out = Vec::new();
    for i in 0..n {
        let mut name = String::new();
        if i % 5 == 0 {
            name.push('/');
        }
        if i % 7 == 3 {
            name.push_str(&spaces[i % spaces.len()]);
        }
        name.push_str(&letters[rng.below(letters.len())]);
        name.push_str(&spaces[i % spaces.len()]);
        name.push_str(&seps[i % seps.len()]);
        name.push_str(&invisible[i % invisible.len()]);
        for _ in 0..rng.below(6) {
            let p = [&letters, &spaces, &seps, &invisible][rng.below(4)];
            name.push_str(&p[rng.below(p.len())]);
        }
        name.push_str(&format!("{i}"));
        if i % 5 == 0 {
            name.push_str("/101");
        }
        if i % 7 == 4 {
            name.push_str(&spaces[(i + 1) % spaces.len()]);
        }
        out.push(name);
    }
    out
}

/// `s` as a YAML double-quoted scalar with every character outside printable ASCII escaped, as an
/// operator writes such a name (YAML 1.1 reads a raw U+2028 as a line break).
fn yaml_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[test]
fn every_generated_group_name_is_one_group_everywhere_it_travels() {
    let names = generated_names();
    assert!(names.len() >= 30, "every pool entry is used: {}", names.len());
    // The values file names each group three times: its staff allowance, a budget of the same
    // name, and that budget's group.
    let groups: serde_json::Map<String, Value> = names
        .iter()
        .map(|g| (g.clone(), json!({"staffAllowance": {"perChange": 40}})))
        .collect();
    let budgets: serde_json::Map<String, Value> = names
        .iter()
        .map(|g| {
            (
                g.clone(),
                json!({"description": "its", "groups": [g], "accelerators": ["cpu"]}),
            )
        })
        .collect();
    let setup = common::with_values(json!({"custom": {"authMode": "github", "quota": {
        "groups": groups, "budgets": budgets}}}));
    let db = format!("sqlite://{}", setup.db.display());
    let root = setup.token("root", true, &[]);
    // Half the managers from the command line, half from the tokens file.
    let mut staff = Vec::new();
    let mut file = String::new();
    for (i, g) in names.iter().enumerate() {
        if i % 2 == 0 {
            staff.push(issue(&db, &format!("s{i}"), g));
        } else {
            let secret = format!("qh_{:064x}", i + 1);
            file.push_str(&format!(
                "- name: s{i}\n  scopes: [quota:manage]\n  groups: [{}]\n  secretEnv: S{i}\n",
                yaml_quoted(g)
            ));
            staff.push(secret);
        }
    }
    let tokens = setup.dir.path().join("tokens.yaml");
    std::fs::write(&tokens, &file).expect("tokens");
    let env: Vec<(String, String)> = (0..names.len())
        .filter(|i| i % 2 == 1)
        .map(|i| (format!("S{i}"), staff[i].clone()))
        .collect();
    let server = Server::start_with_env(
        &setup.db,
        &setup.values,
        &["--tokens", tokens.to_str().expect("path")],
        &env,
    );
    for (i, g) in names.iter().enumerate() {
        let (st, b) = server.call(
            "PUT",
            &format!("/admin/api/quota/groups/{}", enc(g)),
            Some(&root),
            Some(&json!({ "members": [format!("m{i}")] }).to_string()),
        );
        assert_eq!(st, 200, "{g:?}: {b}");
    }
    let (st, b) = server.get("/admin/api/quota/groups", &root);
    assert_eq!(st, 200, "{b}");
    let listed: Vec<String> = json(&b)["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|x| x["name"].as_str().expect("name").to_string())
        .collect();
    for (i, g) in names.iter().enumerate() {
        let who = format!("{g:?} (s{i})");
        assert!(listed.contains(g), "{who} listed: {listed:?}");
        let token = &staff[i];
        let (st, b) = server.get("/api/quota/me/rights", token);
        assert_eq!(st, 200, "{who}: {b}");
        let rights = json(&b);
        assert_eq!(rights["manages"], json!([g]), "{who}: {b}");
        assert_eq!(rights["quota_admin"], false, "{who}");
        assert_eq!(rights["staff_allowances"][0]["group"], json!(g), "{who}: {b}");
        let (st, b) = server.get(&format!("/admin/api/quota/groups/{}", enc(g)), &root);
        assert_eq!((st, json(&b)["name"].clone()), (200, json!(g)), "{who}: {b}");
        // Its member, within the values file's allowance; nobody else's.
        let add = |user: &str, n: i64| {
            server.post(
                &format!("/admin/api/quota/users/{user}"),
                token,
                &json!({"action": "add", "amount": n}).to_string(),
            )
        };
        assert_eq!(add(&format!("m{i}"), 3).0, 200, "{who}");
        assert_eq!(add(&format!("m{i}"), 41).0, 403, "{who}: past perChange");
        assert_eq!(
            add(&format!("m{}", (i + 1) % names.len()), 1).0,
            403,
            "{who}: another group's member"
        );
        assert_eq!(add(&format!("s{i}"), 1).0, 403, "{who}: their own credit");
        let (st, b) = server.get("/admin/api/quota/users", token);
        let users: Vec<Value> = json(&b)["users"]
            .as_array()
            .expect("users")
            .iter()
            .map(|u| u["username"].clone())
            .collect();
        assert_eq!((st, users), (200, vec![json!(format!("m{i}"))]), "{who}: {b}");
        // The budget the values file gave the group, and the group's name in a query.
        let (st, b) = server.post(
            &format!("/admin/api/quota/budgets/{}", enc(g)),
            token,
            r#"{"action": "add", "amount": 2}"#,
        );
        assert_eq!(st, 200, "{who}: {b}");
        let (st, b) = server.get(
            &format!(
                "/admin/api/quota/usage?group={}&from=2026-01-01&to=2026-01-31",
                enc(g)
            ),
            token,
        );
        assert_eq!(st, 200, "{who}: {b}");
        let (st, b) = server.get(&format!("/admin/api/quota/transactions?username=m{i}"), token);
        assert_eq!(st, 200, "{who}: {b}");
        assert_eq!(
            json(&b)["transactions"][0]["created_by"],
            json!(format!("s{i}")),
            "{who}: {b}"
        );
    }
    // Each budget's name whole in its metrics label (the exposition format escapes `\` and `"`).
    let metrics = setup.token("prom", false, &["quota:metrics"]);
    let (st, text) = server.get("/metrics", &metrics);
    assert_eq!(st, 200);
    for g in &names {
        let label = g.replace('\\', "\\\\").replace('"', "\\\"");
        assert!(
            text.contains(&format!("quota_budget_balance{{budget=\"{label}\"}} 2")),
            "{g:?} in:\n{}",
            text.lines()
                .filter(|l| l.starts_with("quota_budget_balance"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    server.stop();
}

#[test]
fn an_idempotency_key_is_scoped_to_the_token_not_the_name() {
    let setup = common::with_values(json!({"custom": {"authMode": "github"}}));
    let wide = setup.token("root", true, &[]);
    let narrow = setup.token("root", false, &["quota:metrics"]);
    let server = setup.start(&[]);
    let post = |token: &str, key: &str| {
        common::http(
            &common::agent(),
            "POST",
            &format!("{}/admin/api/quota/users/ann", server.url),
            Some(token),
            Some(r#"{"action": "add", "amount": 7}"#),
            &[("Idempotency-Key", key)],
        )
    };
    let first = post(&wide, "k1");
    assert_eq!(first.0, 200, "{}", first.1);
    // The narrower token of the same user with the same key and body: its own answer, a 403.
    let (st, b) = post(&narrow, "k1");
    assert_eq!(st, 403, "the wide token's answer must not be replayed: {b}");
    // The wide token again: replayed, nothing applied twice.
    assert_eq!(post(&wide, "k1"), first);
    let (_, b) = server.get("/admin/api/quota/users/ann", &wide);
    assert_eq!(json(&b)["balance"], 7, "{b}");
    server.stop();
}
