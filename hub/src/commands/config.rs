//! `render-cronjobs` and `check-config`: what a values file means, without serving it.

use std::process::ExitCode;

use crate::clock::Clock;
use crate::cronjobs;
use crate::engine;

use super::checked_values;

pub(super) fn render_cronjobs(
    values_path: &std::path::Path,
    o: &cronjobs::Options<'_>,
) -> Result<ExitCode, String> {
    let rt = engine::runtime()?;
    let (doc, _) = checked_values(values_path, &rt, "; no CronJobs rendered")?;
    let jobs = cronjobs::render(&doc, o).map_err(|bad| {
        for b in &bad {
            eprintln!("{}: {b}", values_path.display());
        }
        format!(
            "{}: {} problem(s) (rule names that cannot name a CronJob, bad pod labels); no CronJobs rendered",
            values_path.display(),
            bad.len()
        )
    })?;
    let mut out = String::new();
    for j in &jobs {
        out.push_str("---\n");
        out.push_str(&serde_norway::to_string(j).map_err(|e| e.to_string())?);
    }
    print!("{out}");
    eprintln!("{} CronJob(s) for {} enabled rule(s)", jobs.len(), jobs.len());
    Ok(ExitCode::SUCCESS)
}

pub(super) fn check_config(path: &std::path::Path) -> Result<ExitCode, String> {
    let rt = engine::runtime()?;
    let (doc, mut w) = checked_values(path, &rt, "")?;
    let summary = w.summary().clone();
    let accelerators = doc
        .pointer("/custom/accelerators")
        .and_then(serde_json::Value::as_object)
        .map_or(0, |a| a.len());
    println!(
        "{}: OK (quota {}, {accelerators} accelerator(s), {} refresh rule(s))",
        path.display(),
        if summary.enabled { "enabled" } else { "disabled" },
        summary.rules.len()
    );
    let now = Clock::system()?.now();
    for r in &summary.rules {
        let next = w.next_fire(&r.name, now).map_err(|e| e.to_string())?;
        let when = match (r.enabled, next) {
            (false, _) => "disabled".to_string(),
            (true, Some(t)) => format!("next run {t}Z"),
            (true, None) => "never fires".to_string(),
        };
        println!("  rule {}: {when}", r.name);
    }
    Ok(ExitCode::SUCCESS)
}
