"""The hub's own `/hub/metrics` (JupyterHub's Prometheus registry) carries the quota series with
quota-hub's names: after a scripted run of gates, refusals, bad options, a failed spawn, ends and
refreshes, the scraped values equal what happened. Parsed with prometheus_client's parser, never
grepped."""

from __future__ import annotations

import sqlite3
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.hub_process import DEADLINE_S, HERE, Hub, wait_for


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    h = Hub(tmp_path_factory.mktemp("hub-metrics"), HERE / "hub_values.yaml", extra_env={"QT_EXTRA_PRE_SPAWN": "1"}).start()
    yield h
    h.stop()


def scrape(hub: Hub) -> dict:
    """{(sample name, frozenset(labels)): value} of the quota series."""
    req = urllib.request.Request(f"{hub.url}/hub/metrics", headers={"Authorization": f"token {hub.admin_token}"})
    with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith("quota_") and not s.name.endswith("_created"):
                out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_the_hubs_metrics_count_what_the_gate_and_the_stops_did(hub):
    for user, amount in (("ann", 100), ("poor", 0), ("broken", 100), ("runner", 100)):
        status, body = hub.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": amount})
        assert status == 200, body
    before = scrape(hub)
    assert value(before, "quota_gate_decisions_total", result="allowed", resource_type="phx") == 0
    assert ("quota_engine_traps_total", frozenset()) in before  # registered, at 0

    status, body = hub.spawn("ann", {"runtime_minutes": 5, "gpu_selection": "phx"})
    assert status in (201, 202), (status, body)
    hub.wait_ready("ann")
    hub.stop_server("ann")
    assert hub.spawn("poor", {"runtime_minutes": 5})[0] == 403
    assert hub.spawn("poor", {"runtime_minutes": 481})[0] == 400  # the engine's check
    assert hub.spawn("poor", {"runtime_minutes": "abc"})[0] == 400  # the hub's, before the engine
    assert hub.spawn("broken", {"runtime_minutes": 5})[0] >= 500  # allowed, then the spawner fails
    hub.wait_stopped("broken")
    status, body = hub.spawn("runner", {"runtime_minutes": 30})
    assert status in (201, 202), (status, body)
    hub.wait_ready("runner")
    status, body = hub.admin("POST", "/hub/admin/api/quota/refresh", {"action": "add", "amount": 1})
    assert status == 200 and body["users_updated"] == 4, body
    status, body = hub.admin("POST", "/hub/admin/api/quota/refresh", {"action": "add", "amount": 1, "dry_run": True})
    assert status == 200, body

    # A stop's session end runs in the hub's stop path, which may finish after the API answered.
    m = wait_for("both ends counted", lambda: (m := scrape(hub)) and value(m, "quota_session_ends_total", status="failed", resource_type="cpu") == 1
                 and value(m, "quota_session_ends_total", status="completed", resource_type="phx") == 1 and m)
    conn = sqlite3.connect(hub.quota_db())
    try:
        [(ann_cost,)] = conn.execute("SELECT cost FROM sessions WHERE username = 'ann'").fetchall()
    finally:
        conn.close()
    assert value(m, "quota_gate_decisions_total", result="allowed", resource_type="phx") == 1
    assert value(m, "quota_gate_decisions_total", result="allowed", resource_type="cpu") == 2
    assert value(m, "quota_gate_decisions_total", result="refused", resource_type="cpu") == 1
    assert value(m, "quota_gate_decisions_total", result="invalid", resource_type="cpu") == 1
    assert value(m, "quota_gate_decisions_total", result="invalid", resource_type="other") == 1
    assert value(m, "quota_session_ends_total", status="completed", resource_type="phx") == 1
    assert value(m, "quota_session_ends_total", status="failed", resource_type="cpu") == 1
    assert value(m, "quota_credits_charged_total", resource_type="phx") == ann_cost >= 2
    assert value(m, "quota_credits_charged_total", resource_type="cpu") == 0
    # The dry run counts nothing.
    assert value(m, "quota_refresh_runs_total", rule="manual") == 1
    assert value(m, "quota_refresh_users_updated_total", rule="manual") == 4
    assert value(m, "quota_sessions_active", resource_type="cpu") == 1
    assert value(m, "quota_sessions_active", resource_type="phx") == 0
    assert value(m, "quota_engine_traps_total") == 0
    assert value(m, "quota_storage_busy_total") == 0

    hub.stop_server("runner")
    m = wait_for("runner's end counted", lambda: (m := scrape(hub)) and value(m, "quota_session_ends_total", status="completed", resource_type="cpu") == 1 and m)
    assert value(m, "quota_sessions_active", resource_type="cpu") == 0
