//! `refresh RULE`: one refresh rule, on the database or through a server.

use std::process::ExitCode;

use crate::cli::{self};
use crate::clock::Clock;
use crate::commands::target::Target;
use crate::schedule::cronjobs;
use crate::{engine, schedule as scheduler, values};

/// `refresh RULE`: on the database (`--db`), or sent to a server (`--url`) as the rule's refresh
/// request; with `--scheduled-within`, under the run id of its latest scheduled minute.
pub(super) fn refresh(
    rule: &str,
    dry_run: bool,
    rule_json: Option<String>,
    run_id: Option<String>,
    scheduled_within: Option<i64>,
    target: &cli::Target,
) -> Result<ExitCode, String> {
    let now = Clock::system()?.now();
    let rt = engine::runtime()?;
    let (doc, fragment) = match &rule_json {
        Some(text) => {
            let fragment: serde_json::Value =
                serde_json::from_str(text).map_err(|e| format!("--rule-json: not JSON: {e}"))?;
            (cronjobs::one_rule_values(rule, &fragment), fragment)
        }
        None => {
            let doc = values::read(&target.values)?;
            let fragment = cronjobs::rules(&doc)
                .into_iter()
                .find(|(n, _)| n == rule)
                .map(|(_, f)| f)
                .ok_or_else(|| format!("refresh: no rule `{rule}` in {}", target.values.display()))?;
            (doc, fragment)
        }
    };
    let mut checker =
        values::check(&rt, &doc).map_err(|p| format!("refresh rule `{rule}`: {}", p.join("; ")))?;
    let run_id = match (run_id, scheduled_within) {
        (Some(id), _) => Some(id),
        (None, Some(window)) => {
            let at = scheduler::previous_fire(&mut checker, rule, now)
                .map_err(|e| e.to_string())?
                .filter(|at| at.seconds() >= now.seconds() - window)
                .ok_or_else(|| {
                    format!("refresh rule `{rule}`: no scheduled time within the last {window} s (give --run-id to run it by hand)")
                })?;
            Some(scheduler::run_id(rule, at))
        }
        (None, None) => None,
    };
    if target.url.is_none() {
        if rule_json.is_some() {
            return Err("--rule-json goes with --url; on a database the values file's rule runs".into());
        }
        let Target::Local(mut w, _) = Target::open(target, true)? else {
            unreachable!("a target without --url is local")
        };
        let r = w
            .run_rule(rule, run_id.as_deref(), dry_run, now)
            .map_err(|e| e.to_string())?;
        println!("{}", serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut body = cronjobs::refresh_body(rule, &fragment, run_id.as_deref());
    if dry_run {
        body["dry_run"] = true.into();
    }
    let v = Target::open(target, false)?.ok("POST", "/admin/api/quota/refresh", &body.to_string())?;
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}
