"""The integration inside a real JupyterHub 6 (PyPI), with the real configurable-http-proxy (npm)
and the simple local-process spawner, on loopback. Each test reads the quota database the hub
wrote, with sqlite3, as an operator would."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import openapi_check
from support.hub_process import DEADLINE_S, HERE, Hub, wait_for
from jupyterhub_quota import Caller, QuotaEngine

REPO = HERE.parents[2]
VALUES = HERE / "hub_values.yaml"
REFUSAL = "Cannot start container: Insufficient quota."


def rows(hub: Hub, sql: str, *params):
    return hub.rows(sql, *params)


def sessions(hub: Hub, user: str):
    return rows(hub, "SELECT server_name, status, duration_minutes, cost, rate_milli FROM sessions WHERE username = ? ORDER BY id", user)


def usage(hub: Hub, user: str):
    return rows(hub, "SELECT amount, description FROM transactions WHERE username = ? AND transaction_type = 'usage' ORDER BY id", user)


def set_quota(hub: Hub, user: str, amount: int) -> None:
    status, body = hub.admin("POST", f"/hub/admin/api/quota/{user}", {"action": "set", "amount": amount})
    assert status == 200, (status, body)
    assert body["balance"] == amount


@pytest.fixture(scope="module")
def hub(shared_hub):
    """The hub test_hub_pages.py uses too (conftest.py): these tests' users are their own."""
    return shared_hub


def test_a_user_without_quota_is_refused_then_billed_once_after_an_admin_grant(hub):
    status, body = hub.spawn("alice", {"runtime_minutes": 5})
    assert status == 403, (status, body)
    assert body["message"] == (
        "Cannot start container: Insufficient quota. Current balance: 0, estimated cost: 5 "
        "(1 quota/min x 5 min). Please contact administrator to add quota."
    ), body
    assert hub.server_state("alice") is None
    assert sessions(hub, "alice") == []
    # The operator's own pre_spawn_hook still ran, before the gate.
    assert (hub.state / "earlier-hook-ran").read_text() == "alice"

    set_quota(hub, "alice", 100)
    status, body = hub.spawn("alice", {"runtime_minutes": 5})
    assert status in (201, 202), (status, body)
    hub.wait_ready("alice")
    status, me = hub.api("GET", "/hub/api/quota/me", hub.token_for("alice"))
    assert status == 200, (status, me)
    assert (me["username"], me["balance"], me["unlimited"], me["enabled"]) == ("alice", 100, False, True)
    assert [s[:2] for s in sessions(hub, "alice")] == [("", "active")]

    hub.stop_server("alice")
    [(server, status_, minutes, cost, rate)] = sessions(hub, "alice")
    assert (server, status_) == ("", "completed")
    assert cost == math.ceil(rate * minutes / 1000) and cost >= 1
    assert [u[0] for u in usage(hub, "alice")] == [-cost]
    status, me = hub.api("GET", "/hub/api/quota/me", hub.token_for("alice"))
    assert me["balance"] == 100 - cost


def test_the_default_and_a_named_server_share_one_balance(hub):
    set_quota(hub, "bob", 30)
    status, body = hub.spawn("bob", {"runtime_minutes": 15})
    assert status in (201, 202), (status, body)
    hub.wait_ready("bob")
    # 30 credits, 15 held by the running default server: a 20-minute named server does not fit.
    status, body = hub.spawn("bob", {"runtime_minutes": 20}, server="second")
    assert status == 403, (status, body)
    assert body["message"].startswith(REFUSAL), body
    assert hub.server_state("bob", "second") is None
    # 5 minutes of phx (10 credits) fits in the 15 left, with the accelerator chosen by its key.
    status, body = hub.spawn("bob", {"runtime_minutes": 5, "gpu_selection": "phx"}, server="second")
    assert status in (201, 202), (status, body)
    hub.wait_ready("bob", "second")
    active = {s[0]: s[4] for s in sessions(hub, "bob") if s[1] == "active"}
    assert active == {"": 1000, "second": 2000}
    hub.stop_server("bob", "second")
    hub.stop_server("bob")
    assert len(usage(hub, "bob")) == 2


@pytest.mark.parametrize(
    "options, option",
    [
        ({"runtime_minutes": "abc"}, "runtime_minutes"),
        ({"runtime_minutes": float("nan")}, "runtime_minutes"),
        ({"runtime_minutes": -5}, "runtime_minutes"),
        ({"runtime_minutes": 0}, "runtime_minutes"),
        ({"runtime_minutes": 481}, "runtime_minutes"),
        ({"runtime_minutes": 2.5}, "runtime_minutes"),
        ({"runtime_minutes": True}, "runtime_minutes"),
        ({"runtime_minutes": 5, "gpu_selection": "tpu"}, "gpu_selection"),
        ({"runtime_minutes": 5, "gpu_selection": 3}, "gpu_selection"),
    ],
    ids=lambda v: json.dumps(v) if isinstance(v, dict) else v,
)
def test_bad_spawn_options_are_400_naming_the_option_and_change_nothing(hub, options, option):
    set_quota(hub, "carol", 1000)
    status, body = hub.spawn("carol", options)
    assert status == 400, (status, body)
    assert body["message"].startswith(f"{option}:"), body
    assert hub.server_state("carol") is None
    assert sessions(hub, "carol") == []


def test_the_quota_routes_answer_inside_the_hub_with_its_auth(hub):
    status, body = hub.api("GET", "/hub/api/quota/me")
    assert status == 403 and "message" in body, (status, body)  # the hub's own answer
    status, body = hub.api("GET", "/hub/api/quota/rates", hub.token_for("dora"))
    assert status == 200 and list(body["rates"]) == ["cpu", "phx"], body
    status, body = hub.api("GET", "/hub/api/accelerators", hub.token_for("dora"))
    assert status == 200 and "phx" in body["accelerators"], body
    # A plain user is not a quota admin; the hub's admin role and a hub admin user are.
    status, body = hub.api("GET", "/hub/admin/api/quota/", hub.token_for("dora"))
    assert status == 403, (status, body)
    status, body = hub.admin("GET", "/hub/admin/api/quota/")
    assert status == 200 and "users" in body, (status, body)
    status, body = hub.api("GET", "/hub/admin/api/quota/", hub.token_for("admin"))
    assert status == 200, (status, body)
    # custom:quota:sessions lets a service record sessions, not administer.
    status, body = hub.api("POST", "/hub/api/quota/sessions/end", hub.sessions_token, {"username": "nobody"})
    assert status == 404, (status, body)
    status, body = hub.api("GET", "/hub/admin/api/quota/", hub.sessions_token)
    assert status == 403, (status, body)


def test_the_hub_serves_the_api_document_to_anyone_and_answers_as_it_says(hub):
    status, body = hub.api("GET", "/hub/api/quota/openapi.json")
    assert status == 200 and body == openapi_check.DOCUMENT, status
    # The hub's answers, through its auth and handlers, as the document says (paths below /hub).
    for method, path, token, payload in [
        ("GET", "/hub/api/quota/me", hub.token_for("dora"), None),
        ("GET", "/hub/api/quota/rates", hub.token_for("dora"), None),
        ("GET", "/hub/admin/api/quota/users?limit=2", hub.token_for("admin"), None),
        ("GET", "/hub/admin/api/quota/transactions?limit=1", hub.token_for("admin"), None),
        ("POST", "/hub/admin/api/quota/users/erin", hub.token_for("admin"), {"action": "add", "amount": 3}),
        ("POST", "/hub/admin/api/quota/users/erin", hub.token_for("admin"), {"action": "add"}),
        ("GET", "/hub/api/quota/sessions?state=x", hub.token_for("admin"), None),
        ("POST", "/hub/api/quota/sessions/end", hub.sessions_token, {"username": "nobody"}),
    ]:
        status, body = hub.api(method, path, token, payload)
        sent = json.dumps(payload) if payload is not None else ""
        problem = openapi_check.check(method, path[len("/hub"):], sent, status, json.dumps(body))
        assert problem is None, (method, path, problem)


def test_a_spawn_that_fails_after_the_gate_is_not_charged(hub):
    set_quota(hub, "broken", 50)
    status, body = hub.spawn("broken", {"runtime_minutes": 10})
    assert status >= 400, (status, body)
    hub.wait_stopped("broken")
    assert [s[:2] for s in sessions(hub, "broken")] == [("", "failed")]
    assert usage(hub, "broken") == []
    assert hub.api("GET", "/hub/api/quota/me", hub.token_for("broken"))[1]["balance"] == 50


def test_the_spawn_form_posts_lists_of_strings_and_they_reach_the_gate_typed(hub):
    set_quota(hub, "hana", 100)
    browser = hub.login("hana")
    status, _ = browser.post(f"/hub/spawn/hana", {"runtime_minutes": "3", "gpu_selection": "phx"})
    assert status < 400, status
    hub.wait_ready("hana")
    [(server, status_, *_rest)] = sessions(hub, "hana")
    [(minutes, rate)] = rows(hub, "SELECT runtime_minutes, rate_milli FROM sessions WHERE username = 'hana'")
    assert (status_, minutes, rate) == ("active", 3, 2000)
    # The page's own calls use the login cookie and the hub's XSRF token.
    status, me = browser.get("/hub/api/quota/me")
    assert status == 200 and me["balance"] == 100, (status, me)
    hub.stop_server("hana")


def test_upgrade_db_only_migrates_the_quota_database(tmp_path):
    h = Hub(tmp_path / "hub", VALUES)
    out = subprocess.run(
        [sys.executable, "-m", "jupyterhub", "upgrade-db", "-f", str(HERE / "hub_config.py")],
        cwd=h.state, env=h.env, capture_output=True, text=True, timeout=DEADLINE_S,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    with sqlite3.connect(h.quota_db()) as c:
        # The floor where schema 9 engines read their version, the version in quota_schema (docs/upgrade.md).
        assert c.execute("PRAGMA user_version").fetchone()[0] == 9
        assert c.execute("SELECT max(version), max(floor) FROM quota_schema").fetchone() == (12, 9)
        assert c.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
    assert "refresh rule" not in out.stdout + out.stderr


def test_quota_hub_reads_the_hubs_database(hub, quota_hub_bin):
    set_quota(hub, "erin", 77)
    out = subprocess.run(
        # The URL the hub was configured with (hub_config.py): one URL, one file, in both readers.
        [quota_hub_bin, "list-quota", "--db", f"sqlite://{hub.quota_db()}"],
        cwd=REPO, check=True, capture_output=True, text=True, timeout=600,
    ).stdout
    line = next(l for l in out.splitlines() if l.split()[:1] == ["erin"])
    assert "77" in line.split(), out


def test_a_hub_restart_while_a_server_runs_bills_it_once(tmp_path):
    h = Hub(tmp_path / "hub", VALUES, extra_env={"QT_CLEANUP_SERVERS": "0"}).start()
    try:
        set_quota(h, "frank", 100)
        status, body = h.spawn("frank", {"runtime_minutes": 30})
        assert status in (201, 202), (status, body)
        h.wait_ready("frank")
        # Extended before the restart: the restarted hub re-arms the timer at the new end.
        [sid] = [r[0] for r in h.rows("SELECT id FROM sessions WHERE username = 'frank'")]
        status, s = h.api("POST", f"/hub/api/quota/sessions/{sid}/extend", h.token_for("frank"), {"minutes": 10})
        assert status == 200 and s["runtime_minutes"] == 40, s
        h.stop()
        h.start()
        assert h.server_state("frank")["ready"], "the server survived the restart"
        wait_for("auto-stop re-armed", lambda: "auto-stop re-armed for 1 running server(s)" in h.log())
        assert f"auto-stop of frank's server '' at {s['ends_at']}Z" in h.log()
        h.stop_server("frank")
        [(server, status_, minutes, cost, rate)] = sessions(h, "frank")
        assert status_ == "completed" and cost >= 1
        assert [u[0] for u in usage(h, "frank")] == [-cost]
    finally:
        h.stop()


def test_sessions_older_than_8_hours_are_closed_unbilled_when_the_hub_starts(tmp_path):
    state = tmp_path / "hub"
    state.mkdir()
    # A session left active by a hub that died 9 hours ago, written through the engine.
    e = QuotaEngine(str(state / "quota.sqlite"), {"custom": {"authMode": "github"}})
    long_ago = int(time.time()) - 9 * 3600
    admin = Caller("admin", admin=True)
    e.handle_request("POST", "/admin/api/quota/users/ivan", body='{"action":"set","amount":50}', caller=admin, now=long_ago)
    r = e.handle_request("POST", "/api/quota/sessions", body='{"username":"ivan","runtime_minutes":30}', caller=admin, now=long_ago)
    assert r.status == 201, r.body
    e.close()
    h = Hub(state, VALUES).start()
    try:
        wait_for("the start-up cleanup", lambda: "closed stale session 1 of ivan" in h.log())
        assert [s[:2] for s in sessions(h, "ivan")] == [("", "cleaned_up")]
        assert usage(h, "ivan") == []
    finally:
        h.stop()


def test_a_server_is_stopped_when_its_runtime_is_over_and_billed_that_minute(tmp_path):
    h = Hub(tmp_path / "hub", VALUES).start()
    try:
        set_quota(h, "gina", 100)
        status, body = h.spawn("gina", {"runtime_minutes": 1})
        assert status in (201, 202), (status, body)
        h.wait_ready("gina")
        wait_for("the hub to stop gina's server at its runtime", lambda: h.server_state("gina") is None, deadline=DEADLINE_S + 60)
        [(server, status_, minutes, cost, rate)] = sessions(h, "gina")
        assert (status_, minutes, cost) == ("completed", 1, 1)
        assert "its requested runtime is over" in h.log()
    finally:
        h.stop()


def test_the_example_config_runs_as_the_readme_says(tmp_path):
    """examples/jupyterhub/jupyterhub_config.py, as `scripts/hub-demo.sh` runs it."""
    state = tmp_path / "demo"
    state.mkdir()
    h = Hub(tmp_path / "unused", VALUES)
    # Ports of this test's own (the example's defaults would meet another hub running beside).
    env = dict(h.env, QUOTA_DEMO_STATE=str(state), QUOTA_DEMO_PORT=str(h.port),
               QUOTA_DEMO_HUB_PORT=h.env["QT_HUB_PORT"], QUOTA_DEMO_PROXY_API_PORT=h.env["QT_PROXY_API_PORT"])
    with open(state / "hub.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(REPO / "examples" / "jupyterhub" / "jupyterhub_config.py")],
            cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    h.proc, h.log_path = proc, state / "hub.log"
    try:
        wait_for("the example hub", h._up)
        browser = h.login("admin")
        status, me = browser.get("/hub/api/quota/me")
        assert status == 200 and me["enabled"] is True and list(me["rates"]) == ["cpu", "phx"], (status, me)
        status, body = browser.get("/hub/admin/api/quota/")
        assert status == 200, (status, body)
        assert (state / "quota.sqlite").exists()
    finally:
        h.stop()


def test_the_simple_spawners_server_gets_the_accelerators_env(hub):
    set_quota(hub, "lena", 100)
    status, body = hub.spawn("lena", {"runtime_minutes": 5, "gpu_selection": "phx"})
    assert status in (201, 202), (status, body)
    hub.wait_ready("lena")
    assert hub.server_environ("lena")["PHX_VISIBLE_DEVICES"] == "all"
    hub.stop_server("lena")
    status, body = hub.spawn("lena", {"runtime_minutes": 5})
    assert status in (201, 202), (status, body)
    hub.wait_ready("lena")
    assert "PHX_VISIBLE_DEVICES" not in hub.server_environ("lena")
    hub.stop_server("lena")
    # The simple spawner cannot place a server on a node: said once, not per spawn.
    assert hub.log().count("placement (nodeSelector) is not applied for spawner class SimpleLocalProcessSpawner") == 1


def test_the_operators_own_form_keeps_its_fields_and_parser_beside_the_quota_fields(hub):
    set_quota(hub, "mona", 100)
    browser = hub.login("mona")
    status, page = browser.get("/hub/spawn")
    assert status == 200, status
    assert '<select id="image" name="image">' in page and 'id="quota-runtime"' in page and 'name="gpu_selection"' in page
    assert page.index('name="image"') < page.index('id="quota-runtime"')
    status, _ = browser.post("/hub/spawn/mona", {"image": "r", "runtime_minutes": "4", "gpu_selection": "phx"})
    assert status < 400, status
    hub.wait_ready("mona")
    status, model = hub.admin("GET", "/hub/api/users/mona")
    assert model["servers"][""]["user_options"] == {"image": "r", "parsed_by": "the operator", "runtime_minutes": "4", "gpu_selection": "phx"}
    [(minutes, rate)] = rows(hub, "SELECT runtime_minutes, rate_milli FROM sessions WHERE username = 'mona'")
    assert (minutes, rate) == (4, 2000)
    hub.stop_server("mona")
