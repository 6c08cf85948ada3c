"""deploy/helm/quota-hub rendered offline by Helm's own Go SDK (helm-python-sdk: no helm binary can
be installed here) and read back field by field: a Deployment of N replicas on the PostgreSQL URL
from a Secret, a Service, the values file in a ConfigMap, and one CronJob per enabled rule, the same
Jobs as `quota-hub render-cronjobs` prints; an operator's existing values file drops in; bad rule
names fail the render with a message naming them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

import helm_python as helm  # noqa: E402  (pinned in requirements-test.txt)

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "quota-hub"
QUOTA_HUB = REPO / "target" / "debug" / "quota-hub"
RULES = {
    "weekly-topup": {"enabled": True, "schedule": "0 6 * * 1", "action": "add", "amount": 1000000, "maxBalance": 2000000,
                     "targets": {"balanceBelow": 1500000, "includeUnlimited": False}},
    "zero": {"enabled": True, "schedule": "0 3 * * *", "action": "add", "amount": 0},
    "paused": {"enabled": False, "schedule": "0 3 * * *", "action": "set", "amount": 5},
}


def render(values: dict) -> list[dict]:
    chart = helm.Chart.load(str(CHART))
    try:
        out = chart.render(values, name="rel", namespace="hub", is_install=True)
    finally:
        chart.close()
    docs = []
    for text in out.values():
        docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def kinds(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def test_the_chart_lints():
    helm.lint(str(CHART))


def test_replicas_service_configmap_and_one_cronjob_per_enabled_rule():
    docs = render({"replicas": 3, "custom": {"quota": {"refreshRules": RULES}}})
    (dep,) = kinds(docs, "Deployment")
    assert dep["spec"]["replicas"] == 3
    c = dep["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in c["env"]}
    assert env["QUOTA_HUB_DB"]["valueFrom"]["secretKeyRef"] == {"name": "quota-database", "key": "url"}
    assert env["QUOTA_HUB_NO_SCHEDULER"]["value"] == "true", "CronJobs run the rules: the servers' scheduler is off"
    (svc,) = kinds(docs, "Service")
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    (cm,) = kinds(docs, "ConfigMap")
    assert yaml.safe_load(cm["data"]["values.yaml"])["custom"]["quota"]["refreshRules"]["zero"]["amount"] == 0
    jobs = {j["metadata"]["name"]: j for j in kinds(docs, "CronJob")}
    assert sorted(jobs) == ["quota-refresh-weekly-topup", "quota-refresh-zero"]
    for name, j in jobs.items():
        assert j["metadata"]["labels"]["app.kubernetes.io/component"] == "quota-refresh"
        spec = j["spec"]
        assert (spec["concurrencyPolicy"], spec["timeZone"]) == ("Forbid", "Etc/UTC")
        assert spec["startingDeadlineSeconds"] == 300
        pod = spec["jobTemplate"]["spec"]["template"]
        assert pod["metadata"]["labels"]["app.kubernetes.io/component"] == "quota-refresh"
        token = pod["spec"]["containers"][0]["env"][0]
        assert token["name"] == "QUOTA_HUB_TOKEN" and token["valueFrom"]["secretKeyRef"]["name"] == "quota-refresh-token"
    args = jobs["quota-refresh-weekly-topup"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:4] == ["refresh", "weekly-topup", "--url", "http://rel-quota-hub.hub.svc:8765/hub"]
    rule = json.loads(args[args.index("--rule-json") + 1])
    # Integers stay integers (Helm reads numbers as floats; 1000000 must not become 1e+06).
    assert (rule["amount"], rule["maxBalance"], rule["targets"]["balanceBelow"]) == (1000000, 2000000, 1500000)
    zero = jobs["quota-refresh-zero"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert json.loads(zero[zero.index("--rule-json") + 1])["amount"] == 0, "an amount of 0 stays 0"


def test_the_chart_makes_the_jobs_render_cronjobs_makes(tmp_path):
    assert QUOTA_HUB.exists(), "needs target/debug/quota-hub: cargo build -p quota-hub (the README's test command does)"
    values = {"custom": {"authMode": "github", "quota": {"refreshRules": RULES}}}
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    out = subprocess.run([str(QUOTA_HUB), "render-cronjobs", "--values", str(path), "--namespace", "hub",
                          "--hub-url", "http://rel-quota-hub.hub.svc:8765/hub", "--image", "quota-hub:0.1.0"],
                         capture_output=True, text=True, check=True).stdout
    cli = {d["metadata"]["name"]: d for d in yaml.safe_load_all(out) if d}
    chart = {d["metadata"]["name"]: d for d in kinds(render(values), "CronJob")}
    assert sorted(cli) == sorted(chart)
    for name in cli:
        a, b = cli[name]["spec"], chart[name]["spec"]
        for key in ("schedule", "timeZone", "concurrencyPolicy", "startingDeadlineSeconds"):
            assert a[key] == b[key], (name, key)
        ca = a["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        cb = b["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        ia, ib = ca["args"].index("--rule-json"), cb["args"].index("--rule-json")
        assert ca["args"][:ia] == cb["args"][:ib] and ca["args"][ia + 2:] == cb["args"][ib + 2:], name
        assert json.loads(ca["args"][ia + 1]) == json.loads(cb["args"][ib + 1]), name
        assert ca["env"] == cb["env"] and ca["image"] == cb["image"]


def test_an_existing_values_file_drops_in():
    values = yaml.safe_load((REPO / "examples" / "values.yaml").read_text())
    docs = render(values)
    assert [j["metadata"]["name"] for j in kinds(docs, "CronJob")] == ["quota-refresh-weekly-topup"]
    (cm,) = kinds(docs, "ConfigMap")
    assert yaml.safe_load(cm["data"]["values.yaml"])["custom"]["accelerators"]["phx"]["quotaRate"] == 2


def test_rules_run_in_the_servers_instead_gives_no_cronjobs():
    docs = render({"refreshRulesRunIn": "server", "custom": {"quota": {"refreshRules": RULES}}})
    assert kinds(docs, "CronJob") == []
    env = {e["name"] for e in kinds(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert "QUOTA_HUB_NO_SCHEDULER" not in env


@pytest.mark.parametrize("name", ["Weekly_TopUp", "x" * 39, "-lead"])
def test_a_rule_name_kubernetes_refuses_fails_the_render_naming_it(name):
    with pytest.raises(helm.HelmRenderError) as e:
        render({"custom": {"quota": {"refreshRules": {name: {"enabled": False, "schedule": "0 3 * * *", "action": "add", "amount": 1}}}}})
    assert f"custom.quota.refreshRules.{name}" in str(e.value)


def test_a_secret_for_the_refresh_token_only_when_given():
    assert kinds(render({}), "Secret") == []
    (s,) = kinds(render({"refreshToken": {"value": "qh_x"}}), "Secret")
    assert s["metadata"]["name"] == "quota-refresh-token" and s["stringData"]["token"] == "qh_x"
