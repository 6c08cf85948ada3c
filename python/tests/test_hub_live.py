"""The live balance in the hub's navigation bar, in a real JupyterHub with Debian's headless
Chromium: every hub page shows it; an admin's change and a spawn reach an open page over the
hub's server-sent event stream without a reload (no API token in any URL); an idle stream gets
keep-alive comments; a user's streams are capped
(`liveStreamsPerUser`, then 429); a page whose stream is refused falls back to polling."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from support.chromium import login
from support.hub_process import Hub, wait_for


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    state = tmp_path_factory.mktemp("hub-live")
    values = state / "values.json"
    values.write_text(json.dumps({"custom": {"authMode": "github", "quota": {"cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0,
                                                                       "liveStreamsPerUser": 3}}}))
    h = Hub(state, values).start()
    yield h
    h.stop()


def set_balance(hub: Hub, user: str, amount: int) -> None:
    status, body = hub.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": amount})
    assert status == 200, body


def test_an_admins_add_and_a_spawn_reach_an_open_page_by_push(hub, browser):
    set_balance(hub, "pia", 100)
    ctx, page = login(browser, hub, "pia", "/hub/home")
    urls: list[str] = []
    page.on("request", lambda r: urls.append(r.url))
    try:
        page.reload()  # with every request of the page seen
        page.wait_for_function("window.quotaLive && window.quotaLive.via === 'push'")
        assert page.locator("#quota-live").text_content() == "100 credits available"
        loaded = page.evaluate("window.quotaLive.loadedAt")

        added = time.monotonic()
        status, body = hub.admin("POST", "/hub/admin/api/quota/users/pia", {"action": "add", "amount": 5})
        assert status == 200 and body["balance"] == 105, body
        page.wait_for_function("document.getElementById('quota-live').textContent === '105 credits available'")
        print(f"admin add -> navigation bar: {time.monotonic() - added:.3f} s")
        assert page.evaluate("window.quotaLive.via") == "push"
        assert page.evaluate("window.quotaLive.loadedAt") == loaded, "the page was not reloaded"

        status, body = hub.spawn("pia", {"runtime_minutes": 30})
        assert status in (201, 202), (status, body)
        page.wait_for_function("document.getElementById('quota-live').textContent.includes(' · 30 min left')")
        assert page.evaluate("window.quotaLive.loadedAt") == loaded
        # What can be spent now: the balance less what the running server holds (30 credits).
        status, me = hub.api("GET", "/hub/api/quota/me", hub.token_for("pia"))
        assert me["held"] == 30 and me["available"] == 75, me
        assert page.locator("#quota-live").text_content().startswith("75 credits available · "), page.locator("#quota-live").text_content()
        # An extension (here through the API, as from any page) is pushed: more held, more time.
        status, st = hub.api("GET", "/hub/api/quota/me/status", hub.token_for("pia"))
        status, body = hub.api("POST", f"/hub/api/quota/sessions/{st['session']['session_id']}/extend", hub.token_for("pia"), {"minutes": 30})
        assert status == 200, body
        page.wait_for_function("/^45 credits available · (60|59) min left$/.test(document.getElementById('quota-live').textContent)")
        hub.stop_server("pia")
        # Billed at the stop (one minute at 1 credit/minute): the bar shows that too.
        page.wait_for_function("document.getElementById('quota-live').textContent === '104 credits available'")

        # The stream carries the hub's login cookie and the XSRF token, never an API token.
        live = [u for u in urls if "/quota/live" in u]
        assert live and all("token=" not in u for u in live) and all("_xsrf=" in u for u in live), live
        assert hub.token_for("pia") not in " ".join(urls)

        # Every hub page shows it.
        for path in ("/hub/token", "/hub/spawn", "/hub/quota"):
            page.goto(hub.url + path)
            page.wait_for_function("window.quotaLive && window.quotaLive.text === '104 credits available'")
    finally:
        ctx.close()


def test_the_admin_page_shows_it_too(hub, browser):
    set_balance(hub, "admin", 7)
    ctx, page = login(browser, hub, "admin", "/hub/admin")
    try:
        page.wait_for_function("window.quotaLive && window.quotaLive.text === '7 credits available'")
    finally:
        ctx.close()


def test_an_idle_stream_gets_keep_alive_comments(hub):
    set_balance(hub, "quin", 3)
    req = urllib.request.Request(hub.url + "/hub/quota/live", headers={"Authorization": f"token {hub.token_for('quin')}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        assert r.headers["X-Accel-Buffering"] == "no"
        lines = []
        while ": keep-alive" not in lines:
            lines.append(r.readline().decode().rstrip("\n"))
        assert lines[:2] == ["event: quota", ('data: {"balance":3,"unlimited":false,"available":3,"held":0,"ends_at":null,'
                             '"seconds_left":null,"server_name":""}')], lines


def test_a_user_holds_at_most_live_streams_per_user_the_next_is_429(hub):
    set_balance(hub, "rue", 4)

    def open_stream():
        req = urllib.request.Request(hub.url + "/hub/quota/live", headers={"Authorization": f"token {hub.token_for('rue')}"})
        r = urllib.request.urlopen(req, timeout=60)
        assert r.readline().decode().startswith("event: quota")  # subscribed
        return r

    streams = [open_stream() for _ in range(3)]
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            open_stream()
        assert refused.value.code == 429 and "liveStreamsPerUser" in refused.value.read().decode()
        streams.pop().close()
        # The hub notices the closed stream at its next write (a keep-alive at the latest).
        wait_for("a stream slot again", lambda: _opens(open_stream, streams), deadline=90, every=1.0)
    finally:
        for r in streams:
            r.close()


def _opens(open_stream, streams) -> bool:
    try:
        streams.append(open_stream())
        return True
    except urllib.error.HTTPError as e:
        assert e.code == 429
        return False


def test_a_page_whose_stream_is_refused_polls_instead(hub, browser):
    set_balance(hub, "rui", 40)
    ctx, page = login(browser, hub, "rui", "/hub/token")
    try:
        page.route("**/hub/quota/live**", lambda route: route.fulfill(status=502, body="bad gateway"))
        page.goto(hub.url + "/hub/home")
        page.wait_for_function("window.quotaLive && window.quotaLive.via === 'poll'")
        assert page.evaluate("window.quotaLive.mode") == "poll"
        assert page.locator("#quota-live").text_content() == "40 credits available"
    finally:
        ctx.close()
