//! `export-ledger`: every transaction of a range of UTC days, oldest first, as CSV or JSON lines.
//! The ledger is read a page at a time through the same REST route as every other command (the
//! database directly, or a running server), and each page is written before the next is read, so
//! memory stays flat however many rows there are.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::cli::ExportLedgerArgs;
use crate::commands::target::{segment, Target};

/// The CSV columns, in order (the REST API's transaction fields).
pub const CSV_COLUMNS: [&str; 12] = [
    "id",
    "created_at",
    "username",
    "transaction_type",
    "amount",
    "resource_type",
    "description",
    "balance_before",
    "balance_after",
    "created_by",
    "budget",
    "expires_at",
];

/// Rows per page read: the engine's largest ledger page.
const PAGE_ROWS: usize = quota_core::limits::LEDGER_PAGE_MAX;

fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Where the rows go: standard output, or `<output>.partial` renamed to `--output` once complete.
type Out = BufWriter<Box<dyn Write>>;

fn open(output: Option<&Path>) -> Result<(Out, Option<(PathBuf, PathBuf)>), String> {
    let Some(path) = output else {
        return Ok((BufWriter::new(Box::new(std::io::stdout().lock())), None));
    };
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = std::fs::File::create(&partial).map_err(|e| format!("--output {}: {e}", partial.display()))?;
    Ok((
        BufWriter::with_capacity(1 << 16, Box::new(file)),
        Some((partial, path.to_path_buf())),
    ))
}

fn finish(mut out: Out, file: Option<(PathBuf, PathBuf)>) -> Result<(), String> {
    out.flush().map_err(|e| format!("writing the export: {e}"))?;
    drop(out);
    if let Some((partial, path)) = file {
        std::fs::File::open(&partial)
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|e| format!("--output {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Either writer, so one loop serves both formats.
enum Rows {
    Csv(Box<csv::Writer<Out>>),
    Jsonl(Out),
}

impl Rows {
    fn write(&mut self, t: &Value) -> Result<(), String> {
        match self {
            Rows::Csv(w) => w
                .write_record(CSV_COLUMNS.iter().map(|c| cell(&t[*c])))
                .map_err(|e| format!("writing the export: {e}")),
            Rows::Jsonl(w) => serde_json::to_writer(&mut *w, t)
                .map_err(|e| e.to_string())
                .and_then(|()| w.write_all(b"\n").map_err(|e| format!("writing the export: {e}"))),
        }
    }

    fn into_out(self) -> Result<Out, String> {
        match self {
            Rows::Csv(w) => w
                .into_inner()
                .map_err(|e| format!("writing the export: {}", e.error())),
            Rows::Jsonl(w) => Ok(w),
        }
    }
}

pub(super) fn export_ledger(a: ExportLedgerArgs) -> Result<ExitCode, String> {
    let mut query = String::new();
    for (k, v) in [("from", &a.from), ("to", &a.to), ("username", &a.user)] {
        if let Some(v) = v {
            query.push_str(&format!("&{k}={}", segment(v)));
        }
    }
    let mut target = Target::open(&a.target, false)?;
    // The first page before the output is opened: a bad range or user writes no file.
    let first = target.ok(
        "GET",
        &format!("/admin/api/quota/transactions?after_id=0&limit={PAGE_ROWS}{query}"),
        "",
    )?;
    let (out, file) = open(a.output.as_deref())?;
    let mut rows = if a.format == "csv" {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(CSV_COLUMNS).map_err(|e| e.to_string())?;
        Rows::Csv(Box::new(w))
    } else {
        Rows::Jsonl(out)
    };
    let partial = file.as_ref().map(|(p, _)| p.clone());
    let written = write_pages(&mut target, &mut rows, first, &query);
    let finished = written.and_then(|count| {
        finish(rows.into_out()?, file)?;
        Ok(count)
    });
    match finished {
        Ok(count) => {
            eprintln!("{count} transactions exported");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // Nothing half-written is left behind under any name.
            if let Some(p) = partial {
                let _ = std::fs::remove_file(p);
            }
            Err(e)
        }
    }
}

/// Writes the first page and every page after it; returns how many rows.
fn write_pages(target: &mut Target, rows: &mut Rows, first: Value, query: &str) -> Result<u64, String> {
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {human_pos} transactions exported ({per_sec})")
            .map_err(|e| e.to_string())?,
    );
    let mut page = first;
    let mut count = 0u64;
    loop {
        let txs = page["transactions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for t in txs {
            rows.write(t)?;
        }
        count += txs.len() as u64;
        bar.set_position(count);
        let Some(next) = page["next_after_id"].as_i64() else {
            break;
        };
        let path = format!("/admin/api/quota/transactions?after_id={next}&limit={PAGE_ROWS}{query}");
        page = target.ok("GET", &path, "")?;
    }
    bar.finish_and_clear();
    Ok(count)
}
