//! `set-quota`, `add-quota` (users from arguments or a CSV file, in batches) and `list-quota`.

use std::io::Write;
use std::process::ExitCode;

use quota_core::limits::BATCH_USERS_MAX;
use serde_json::json;

use crate::cli::QuotaArgs;
use crate::commands::quota_file::{self, Entry};
use crate::commands::target::{segment, Target};

/// Files with more rows than this get a progress bar.
const PROGRESS_ROWS_MIN: usize = 300;

fn entries_of(a: &QuotaArgs, set: bool) -> Result<(Vec<Entry>, Vec<String>), String> {
    let cmd = if set { "set-quota" } else { "add-quota" };
    if let Some(f) = &a.file {
        if !set && a.amount.is_none() {
            return Err(format!("{cmd}: --amount is required"));
        }
        let p = quota_file::read(f, a.amount, set)?;
        return Ok((p.entries, p.warnings));
    }
    if a.users.is_empty() {
        return Err(format!("{cmd}: name one or more users, or give -f FILE"));
    }
    let amount = a
        .amount
        .ok_or_else(|| format!("{cmd}: --amount is required with usernames"))?;
    let mut entries = Vec::new();
    for u in &a.users {
        let username = u.trim().to_lowercase();
        if username.is_empty() {
            return Err(format!("{cmd}: an empty username was given"));
        }
        entries.push(Entry {
            username,
            amount,
            line: 0,
        });
    }
    Ok((entries, Vec::new()))
}

pub(super) fn change_quota(a: QuotaArgs, set: bool) -> Result<ExitCode, String> {
    let cmd = if set { "set-quota" } else { "add-quota" };
    // The whole input is checked before the first write.
    if let Some(at) = &a.expires {
        quota_core::Timestamp::parse(at).map_err(|e| format!("{cmd}: --expires: {e}"))?;
    }
    let (entries, warnings) = entries_of(&a, set)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let mut target = Target::open(&a.target, false)?;
    let bar = if entries.len() > PROGRESS_ROWS_MIN {
        indicatif::ProgressBar::new(entries.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut failures: Vec<String> = Vec::new();
    let mut succeeded = 0usize;
    if set {
        for chunk in entries.chunks(BATCH_USERS_MAX) {
            let users: Vec<_> = chunk
                .iter()
                .map(|e| match &a.expires {
                    Some(at) => json!({"username": e.username, "amount": e.amount, "expires_at": at}),
                    None => json!({"username": e.username, "amount": e.amount}),
                })
                .collect();
            let body = json!({ "users": users }).to_string();
            match target.ok("POST", "/admin/api/quota/batch", &body) {
                Ok(v) => {
                    let details = v["details"].as_array().cloned().unwrap_or_default();
                    for (e, d) in chunk.iter().zip(details.iter()) {
                        if d["status"] == "success" {
                            succeeded += 1;
                        } else {
                            failures.push(failure(e, d["error"].as_str().unwrap_or("failed")));
                        }
                    }
                }
                Err(msg) => failures.extend(chunk.iter().map(|e| failure(e, &msg))),
            }
            bar.inc(chunk.len() as u64);
        }
    } else {
        for e in &entries {
            let body = match &a.expires {
                Some(at) => json!({"action": "add", "amount": e.amount, "expires_at": at}),
                None => json!({"action": "add", "amount": e.amount}),
            }
            .to_string();
            let path = format!("/admin/api/quota/users/{}", segment(&e.username));
            match target.ok("POST", &path, &body) {
                Ok(_) => succeeded += 1,
                Err(msg) => failures.push(failure(e, &msg)),
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    for f in &failures {
        eprintln!("failed: {f}");
    }
    println!(
        "{cmd}: {succeeded} succeeded, {} failed, {} skipped",
        failures.len(),
        warnings.len()
    );
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn failure(e: &Entry, msg: &str) -> String {
    if e.line > 0 {
        format!("line {}: {}: {msg}", e.line, e.username)
    } else {
        format!("{}: {msg}", e.username)
    }
}

/// Users per request of `list-quota`: the engine's largest page of the admin list route.
const LIST_PAGE_USERS: usize = quota_core::limits::USERS_PAGE_MAX;

pub(super) fn list_quota(target: &mut Target) -> Result<ExitCode, String> {
    // Page by page (no single answer holds 50,000 users), then written line by line.
    let mut rows: Vec<[String; 3]> = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let query = match &after {
            None => format!("limit={LIST_PAGE_USERS}"),
            Some(a) => format!("limit={LIST_PAGE_USERS}&after={}", segment(a)),
        };
        let v = target.ok("GET", &format!("/admin/api/quota/?{query}"), "")?;
        for u in v["users"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let balance = if u["unlimited"] == true {
                "unlimited".to_string()
            } else {
                u["balance"].to_string()
            };
            rows.push([
                u["username"].as_str().unwrap_or("").to_string(),
                balance,
                u["updated_at"].as_str().unwrap_or("").to_string(),
            ]);
        }
        match v["next_after"].as_str() {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
    }
    let head = ["Username", "Balance", "Last Updated"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0), width(1));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = writeln!(out, "Users ({})", rows.len()).and_then(|()| {
        for [a, b, c] in std::iter::once(head.map(str::to_string)).chain(rows) {
            writeln!(out, "{a:<w0$}  {b:>w1$}  {c}")?;
        }
        out.flush()
    });
    written.map_err(|e| format!("stdout: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
