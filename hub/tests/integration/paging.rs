//! Paging of the admin lists over HTTP: 50,000 users by `?limit=&after=` and 5,000 sessions of
//! one user by `?after_id=` come back each exactly once, in order, with a marker while more exist;
//! without paging parameters the users list is the spec's shape (everyone, no marker);
//! `list-quota` pages through them.

use crate::common;

use common::{http, json};

#[test]
fn fifty_thousand_users_and_five_thousand_sessions_page_each_once_in_order() {
    let common::GithubServer {
        dir: _dir,
        db,
        admin,
        server,
    } = common::github_server(&[]);
    // Seeded in SQL (the schema exists once the server runs): the rows, not the HTTP, are under test.
    let users: usize = 50_000;
    let sessions: i64 = 5_000;
    {
        let c = rusqlite::Connection::open(&db).expect("db");
        c.execute_batch(&format!(
            "BEGIN;
             WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {users})
             INSERT INTO users SELECT printf('u%05d', i), i % 100, 0, 1795000000 FROM n;
             WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {sessions})
             INSERT INTO sessions (username, server_name, resource_type, rate_milli, runtime_minutes,
               estimated_cost_milli, start_time, billable, status, end_time, duration_minutes, cost)
             SELECT 'u00007', 's' || i, 'cpu', 1000, 5, 5000, 1795000000 + i, 1, 'completed', 1795000060 + i, 1, 1 FROM n;
             COMMIT;"
        ))
        .expect("seed");
    }
    let agent = common::agent();
    let get = |path: &str| {
        let (st, body) = http(
            &agent,
            "GET",
            &format!("{}{path}", server.url),
            Some(&admin),
            None,
            &[],
        );
        assert_eq!(st, 200, "{path}: {body}");
        json(&body)
    };

    let mut names = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &after {
            None => "/admin/api/quota/?limit=7000".to_string(),
            Some(a) => format!("/admin/api/quota/?limit=7000&after={a}"),
        };
        let v = get(&path);
        pages += 1;
        let page = v["users"].as_array().expect("users");
        names.extend(
            page.iter()
                .map(|u| u["username"].as_str().expect("name").to_string()),
        );
        match v["next_after"].as_str() {
            Some(n) => {
                assert_eq!(
                    Some(n),
                    names.last().map(String::as_str),
                    "the marker is the page's last name"
                );
                after = Some(n.to_string());
            }
            None => {
                assert!(v["next_after"].is_null(), "{}", v["next_after"]);
                break;
            }
        }
    }
    let want: Vec<String> = (0..users).map(|i| format!("u{i:05}")).collect();
    assert_eq!(pages, users.div_ceil(7000));
    assert_eq!(names, want, "every user once, in order");
    // The spec's shape: everyone, no marker.
    let all = get("/admin/api/quota/");
    assert_eq!(all["users"].as_array().map(Vec::len), Some(users));
    assert!(all.get("next_after").is_none());

    let mut ids = Vec::new();
    let mut after_id = 0;
    loop {
        let v = get(&format!(
            "/api/quota/sessions?username=u00007&after_id={after_id}"
        ));
        let page = v["sessions"].as_array().expect("sessions");
        assert!(page.len() <= 1000);
        ids.extend(page.iter().map(|s| s["session_id"].as_i64().expect("id")));
        match v["next_after_id"].as_i64() {
            Some(n) => {
                assert_eq!(Some(n), ids.last().copied());
                after_id = n;
            }
            None => break,
        }
    }
    assert_eq!(
        ids,
        (1..=sessions).collect::<Vec<i64>>(),
        "every session once, in order"
    );

    // Bad paging parameters are refused by name.
    for (q, field) in [("limit=0", "limit"), ("limit=10001", "limit"), ("limt=5", "limt")] {
        let (st, body) = server.get(&format!("/admin/api/quota/?{q}"), &admin);
        assert_eq!(st, 400, "{q}: {body}");
        assert!(body.contains(field), "{q}: {body}");
    }
    server.stop();

    // list-quota reads them page by page: every user, one line each.
    let (code, out, err) = common::cli(&["list-quota", "--db", &format!("sqlite://{}", db.display())]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("Users ({users})"));
    assert_eq!(lines.len(), users + 2);
    assert!(lines[2].starts_with("u00000 ") && lines[users + 1].starts_with("u49999 "));
}
