"""The chart's monitoring: every query of the dashboard and of the alerts parses as PromQL and
names a series a real quota-hub exports; every alert waits (`for:`) and links a runbook section
of docs/operations.md that exists."""

from __future__ import annotations

import json
import re

import promql_parser

from support.chart import CHART, FULL, REPO, exported_series, kinds, render, selectors_of, series_of


def test_every_dashboard_and_alert_query_names_a_series_quota_hub_exports(tmp_path, quota_hub_bin):
    exported = exported_series(quota_hub_bin, tmp_path)
    assert {"quota_build_info", "process_cpu_seconds_total", "quota_refresh_last_run_applied"} <= exported
    dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    (rule,) = kinds(render(FULL), "PrometheusRule")
    exprs += [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert len(exprs) > 15
    for expr in exprs:
        names = series_of(expr)
        assert names, expr
        # `up` is Prometheus' own series for every target it scrapes.
        assert names - {"up"} <= exported, (expr, names - exported)
    # The dashboard ConfigMap carries the same file.
    (cm,) = [d for d in kinds(render(FULL), "ConfigMap") if d["metadata"]["name"].endswith("-dashboard")]
    assert json.loads(cm["data"]["quota-hub.json"]) == dashboard and cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    # Alert texts name real labels only (Prometheus' own template syntax).
    for r in rule["spec"]["groups"][0]["rules"]:
        assert not re.search(r"\{\{\s*\.", r["annotations"]["summary"]), r


def test_every_alert_waits_and_links_a_runbook_section_that_exists():
    (rule,) = kinds(render(FULL), "PrometheusRule")
    rules = rule["spec"]["groups"][0]["rules"]
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
               for h in re.findall(r"^### (.+)$", (REPO / "docs" / "operations.md").read_text(), re.M)}
    base = "https://github.com/quota-engine/quota/blob/main/docs/operations.md#"
    assert {"QuotaTargetDown", "QuotaMetricsAbsent"} <= {r["alert"] for r in rules}
    for r in rules:
        assert r.get("for"), f"{r['alert']} has no for:"
        url = r["annotations"]["runbook_url"]
        assert url.startswith(base) and url[len(base):] in anchors, (r["alert"], url)
    # For a hub: the hub's scrape job in every expression.
    (hub_rule,) = kinds(render({**FULL, "metrics": {**FULL["metrics"], "prometheusRule": {
        "enabled": True, "selector": 'job="hub", namespace="jhub"'}}}), "PrometheusRule")
    for r in hub_rule["spec"]["groups"][0]["rules"]:
        assert 'job="hub", namespace="jhub"' in r["expr"] and "rel-quota-hub" not in r["expr"], r["expr"]
        promql_parser.parse(r["expr"])


def _documented_rule_values() -> dict:
    """The values docs/z2jh.md's section 7 renders the alerts with (its `helm template` line)."""
    import shlex

    import helm_python as helm

    text = (REPO / "docs" / "z2jh.md").read_text()
    section = text[text.index("## 7. Metrics"):text.index("## 8. ")]
    [line] = [re.sub(r"\\\n\s*", " ", b) for b in re.findall(r"```sh\n(.*?)```", section, re.S)
              if "templates/prometheusrule.yaml" in b]
    words = shlex.split(line.split("|")[0])
    values: dict = {}

    def merge(a: dict, b: dict) -> dict:
        out = dict(a)
        for k, v in b.items():
            out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        return out

    for flag, value in zip(words, words[1:]):
        if flag == "--set":
            values = merge(values, helm.parse_set_string(value))
        elif flag == "--set-string":
            values = merge(values, helm.parse_set_string_values(value))
    return values


def _matches(m, labels: dict) -> bool:
    have = labels.get(m.name, "")
    op = str(m.op).rsplit(".", 1)[-1]
    return {"Equal": have == m.value, "NotEqual": have != m.value,
            "Re": re.fullmatch(m.value, have) is not None, "NotRe": re.fullmatch(m.value, have) is None}[op]


def test_the_documented_hub_alerts_select_the_series_the_documented_podmonitor_scrapes():
    """z2jh has no ServiceMonitor: docs/z2jh.md offers deploy/z2jh/hub-podmonitor.yaml. The labels
    it gives the hub's series (job from the pod's `component` label, the pod's namespace) are
    computed from the hub pod's labels and port as z2jh 4.4.0's own template selects them, and
    every series of every documented alert must match them (and a wrong namespace must not)."""
    import helm_python as helm
    import yaml

    c = helm.Chart.load(str(REPO / "python" / "tests" / "fixtures" / "z2jh-4.4.0"))
    try:
        out = c.render({}, name="jhub", namespace="jhub", is_install=True)
    finally:
        c.close()
    [policy] = [d for t in out.values() for d in yaml.safe_load_all(t) if d and d["kind"] == "NetworkPolicy"]
    hub_pod = policy["spec"]["podSelector"]["matchLabels"]
    hub_ports = {p["port"] for r in policy["spec"]["ingress"] for p in r.get("ports", [])}
    monitor = yaml.safe_load((REPO / "deploy" / "z2jh" / "hub-podmonitor.yaml").read_text())
    assert monitor["kind"] == "PodMonitor"
    assert all(hub_pod.get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items()), "it selects the hub pod"
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in hub_ports and endpoint["path"] == "/hub/metrics"
    assert endpoint["authorization"]["credentials"] == {"name": "hub", "key": "hub.services.prometheus.apiToken"}
    scraped = {"job": hub_pod[monitor["spec"]["jobLabel"]], "namespace": "jhub"}
    assert scraped["job"] == "hub"
    (rule,) = kinds(render(_documented_rule_values(), name="quota"), "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == monitor["metadata"]["labels"]["release"], "one Prometheus loads both"
    rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert len(rules) >= 5
    for r in rules:
        selectors = selectors_of(r["expr"])
        assert selectors, r["alert"]
        for sel in selectors:
            matchers = sel.matchers.matchers
            assert {"job", "namespace"} <= {m.name for m in matchers}, (r["alert"], r["expr"])
            assert all(_matches(m, scraped) for m in matchers if m.name in scraped), (r["alert"], r["expr"], scraped)
            assert not all(_matches(m, {**scraped, "namespace": "other"}) for m in matchers if m.name in scraped)
