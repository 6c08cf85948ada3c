use super::*;

fn load(json: &str) -> Result<Config, ConfigError> {
    Config::from_values(&serde_json::from_str(json).unwrap())
}

#[test]
fn defaults_and_auto_enable() {
    let c = load(r#"{"custom": {"authMode": "github"}}"#).unwrap();
    assert!(c.enabled);
    assert_eq!(
        (c.cpu_rate, c.minimum_to_start, c.default_quota),
        (Milli(1000), Milli(10_000), 0)
    );
    assert!(c.refresh_rules.is_empty());
    assert!(load(r#"{"custom": {"authMode": "multi"}}"#).unwrap().enabled);
    assert!(!load(r#"{"custom": {"authMode": "dummy"}}"#).unwrap().enabled);
    assert!(!load(r#"{"custom": {"authMode": "auto-login"}}"#).unwrap().enabled);
    assert!(
        load(r#"{"custom": {"authMode": "dummy", "quota": {"enabled": true}}}"#)
            .unwrap()
            .enabled
    );
    assert!(
        !load(r#"{"custom": {"authMode": "github", "quota": {"enabled": false}}}"#)
            .unwrap()
            .enabled
    );
}

#[test]
fn unknown_auth_mode_with_null_enabled_is_an_error() {
    let e = load(r#"{"custom": {"authMode": "ldap", "quota": {"enabled": null}}}"#).unwrap_err();
    assert!(e.to_string().starts_with("custom.authMode: `ldap`"), "{e}");
    assert!(load(r#"{"custom": {"authMode": "ldap", "quota": {"enabled": true}}}"#).is_ok());
}

#[test]
fn on_storage_error_is_refuse_or_allow() {
    for ok in ["refuse", "allow"] {
        load(&format!(
            r#"{{"custom": {{"authMode": "github", "quota": {{"onStorageError": "{ok}"}}}}}}"#
        ))
        .unwrap();
    }
    for (bad, says) in [
        (r#""ignore""#, "`ignore` is not one of refuse, allow"),
        ("true", "must be a string"),
    ] {
        let e = load(&format!(
            r#"{{"custom": {{"authMode": "github", "quota": {{"onStorageError": {bad}}}}}}}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("custom.quota.onStorageError") && e.contains(says),
            "{e}"
        );
    }
}

#[test]
fn every_problem_is_reported_with_its_key_path() {
    let e = load(
        r#"{"custom": {"authMode": "github",
            "quota": {"cpuRate": 0.0001, "minimumToStart": "ten", "defaultQuota": -1, "cpurate": 1,
              "refreshRules": {"daily": {"schedule": "0 25 * * *", "amount": 5, "targets": {"includeUsers": []}}}},
            "accelerators": {"cpu": {"quotaRate": 1}, "a100": {"quotaRate": -2}, "v100": {}}}}"#,
    )
    .unwrap_err();
    let text = e.to_string();
    for path in [
        "custom.quota.cpuRate:",
        "custom.quota.minimumToStart:",
        "custom.quota.defaultQuota:",
        "custom.quota.cpurate: unknown field",
        "custom.quota.refreshRules.daily.schedule: hour field",
        "custom.quota.refreshRules.daily.targets.includeUsers:",
        "custom.accelerators.cpu:",
        "custom.accelerators.a100.quotaRate:",
        "custom.accelerators.v100.quotaRate: is required",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(path)),
            "missing {path} in\n{text}"
        );
    }
    assert_eq!(e.0.len(), 9, "{text}");
}

#[test]
fn accelerators_keep_extra_keys_and_exact_rates() {
    let c = load(
        r#"{"hub": {"x": 1}, "custom": {"authMode": "github", "accelerators": {
            "phx": {"displayName": "PHX", "quotaRate": 2.5, "nodeSelector": {"gpu": "phx"}, "shape": {"limits": 1},
            "resources": {"limits": {"example.org/phx": 1}}, "tolerations": [{"key": "phx", "operator": "Exists"}]}}}}"#,
    )
    .unwrap();
    let a = &c.accelerators["phx"];
    assert_eq!(a.quota_rate, Milli(2500));
    assert_eq!(a.extra["shape"]["limits"], 1);
    let shown = serde_json::to_value(a).unwrap();
    assert_eq!(shown.as_object().unwrap().len(), 6);
    assert_eq!(
        shown["resources"],
        serde_json::json!({"limits": {"example.org/phx": "1"}})
    );
    assert_eq!(
        shown["tolerations"],
        serde_json::json!([{"key": "phx", "operator": "Exists"}])
    );
    assert_eq!(c.rates_json().to_string(), r#"{"cpu":1,"phx":2.5}"#);
}

#[test]
fn an_accelerators_env_is_checked_and_kept_unexposed() {
    let c = load(
        r#"{"custom": {"authMode": "github", "accelerators": {
            "phx": {"quotaRate": 2, "env": {"PHX_VISIBLE": "all", "A.b-c_1": ""}}}}}"#,
    )
    .unwrap();
    assert_eq!(c.accelerators["phx"].extra["env"]["PHX_VISIBLE"], "all");
    assert_eq!(
        serde_json::to_value(&c.accelerators["phx"])
            .unwrap()
            .as_object()
            .unwrap()
            .len(),
        4
    );
    let problems = |body: &str| -> Vec<String> {
        let doc = format!(
            r#"{{"custom": {{"authMode": "github", "accelerators": {{"phx": {{"quotaRate": 2, "env": {body}}}}}}}}}"#
        );
        load(&doc).unwrap_err().0.iter().map(|e| e.to_string()).collect()
    };
    assert_eq!(
        problems(r#"{"N": 0}"#),
        ["custom.accelerators.phx.env.N: must be a string (quote it), got an integer"]
    );
    assert_eq!(problems(r#"{"N": true, "M": null}"#).len(), 2);
    assert_eq!(
        problems(r#"{"9LIVES": "x"}"#),
        ["custom.accelerators.phx.env.9LIVES: is not an environment variable name (letters, digits, `_`, `-` and `.`, not starting with a digit)"]
    );
    assert_eq!(problems(r#"{"A=B": "x"}"#).len(), 1);
    assert_eq!(
        problems(r#"["A=1"]"#),
        ["custom.accelerators.phx.env: must be a mapping of variable names to strings, got a list"]
    );
}

#[test]
fn accelerators_keep_the_values_files_order() {
    // Spawn pages preselect the first accelerator: sorting would change the default.
    let c = load(
        r#"{"custom": {"authMode": "github", "accelerators": {
            "zeta": {"quotaRate": 3}, "alpha": {"quotaRate": 2}, "mid": {"quotaRate": 1}}}}"#,
    )
    .unwrap();
    let keys: Vec<&str> = c.accelerators.keys().map(String::as_str).collect();
    assert_eq!(keys, ["zeta", "alpha", "mid"]);
    assert_eq!(
        c.rates_json().to_string(),
        r#"{"cpu":1,"zeta":3,"alpha":2,"mid":1}"#
    );
    let listed = serde_json::to_string(&crate::reads::accelerators(&c)).unwrap();
    let (z, a) = (listed.find("zeta").unwrap(), listed.find("alpha").unwrap());
    assert!(z < a, "{listed}");
}

#[test]
fn refresh_rules_load() {
    let c = load(
        r#"{"custom": {"authMode": "github", "quota": {"refreshRules": {"weekly": {"enabled": true,
            "schedule": "0 0 * * 1", "action": "add", "amount": 100, "maxBalance": 500,
            "targets": {"usernamePattern": "stu"}}}}}}"#,
    )
    .unwrap();
    let r = &c.refresh_rules["weekly"];
    assert!(r.enabled);
    assert_eq!(r.params.amount, 100);
    assert_eq!(r.params.max_balance, Some(500));
    assert_eq!(r.schedule.to_string(), "0 0 * * 1");
}

#[test]
fn a_rules_dated_credit_and_budget_targets_load_and_bad_ones_name_their_key() {
    let c = load(
        r#"{"custom": {"authMode": "github", "quota": {"budgets": {"lab": {}}, "refreshRules": {
            "monthly": {"schedule": "0 0 1 * *", "action": "set", "amount": 300,
                        "expiresAfter": "31d", "targets": {"budgets": ["lab"]}}}}}}"#,
    )
    .unwrap();
    let r = &c.refresh_rules["monthly"];
    assert_eq!(r.params.expires_after, Some(31 * 86_400));
    assert_eq!(r.params.targets.budgets.as_ref().map(|b| b.len()), Some(1));
    for (rule, key) in [
        (
            r#""expiresAfter": "1w""#,
            "custom.quota.refreshRules.r.expiresAfter:",
        ),
        (
            r#""expiresAfter": "0d""#,
            "custom.quota.refreshRules.r.expiresAfter:",
        ),
        (
            r#""expiresAfter": "1d", "amount": -5"#,
            "custom.quota.refreshRules.r.expiresAfter: makes the credit",
        ),
        (
            r#""targets": {"budgets": ["lab"], "usernamePattern": "a"}"#,
            "custom.quota.refreshRules.r.targets.budgets: targets budgets",
        ),
        (
            r#""targets": {"budgets": []}"#,
            "custom.quota.refreshRules.r.targets.budgets:",
        ),
    ] {
        let amount = if rule.contains("amount") {
            ""
        } else {
            r#""amount": 5, "#
        };
        let text = format!(
            r#"{{"custom": {{"authMode": "github", "quota": {{"refreshRules": {{"r": {{"schedule": "0 0 * * *", {amount}{rule}}}}}}}}}}}"#
        );
        let errs = load(&text).expect_err(rule).0;
        assert!(
            errs.iter().any(|e| e.to_string().starts_with(key)),
            "{rule}: {errs:?}"
        );
    }
}
