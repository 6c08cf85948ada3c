"""The Helm chart (deploy/helm/quota-hub) rendered offline by Helm's own Go SDK (helm-python-sdk),
its values with every option on, and the series a real quota-hub exports: what the chart tests,
the monitoring tests and the metrics parity test share."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import promql_parser
import yaml

import helm_python as helm  # noqa: E402  (pinned in requirements-test.txt)

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "deploy" / "helm" / "quota-hub"
QUOTA_HUB = REPO / "target" / "debug" / "quota-hub"
VERSION = (REPO / "VERSION").read_text().strip()
RULES = {
    "weekly-topup": {"enabled": True, "schedule": "0 6 * * 1", "action": "add", "amount": 1000000, "maxBalance": 2000000,
                     "targets": {"balanceBelow": 1500000, "includeUnlimited": False}},
    "zero": {"enabled": True, "schedule": "0 3 * * *", "action": "add", "amount": 0},
    "paused": {"enabled": False, "schedule": "0 3 * * *", "action": "set", "amount": 5},
}
#: Every option on.
FULL = {
    "replicas": 3,
    "database": {"type": "postgres", "postgres": {"secretName": "pg", "key": "url"}},
    "tokens": {"existingSecret": "my-tokens"},
    "imagePullSecrets": [{"name": "registry"}],
    "nodeSelector": {"pool": "services"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "services", "effect": "NoSchedule"}],
    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
        "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "quota-hub"}}}}]}},
    "extraEnv": [{"name": "RUST_LOG", "value": "info"}],
    "extraArgs": ["--log-format", "json"],
    "podAnnotations": {"team": "research"},
    "image": {"digest": "sha256:" + "ab" * 32},
    "serviceAccount": {"create": True, "annotations": {"iam.example.org/role": "quota"}},
    "priorityClassName": "services-high",
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
                                   "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "quota-hub"}}}],
    "extraEnvFrom": [{"configMapRef": {"name": "proxy-settings"}}],
    "extraVolumes": [{"name": "ca", "configMap": {"name": "company-ca"}}],
    "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/ssl/company", "readOnly": True}],
    "initContainers": [{"name": "wait-for-db", "image": "busybox:1.37", "command": ["sh", "-c", "true"]}],
    "networkPolicy": {"enabled": True, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
                                                    "ports": [{"port": "http"}]}]},
    "ingress": {"enabled": True, "className": "nginx", "hosts": [{"host": "quota.example.org"}],
                "tls": [{"hosts": ["quota.example.org"], "secretName": "quota-tls"}]},
    "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
                "prometheusRule": {"enabled": True}, "dashboard": {"enabled": True}},
    "custom": {"quota": {"refreshRules": RULES}},
    "migration": {"backup": {"existingClaim": "pg-dumps", "keep": 4}},
}
BUILT_IN = ("ConfigMap", "CronJob", "Deployment", "Ingress", "Job", "NetworkPolicy", "PersistentVolumeClaim", "Pod", "PodDisruptionBudget", "Secret",
            "Service", "ServiceAccount")


def render(values: dict, name: str = "rel", namespace: str = "hub") -> list[dict]:
    chart = helm.Chart.load(str(CHART))
    try:
        out = chart.render(values, name=name, namespace=namespace, is_install=True)
    finally:
        chart.close()
    docs = []
    for path, text in out.items():
        if not path.endswith("NOTES.txt"):
            docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def notes(values: dict) -> str:
    chart = helm.Chart.load(str(CHART))
    try:
        return chart.render(values, name="rel", namespace="hub", is_install=True)["quota-hub/templates/NOTES.txt"]
    finally:
        chart.close()


def kinds(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def pod_spec(d: dict) -> dict:
    if d["kind"] == "CronJob":
        return d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return d["spec"]["template"]["spec"]


def exported_series(quota_hub_bin: str, tmp_path: Path) -> set[str]:
    """Every sample name a real quota-hub exports, after a start, an end, a start left running
    and a refresh (so that every labelled family has a sample)."""
    from prometheus_client.parser import text_string_to_metric_families

    from support.hub_process import free_port, wait_for
    import urllib.request

    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"custom": {"authMode": "github", "quota": {"refreshRules": {
        "minutely": {"enabled": True, "schedule": "* * * * *", "action": "add", "amount": 1}}}}}))
    db = f"sqlite://{tmp_path / 'm.db'}"
    token = subprocess.run([quota_hub_bin, "token", "issue", "--db", db, "--user", "root", "--admin"],
                           capture_output=True, text=True, check=True).stdout.strip()
    # A scheduled backup's folder and a Litestream socket (none answers: the lag grows), so the
    # backups' and the replica's series are there.
    port = free_port()
    proc = subprocess.Popen([quota_hub_bin, "serve", "--listen", f"127.0.0.1:{port}", "--db", db, "--values", str(values),
                             "--no-scheduler", "--backup-dir", str(tmp_path / "backups"),
                             "--litestream-socket", str(tmp_path / "no-litestream.sock")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/hub"

    def call(method: str, path: str, body: bytes | None = None) -> bytes:
        req = urllib.request.Request(base + path, method=method, data=body, headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()

    try:
        def up():
            try:
                return call("GET", "/readyz") is not None
            except OSError:
                return False

        wait_for("quota-hub", up)
        call("POST", "/admin/api/quota/users/ann", b'{"action": "set", "amount": 100}')
        session = json.loads(call("POST", "/api/quota/sessions", b'{"username": "ann", "runtime_minutes": 5}'))
        call("POST", f"/api/quota/sessions/{session['session_id']}/end", b"{}")
        call("POST", "/api/quota/sessions", b'{"username": "ann", "server_name": "still-running", "runtime_minutes": 5}')
        # This minute's scheduled run, as a CronJob sends it (a later minute's scrape still finds it).
        minute = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime())
        call("POST", "/admin/api/quota/refresh",
             json.dumps({"rule_name": "minutely", "action": "add", "amount": 1, "run_id": f"minutely@{minute}"}).encode())
        text = call("GET", "/metrics").decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    names = set()
    for family in text_string_to_metric_families(text.replace("# EOF", "")):
        names |= {s.name for s in family.samples}
    return names


def selectors_of(expr: str) -> list:
    """The vector selectors of an expression, from promql-parser's syntax tree."""
    found: list = []

    def walk(node):
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)
            return
        for attr in ("expr", "lhs", "rhs", "param", "vector_selector"):
            child = getattr(node, attr, None)
            if child is not None:
                walk(child)
        for child in getattr(node, "args", None) or []:
            walk(child)

    walk(promql_parser.parse(expr))
    return found


def series_of(expr: str) -> set[str]:
    """The metric names an expression selects (Grafana's `$__rate_interval` and `$job` replaced
    first)."""
    text = expr.replace("$__rate_interval", "5m").replace('"$job"', '"x"')
    return {s.name for s in selectors_of(text) if s.name}
