//! `render-cronjobs`, `check-config` and `config-schema`: what a values file means, without serving it.

use std::process::ExitCode;

use crate::clock::Clock;
use crate::engine;
use crate::schedule::cronjobs;

use crate::values::read_checked;

pub(super) fn render_cronjobs(
    values_path: &std::path::Path,
    o: &cronjobs::Options<'_>,
    chart_dir: Option<&std::path::Path>,
) -> Result<ExitCode, String> {
    let rt = engine::runtime()?;
    let (doc, _) = read_checked(values_path, &rt, "; no CronJobs rendered")?;
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
    match chart_dir {
        None => print!("{out}"),
        Some(dir) => write_chart(dir, &out)?,
    }
    eprintln!("{} CronJob(s) for {} enabled rule(s)", jobs.len(), jobs.len());
    Ok(ExitCode::SUCCESS)
}

/// The CronJobs as a chart of their own (`helm upgrade --install NAME DIR`): a release owns them,
/// so an upgrade removes the CronJob of a rule no longer enabled and an uninstall removes all.
fn write_chart(dir: &std::path::Path, manifests: &str) -> Result<(), String> {
    if manifests.contains("{{") {
        return Err(
            "--chart-dir: a rule holds `{{`, which Helm would read as a template; no chart written".into(),
        );
    }
    let templates = dir.join("templates");
    std::fs::create_dir_all(&templates).map_err(|e| format!("--chart-dir {}: {e}", dir.display()))?;
    let version = env!("CARGO_PKG_VERSION");
    let chart = format!(
        "# Written by `quota-hub render-cronjobs --chart-dir`: the refresh CronJobs as a release of\n\
         # their own (docs/z2jh.md, section 6). Render it again after changing the rules.\n\
         apiVersion: v2\nname: quota-cronjobs\ndescription: The quota refresh rules as Kubernetes CronJobs\n\
         type: application\nversion: {version}\nappVersion: \"{version}\"\n"
    );
    for (path, text) in [
        (dir.join("Chart.yaml"), chart.as_str()),
        (templates.join("cronjobs.yaml"), manifests),
    ] {
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    eprintln!(
        "wrote the chart {} (helm upgrade --install quota-cronjobs {} -n NAMESPACE)",
        dir.display(),
        dir.display()
    );
    Ok(())
}

pub(super) fn check_config(path: &std::path::Path) -> Result<ExitCode, String> {
    let rt = engine::runtime()?;
    let (doc, mut w) = read_checked(path, &rt, "")?;
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

pub(super) fn config_schema(into_chart: Option<&std::path::Path>) -> Result<ExitCode, String> {
    let schema: serde_json::Value = serde_json::from_str(quota_core::config::VALUES_SCHEMA)
        .map_err(|e| format!("the engine's schema: {e}"))?;
    let Some(chart) = into_chart else {
        println!(
            "{}",
            serde_json::to_string_pretty(&schema).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    };
    let shown = chart.display();
    let text = std::fs::read_to_string(chart).map_err(|e| format!("--into-chart {shown}: {e}"))?;
    let mut doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("--into-chart {shown}: not JSON: {e}"))?;
    let slot = doc
        .pointer_mut("/properties/custom")
        .ok_or_else(|| format!("--into-chart {shown}: no properties.custom to replace"))?;
    *slot = schema["properties"]["custom"].clone();
    let mut out = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    out.push('\n');
    std::fs::write(chart, out).map_err(|e| format!("--into-chart {shown}: {e}"))?;
    eprintln!("{shown}: properties.custom is the engine's schema");
    Ok(ExitCode::SUCCESS)
}
