"""What a user reads, in Debian's headless Chromium on a real hub (real proxy, real single-user
servers; the README's test command runs this file on JupyterHub 6 and on 5): what can be spent now
beside the balance after a start and after an extension (navigation bar, user page); the hub's
banner and the navigation bar counting the same minutes from the same end, the warning gone at once
when the server is extended elsewhere (the live stream); one vocabulary on every page (no
"quota/min", no resource key, no "My quota"); a refused start's page in plain words with the
user's choices kept, the first top-up after which it passes, a cheaper choice that would pass and
"Request credits"; Start off with its reason while the choice is more than is available; the
navigation bar on one row at 760 px. Every page is kept as a screenshot at 1280 and 760 px
(target/test-artifacts/screenshots, listed in docs/screenshots.md)."""

from __future__ import annotations

import json
import re

import pytest

from support.chromium import login, one_row, shoot
from support.hub_process import Hub, wait_for

VALUES = {"custom": {"authMode": "github", "quota": {
    "cpuRate": 1, "minimumToStart": 1, "defaultQuota": 0, "warnBeforeStopMinutes": [2]},
    "accelerators": {"phx": {"displayName": "PHX", "description": "PHX accelerator", "nodeSelector": {"accel": "phx"}, "quotaRate": 2}}}}
#: The 1st of each month: forecast, never run (that hub's scheduler is off, whatever the date).
MONTHLY = {"monthly": {"enabled": True, "schedule": "0 0 1 * *", "action": "add", "amount": 100, "maxBalance": 300}}


def _hub(tmp_path_factory, name: str, values: dict, **quota_kwargs):
    state = tmp_path_factory.mktemp(name)
    path = state / "values.json"
    path.write_text(json.dumps(values))
    return Hub(state, path, quota_kwargs=quota_kwargs).start()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The scheduler runs (its sweep writes the warnings); no refresh rule."""
    h = _hub(tmp_path_factory, "user-reads", VALUES)
    yield h
    h.stop()


@pytest.fixture(scope="module")
def refusal_hub(tmp_path_factory):
    """A monthly top-up the engine forecasts; the scheduler is off, so it never runs here."""
    values = json.loads(json.dumps(VALUES))
    values["custom"]["quota"]["refreshRules"] = MONTHLY
    h = _hub(tmp_path_factory, "user-reads-refusal", values, scheduler=False)
    yield h
    h.stop()


def set_balance(hub: Hub, user: str, amount: int) -> None:
    status, body = hub.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": amount})
    assert status == 200, body


def words_of(page) -> str:
    return page.evaluate("document.body.innerText")


def one_vocabulary(text: str) -> None:
    """docs/glossary.md: the pages' words, never the API's or the old ones."""
    assert "quota/min" not in text, text
    assert not re.search(r"\bphx\b", text), "a resource key on the page, not its display name"
    assert not re.search(r"\bcpu\b", text), "a resource key on the page, not its display name"
    for old in ("My quota", "my credits", "personal", "SpawnException"):
        assert old not in text, (old, text)


def nav_minutes(page) -> int:
    text = page.locator("#quota-live").text_content()
    m = re.search(r"· (\d+) min left$", text)
    assert m, text
    return int(m.group(1))


def test_available_and_warnings_follow_a_start_and_an_extension(hub, browser):
    set_balance(hub, "ava", 100)
    hub.token_for("ava")
    # A 2-minute server with a 2-minute mark: its warning is due at once (the sweep runs every 10 s).
    status, body = hub.spawn("ava", {"runtime_minutes": 2})
    assert status in (201, 202), (status, body)
    hub.wait_ready("ava")
    wait_for("the session.ending event", lambda: [e for e in hub.api("GET", "/hub/api/quota/me/events", hub.token_for("ava"))[1]["events"]
                                                if e["kind"] == "session.ending"], deadline=90)
    ctx, page = login(browser, hub, "ava", "/hub/home")
    try:
        page.wait_for_function("window.quotaLive && window.quotaLive.via === 'push'")
        page.wait_for_function("window.quotaBanner && window.quotaBanner.shown.length === 1")
        # Held: the running server's estimated cost (2 credits); available: the rest.
        assert page.locator("#quota-live").text_content().startswith("98 credits available · ")
        # The banner and the navigation bar: the same end, the same rounding (read together).
        nav, banner = page.evaluate("[document.getElementById('quota-live').textContent, document.getElementById('quota-banner').innerText]")
        left = re.search(r"(\d+) min left", nav)
        stops = re.search(r"Your server \(default\) stops in (\d+) minutes?", banner)
        assert left and stops and left.group(1) == stops.group(1), (nav, banner)
        one_vocabulary(words_of(page))
        shoot(page, "hub-home-warning")

        # Extended elsewhere (the API, as the user page or JupyterLab would): pushed at once; the
        # warning goes, the bar says the new time and what the longer run holds.
        status, st = hub.api("GET", "/hub/api/quota/me/status", hub.token_for("ava"))
        status, body = hub.api("POST", f"/hub/api/quota/sessions/{st['session']['session_id']}/extend", hub.token_for("ava"), {"minutes": 30})
        assert status == 200, body
        page.wait_for_function("/^68 credits available · (32|31) min left$/.test(document.getElementById('quota-live').textContent)")
        page.wait_for_function("document.getElementById('quota-banner').hidden")
        assert page.evaluate("window.quotaBanner.shown") == []

        # The user page: what can be spent now first, the balance and what is held beside it.
        page.goto(hub.url + "/hub/quota")
        page.wait_for_function("window.quotaUser && window.quotaUser.state === 'ready'")
        assert page.locator("#balance").text_content() == "68 credits available"
        assert page.locator("#available").text_content() == "Balance 100 credits, of which 32 credits held by your running servers until they end."
        running = page.locator("#running tbody tr").first.locator("td")
        assert running.nth(1).text_content() == "CPU" and running.nth(2).text_content() == "your balance"
        one_vocabulary(words_of(page))
        shoot(page, "hub-user-page")
    finally:
        ctx.close()
    hub.stop_server("ava")


def test_a_refused_start_says_why_keeps_the_choices_and_offers_what_would_start(refusal_hub, browser):
    hub = refusal_hub
    set_balance(hub, "ben", 100)
    ctx, page = login(browser, hub, "ben", "/hub/spawn")
    try:
        page.wait_for_function("window.quotaSpawn && window.quotaSpawn.state === 'ready'")
        page.get_by_label("PHX").check()
        page.get_by_label("Runtime (minutes, 1-480)").fill("45")
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('90 credits')")
        assert page.locator("#quota-cost").text_content() == "90 credits (2 credits/min x 45 minutes)"
        assert page.get_by_role("button", name="Start").is_enabled()
        one_vocabulary(words_of(page))
        shoot(page, "hub-spawn-form")
        # Meanwhile an admin takes most of the credit: the form (read before) lets the start go, the hub refuses it.
        set_balance(hub, "ben", 20)
        page.get_by_role("button", name="Start").click()
        page.wait_for_function("window.quotaSpawn && window.quotaSpawn.state === 'ready' && document.getElementById('quota-refusal-head')")

        # The hub's error in plain words, no exception's name, no status code.
        head = page.locator(".spawn-error-msg").inner_text()
        assert head.startswith("Your server was not started: it needs more credits than you have available."), head
        assert "403" not in head and "Error:" not in head
        # The user's choices are kept.
        assert page.get_by_label("PHX").is_checked()
        assert page.get_by_label("Runtime (minutes, 1-480)").input_value() == "45"
        # What was asked and what is available; the first top-up after which it passes, named so.
        alert = page.locator("#quota-cost-note[role=alert]")
        alert.wait_for()
        assert alert.locator("#quota-over").text_content() == "Not enough credits: PHX for 45 minutes costs 90 credits; you have 20 credits available."
        status, me = hub.api("GET", "/hub/api/quota/me", hub.token_for("ben"))
        first = alert.locator("#quota-first-top-up").text_content()
        assert first.startswith("The first top-up after which this start would pass: ") and first.endswith("when your balance becomes 120 credits."), first
        assert me["next_refresh"]["balance"] == 120
        # A cheaper choice that would pass, and the way to ask for credits.
        assert alert.locator("#quota-cheaper").text_content() == "Would start now: PHX for 10 minutes (20 credits)"
        ask = alert.locator("#quota-request-credits")
        assert ask.get_attribute("href").endswith("/hub/quota#ask-panel")
        assert alert.inner_text().count("Request credits") == 1 and "Or ask for 70 credits more" in alert.inner_text()
        # Start is off, with the reason.
        assert page.get_by_role("button", name="Start").is_disabled()
        assert page.locator("#quota-start-reason").text_content() == "Start is off: PHX for 45 minutes needs more credits than you have available."
        one_vocabulary(words_of(page))
        shoot(page, "hub-spawn-refused")

        # The cheaper choice, taken: it fits, Start is on again, and the hub starts it.
        page.get_by_role("button", name="PHX for 10 minutes (20 credits)").click()
        page.wait_for_function("!document.querySelector('#quota-cost-note[role=alert]')")
        assert page.get_by_label("Runtime (minutes, 1-480)").input_value() == "10"
        page.get_by_role("button", name="Start").click()
        wait_for("ben's server", lambda: hub.server_state("ben") is not None)
    finally:
        ctx.close()
    (resource, runtime), = hub.rows("SELECT resource_type, runtime_minutes FROM sessions WHERE username = 'ben'")
    assert (resource, runtime) == ("phx", 10)
    hub.wait_ready("ben")
    hub.stop_server("ben")


def test_the_admin_pages_words_and_the_bar_at_760_px(hub, browser):
    set_balance(hub, "admin", 0)
    set_balance(hub, "cy", 50)
    status, body = hub.spawn("cy", {"runtime_minutes": 20, "gpu_selection": "phx"})
    assert status in (201, 202), (status, body)
    hub.wait_ready("cy")
    ctx, page = login(browser, hub, "admin", "/hub/admin/users")
    try:
        page.wait_for_function("window.quotaPage && window.quotaPage.state === 'ready'")
        # The bar: "Credits" (the admin's own page), "Manage credits" (this page), what the admin
        # can spend; never "My quota", "Quota" and "Balance 0" side by side.
        page.wait_for_function("window.quotaLive && window.quotaLive.text === '0 credits available'")
        assert page.locator("#quota-user-link").text_content().strip() == "Credits"
        assert page.locator("#quota-nav-link").text_content().strip() == "Manage credits"
        # Available beside the balance: cy's server holds 40 of her 50.
        row = page.locator('#users tr[data-user="cy"]')
        assert row.locator("td.available").text_content() == "10 (40 held)"
        # The Running view: the resource by name, who pays, the cost so far.
        page.get_by_role("button", name="Running").click()
        page.wait_for_function("window.quotaPage.running && window.quotaPage.running.state === 'ready'")
        cells = page.locator("#r-list tbody tr").first.locator("td").all_text_contents()
        assert cells[:4] == ["cy", "(default)", "PHX", "cy's balance"], cells
        assert re.fullmatch(r"\d+", cells[5]), cells
        one_vocabulary(words_of(page))
        paths = shoot(page, "hub-admin-page")
        # At 760 px (shoot leaves the last width) the bar keeps one row, on every page.
        for path in ("/hub/admin/users", "/hub/home", "/hub/quota", "/hub/spawn"):
            if path != "/hub/admin/users":
                page.goto(hub.url + path)
            page.wait_for_function("window.quotaLive && window.quotaLive.text !== ''")
            flat, boxes = one_row(page)
            assert flat, (path, [(b["text"], b["top"], b["height"]) for b in boxes][5:])
            # The figures left the bar for the strip under it (at 1280 they are in the bar).
            strip = page.locator("#quota-live-strip")
            assert strip.is_visible() and strip.text_content().startswith("Your credits: "), path
            one_vocabulary(words_of(page))
        assert all(p.endswith(".png") for p in paths)
    finally:
        ctx.close()
    hub.stop_server("cy")
