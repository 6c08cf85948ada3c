//! `serve` refuses a SQLite file that would be lost with the container: the server runs in a real
//! container-like root (a mount namespace whose `/` is an overlay over this machine's, as container
//! runtimes lay a container's writable layer, with a folder bind-mounted at `/data` as a volume is).
//! Needs root (mount namespaces), as the README's test command runs.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{Lines, BIN};
use serde_json::json;

/// `quota-hub serve ARGS` inside the overlay root, as a child whose stdout and stderr are followed.
fn serve_in_container(dir: &Path, args: &[&str]) -> (std::process::Child, Lines, Lines) {
    for d in ["u", "w", "m", "vol"] {
        std::fs::create_dir_all(dir.join(d)).expect("dir");
    }
    let values = common::write_values(dir, "values.yaml", &json!({"custom": {"authMode": "github"}}));
    let d = dir.display();
    let script = format!(
        "set -e; mount -t overlay overlay -o lowerdir=/,upperdir={d}/u,workdir={d}/w {d}/m; \
         mount -t proc proc {d}/m/proc; mkdir -p {d}/m/data {d}/m/srv; mount --bind {d}/vol {d}/m/data; \
         exec chroot {d}/m \"$@\""
    );
    let mut child = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
            BIN,
            "serve",
        ])
        .args(["--values", &values.to_string_lossy(), "--listen", "127.0.0.1:0"])
        .args(args)
        .env("QUOTA_CACHE_DIR", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare (util-linux) starts; the test needs root for a mount namespace");
    let (out, err) = (Lines::default(), Lines::default());
    out.follow(child.stdout.take().expect("stdout"));
    err.follow(child.stderr.take().expect("stderr"));
    (child, out, err)
}

fn serves(dir: &Path, args: &[&str]) {
    let (mut child, out, _err) = serve_in_container(dir, args);
    out.wait_for("saying it listens", |l| l.contains("listening on http://"));
    child.kill().expect("kill");
    child.wait().expect("wait");
}

#[test]
fn a_database_on_the_containers_own_layer_is_refused_naming_db_and_the_fix() {
    let dir = tempfile::tempdir().expect("dir");
    let (mut child, out, err) = serve_in_container(dir.path(), &["--db", "sqlite:///srv/quota.db"]);
    let status = child.wait().expect("wait");
    let stderr = err.all().join("\n");
    assert!(!status.success(), "refused: {stderr}");
    assert!(
        out.all().iter().all(|l| !l.contains("listening")),
        "it never served"
    );
    for part in [
        "--db sqlite:///srv/quota.db",
        "/srv/quota.db",
        "container's own file system (overlay",
        "volume",
        "--allow-ephemeral-db",
    ] {
        assert!(stderr.contains(part), "`{part}` in: {stderr}");
    }
    assert!(!dir.path().join("u/srv/quota.db").exists(), "no file was made");
}

#[test]
fn a_database_on_a_mounted_volume_serves() {
    let dir = tempfile::tempdir().expect("dir");
    serves(dir.path(), &["--db", "sqlite:///data/quota.db"]);
    assert!(
        dir.path().join("vol/quota.db").exists(),
        "the database is on the volume"
    );
}

#[test]
fn allow_ephemeral_db_serves_from_the_containers_layer() {
    let dir = tempfile::tempdir().expect("dir");
    serves(
        dir.path(),
        &["--db", "sqlite:///srv/quota.db", "--allow-ephemeral-db"],
    );
    assert!(
        dir.path().join("u/srv/quota.db").exists(),
        "the database is in the container's layer"
    );
}
