//! `quota-call`: sends one REST request through the engine component to a SQLite database and
//! prints the status and JSON body. For operators poking at a database, and for tests that need
//! several independent processes on one file.
//!
//! ```text
//! quota-call --db quota.db --values values.json --as admin[,admin|,quota:scope...] \
//!            [--now 2026-11-22T10:00:00Z] METHOD PATH[?QUERY] [BODY]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use quota_host::{Runtime, SqliteDb, SqliteOptions, Worker};

const USAGE: &str =
    "usage: quota-call --db FILE --values FILE.json [--as NAME[,admin][,SCOPE...]] [--now RFC3339] \
[--component FILE.wasm] METHOD PATH[?QUERY] [BODY]";

fn run() -> Result<String, String> {
    let mut args = std::env::args().skip(1);
    let (mut db, mut values, mut caller, mut now, mut component) = (None, None, None, None, None);
    let mut rest = Vec::new();
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        match a.as_str() {
            "--db" => db = Some(PathBuf::from(value("--db")?)),
            "--values" => values = Some(PathBuf::from(value("--values")?)),
            "--as" => caller = Some(value("--as")?),
            "--now" => now = Some(value("--now")?),
            "--component" => component = Some(PathBuf::from(value("--component")?)),
            "-h" | "--help" => return Ok(USAGE.to_string()),
            _ => rest.push(a),
        }
    }
    let db = db.ok_or(format!("--db is required\n{USAGE}"))?;
    let values = values.ok_or(format!("--values is required\n{USAGE}"))?;
    let (method, target) = match rest.as_slice() {
        [m, t] | [m, t, _] => (m.clone(), t.clone()),
        _ => return Err(USAGE.to_string()),
    };
    let body = rest.get(2).cloned().unwrap_or_default();
    let caller = caller.map(|spec| {
        let mut parts = spec.split(',');
        let name = parts.next().unwrap_or_default().to_string();
        let (mut admin, mut scopes) = (false, Vec::new());
        for p in parts {
            if p == "admin" {
                admin = true;
            } else {
                scopes.push(p.to_string());
            }
        }
        quota_core::Caller { name, admin, scopes }
    });
    let now = match now {
        Some(t) => quota_core::Timestamp::parse(&t).map_err(|e| format!("--now: {e}"))?,
        None => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(|e| format!("clock: {e}"))?
                .as_secs();
            quota_core::Timestamp(i64::try_from(secs).map_err(|e| e.to_string())?)
        }
    };
    let values_json = std::fs::read_to_string(&values).map_err(|e| format!("{}: {e}", values.display()))?;
    let component = component.unwrap_or_else(|| {
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.to_path_buf()));
        // target/<profile>/quota-call -> target/wasm/quota-engine.wasm
        exe_dir
            .and_then(|d| d.parent().map(|t| t.join("wasm/quota-engine.wasm")))
            .unwrap_or_else(|| PathBuf::from(quota_host::COMPONENT_PATH))
    });
    let runtime = Runtime::load(&component, quota_host::Limits::default()).map_err(|e| e.to_string())?;
    let db_conn = SqliteDb::open(&runtime, &db, SqliteOptions::default()).map_err(|e| e.to_string())?;
    let mut worker = Worker::new(runtime, Box::new(db_conn), &values_json).map_err(|e| e.to_string())?;
    let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
    let req = quota_core::Request {
        method: &method,
        path,
        query,
        body: &body,
        caller: caller.as_ref(),
    };
    let resp = worker.handle_request(&req, now).map_err(|e| e.to_string())?;
    Ok(format!("{} {}", resp.status, resp.body))
}

fn main() -> ExitCode {
    match run() {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("quota-call: {e}");
            ExitCode::FAILURE
        }
    }
}
