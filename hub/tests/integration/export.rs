//! `quota-hub export-ledger`: every transaction of a range of days, oldest first, as CSV or JSON
//! lines, equal field by field to the REST ledger; through the database and through a running
//! server; paged past the first page; a bad range writes no file.

use crate::common;

use common::{cli_in, json};

const COLUMNS: [&str; 12] = [
    "id",
    "created_at",
    "username",
    "transaction_type",
    "amount",
    "resource_type",
    "description",
    "balance_before",
    "balance_after",
    "created_by",
    "budget",
    "expires_at",
];

/// The REST ledger, every page, as the export should write it.
fn ledger(server: &common::Server, token: &str, query: &str) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    let mut after = 0;
    loop {
        let (st, body) = server.get(
            &format!("/admin/api/quota/transactions?after_id={after}{query}"),
            token,
        );
        assert_eq!(st, 200, "{body}");
        let page = json(&body);
        rows.extend(page["transactions"].as_array().expect("rows").iter().cloned());
        match page["next_after_id"].as_i64() {
            Some(n) => after = n,
            None => return rows,
        }
    }
}

fn as_csv_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn read_csv(path: &std::path::Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).expect("csv");
    let header = r.headers().expect("header").iter().map(str::to_string).collect();
    let rows = r
        .records()
        .map(|rec| rec.expect("record").iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

#[test]
fn the_export_equals_the_ledger_in_both_formats_through_the_database_and_a_server() {
    let setup = common::example();
    let dir = setup.dir.path();
    // 2,500 users in one file: more rows than one page of the ledger.
    let mut file = String::from("username,quota\n");
    for i in 0..2500 {
        file.push_str(&format!("user{i:04},{}\n", i % 7));
    }
    std::fs::write(dir.join("users.csv"), file).expect("csv");
    let db = format!("--db=sqlite://{}", setup.db.display());
    let (code, _, err) = cli_in(dir, &["set-quota", "-f", "users.csv", &db]);
    assert_eq!(code, 0, "{err}");
    let admin = setup.token("root", true, &[]);
    let server = setup.start(&[]);
    // A description a CSV must quote: a comma, quotes and a line break.
    let (st, body) = server.post(
        "/admin/api/quota/users/user0001",
        &admin,
        r#"{"action":"add","amount":3,"description":"refund, \"late\"\nsee ticket"}"#,
    );
    assert_eq!(st, 200, "{body}");
    let all = ledger(&server, &admin, "");
    assert_eq!(all.len(), 2501);
    let day_of = |t: &serde_json::Value| t["created_at"].as_str().expect("time")[..10].to_string();
    // The first and last rows' days (the same but for a test run across midnight).
    let (day, last_day) = (day_of(&all[0]), day_of(&all[2500]));
    let url = format!("--url={}", server.url);
    let token = format!("--token={admin}");

    for target in [vec![db.clone()], vec![url.clone(), token.clone()]] {
        let run = |extra: &[&str]| {
            let mut args = vec!["export-ledger"];
            args.extend_from_slice(extra);
            args.extend(target.iter().map(String::as_str));
            cli_in(dir, &args)
        };
        let (code, _, err) = run(&["--from", &day, "--to", &last_day, "-o", "all.csv"]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("2501 transactions exported"), "{err}");
        let (header, rows) = read_csv(&dir.join("all.csv"));
        assert_eq!(header, COLUMNS);
        let want: Vec<Vec<String>> = all
            .iter()
            .map(|t| COLUMNS.iter().map(|c| as_csv_cell(&t[*c])).collect())
            .collect();
        assert_eq!(rows, want, "the CSV rows are the ledger's, oldest first");
        assert!(
            rows[2500][6].contains('\n'),
            "the description kept its line break"
        );

        let (code, _, err) = run(&["--format", "jsonl", "--user", "user0001", "-o", "one.jsonl"]);
        assert_eq!(code, 0, "{err}");
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("one.jsonl"))
            .expect("jsonl")
            .lines()
            .map(json)
            .collect();
        assert_eq!(lines, ledger(&server, &admin, "&username=user0001"));
        assert_eq!(lines.len(), 2);

        // Standard output, and a range after the last row: the header only.
        let (code, out, err) = run(&["--from", "9999-12-31"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, format!("{}\n", COLUMNS.join(",")));

        // A bad range is refused, naming the field, and writes no file.
        let (code, _, err) = run(&["--from", &day, "--to", "2020-01-01", "-o", "bad.csv"]);
        assert_ne!(code, 0);
        assert!(err.contains("to: must not be before `from`"), "{err}");
        let (code, _, err) = run(&["--from", "26.11.2026", "-o", "bad.csv"]);
        assert_ne!(code, 0);
        assert!(
            err.contains("from: must be a date YYYY-MM-DD, got `26.11.2026`"),
            "{err}"
        );
        assert!(!dir.join("bad.csv").exists() && !dir.join("bad.csv.partial").exists());
        std::fs::remove_file(dir.join("all.csv")).expect("rm");
    }
}
