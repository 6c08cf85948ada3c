"""Extension, warnings, the banner and webhooks inside a real JupyterHub (real proxy, real
single-user server, Debian's headless Chromium): a server started for 3 minutes with marks
``[2, 1]`` is extended by a minute from the user page (its auto-stop moves at once), gets its two
warnings on time (as events, and in the banner on the hub's home page, dismissed and remembered),
stops at the new time, and a real webhook receiver got ``session.ending`` twice (once per mark)
and ``session.ended`` once, each signed."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from support.chromium import login
from support.hub_process import Hub, wait_for

SECRET = "wh-s3cret"


class Receiver:
    """A webhook receiver on 127.0.0.1: records every POST (headers, body), answers 200."""

    def __init__(self):
        self.got: list[tuple[dict, str]] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                outer.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def events(self) -> list[dict]:
        out = []
        for headers, body in self.got:
            t, v1 = (p.split("=", 1)[1] for p in headers["quota-signature"].split(","))
            expected = hmac.new(SECRET.encode(), f"{t}.{body}".encode(), hashlib.sha256).hexdigest()
            assert hmac.compare_digest(v1, expected), headers
            e = json.loads(body)
            assert str(e["id"]) == headers["quota-event-id"]
            out.append(e)
        return out


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


@pytest.fixture(scope="module")
def hub(tmp_path_factory, receiver):
    state = tmp_path_factory.mktemp("hub-events")
    values = state / "values.json"
    values.write_text(json.dumps({"custom": {"authMode": "github", "quota": {
        "cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0, "warnBeforeStopMinutes": [2, 1], "notifyBelow": [50],
        "webhooks": [{"name": "ops", "url": receiver.url, "secretEnv": "QT_WH_SECRET",
                      "events": ["session.ending", "session.ended"]}]}}}))
    h = Hub(state, values, extra_env={"QT_WH_SECRET": SECRET}).start()
    yield h
    h.stop()


def events(hub: Hub, user: str, kind: str) -> list[dict]:
    status, body = hub.api("GET", "/hub/api/quota/me/events", hub.token_for(user))
    assert status == 200, body
    return [e for e in body["events"] if e["kind"] == kind]


def test_the_banner_shows_unread_warnings_on_the_home_page_dismissed_and_remembered(hub, browser):
    for amount in (100, 40):
        status, body = hub.admin("POST", "/hub/admin/api/quota/users/omar", {"action": "set", "amount": amount})
        assert status == 200, body
    [low] = events(hub, "omar", "balance.low")
    assert low["data"] == {"balance": 40, "threshold": 50}
    ctx, page = login(browser, hub, "omar", "/hub/home")
    try:
        page.wait_for_function(f"window.quotaBanner && window.quotaBanner.shown.includes({low['id']})")
        assert page.locator("#quota-banner").text_content().startswith("Your balance fell to 40 credits (below 50 credits).")
        page.locator("#quota-banner-dismiss").click()
        page.wait_for_function("document.getElementById('quota-banner').hidden")
        page.reload()
        page.wait_for_function("window.quotaBanner && window.quotaBanner.state === 'ready'")
        assert page.locator("#quota-banner").is_hidden(), "a dismissed warning stays dismissed"
        # Not on the hub's other pages (the token page).
        page.goto(hub.url + "/hub/token")
        page.wait_for_function("window.quotaBanner && window.quotaBanner.state === 'off'")
        # A new one comes in unread.
        status, body = hub.admin("POST", "/hub/admin/api/quota/users/omar", {"action": "set", "amount": 100})
        status, body = hub.admin("POST", "/hub/admin/api/quota/users/omar", {"action": "deduct", "amount": 70})
        assert status == 200, body
        page.goto(hub.url + "/hub/home")
        page.wait_for_function("window.quotaBanner && window.quotaBanner.shown.length === 1")
        assert "fell to 30" in page.locator("#quota-banner").text_content()
    finally:
        ctx.close()


def test_a_server_extended_from_the_user_page_is_warned_twice_and_stops_at_its_new_time(hub, receiver, browser):
    status, body = hub.admin("POST", "/hub/admin/api/quota/users/nina", {"action": "set", "amount": 100})
    assert status == 200, body
    status, body = hub.spawn("nina", {"runtime_minutes": 3})
    assert status in (201, 202), (status, body)
    hub.wait_ready("nina")
    (sid, start, runtime), = hub.rows("SELECT id, start_time, runtime_minutes FROM sessions WHERE username = 'nina'")
    assert runtime == 3

    # Extended by a minute from the user page: the session's end and reservation grow at once.
    ctx, page = login(browser, hub, "nina", "/hub/quota")
    try:
        page.wait_for_function("window.quotaUser && window.quotaUser.state === 'ready'")
        page.locator("#running .extend-minutes").fill("1")
        page.get_by_role("button", name="Extend").click()
        page.get_by_text("now stops at").wait_for()
    finally:
        ctx.close()
    (runtime, cost), = hub.rows("SELECT runtime_minutes, estimated_cost_milli FROM sessions WHERE id = ?", sid)
    assert (runtime, cost) == (4, 4000)
    end = start + 4 * 60

    # Mark 2 (two minutes before the new end): a warning, shown in the banner on the home page.
    first = wait_for("the 2-minute warning", lambda: events(hub, "nina", "session.ending"), deadline=240)
    assert len(first) == 1 and first[0]["data"]["minutes_left"] in (1, 2), first
    assert first[0]["data"]["ends_at"] == time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(end))
    ctx, page = login(browser, hub, "nina", "/hub/home")
    try:
        page.wait_for_function(f"window.quotaBanner && window.quotaBanner.shown.includes({first[0]['id']})")
        assert "stops in" in page.locator("#quota-banner").text_content()
        page.locator("#quota-banner-dismiss").click()
        page.wait_for_function("document.getElementById('quota-banner').hidden")

        # Mark 1: the second warning, in the same banner as it comes.
        second = wait_for("the 1-minute warning",
                          lambda: (w := events(hub, "nina", "session.ending")) and len(w) == 2 and w[1], deadline=120)
        assert second["data"]["minutes_left"] in (0, 1), second
        # The old timer (3 minutes) would have stopped the server by now: it moved.
        assert hub.server_state("nina") is not None, "stopped at the runtime asked at start, not the extended one"
        page.wait_for_function(f"window.quotaBanner.shown.includes({second['id']})", timeout=30_000)
        assert page.locator("#quota-banner li").count() == 1, "only the unread warning"
    finally:
        ctx.close()

    # Stops at the new time: billed for the 4 minutes it ran.
    hub.wait_stopped("nina")
    (status_, minutes, charged), = hub.rows("SELECT status, duration_minutes, cost FROM sessions WHERE id = ?", sid)
    assert (status_, minutes, charged) == ("completed", 4, 4)

    got = wait_for("the webhook's events", lambda: (e := receiver.events()) and
                   [x["kind"] for x in e].count("session.ended") == 1 and e, deadline=60)
    kinds = [e["kind"] for e in got]
    assert kinds == ["session.ending", "session.ending", "session.ended"], kinds
    assert [e["id"] for e in got] == sorted(e["id"] for e in got)
    assert got[2]["data"] == {"session_id": sid, "server_name": "", "status": "completed", "cost": 4, "balance": 96}
