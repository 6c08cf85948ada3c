"""A refused spawn says when the user could start: the engine's 403 names the first scheduled top-up
after which the same start would pass (`next_refresh`), and the hub's spawn page shows it in the
quota form below the specification's message, which stays exactly as it was (the hub's REST API
answers the message alone). On JupyterHub 6 the refusal is a `SpawnException`, so the hub's own spawn metrics label it
`reason="quota-refused"`, apart from the spawner's errors. The README's test command runs this
file in a JupyterHub 6 and a JupyterHub 5 virtualenv.

The hub's scheduler is off, so the rule (the 1st of each month) never runs during the test whatever
the date; the forecast's date is read from the engine's own `/me`, not written here."""

from __future__ import annotations

import html
import urllib.request

import jupyterhub
import pytest
import yaml

from support.hub_process import DEADLINE_S, HERE, Hub

JH6 = jupyterhub.version_info[0] >= 6
REFUSAL = ("Cannot start container: Insufficient quota. Current balance: 0, estimated cost: {cost} "
           "(1 quota/min x {minutes} min). Please contact administrator to add quota.")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("refusal")
    values = yaml.safe_load((HERE / "hub_values.yaml").read_text())
    values["custom"]["quota"]["refreshRules"] = {
        "monthly": {"enabled": True, "schedule": "0 0 1 * *", "action": "add", "amount": 100, "maxBalance": 300}}
    path = tmp / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    h = Hub(tmp / "hub", path, quota_kwargs={"scheduler": False}).start()
    for user in ("ann", "bob"):
        status, body = h.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": 0})
        assert status == 200, (status, body)
    yield h
    h.stop()


def forecast(hub: Hub, user: str) -> dict:
    status, me = hub.api("GET", "/hub/api/quota/me", hub.token_for(user))
    assert status == 200, (status, me)
    assert me["next_refresh"]["rule"] == "monthly" and me["next_refresh"]["balance"] == 100, me
    return me["next_refresh"]


def test_the_engines_403_names_the_first_top_up_that_lets_the_start_through(hub):
    status, body = hub.api("POST", "/hub/api/quota/sessions", hub.sessions_token, {"username": "ann", "runtime_minutes": 5})
    assert status == 403, (status, body)
    assert body == {"error": REFUSAL.format(cost=5, minutes=5), "next_refresh": forecast(hub, "ann")}
    # 480 minutes need 480 credits: the monthly top-up stops at 300.
    status, body = hub.api("POST", "/hub/api/quota/sessions", hub.sessions_token, {"username": "bob", "runtime_minutes": 480})
    assert status == 403 and body["next_refresh"] is None, (status, body)


def test_the_hubs_rest_api_keeps_the_message_exactly(hub):
    status, body = hub.spawn("ann", {"runtime_minutes": 5})
    assert status == 403, (status, body)
    assert body["message"] == REFUSAL.format(cost=5, minutes=5), body
    assert hub.server_state("ann") is None


def test_the_spawn_page_shows_the_message_and_the_next_top_up(hub):
    nxt = forecast(hub, "ann")
    browser = hub.login("ann")
    status, page = browser.post("/hub/spawn/ann", {"runtime_minutes": "5", "gpu_selection": ""})
    assert isinstance(page, str), page
    assert html.escape(REFUSAL.format(cost=5, minutes=5)) in page, page[-3000:]
    # The message as the specification writes it, without the exception's own words around it.
    assert f"Error: {html.escape(REFUSAL.format(cost=5, minutes=5))}</p>" in page, page[-3000:]
    assert "SpawnException" not in page and "HTTP 403" not in page
    when = nxt["at"].replace("T", " ")[:16]
    assert (f'The first top-up after which this start would pass: <strong data-at="{nxt["at"]}">{when} UTC</strong>, '
            "when your balance becomes 100 credits.") in page
    # Shown once: the form opened again is the plain form.
    assert "quota-refusal-next" not in browser.get("/hub/spawn/ann")[1]
    # No top-up within reach: the message alone.
    browser = hub.login("bob")
    status, page = browser.post("/hub/spawn/bob", {"runtime_minutes": "480", "gpu_selection": ""})
    assert html.escape(REFUSAL.format(cost=480, minutes=480)) in page, page[-3000:]
    assert "No scheduled top-up within a year would let this start pass." in page


@pytest.mark.skipif(not JH6, reason="JupyterHub 5 has no SpawnException: its spawn metrics cannot tell")
def test_the_hubs_spawn_metrics_tell_a_refusal_from_an_error(hub):
    hub.spawn("ann", {"runtime_minutes": 5})
    req = urllib.request.Request(f"{hub.url}/hub/metrics", headers={"Authorization": f"token {hub.admin_token}"})
    with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
        text = r.read().decode()
    assert 'jupyterhub_server_spawn_duration_seconds_count{reason="quota-refused",status="failure"}' in text
    assert 'reason="quota-refused",status="error"' not in text
