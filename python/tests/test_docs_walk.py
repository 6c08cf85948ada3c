"""docs/z2jh.md, docs/deploy.md and docs/upgrade.md walked end to end: every command of their `sh` blocks runs, as
written and in order, from an operator's directory (the checkout's files beside the operator's
own `config.yaml` and `my-values.yaml`), and each must succeed. What this machine lacks has a
stand-in on PATH (python/tests/support/walk/bin): `docker` builds without an engine (the same image
scripts/build-image.sh builds; z2jh's hub image as a virtualenv with its pins and the
Dockerfile's own install line) and runs the unpacked binary; `kubectl` keeps applied objects
after checking them against Kubernetes' schema and execs in the built hub image; `helm` renders
with Helm's own SDK; `skopeo` is the real one with a local registry. Then what the walk made is
read back: the image the chart deploys is the one pushed, the server served and the issued
token works, the CronJobs and the alert rules are in the cluster, the hub's command line did
what the docs say."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from support.hub_process import DEADLINE_S, free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
WALK = Path(__file__).resolve().parent / "support" / "walk"
VERSION = (REPO / "VERSION").read_text().strip()
#: Placeholders the docs leave to the operator, and what the walk puts there.
TOKEN = secrets.token_hex(32)
PLACEHOLDERS = {"<the same string>": TOKEN}


def commands(doc: str) -> list[str]:
    """Every command of the document's `sh` blocks: continuation lines joined, comments dropped
    (the shell drops trailing ones)."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", (REPO / doc).read_text(), re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        out += [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return out


def with_placeholders(line: str) -> str:
    for k, v in PLACEHOLDERS.items():
        line = line.replace(k, v)
    left = re.findall(r"<[a-z][^<>]*>", line)
    assert not left, f"a placeholder the walk does not fill: {left} in {line}"
    return line


def serves(line: str) -> bool:
    """`docker run ... IMAGE` with no command after the image: the image's default, `serve`."""
    words = shlex.split(line, comments=True)
    if words[:2] != ["docker", "run"]:
        return False
    rest = words[2:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-p", "-v", "-e") else rest[1:]
    return len(rest) == 1


class Walk:
    def __init__(self, tmp: Path):
        self.state = tmp / "state"
        self.state.mkdir()
        self.dir = tmp / "operator"
        self.dir.mkdir()
        for entry in REPO.iterdir():
            if entry.name not in (".git", "dist"):
                (self.dir / entry.name).symlink_to(entry)
        # The operator's own files: the z2jh values (examples/z2jh/config.yaml), quota-hub's values.
        shutil.copy(REPO / "examples/z2jh/config.yaml", self.dir / "config.yaml")
        shutil.copy(REPO / "examples/values.yaml", self.dir / "my-values.yaml")
        shutil.rmtree(REPO / "target" / "wheels", ignore_errors=True)
        # An earlier build's wheel beside the one z2jh.md builds (a folder reused across versions):
        # the hub image takes its own version's, or its pip install fails on this one.
        (REPO / "target" / "wheels").mkdir(parents=True)
        (REPO / "target" / "wheels" / "jupyterhub_quota-0.1.0-py3-none-any.whl").write_text("an older build")
        tools = tmp / "tools"
        tools.mkdir()
        (tools / "quota-hub").symlink_to(REPO / "target" / "debug" / "quota-hub")
        self.port = free_port()
        self.env = {**os.environ, "WALK_STATE": str(self.state), "WALK_REPO": str(REPO), "WALK_PORT": str(self.port),
                    "PATH": os.pathsep.join([str(WALK / "bin"), str(tools), str(Path(sys.executable).parent), os.environ["PATH"]])}
        self.servers: list[tuple[str, subprocess.Popen]] = []
        self.out: dict[str, subprocess.CompletedProcess] = {}
        self.walked: list[str] = []

    def after(self, *docs: str) -> None:
        """The documents a page's walk comes after, walked in this operator's directory unless an
        earlier test of the module walked them already (each server they start, stopped)."""
        for doc in docs:
            if doc not in self.walked:
                self.run(doc)
                self.stop()

    def run(self, doc: str) -> None:
        self.walked.append(doc)
        lines = commands(doc)
        assert lines, doc
        for line in lines:
            line = with_placeholders(line)
            if serves(line):
                proc = subprocess.Popen(["sh", "-c", f"exec {line}"], cwd=self.dir, env=self.env, start_new_session=True)
                self.servers.append((line, proc))
                wait_for(f"`{line}` to serve", self.ready)
                continue
            r = subprocess.run(["sh", "-c", line], cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=DEADLINE_S * 10)
            assert r.returncode == 0, f"{doc}: `{line}` failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
            self.out[line] = r

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/hub/readyz", timeout=5) as r:
                return json.loads(r.read())
        except OSError:
            return None

    def output(self, start: str) -> str:
        [r] = [r for line, r in self.out.items() if line.startswith(start)]
        return r.stdout

    def stop(self) -> None:
        for line, proc in self.servers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout=DEADLINE_S) == 0, f"`{line}` stops cleanly on SIGTERM"

    def cluster(self, kind: str, namespace: str) -> dict[str, dict]:
        return {p.stem.split("-", 1)[1]: yaml.safe_load(p.read_text())
                for p in sorted((self.state / "cluster" / namespace).glob(f"{kind}-*.yaml"))}


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    """One operator's directory and one cluster for the module, as an operator goes through the
    pages: deploy.md, then z2jh.md beside it, then upgrade.md on what both made. Each test walks
    what it comes after when it runs alone (`Walk.after`); in order, each page is walked once."""
    w = Walk(tmp_path_factory.mktemp("walk"))
    try:
        yield w
    finally:
        for _, proc in w.servers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)


def test_docs_deploy_md_runs_end_to_end(walk):
    walk.run("docs/deploy.md")
    # The server `docker run` started is up, and the admin token `token issue` wrote to the same
    # volume works against it.
    assert walk.ready() == {"status": "ready", "schema_version": 12}
    token = walk.output("docker run --rm -v quota-data:/data").strip()
    req = urllib.request.Request(f"http://127.0.0.1:{walk.port}/hub/admin/api/quota/users/alice", method="POST",
                                 data=b'{"action": "set", "amount": 5}', headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
        assert json.loads(r.read())["balance"] == 5
    walk.stop()
    assert (walk.state / "volumes" / "quota-data" / "quota.db").is_file(), "the database is on the volume"
    # skopeo pushed the layout to the registry and the daemon, and the chart deploys that image.
    for place in ("registry", "daemon"):
        index = json.loads((walk.state / place / "quota-hub" / "index.json").read_text())
        assert index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == VERSION
    [deployment] = walk.cluster("Deployment", "jhub").values()
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"registry.example.org/quota-hub:{VERSION}"
    configs = walk.cluster("ConfigMap", "jhub")
    values = yaml.safe_load(next(c for c in configs.values() if "values.yaml" in c.get("data", {}))["data"]["values.yaml"])
    assert values["custom"] == yaml.safe_load((REPO / "examples/values.yaml").read_text())["custom"], "my-values.yaml's custom block"
    assert "PersistentVolumeClaim" in {p.name.split("-")[0] for p in (walk.state / "cluster" / "jhub").iterdir()}
    assert "quota-hub" in walk.output("helm install quota-hub")
    # The released chart (oci://, revision 1) deploys the released image; the upgrade, the one built here.
    first = json.loads((walk.state / "releases" / "jhub" / "quota-hub" / "1.json").read_text())
    [dep1] = [d for d in first["docs"] if d["kind"] == "Deployment"]
    assert dep1["spec"]["template"]["spec"]["containers"][0]["image"] == f"ghcr.io/quota-engine/quota-hub:{VERSION}"


def test_docs_z2jh_md_runs_end_to_end(walk):
    walk.after("docs/deploy.md")
    walk.run("docs/z2jh.md")
    values = yaml.safe_load((REPO / "examples/z2jh/config.yaml").read_text())
    # The hub image the example runs is the one a release pushes (release.yml's hub-image job names
    # it the same way); the walk's nodes pull it as that job builds it. The build section 1 shows
    # for one's own registry ran too, from a folder that also held an older wheel, and was pushed.
    repo = yaml.safe_load((REPO / "deploy/helm/quota-hub/values.yaml").read_text())["image"]["repository"]
    z2jh = re.search(r"^ARG Z2JH_VERSION=(\S+)$", (REPO / "deploy/z2jh/hub.Dockerfile").read_text(), re.M).group(1)
    image = f"{values['hub']['image']['name']}:{values['hub']['image']['tag']}"
    assert image == f"{repo.rsplit('/', 1)[0]}/hub-quota:{z2jh}-quota-{VERSION}", image
    release_yml = (REPO / ".github/workflows/release.yml").read_text()
    assert 'image="${repo%/*}/hub-quota:${z2jh}-quota-${VERSION}"' in release_yml
    pulled = json.loads((walk.state / "images" / re.sub(r"[^A-Za-z0-9_.-]+", "_", image) / "image.json").read_text())
    assert pulled["kind"] == "z2jh-hub" and pulled["extras"] == "postgres", pulled
    own = "registry.example.org/hub-quota:4.4.0-quota-" + VERSION
    assert (walk.state / "pushed" / re.sub(r"[^A-Za-z0-9_.-]+", "_", own)).read_text() == own, "the own build was pushed"
    # The single-user image the example names: built as root over an older JupyterLab, raised, pushed.
    single = f"{values['singleuser']['image']['name']}:{values['singleuser']['image']['tag']}"
    record = json.loads((walk.state / "images" / re.sub(r"[^A-Za-z0-9_.-]+", "_", single) / "image.json").read_text())
    assert record["kind"] == "z2jh-singleuser" and tuple(map(int, record["jupyterlab"].split(".")[:3])) >= (4, 5, 11), record
    assert (walk.state / "pushed" / re.sub(r"[^A-Za-z0-9_.-]+", "_", single)).is_file()
    # The refresh CronJobs (one per enabled rule) and the token Secret they use are in the cluster:
    # the objects of the quota-cronjobs chart's revision (deploy.md's release, walked before in the
    # same namespace, has CronJobs of its own).
    rules = [n for n, r in values["custom"]["quota"]["refreshRules"].items() if r.get("enabled")]
    [owned] = [json.loads(p.read_text()) for p in (walk.state / "releases" / "jhub" / "quota-cronjobs").glob("*.json")]
    names = sorted(d["metadata"]["name"] for d in owned["docs"])
    in_cluster = walk.cluster("CronJob", "jhub")
    cronjobs = {name: in_cluster[name] for name in names}
    assert len(cronjobs) == len(rules) > 0, (names, rules)
    for job in cronjobs.values():
        pod = job["spec"]["jobTemplate"]["spec"]["template"]
        assert pod["metadata"]["labels"]["hub.jupyter.org/network-access-hub"] == "true"
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        # The token z2jh keeps in its own `hub` Secret: in no values file, in no second Secret.
        assert env["QUOTA_HUB_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "hub", "key": "hub.services.quota-cron.apiToken"}
        assert pod["spec"]["containers"][0]["image"] == f"ghcr.io/quota-engine/quota-hub:{VERSION}", "the release's image"
    [rule] = walk.cluster("PrometheusRule", "jhub").values()
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert any('job="hub", namespace="jhub"' in e for e in exprs), exprs
    # The hub's command line, inside the image the walk built: what section 8 did.
    assert re.search(r"^alice\s+150\s", walk.output("kubectl exec -n jhub deploy/hub -- jupyterhub-quota list"), re.M)
    ledger = (walk.dir / "ledger.csv").read_text().splitlines()
    assert ledger[0].startswith("id,created_at,username,transaction_type,amount") and len(ledger) == 5
    backups = walk.state / "hub-container" / "srv" / "jupyterhub" / "quota-backups"
    [backup] = [p for p in backups.iterdir() if p.is_file() and p.name != "backup-state.json"]
    assert backup.suffix == ".db"
    # What the metrics read: the backup's size, no failure (QuotaBackupStale, QuotaBackupFailing).
    state = json.loads((backups / "backup-state.json").read_text())
    assert state["last_bytes"] == backup.stat().st_size and state["failures"] == 0, state
    assert "every balance equals its ledger" in walk.output("kubectl exec -n jhub deploy/hub -- jupyterhub-quota check")


#: upgrade.md's z2jh restore as it read before issue 59, the fill of its manifest aside: no wait for
#: the hub's pod to go, none for the new one to be ready. On a cluster whose pods take time, the
#: restore pod finds the database still open and fails, and the check finds no ready hub.
RESTORE_WITHOUT_WAITS = [
    "kubectl scale -n jhub deploy/hub --replicas=0",
    "QUOTA_RESTORE_IMAGE=ghcr.io/quota-engine/hub-quota:4.4.0-quota-0.2.0 QUOTA_DB_CLAIM=hub-db-dir QUOTA_DB_DIR=/srv/jupyterhub "
    "QUOTA_DB_FILE=quota.sqlite QUOTA_BACKUP= envsubst < deploy/z2jh/quota-restore.yaml | kubectl apply -n jhub -f -",
    "kubectl wait -n jhub pod/quota-restore --for=jsonpath={.status.phase}=Succeeded --timeout=300s",
]


def test_docs_upgrade_md_runs_after_deploy_and_z2jh(walk):
    """upgrade.md on what deploy.md and z2jh.md made: quota-hub's release upgraded with the
    released chart and rolled back (three revisions, the rollback's objects those of the first),
    and the hub's quota database backed up, listed, restored by the one-off pod once the hub's pod
    is gone, and checked once the new one is ready. First, the runbook without its waits fails on
    the same pods, as it would on a cluster."""
    walk.after("docs/deploy.md", "docs/z2jh.md")
    hasty = [subprocess.run(["sh", "-c", line], cwd=walk.dir, env=walk.env, capture_output=True, text=True)
             for line in RESTORE_WITHOUT_WAITS]
    assert [r.returncode for r in hasty] == [0, 0, 1], [r.stderr for r in hasty]
    assert "phase Failed" in hasty[2].stderr, hasty[2].stderr
    for line, says in (("kubectl scale -n jhub deploy/hub --replicas=1", ""),
                       ("kubectl exec -n jhub deploy/hub -- jupyterhub-quota check", "no running hub pod")):
        r = subprocess.run(["sh", "-c", line], cwd=walk.dir, env=walk.env, capture_output=True, text=True)
        assert (r.returncode != 0) == bool(says) and says in r.stderr, (line, r.stderr)
    subprocess.run(["kubectl", "rollout", "status", "-n", "jhub", "deploy/hub", "--timeout=600s"], cwd=walk.dir, env=walk.env,
                   check=True, capture_output=True)
    walk.run("docs/upgrade.md")
    history = walk.output("helm history quota-hub").splitlines()
    assert [line.split("\t")[0] for line in history[1:]] == ["1", "2", "3"], history
    releases = walk.state / "releases" / "jhub" / "quota-hub"
    before, rolled_back = (json.loads((releases / f"{n}.json").read_text()) for n in (2, 4))
    assert rolled_back["description"] == "Rollback to 2" and rolled_back["docs"] == before["docs"]
    restored = walk.output("kubectl logs -n jhub pod/quota-restore")
    assert restored.startswith("restored ") and "schema 12" in restored and "is kept as" in restored, restored
    assert "every balance equals its ledger" in walk.output("kubectl exec -n jhub deploy/hub -- jupyterhub-quota check")
    assert json.loads((walk.state / "pods.json").read_text())["hub"]["phase"] == "Running"
    listed = walk.output("kubectl exec -n jhub deploy/hub -- jupyterhub-quota backups")
    assert "pre-migration" in listed and "quota-backups" in listed, listed
