"""The refresh Jobs reach a z2jh hub through its NetworkPolicy.

z2jh's hub NetworkPolicy (on by default) admits traffic to the hub's `http` port only from pods it
selects by label. The policy is rendered by Helm from z2jh 4.4.0's own template, pinned in
`fixtures/z2jh-4.4.0/`, and its selectors are read from the rendered object, not written here; the
Job pods of `quota-hub render-cronjobs` and of this repository's chart must match one of them, and
stop matching when the operator drops the label (so the check can fail)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

import helm_python as helm  # noqa: E402  (pinned in requirements-test.txt)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
Z2JH = HERE / "fixtures" / "z2jh-4.4.0"
CHART = REPO / "deploy" / "helm" / "quota-hub"
QUOTA_HUB = REPO / "target" / "debug" / "quota-hub"
RULE = {"enabled": True, "schedule": "0 6 * * 1", "action": "add", "amount": 100}
NAMESPACE = "jhub"


def render(chart: Path, values: dict, name: str) -> list[dict]:
    c = helm.Chart.load(str(chart))
    try:
        out = c.render(values, name=name, namespace=NAMESPACE, is_install=True)
    finally:
        c.close()
    return [d for path, text in out.items() if not path.endswith("NOTES.txt") for d in yaml.safe_load_all(text) if d]


def hub_policy_sources() -> list[dict]:
    """The `from` entries of the hub policy's ingress rules that open the hub's `http` port to pods
    of the hub's own namespace (a podSelector without a namespaceSelector)."""
    [policy] = [d for d in render(Z2JH, {}, "jhub") if d["kind"] == "NetworkPolicy"]
    assert policy["metadata"]["name"] == "hub"
    sources = []
    for rule in policy["spec"]["ingress"]:
        ports = {p.get("port") for p in rule.get("ports", [])}
        if "http" in ports:
            sources += [s for s in rule.get("from", []) if "podSelector" in s and "namespaceSelector" not in s]
    assert sources, "z2jh's policy opens the hub to labelled pods"
    return sources


def selects(selector: dict, labels: dict) -> bool:
    """A Kubernetes label selector (matchLabels and matchExpressions) applied to `labels`."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], e.get("values", [])
        ok = {"In": key in labels and labels[key] in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def admitted(labels: dict) -> bool:
    return any(selects(s["podSelector"], labels) for s in hub_policy_sources())


def cli_job_pods(*args: str, tmp_path: Path) -> list[dict]:
    assert QUOTA_HUB.exists(), "needs target/debug/quota-hub (the README's test command builds it)"
    values = tmp_path / "config.yaml"
    values.write_text(yaml.safe_dump({"custom": {"authMode": "github", "quota": {"refreshRules": {"weekly": RULE}}}}))
    out = subprocess.run([str(QUOTA_HUB), "render-cronjobs", "--values", str(values), "--namespace", NAMESPACE,
                          "--hub-url", "http://hub:8081/hub", "--token-secret", "quota-refresh-token", *args],
                         capture_output=True, text=True, check=True).stdout
    jobs = [d for d in yaml.safe_load_all(out) if d]
    assert [j["metadata"]["namespace"] for j in jobs] == [NAMESPACE], "the Jobs run beside the hub"
    return [j["spec"]["jobTemplate"]["spec"]["template"]["metadata"] for j in jobs]


def chart_job_pods(values: dict) -> list[dict]:
    docs = render(CHART, {"custom": {"quota": {"refreshRules": {"weekly": RULE}}}, **values}, "rel")
    return [d["spec"]["jobTemplate"]["spec"]["template"]["metadata"] for d in docs if d["kind"] == "CronJob"]


def test_the_policy_read_from_z2jh_does_not_admit_an_unlabelled_pod():
    assert not admitted({"app.kubernetes.io/name": "quota-hub", "app.kubernetes.io/component": "quota-refresh"})


def test_render_cronjobs_job_pods_are_admitted_by_the_hub_policy(tmp_path):
    [pod] = cli_job_pods(tmp_path=tmp_path)
    assert admitted(pod["labels"]), pod


def test_render_cronjobs_without_the_label_is_not_admitted_and_passes_labels_and_annotations(tmp_path):
    [pod] = cli_job_pods("--no-hub-access-label", "--pod-label", "team=ml",
                         "--pod-annotation", "sidecar.istio.io/inject=false", tmp_path=tmp_path)
    assert not admitted(pod["labels"]), pod
    assert pod["labels"]["team"] == "ml"
    assert pod["annotations"] == {"sidecar.istio.io/inject": "false"}


def test_the_charts_job_pods_need_no_hub_label_and_carry_pod_labels_and_annotations():
    """The chart's Jobs call its own servers, not a z2jh hub: no z2jh label unless asked for."""
    [pod] = chart_job_pods({"podLabels": {"team": "ml"}, "podAnnotations": {"prometheus.io/scrape": "false"},
                            "cronjobs": {"podAnnotations": {"sidecar.istio.io/inject": "false"}}})
    assert "hub.jupyter.org/network-access-hub" not in pod["labels"] and not admitted(pod["labels"]), pod
    [asked] = chart_job_pods({"cronjobs": {"hubAccessLabel": True}})
    assert admitted(asked["labels"]), asked
    assert pod["labels"]["team"] == "ml"
    assert pod["annotations"] == {"prometheus.io/scrape": "false", "sidecar.istio.io/inject": "false"}


@pytest.mark.parametrize("labels", [{}, {"example.org/hub": "yes"}])
def test_the_chart_lets_the_operator_drop_the_label_or_give_another(labels):
    [pod] = chart_job_pods({"cronjobs": {"hubAccessLabel": False, "podLabels": labels}})
    assert not admitted(pod["labels"]), pod
    assert all(pod["labels"][k] == v for k, v in labels.items())


def test_the_charts_job_pods_keep_the_security_context_and_resources():
    values = {"cronjobs": {"resources": {"limits": {"memory": "64Mi"}}},
              "podSecurityContext": {"runAsNonRoot": True, "runAsUser": 4242}}
    docs = render(CHART, {"custom": {"quota": {"refreshRules": {"weekly": RULE}}}, **values}, "rel")
    [job] = [d for d in docs if d["kind"] == "CronJob"]
    spec = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsUser"] == 4242
    assert spec["containers"][0]["resources"]["limits"] == {"memory": "64Mi"}
    assert spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
