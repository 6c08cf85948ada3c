//! `quota-hub group ...`: members set, added and removed from arguments and CSV files, shown and
//! listed, on the database directly and through a running server; bad input names its problem
//! and changes nothing.

use crate::common;

use std::path::Path;

use common::cli_in;

/// Runs the group commands against one target (`--db=...`, or `--url=... --token=...`).
fn exercise(dir: &Path, target: &[String]) {
    let run = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(target.iter().map(String::as_str));
        cli_in(dir, &all)
    };
    let (code, out, err) = run(&["group", "set", "lab", "Alice", "bob"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("group set lab: 2 added, 0 removed, 2 members"),
        "{out}"
    );
    let (code, out, err) = run(&["group", "add-members", "lab", "carol", "bob"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 added, 0 removed, 3 members"), "{out}");
    let (code, out, err) = run(&["group", "remove-members", "lab", "alice", "zed"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("0 added, 1 removed, 2 members"), "{out}");

    std::fs::write(dir.join("course.csv"), "username\ndave\nerin\n\nbob\n").expect("csv");
    let (code, out, err) = run(&["group", "set", "course 101", "-f", "course.csv"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("3 added, 0 removed, 3 members"), "{out}");

    let (code, out, err) = run(&["group", "show", "lab"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["members"], serde_json::json!(["bob", "carol"]), "{out}");
    let (code, out, _) = run(&["group", "list"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("Groups (2)\n"), "{out}");
    assert!(
        out.contains("course 101  3 members") && out.contains("lab  2 members"),
        "{out}"
    );

    // Bad input: named, refused, nothing changed.
    let (code, _, err) = run(&["group", "set", "a\tb", "alice"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("name: must not contain the control character '\\t'"),
        "{err}"
    );
    let (code, _, err) = run(&["group", "add-members", "lab", "bad name"]);
    assert_ne!(code, 0);
    assert!(err.contains("add[0]: must not contain ' '"), "{err}");
    std::fs::write(dir.join("bad.csv"), "user\nalice\n").expect("csv");
    let (code, _, err) = run(&["group", "set", "lab", "-f", "bad.csv"]);
    assert_ne!(code, 0);
    assert!(err.contains("line 1"), "{err}");
    let (code, _, err) = run(&["group", "show", "nobody"]);
    assert_ne!(code, 0);
    assert!(err.contains("No group named `nobody`"), "{err}");
    let (_, out, _) = run(&["group", "show", "lab"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        v["members"],
        serde_json::json!(["bob", "carol"]),
        "unchanged: {out}"
    );
}

#[test]
fn group_commands_against_the_database() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    exercise(dir.path(), &[format!("--db=sqlite://{}", db.display())]);
}

#[test]
fn group_commands_through_a_running_server() {
    let setup = common::example();
    let server = setup.start(&[]);
    let token = setup.token("root", true, &[]);
    exercise(
        setup.dir.path(),
        &[format!("--url={}", server.url), format!("--token={token}")],
    );
    server.stop();
}

#[test]
fn a_group_larger_than_one_request_is_set_whole() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let dbarg = format!("--db=sqlite://{}", db.display());
    let mut csv = String::from("username\n");
    for i in 0..12_000 {
        csv.push_str(&format!("user{i:05}\n"));
    }
    std::fs::write(dir.path().join("big.csv"), csv).expect("csv");
    let (code, out, err) = cli_in(dir.path(), &["group", "set", "big", "-f", "big.csv", &dbarg]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("12000 added, 0 removed, 12000 members"), "{out}");
    // Set again with fewer: the rest leave.
    std::fs::write(dir.path().join("small.csv"), "username\nuser00001\n").expect("csv");
    let (code, out, err) = cli_in(dir.path(), &["group", "set", "big", "-f", "small.csv", &dbarg]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("0 added, 11999 removed, 1 members"), "{out}");
}
