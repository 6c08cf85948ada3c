//! `render-cronjobs`: one CronJob per enabled rule, read back field by field; bad rule names are
//! refused with a message naming them; and the Job's own command, run twice against a real server
//! with a token that may only refresh, applies its scheduled run once.

use crate::common;

use common::{cli, Server};
use serde_json::{json, Value};

fn values(dir: &std::path::Path, rules: Value) -> std::path::PathBuf {
    common::write_values(
        dir,
        "values.yaml",
        &json!({"custom": {"authMode": "github", "quota": {"defaultQuota": 10, "refreshRules": rules}}}),
    )
}

fn render(values: &std::path::Path) -> (i32, String, String) {
    cli(&[
        "render-cronjobs",
        "--values",
        &values.to_string_lossy(),
        "--namespace",
        "hub",
        "--hub-url",
        "http://quota-hub.hub:8765/hub",
        "--token-secret",
        "refresh-token",
        "--image",
        "registry.example/quota-hub:1",
    ])
}

#[test]
fn one_cronjob_per_enabled_rule_labelled_and_forbidding_overlap() {
    let dir = tempfile::tempdir().expect("dir");
    let v = values(
        dir.path(),
        json!({
            "nightly": {"enabled": true, "schedule": "0 3 * * *", "action": "add", "amount": 0},
            "weekly": {"enabled": false, "schedule": "0 6 * * 1", "action": "set", "amount": 100},
            "term-start": {"enabled": true, "schedule": "0 0 1 9 *", "action": "set", "amount": 500,
                "targets": {"usernamePattern": "student-"}},
        }),
    );
    let (code, out, err) = render(&v);
    assert_eq!(code, 0, "{err}");
    let docs: Vec<Value> = out
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_norway::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect();
    let names: Vec<&str> = docs
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["quota-refresh-nightly", "quota-refresh-term-start"],
        "disabled rules get no job"
    );
    for (d, (rule, schedule)) in docs
        .iter()
        .zip([("nightly", "0 3 * * *"), ("term-start", "0 0 1 9 *")])
    {
        assert_eq!(d["apiVersion"], "batch/v1");
        assert_eq!(d["kind"], "CronJob");
        assert_eq!(d["metadata"]["namespace"], "hub");
        assert_eq!(
            d["metadata"]["labels"]["app.kubernetes.io/component"],
            "quota-refresh"
        );
        let spec = &d["spec"];
        assert_eq!(spec["schedule"], schedule);
        assert_eq!(spec["timeZone"], "Etc/UTC");
        assert_eq!(spec["concurrencyPolicy"], "Forbid");
        assert!(spec["startingDeadlineSeconds"].as_i64().unwrap() > 0);
        let pod = &spec["jobTemplate"]["spec"]["template"];
        assert_eq!(
            pod["metadata"]["labels"]["app.kubernetes.io/component"],
            "quota-refresh"
        );
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["image"], "registry.example/quota-hub:1");
        let env = &c["env"][0];
        assert_eq!(env["name"], "QUOTA_HUB_TOKEN");
        assert_eq!(env["valueFrom"]["secretKeyRef"]["name"], "refresh-token");
        let args: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            &args[..4],
            ["refresh", rule, "--url", "http://quota-hub.hub:8765/hub"]
        );
        let rule_json: Value =
            serde_json::from_str(args[args.iter().position(|a| *a == "--rule-json").unwrap() + 1]).unwrap();
        assert_eq!(rule_json["schedule"], schedule);
        assert!(args.contains(&"--scheduled-within"));
    }
    let nightly: Value = serde_json::from_str(
        docs[0]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][5]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(nightly["amount"], 0, "an amount of 0 stays 0");
}

#[test]
fn rule_names_that_cannot_name_a_cronjob_are_refused_all_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    let v = values(
        dir.path(),
        json!({
            "ok": {"enabled": true, "schedule": "0 3 * * *", "action": "add", "amount": 1},
            "Weekly_TopUp": {"enabled": true, "schedule": "0 3 * * *", "action": "add", "amount": 1},
            "far-too-long-a-name-for-kubernetes-to-take": {"enabled": false, "schedule": "0 3 * * *", "action": "add", "amount": 1},
        }),
    );
    let (code, out, err) = render(&v);
    assert_ne!(code, 0);
    assert_eq!(out, "", "nothing rendered");
    assert!(
        err.contains("`Weekly_TopUp`") && err.contains("`weekly-topup`"),
        "{err}"
    );
    assert!(
        err.contains("far-too-long-a-name-for-kubernetes-to-take") && err.contains("52"),
        "{err}"
    );
    assert!(err.contains("2 problem(s)"), "{err}");
}

fn job_pod(out: &str) -> Value {
    let doc = out
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .find(|d| !d.trim().is_empty())
        .expect("a CronJob");
    let d: Value = serde_norway::from_str(doc).expect("YAML");
    d["spec"]["jobTemplate"]["spec"]["template"]["metadata"].clone()
}

#[test]
fn job_pods_carry_the_hub_access_label_and_the_operators_labels_and_annotations() {
    let dir = tempfile::tempdir().expect("dir");
    let v = values(
        dir.path(),
        json!({"nightly": {"enabled": true, "schedule": "0 3 * * *", "action": "add", "amount": 1}}),
    );
    let (code, out, err) = render(&v);
    assert_eq!(code, 0, "{err}");
    let meta = job_pod(&out);
    assert_eq!(
        meta["labels"]["hub.jupyter.org/network-access-hub"], "true",
        "z2jh's hub NetworkPolicy admits only pods with this label: {meta}"
    );
    let v_arg = v.to_string_lossy().to_string();
    let (code, out, err) = cli(&[
        "render-cronjobs",
        "--values",
        &v_arg,
        "--no-hub-access-label",
        "--pod-label",
        "team=research",
        "--pod-annotation",
        "sidecar.istio.io/inject=false",
    ]);
    assert_eq!(code, 0, "{err}");
    let meta = job_pod(&out);
    assert!(
        meta["labels"].get("hub.jupyter.org/network-access-hub").is_none(),
        "{meta}"
    );
    assert_eq!(meta["labels"]["team"], "research");
    assert_eq!(meta["labels"]["quota.engine/rule"], "nightly");
    assert_eq!(meta["annotations"]["sidecar.istio.io/inject"], "false");
    let (code, out, err) = cli(&[
        "render-cronjobs",
        "--values",
        &v_arg,
        "--hub-access-label",
        "example.org/hub=yes",
    ]);
    assert_eq!(code, 0, "{err}");
    let meta = job_pod(&out);
    assert_eq!(meta["labels"]["example.org/hub"], "yes");
    assert!(
        meta["labels"].get("hub.jupyter.org/network-access-hub").is_none(),
        "{meta}"
    );
    for (bad, named) in [
        ("no-equals", "KEY=VALUE"),
        ("team=two words", "team"),
        ("=x", "key is empty"),
    ] {
        let (code, out, err) = cli(&["render-cronjobs", "--values", &v_arg, "--pod-label", bad]);
        assert_ne!(code, 0, "{bad}");
        assert_eq!(out, "", "nothing rendered for {bad}");
        assert!(
            err.contains(named) && err.contains("no CronJobs rendered"),
            "{bad}: {err}"
        );
    }
}

/// The refresh container of the first CronJob.
fn job_container(out: &str) -> Value {
    let doc = out
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n"))
        .find(|d| !d.trim().is_empty())
        .expect("a CronJob");
    let d: Value = serde_norway::from_str(doc).expect("YAML");
    d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0].clone()
}

#[test]
fn job_pods_ask_for_small_resources_that_the_operator_can_change() {
    // A namespace with a ResourceQuota on cpu and memory refuses a pod that names neither.
    let dir = tempfile::tempdir().expect("dir");
    let v = values(
        dir.path(),
        json!({"nightly": {"enabled": true, "schedule": "0 3 * * *", "action": "add", "amount": 1}}),
    );
    let (code, out, err) = render(&v);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        job_container(&out)["resources"],
        json!({"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}})
    );
    let v_arg = v.to_string_lossy().to_string();
    let (code, out, err) = cli(&[
        "render-cronjobs",
        "--values",
        &v_arg,
        "--request",
        "cpu=50m",
        "--limit",
        "cpu=250m",
        "--limit",
        "memory=64Mi",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        job_container(&out)["resources"],
        json!({"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"cpu": "250m", "memory": "64Mi"}})
    );
    for (flag, bad, named) in [
        (
            "--request",
            "memory=lots",
            "--request memory: `lots` is not a Kubernetes quantity",
        ),
        ("--limit", "cpu", "--limit `cpu`: expected KEY=VALUE"),
        (
            "--request",
            "nvidia.com/gpu=1",
            "needs `--limit nvidia.com/gpu=1` too",
        ),
    ] {
        let (code, out, err) = cli(&["render-cronjobs", "--values", &v_arg, flag, bad]);
        assert_ne!(code, 0, "{bad}");
        assert_eq!(out, "", "nothing rendered for {bad}");
        assert!(
            err.contains(named) && err.contains("no CronJobs rendered"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn the_jobs_command_run_twice_applies_its_scheduled_run_once() {
    // An every-minute rule: the Job's run id is `<rule>@<this minute>`. Two runs in one minute
    // (a retried or duplicated Job) apply once; if the minute turns between them, try again.
    for _attempt in 0..3 {
        let dir = tempfile::tempdir().expect("dir");
        let rule = json!({"enabled": true, "schedule": "* * * * *", "action": "add", "amount": 5});
        let v = values(dir.path(), json!({"often": rule}));
        let db = dir.path().join("q.db");
        let admin = common::token(&db, "root", true, &[]);
        let refresh_token = common::token(&db, "cron", false, &["quota:refresh"]);
        let server = Server::start(&db, &v, &[]);
        for u in ["ann", "bob"] {
            let (st, b) = server.post(
                &format!("/admin/api/quota/users/{u}"),
                &admin,
                r#"{"action": "set", "amount": 10}"#,
            );
            assert_eq!(st, 200, "{b}");
        }
        let job = |_: usize| {
            common::cli_with_env(
                &common::workspace(),
                &[
                    "refresh",
                    "often",
                    "--url",
                    &server.url,
                    "--rule-json",
                    &rule.to_string(),
                    "--scheduled-within",
                    "360",
                ],
                &[("QUOTA_HUB_TOKEN".to_string(), refresh_token.clone())],
            )
        };
        let (a, b) = (job(0), job(1));
        assert_eq!(a.0, 0, "{}", a.2);
        assert_eq!(b.0, 0, "{}", b.2);
        let ledger = server.get("/admin/api/quota/transactions", &admin);
        let txs = common::json(&ledger.1)["transactions"]
            .as_array()
            .unwrap()
            .clone();
        let refreshes = txs
            .iter()
            .filter(|t| t["transaction_type"] == "auto_refresh")
            .count();
        server.stop();
        // Which run ids were applied (the scheduled minute is computed by each job, so the minute
        // may turn between the two: the responses look alike either way).
        let runs: i64 = rusqlite::Connection::open(&db)
            .expect("db")
            .query_row("SELECT COUNT(*) FROM refresh_runs", [], |r| r.get(0))
            .expect("runs");
        if runs == 2 {
            assert_eq!(refreshes, 4, "two scheduled runs, each once: {txs:?}");
            continue;
        }
        assert_eq!(runs, 1);
        assert_eq!(refreshes, 2, "one refresh per user: {txs:?}");
        assert_eq!(a.1, b.1, "the second run answers the first result");
        return;
    }
    panic!("the minute turned during every attempt");
}

#[test]
fn a_job_started_after_its_deadline_refuses_to_guess_a_run_id() {
    let dir = tempfile::tempdir().expect("dir");
    // Fires once a year on 29 February at 00:00: never within the last 6 minutes on other days.
    let rule = json!({"enabled": true, "schedule": "0 0 29 2 *", "action": "add", "amount": 5});
    let (code, _, err) = cli(&[
        "refresh",
        "leap",
        "--url",
        "http://127.0.0.1:9/hub",
        "--token",
        "x",
        "--rule-json",
        &rule.to_string(),
        "--scheduled-within",
        "360",
    ]);
    let _ = dir;
    assert_ne!(code, 0);
    assert!(err.contains("no scheduled time within the last 360 s"), "{err}");
}

/// `--chart-dir` writes the CronJobs as a chart of their own (a release then owns them), the same
/// objects as printed; `--image-pull-secret` reaches the Job pods; the default image is the
/// release's, the Helm chart's `image.repository` at this version.
#[test]
fn a_chart_of_their_own_with_pull_secrets_and_the_releases_image() {
    let dir = tempfile::tempdir().expect("dir");
    let v = values(
        dir.path(),
        json!({"nightly": {"enabled": true, "schedule": "0 3 * * *", "action": "add", "amount": 5}}),
    );
    let chart = dir.path().join("quota-cronjobs");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "render-cronjobs".to_string(),
            "--values".into(),
            v.to_string_lossy().into_owned(),
            "--namespace".into(),
            "jhub".into(),
            "--image-pull-secret".into(),
            "mirror".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let printed = {
        let a = args(&[]);
        let (code, out, err) = cli(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, 0, "{err}");
        out
    };
    let a = args(&["--chart-dir", &chart.to_string_lossy()]);
    let (code, out, err) = cli(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "the chart is written, nothing printed: {out}");
    let meta: Value =
        serde_norway::from_str(&std::fs::read_to_string(chart.join("Chart.yaml")).expect("Chart.yaml"))
            .expect("yaml");
    assert_eq!(meta["name"], "quota-cronjobs");
    assert_eq!(meta["version"], env!("CARGO_PKG_VERSION"));
    let template = std::fs::read_to_string(chart.join("templates/cronjobs.yaml")).expect("template");
    assert_eq!(template, printed, "the same objects as printed");
    let job: Value = serde_norway::from_str(template.trim_start_matches("---\n")).expect("yaml");
    let pod = &job["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "mirror"}]));
    let chart_values = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/helm/quota-hub/values.yaml"
    ))
    .expect("chart values");
    let repository: Value = serde_norway::from_str(&chart_values).expect("yaml");
    assert_eq!(
        pod["containers"][0]["image"],
        format!(
            "{}:{}",
            repository["image"]["repository"].as_str().expect("repository"),
            env!("CARGO_PKG_VERSION")
        )
    );
}
