"""JupyterLab's quota extension (lab/, the jupyterlab-quota wheel installed in the servers'
environment) inside a real JupyterHub: a real single-user JupyterLab in Debian's headless
Chromium shows the resource and the time left the hub's API answers; a server whose warning mark
has passed gets JupyterLab's notification with "Extend 30 min", counting the same minutes as the
status bar; an extension made elsewhere (the hub's API) takes the warning away and moves the status
bar at once, pushed through the hub's live stream; the panel's "+30 min" moves `ends_at` (read back
from the API); an unaffordable extension is disabled with the engine's reason;
"Request credits" in the panel asks the hub, and the decision comes back as a notification;
a server's extension cannot reach another user's server, and its token (what the hub's server role
grants) reads only its owner's quota; the token never reaches the browser."""

from __future__ import annotations

import json
import math
import re

import pytest

from support.chromium import login
from support.hub_process import Hub, wait_for

STATUS = "/hub/api/quota/me/status"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    state = tmp_path_factory.mktemp("hub-lab")
    values = state / "values.json"
    # A 2-minute server with a 2-minute mark: its warning is due at once (the sweep runs every 10 s).
    values.write_text(json.dumps({"custom": {"authMode": "github", "quota": {
        "cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0, "warnBeforeStopMinutes": [2]}}}))
    h = Hub(state, values, extra_env={"QT_JUPYTERLAB": "1"}).start()
    yield h
    # With JupyterLab's live balance open, the hub's shutdown cancels the live loop as it wakes
    # it: the loop must end, or the hub never exits (JupyterHub 5 did not: test_live_shutdown.py).
    assert h.stop(), "the hub exits on SIGTERM"


def lab_state(page) -> dict:
    return page.evaluate("() => JSON.parse(JSON.stringify(window.jupyterlabQuota))")


def test_the_status_bar_warning_and_extend_inside_jupyterlab(hub, browser):
    status, body = hub.admin("POST", "/hub/admin/api/quota/users/lena", {"action": "set", "amount": 100})
    assert status == 200, body
    status, body = hub.spawn("lena", {"runtime_minutes": 2})
    assert status in (201, 202), (status, body)
    hub.wait_ready("lena")
    token = hub.server_environ("lena")["JUPYTERHUB_API_TOKEN"]

    ctx, page = login(browser, hub, "lena", "/user/lena/lab")
    seen: list[str] = []

    def keep(response):
        try:
            seen.append(response.text())
        except Exception:  # noqa: BLE001 - redirects and aborted requests have no body
            pass

    page.on("response", keep)
    try:
        page.wait_for_function("window.jupyterlabQuota && window.jupyterlabQuota.available === true")
        page.wait_for_selector(".jp-quota-status")
        # The status bar says what the hub's API says: the resource and the time left.
        status, api = hub.api("GET", STATUS, hub.token_for("lena"))
        assert status == 200, api
        lab = lab_state(page)
        assert lab["status"]["session"]["ends_at"] == api["session"]["ends_at"]
        text = page.locator(".jp-quota-status").text_content()
        # The resource by its display name, never its key (docs/glossary.md).
        assert api["session"]["resource_type"] == "cpu" and text.startswith("CPU · "), text
        minutes = {math.ceil(api["seconds_left"] / 60), math.ceil(api["seconds_left"] / 60) + 1}
        assert any(f"{m} min left" in text for m in minutes), (text, api["seconds_left"])
        # What can be spent now, with what the running server holds named (docs/glossary.md).
        held, available = api["me"]["held"], api["me"]["available"]
        assert held > 0 and available == 100 - held, api["me"]
        assert f"{available} credits available ({held} held)" in text, text

        # The 2-minute mark has passed: JupyterLab's notification, with its Extend action.
        wait_for("the session.ending event", lambda: [e for e in hub.api("GET", "/hub/api/quota/me/events", hub.token_for("lena"))[1]["events"]
                                                    if e["kind"] == "session.ending"], deadline=90)
        page.evaluate("() => window.jupyterlabQuota.refresh()")
        page.wait_for_function("window.jupyterlabQuota.notified.some(n => n.kind === 'session.ending')")
        [note] = [n for n in lab_state(page)["notified"] if n["kind"] == "session.ending"]
        assert note["actions"] == ["Extend 30 min (30 credits)"], note
        page.get_by_role("button", name="Extend 30 min (30 credits)").wait_for()
        # The toast and the status bar count the same minutes from the same end (read together).
        shown = page.evaluate("""() => [document.querySelector('.jp-quota-status').textContent,
            [...document.querySelectorAll('.jp-toast-message, .Toastify__toast')].map(t => t.textContent).join(' ')]""")
        bar = re.search(r"(\d+) min left", shown[0])
        toast = re.search(r"stops in (\d+) minutes?", shown[1])
        assert bar and toast and bar.group(1) == toast.group(1), shown

        # Extended elsewhere (the hub's REST API, as the user would from the hub's page): the hub's
        # live stream tells the extension at once; the warning goes, the status bar moves.
        before = api["session"]["ends_at"]
        pushes = lab_state(page).get("pushes", 0)
        status, moved_session = hub.api("POST", f"/hub/api/quota/sessions/{api['session']['session_id']}/extend",
                                        hub.token_for("lena"), {"minutes": 30})
        assert status == 200 and moved_session["ends_at"] != before, moved_session
        page.wait_for_function(f"window.jupyterlabQuota.status.session.ends_at === {json.dumps(moved_session['ends_at'])}")
        assert lab_state(page)["pushes"] > pushes, "the change came through the live stream"
        page.wait_for_function("!document.body.innerText.includes('Your server (default) stops in')")
        assert lab_state(page).get("warning") is None
        moved = hub.api("GET", STATUS, hub.token_for("lena"))[1]
        assert moved["session"]["runtime_minutes"] == 32, moved["session"]
        assert "32 min left" in page.locator(".jp-quota-status").text_content() or "31 min left" in page.locator(".jp-quota-status").text_content()

        # The panel: 120 more minutes cost more than is free (100 less the 32 held): disabled, with
        # the engine's own refusal text.
        page.locator(".jp-quota-status").click()
        refused = page.locator('.jp-quota-extend[data-minutes="120"]')
        refused.wait_for()
        assert refused.is_disabled()
        [choice] = [c for c in moved["extend"] if c["minutes"] == 120]
        assert choice["refusal"] and "Insufficient quota" in choice["refusal"], choice
        # In the pages' words, not the specification's "quota/min" text the API answers.
        free = moved["me"]["available"]
        assert page.locator('.jp-quota-refusal[data-minutes="120"]').text_content() == (
            f"Not enough credits: 120 more minutes cost {choice['cost']} credits; {free} credits available.")
        assert "quota/min" not in page.evaluate("document.body.innerText")
        assert page.locator('.jp-quota-extend[data-minutes="30"]').is_enabled()
        # The way to the hub's page of the user's credits.
        assert page.locator(".jp-quota-user-page").get_attribute("href").endswith("/hub/quota")
        # The panel's +30 min extends from JupyterLab itself.
        page.locator('.jp-quota-extend[data-minutes="30"]').click()
        wait_for("the panel's extension", lambda: hub.api("GET", STATUS, hub.token_for("lena"))[1]["session"]["runtime_minutes"] == 62)
        page.wait_for_function("/(62|61) min left/.test(document.querySelector('.jp-quota-status').textContent)")

        # "Request credits" in the panel; the decision arrives as JupyterLab's notification.
        page.locator(".jp-quota-status").click()
        page.locator(".jp-quota-request-amount").fill("40")
        page.locator(".jp-quota-request-reason").fill("two more hours for the lab")
        page.get_by_role("button", name="Request credits").click()
        page.wait_for_function("window.jupyterlabQuota.asked && window.jupyterlabQuota.asked.status === 201")
        rid = lab_state(page)["asked"]["body"]["id"]
        status, body = hub.api("GET", "/hub/api/quota/me/requests", hub.token_for("lena"))
        assert status == 200 and [r["reason"] for r in body["requests"]] == ["two more hours for the lab"], body
        status, body = hub.admin("POST", f"/hub/admin/api/quota/requests/{rid}", {"action": "approve", "amount": 30, "note": "enjoy"})
        assert status == 200, body
        page.evaluate("() => window.jupyterlabQuota.refresh()")
        page.wait_for_function("window.jupyterlabQuota.notified.some(n => n.kind === 'request.decided')")
        page.get_by_text(f"Your request {rid} was approved: 30 credits (enjoy).").wait_for()

        # The server's token never reached the browser: no answer and no page carries it.
        assert all(token not in body for body in seen), "the server's token was sent to the browser"
        assert token not in page.content()
    finally:
        ctx.close()


def test_a_servers_token_reads_only_its_owner_quota_and_extends_only_their_sessions(hub, browser):
    for user in ("mia", "noah"):
        status, body = hub.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": 100})
        assert status == 200, body
        status, body = hub.spawn(user, {"runtime_minutes": 30})
        assert status in (201, 202), (status, body)
        hub.wait_ready(user)
    mia = hub.server_environ("mia")["JUPYTERHUB_API_TOKEN"]
    status, own = hub.api("GET", STATUS, mia)
    assert status == 200 and own["me"]["username"] == "mia" and own["session"]["username"] == "mia", own
    # Not an admin's reads, not another user's session.
    status, body = hub.api("GET", "/hub/admin/api/quota/users", mia)
    assert status == 403, body
    status, noah = hub.api("GET", STATUS, hub.token_for("noah"))
    status, body = hub.api("POST", f"/hub/api/quota/sessions/{noah['session']['session_id']}/extend", mia, {"minutes": 5})
    assert status == 404, body
    # Nor the hub's other APIs beyond what a server always had.
    status, body = hub.api("GET", "/hub/api/users/noah", mia)
    assert status in (403, 404), body
    # A token narrowed below the owner's own quota is refused by the quota routes.
    status, made = hub.admin("POST", "/hub/api/users/mia/tokens", {"note": "narrow", "scopes": ["read:users:name!user=mia"]})
    assert status == 201, made
    status, body = hub.api("GET", STATUS, made["token"])
    assert status == 403 and "custom:quota:self" in json.dumps(body), body

    # Mia's browser cannot use Noah's server (and so not its quota extension).
    ctx, page = login(browser, hub, "mia", "/hub/home")
    try:
        r = page.request.post(hub.url + "/user/noah/quota/extend", data=json.dumps({"minutes": 5}),
                              headers={"Content-Type": "application/json"}, max_redirects=0)
        assert r.status == 403, r.status
        # Nor its stream of changes.
        r = page.request.get(hub.url + "/user/noah/quota/live", max_redirects=0)
        assert r.status == 403, r.status
    finally:
        ctx.close()
    for user in ("mia", "noah"):
        hub.stop_server(user)
