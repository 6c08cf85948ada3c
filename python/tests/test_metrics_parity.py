"""Every series the Grafana dashboard and the alerts name is served by both quota-hub's
`/hub/metrics` and a JupyterHub's `/hub/metrics` with the quota package, after the same scripted
run (a start, an end, a start left running, a refresh rule's scheduled run, a few requests), unless
the dashboard panel says it is quota-hub's only. Prometheus' own `up` is every target's."""

from __future__ import annotations

import json
import time
import urllib.request

import yaml
from prometheus_client.parser import text_string_to_metric_families

from support.hub_process import DEADLINE_S, Hub
from support.chart import CHART, FULL, exported_series, kinds, render, series_of

RULE = {"minutely": {"enabled": True, "schedule": "* * * * *", "action": "add", "amount": 1}}
PROMETHEUS_OWN = {"up"}


def hub_series(tmp_path) -> set[str]:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"custom": {"authMode": "github", "quota": {"refreshRules": RULE}}}))
    # The scheduler off: the run below is applied once, as a CronJob applies it.
    hub = Hub(tmp_path / "hub", values, quota_kwargs={
        "scheduler": False, "backup_dir": str(tmp_path / "hub-backups"),
        "litestream_socket": str(tmp_path / "no-litestream.sock")}).start()
    try:
        assert hub.admin("POST", "/hub/admin/api/quota/users/ann", {"action": "set", "amount": 100})[0] == 200
        status, s = hub.api("POST", "/hub/api/quota/sessions", hub.sessions_token, {"username": "ann", "runtime_minutes": 5})
        assert status == 201, s
        assert hub.api("POST", f"/hub/api/quota/sessions/{s['session_id']}/end", hub.sessions_token, {})[0] == 200
        assert hub.api("POST", "/hub/api/quota/sessions", hub.sessions_token,
                       {"username": "ann", "server_name": "still-running", "runtime_minutes": 5})[0] == 201
        minute = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime())
        status, body = hub.admin("POST", "/hub/admin/api/quota/refresh",
                                 {"rule_name": "minutely", "action": "add", "amount": 1, "run_id": f"minutely@{minute}"})
        assert status == 200, body

        def scrape() -> str:
            req = urllib.request.Request(f"{hub.url}/hub/metrics", headers={"Authorization": f"token {hub.admin_token}"})
            with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
                return r.read().decode()

        # A scrape asks for the rules' runs to be read; they show from the next one.
        names: set[str] = set()
        for _ in range(20):
            names = {s.name for f in text_string_to_metric_families(scrape()) for s in f.samples}
            if "quota_refresh_last_run_applied" in names:
                break
            # Any quota request runs a worker call, after which the rules are read.
            hub.api("GET", "/hub/api/quota/rates", hub.sessions_token)
        return names
    finally:
        hub.stop()


def test_every_dashboard_and_alert_series_is_served_by_quota_hub_and_by_the_hub(tmp_path, quota_hub_bin):
    (tmp_path / "quota-hub").mkdir()
    quota_hub = exported_series(quota_hub_bin, tmp_path / "quota-hub")
    hub = hub_series(tmp_path)
    dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
    wanted = [(f"panel {p['title']!r}", t["expr"], p.get("description", "").startswith("quota-hub only"))
              for p in dashboard["panels"] for t in p["targets"]]
    (rules,) = kinds(render(FULL), "PrometheusRule")
    wanted += [(f"alert {r['alert']}", r["expr"], False) for g in rules["spec"]["groups"] for r in g["rules"]]
    scoped = 0
    for what, expr, quota_hub_only in wanted:
        names = series_of(expr) - PROMETHEUS_OWN
        assert names <= quota_hub, (what, names - quota_hub)
        if quota_hub_only:
            scoped += 1
            continue
        assert names <= hub, (what, "not served by the hub", names - hub)
    assert scoped == 3, "only the write-queue panel's three queries are quota-hub's alone"
    assert {"quota_build_info", "quota_http_requests_total", "quota_refresh_last_run_applied",
            "quota_refresh_last_success_timestamp_seconds", "process_resident_memory_bytes"} <= hub
