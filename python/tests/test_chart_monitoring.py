"""The chart's monitoring: every query of the dashboard and of the alerts parses as PromQL and
names a series a real quota-hub exports; every alert waits (`for:`) and links a runbook section
of docs/operations.md that exists."""

from __future__ import annotations

import json
import re

import promql_parser

from support.chart import CHART, FULL, REPO, exported_series, kinds, render, series_of


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
