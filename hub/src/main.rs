//! `quota-hub`: the quota server and its admin command line. See `quota-hub --help`.

#![allow(non_upper_case_globals)]

mod cli;
mod clock;
mod commands;
mod cronjobs;
mod db;
mod durable;
mod engine;
mod health;
mod host_tables;
mod listen;
mod log;
mod metrics;
mod migrate_db;
mod pages;
mod pool;
mod process_metrics;
mod quota_file;
mod scheduler;
mod server;
mod target;
mod token_commands;
mod token_import;
mod token_rows;
mod tokens;
mod values;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    log::init(cli.log_format == "json");
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("quota-hub: {e}");
            ExitCode::FAILURE
        }
    }
}
