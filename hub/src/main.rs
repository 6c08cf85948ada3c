//! `quota-hub`: the quota server and its admin command line. See `quota-hub --help`.

mod app;
mod cli;
mod clock;
mod commands;
mod engine;
mod http;
mod listen;
mod log;
mod metrics;
mod schedule;
mod storage;
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
