//! What each command does, one module per command (or family of commands); `run` dispatches.

mod backup;
mod backup_list;
mod budgets;
mod config;
mod export;
mod groups;
mod migrate;
pub mod migrate_db;
mod quota;
pub mod quota_file;
mod refresh;
mod restore;
mod serve;
pub mod target;
mod token;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::commands::target::Target;
use crate::commands::token as token_commands;
use crate::schedule::cronjobs;

pub fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Serve(a) => serve::serve(a),
        Command::Token { command } => token_commands::run(command),
        Command::SetQuota(a) => quota::change_quota(a, true),
        Command::AddQuota(a) => quota::change_quota(a, false),
        Command::ExportLedger(a) => export::export_ledger(a),
        Command::ListQuota(t) => quota::list_quota(&mut Target::open(&t, false)?),
        Command::Group { command } => groups::run(command),
        Command::Budget { command } => budgets::run(command),
        Command::SyncGroups(a) => groups::sync(a),
        Command::Refresh {
            rule,
            dry_run,
            rule_json,
            run_id,
            scheduled_within,
            target,
        } => refresh::refresh(&rule, dry_run, rule_json, run_id, scheduled_within, &target),
        Command::MigrateDb {
            from,
            to,
            values,
            replace,
        } => crate::commands::migrate_db::run(&from, &to, &values, replace).map(|()| ExitCode::SUCCESS),
        Command::RenderCronjobs {
            values,
            namespace,
            name_prefix,
            hub_url,
            token_secret,
            token_key,
            image,
            image_pull_secrets,
            hub_access_label,
            no_hub_access_label,
            pod_labels,
            pod_annotations,
            requests,
            limits,
            chart_dir,
        } => {
            let access = (!no_hub_access_label).then_some(hub_access_label);
            let pairs = |args: &[String], what: &str| -> Result<Vec<(String, String)>, String> {
                args.iter()
                    .map(|a| cronjobs::parse_pair(a).map_err(|e| format!("{what} {e}; no CronJobs rendered")))
                    .collect()
            };
            let labels = pairs(
                &access.into_iter().chain(pod_labels).collect::<Vec<_>>(),
                "--pod-label",
            )?;
            let annotations = pairs(&pod_annotations, "--pod-annotation")?;
            let resources = cronjobs::resources(&pairs(&requests, "--request")?, &pairs(&limits, "--limit")?)
                .map_err(|bad| format!("{}; no CronJobs rendered", bad.join("; ")))?;
            let o = cronjobs::Options {
                name_prefix: &name_prefix,
                namespace: &namespace,
                hub_url: &hub_url,
                token_secret: &token_secret,
                token_key: &token_key,
                image: &image,
                image_pull_secrets: &image_pull_secrets,
                pod_labels: &labels,
                pod_annotations: &annotations,
                resources: &resources,
            };
            config::render_cronjobs(&values, &o, chart_dir.as_deref())
        }
        Command::Backup {
            db,
            output,
            force,
            keep,
            values,
        } => {
            backup::backup(&db, &output, &values, force, keep.map(|k| k as usize)).map(|()| ExitCode::SUCCESS)
        }
        Command::Backups { dirs } => backup_list::run(&dirs).map(|()| ExitCode::SUCCESS),
        Command::Migrate {
            db,
            backup_dir,
            no_backup,
            values,
        } => migrate::run(&db, backup_dir.as_deref(), no_backup, &values).map(|()| ExitCode::SUCCESS),
        Command::Restore { db, input, values } => {
            restore::restore(&db, &input, &values).map(|()| ExitCode::SUCCESS)
        }
        Command::Cleanup(t) => {
            let v = Target::open(&t, false)?.ok("POST", "/admin/api/quota/cleanup", "{}")?;
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        Command::CheckConfig { values } => config::check_config(&values),
        Command::ConfigSchema { into_chart } => config::config_schema(into_chart.as_deref()),
        Command::Healthcheck { url } => healthcheck(&url),
    }
}

/// `healthcheck`: `{url}/readyz` answered 200 is healthy.
fn healthcheck(url: &str) -> Result<ExitCode, String> {
    let probe = format!("{}/readyz", url.trim_end_matches('/'));
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(10)))
        .build();
    let agent: ureq::Agent = config.into();
    let mut resp = agent.get(&probe).call().map_err(|e| format!("{probe}: {e}"))?;
    let status = resp.status().as_u16();
    let body = resp.body_mut().read_to_string().unwrap_or_default();
    println!("{probe}: {status} {}", body.trim_end());
    Ok(if status == 200 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
