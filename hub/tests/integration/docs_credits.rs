//! docs/credits.md, as written: its values file (the first `yaml` block) is what the commands of
//! its `sh` block run with, each line in order from an operator's directory, and each does what
//! the page says. The example's date is moved ahead of the clock the test runs on.

use crate::common;

use common::cli_in;

/// The date the page uses, and the one the test puts in its place (1,000 days from now).
const EXAMPLE_DATE: &str = "2027-01-31T23:59:59Z";

fn blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(&fence) {
        let body = &rest[i + fence.len()..];
        let end = body.find("```").expect("a closed block");
        out.push(body[..end].to_string());
        rest = &body[end..];
    }
    out
}

#[test]
fn the_course_example_runs_as_written() {
    let doc = std::fs::read_to_string(common::workspace().join("docs/credits.md")).expect("docs/credits.md");
    let dir = tempfile::tempdir().expect("dir");
    let values = blocks(&doc, "yaml").into_iter().next().expect("a values block");
    std::fs::write(dir.path().join("course-values.yaml"), values).expect("values");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let ahead = format!("{}Z", quota_core::Timestamp(now + 1000 * 86_400));
    let commands = blocks(&doc, "sh").into_iter().next().expect("a sh block");
    let mut outputs = Vec::new();
    for line in commands.lines().filter(|l| !l.trim().is_empty()) {
        let line = line.replace(EXAMPLE_DATE, &ahead);
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "quota-hub", "{line}");
        // The command line's own quoting: one quoted argument at most, the description.
        let mut args: Vec<String> = Vec::new();
        let mut quoted: Option<String> = None;
        for w in &words[1..] {
            match (&mut quoted, w.starts_with('"'), w.ends_with('"')) {
                (None, true, true) if w.len() > 1 => args.push(w.trim_matches('"').to_string()),
                (None, true, _) => quoted = Some(w.trim_start_matches('"').to_string()),
                (Some(q), _, true) => {
                    q.push(' ');
                    q.push_str(w.trim_end_matches('"'));
                    args.push(quoted.take().expect("quoted"));
                }
                (Some(q), _, _) => {
                    q.push(' ');
                    q.push_str(w);
                }
                (None, _, _) => args.push(w.to_string()),
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = cli_in(dir.path(), &refs);
        assert_eq!(code, 0, "{line}\n{out}\n{err}");
        outputs.push(out);
    }
    assert!(
        outputs[1]
            .contains("course-101  balance 2000 (0 reserved), 1 members, 300 per member a month  [values]"),
        "{}",
        outputs[1]
    );
    let shown: serde_json::Value = serde_json::from_str(&outputs[4]).expect("JSON");
    assert_eq!(shown["grants"][0]["remaining"], 2000, "{shown}");
    assert_eq!(
        shown["members"].as_array().map(Vec::len),
        Some(4),
        "the teacher and the three students"
    );
    assert_eq!(shown["recent_transactions"][0]["description"], "Winter term");
}
