//! Shared by the server's integration tests: launch the real `quota-hub` binary on a free loopback
//! port over a temporary SQLite file, issue tokens with its CLI, talk HTTP, dump the database.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use quota_host::contract::Table;
use quota_host::{Limits, Runtime, SqliteDb, SqliteOptions};

pub const BIN: &str = env!("CARGO_BIN_EXE_quota-hub");
/// How long a test waits for a condition (a line in the log, a server to start) before failing.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Lines a child printed, and a way to wait for one.
#[derive(Clone, Default)]
pub struct Lines(Arc<(Mutex<Vec<String>>, Condvar)>);

impl Lines {
    pub fn follow(&self, r: impl std::io::Read + Send + 'static) {
        let me = self.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(r).lines() {
                let Ok(line) = line else { break };
                let (lock, cv) = &*me.0;
                lock.lock().expect("lines").push(line);
                cv.notify_all();
            }
        });
    }

    /// The first line (seen so far or later) satisfying `pred`; panics after `patience`.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let (lock, cv) = &*self.0;
        let deadline = Instant::now() + PATIENCE;
        let mut lines = lock.lock().expect("lines");
        loop {
            if let Some(l) = lines.iter().find(|l| pred(l)) {
                return l.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no line {what} within {PATIENCE:?}; got:\n{}",
                lines.join("\n")
            );
            lines = cv.wait_timeout(lines, left).expect("lines").0;
        }
    }

    pub fn all(&self) -> Vec<String> {
        self.0 .0.lock().expect("lines").clone()
    }
}

pub struct Server {
    pub child: Child,
    /// `http://127.0.0.1:PORT/hub`
    pub url: String,
    pub db: PathBuf,
    pub stderr: Lines,
}

pub fn write_values(dir: &Path, name: &str, values: &serde_json::Value) -> PathBuf {
    // JSON is YAML: the server reads it as a values file.
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(values).expect("json")).expect("write values");
    p
}

impl Server {
    pub fn start(db: &Path, values: &Path, extra: &[&str]) -> Server {
        Server::start_with_env(db, values, extra, &[])
    }

    /// [`Server::start`] with extra environment variables for the server process.
    pub fn start_with_env(db: &Path, values: &Path, extra: &[&str], env: &[(String, String)]) -> Server {
        let mut s = Server::start_url(&format!("sqlite://{}", db.display()), values, extra, env);
        s.db = db.to_path_buf();
        s
    }

    /// A server on any `--db` URL (`postgres://...`); `db` is then empty.
    pub fn start_url(db_url: &str, values: &Path, extra: &[&str], env: &[(String, String)]) -> Server {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg("--db")
            .arg(db_url)
            .arg("--values")
            .arg(values)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start quota-hub");
        let stdout = Lines::default();
        let stderr = Lines::default();
        stdout.follow(child.stdout.take().expect("stdout"));
        stderr.follow(child.stderr.take().expect("stderr"));
        let line = stdout.wait_for("with the URL", |l| l.contains("listening on http://"));
        let url = line
            .split_whitespace()
            .last()
            .expect("url")
            .trim_end_matches('/')
            .to_string();
        Server {
            child,
            url,
            db: PathBuf::new(),
            stderr,
        }
    }

    /// One request to a path of this server (`/api/quota/me`), on a connection of its own: (status,
    /// body). `token` None sends no Authorization header.
    pub fn call(&self, method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> (u16, String) {
        http(&agent(), method, &format!("{}{path}", self.url), token, body, &[])
    }

    /// `GET` with a token.
    pub fn get(&self, path: &str, token: &str) -> (u16, String) {
        self.call("GET", path, Some(token), None)
    }

    /// `POST` of a JSON body with a token.
    pub fn post(&self, path: &str, token: &str, body: &str) -> (u16, String) {
        self.call("POST", path, Some(token), Some(body))
    }

    /// SIGTERM, then waits: the server must exit 0.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let st = Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
        assert!(st.success());
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "server exited with {status}");
    }

    pub fn kill9(mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the CLI; returns (exit code, stdout, stderr).
pub fn cli(args: &[&str]) -> (i32, String, String) {
    cli_in(&workspace(), args)
}

pub fn cli_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    cli_with_env(cwd, args, &[])
}

pub fn cli_with_env(cwd: &Path, args: &[&str], env: &[(String, String)]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("QUOTA_HUB_TOKEN")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run quota-hub");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issues a token with the CLI.
pub fn token(db: &Path, user: &str, admin: bool, scopes: &[&str]) -> String {
    token_with_env(db, user, admin, scopes, &[])
}

pub fn token_with_env(
    db: &Path,
    user: &str,
    admin: bool,
    scopes: &[&str],
    env: &[(String, String)],
) -> String {
    token_url(&format!("sqlite://{}", db.display()), user, admin, scopes, env)
}

/// Issues a token with the CLI on any `--db` URL.
pub fn token_url(dbarg: &str, user: &str, admin: bool, scopes: &[&str], env: &[(String, String)]) -> String {
    let mut args = vec!["token", "issue", "--db", dbarg, "--user", user];
    if admin {
        args.push("--admin");
    }
    // Course staff's scope per group, as the command line takes it: `--scope quota:manage --group g`.
    let mut managed = false;
    for s in scopes {
        match s.strip_prefix("quota:manage!group=") {
            Some(g) => {
                if !managed {
                    args.extend(["--scope", "quota:manage"]);
                    managed = true;
                }
                args.extend(["--group", g]);
            }
            None => args.extend(["--scope", s]),
        }
    }
    // quota-hub issues no unfiltered `quota:manage` (it needs `--group`): such a token is a row an
    // older tool or a hand edit left, written here the same way (SQLite only).
    let unfiltered = args
        .iter()
        .position(|a| *a == "quota:manage")
        .filter(|_| !managed);
    if let Some(i) = unfiltered {
        args.drain(i - 1..=i);
    }
    let (code, out, err) = cli_with_env(&workspace(), &args, env);
    assert_eq!(code, 0, "token issue failed: {err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "token issue prints one line: {out:?}");
    if unfiltered.is_some() {
        let path = dbarg
            .strip_prefix("sqlite://")
            .expect("an unfiltered scope on SQLite only");
        let mut conn =
            SqliteDb::open(&runtime(), Path::new(path), SqliteOptions::default()).expect("open db");
        use sha2::Digest;
        let hash: String = sha2::Sha256::digest(lines[0].as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        quota_host::Database::query(
            &mut conn,
            "UPDATE api_tokens SET scopes = trim(scopes || ' quota:manage') WHERE hash = ?1",
            &[hash.as_str().into()],
        )
        .expect("unfiltered scope");
    }
    lines[0].to_string()
}

/// Polls `ok` (every 50 ms) until it holds; panics after `patience`. For a state another process
/// reaches in its own time (a database back up, a lock gone), never instead of a signal it gives.
pub fn eventually(what: &str, ok: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// One request: (status, body), or why it could not be made (e.g. the server is gone). `token` None
/// sends no Authorization header; a body is sent as given, labelled JSON.
pub fn send(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> Result<(u16, String), String> {
    let mut req = ureq::http::Request::builder().method(method).uri(url);
    if let Some(t) = token {
        req = req.header("Authorization", format!("token {t}"));
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = match body {
        Some(b) => agent.run(
            req.header("Content-Type", "application/json")
                .body(b.to_vec())
                .map_err(|e| e.to_string())?,
        ),
        None => agent.run(req.body(()).map_err(|e| e.to_string())?),
    };
    let mut resp = resp.map_err(|e| format!("{method} {url}: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().map_err(|e| e.to_string())?;
    Ok((status, text))
}

/// [`send`] that must get an answer.
pub fn http(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, String) {
    send(agent, method, url, token, body.map(str::as_bytes), headers).unwrap_or_else(|e| panic!("{e}"))
}

/// The engine, for tests that open the database themselves.
pub fn runtime() -> Arc<Runtime> {
    static RT: std::sync::OnceLock<Arc<Runtime>> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        let path = workspace().join(quota_host::COMPONENT_PATH);
        Runtime::load(&path, Limits::default()).unwrap_or_else(|e| panic!("{e}"))
    })
    .clone()
}

/// Every row of the database (the engine's tables and quota-hub's), in a fixed order.
pub fn dump(db: &Path) -> String {
    let rt = runtime();
    let mut conn = SqliteDb::open(&rt, db, SqliteOptions::default()).expect("open db");
    let table = |name: &str, key: &[&str]| Table {
        name: name.into(),
        columns: vec!["*".into()],
        key: key.iter().map(|k| k.to_string()).collect(),
        identity: None,
    };
    let host = [
        table("api_tokens", &["hash"]),
        table("idempotency", &["caller", "method", "path", "key"]),
    ];
    quota_host::dump(&mut conn, &host).expect("dump")
}

pub fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

pub mod budget_load;
pub mod metrics;
pub mod receiver;

/// A test's place: a temporary directory (removed when this is dropped), a database file in it not
/// yet created, and a values file.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
    pub values: PathBuf,
}

impl Setup {
    /// A server on this database and values file.
    pub fn start(&self, extra: &[&str]) -> Server {
        Server::start(&self.db, &self.values, extra)
    }

    /// A token issued by the CLI on this database.
    pub fn token(&self, user: &str, admin: bool, scopes: &[&str]) -> String {
        token(&self.db, user, admin, scopes)
    }
}

/// [`Setup`] with the repository's `examples/values.yaml`.
pub fn example() -> Setup {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    Setup {
        dir,
        db,
        values: workspace().join("examples/values.yaml"),
    }
}

/// [`Setup`] with these values, written as `values.json` in the directory.
pub fn with_values(values: serde_json::Value) -> Setup {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("q.db");
    let values = write_values(dir.path(), "values.json", &values);
    Setup { dir, db, values }
}

/// A server on a fresh SQLite file with the smallest values (`authMode: github`), and an admin
/// token (user `root`) issued before it started. The directory lives as long as the fixture.
pub struct GithubServer {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
    pub admin: String,
    pub server: Server,
}

pub fn github_server(extra: &[&str]) -> GithubServer {
    let Setup { dir, db, values } = with_values(serde_json::json!({"custom": {"authMode": "github"}}));
    let admin = token(&db, "root", true, &[]);
    let server = Server::start(&db, &values, extra);
    GithubServer {
        dir,
        db,
        admin,
        server,
    }
}
