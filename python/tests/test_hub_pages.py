"""The quota pages inside a real JupyterHub (with its real proxy), in Debian's headless Chromium
driven by playwright: an admin signs in through the hub's login form and sets a quota inline on
/hub/admin/users; a user's spawn form shows their balance and the cost of a choice, computed in the
page, and starting from it reaches the gate with the form's runtime and accelerator."""

from __future__ import annotations

import os
import sqlite3

import pytest

from hub import DEADLINE_S, HERE, Hub, wait_for

import playwright.sync_api as playwright_sync  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = int(DEADLINE_S * 1000)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    h = Hub(tmp_path_factory.mktemp("hub-pages"), HERE / "hub_values.yaml").start()
    yield h
    h.stop()


@pytest.fixture(scope="module")
def browser():
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium (scripts/test-js.sh does)"
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def login(browser, hub: Hub, user: str, next_path: str):
    """A new browser context signed in through the hub's own login form, left on `next_path`."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(hub.url + next_path)
    page.wait_for_url("**/hub/login**")
    page.fill("#username_input", user)
    page.fill("#password_input", "any")
    page.click("#login_submit")
    page.wait_for_url(f"**{next_path}")
    return ctx, page


def balance(hub: Hub, user: str):
    conn = sqlite3.connect(hub.quota_db())
    try:
        r = conn.execute("SELECT balance, unlimited FROM users WHERE username = ?", (user,)).fetchone()
    finally:
        conn.close()
    return r


def test_an_admin_signs_in_through_the_hub_and_sets_a_quota_inline(hub, browser):
    hub.token_for("ivy")  # a hub user without a quota record yet: listed with balance 0
    ctx, page = login(browser, hub, "admin", "/hub/admin/users")
    try:
        page.wait_for_function("window.quotaPage && window.quotaPage.state !== 'loading'")
        assert page.evaluate("window.quotaPage.state") == "ready", page.locator("#alert").text_content()
        edit = page.get_by_role("button", name="Edit quota for ivy", exact=True)
        assert edit.text_content() == "0"
        edit.click()
        box = page.get_by_role("textbox", name="Quota for ivy", exact=True)
        box.fill("120")
        box.press("Enter")
        page.wait_for_function("document.querySelector('[aria-label=\"Edit quota for ivy\"]')?.textContent === '120'")
        assert balance(hub, "ivy") == (120, 0)
        # Unlimited from the toggle, and back: the hub's XSRF rules accept the page's requests.
        page.get_by_role("checkbox", name="Unlimited for ivy", exact=True).check()
        page.get_by_role("status").filter(has_text="ivy: unlimited").wait_for()
        assert balance(hub, "ivy") == (120, 1)
        page.get_by_role("checkbox", name="Unlimited for ivy", exact=True).uncheck()
        page.get_by_role("status").filter(has_text="ivy: limited").wait_for()
        assert balance(hub, "ivy") == (120, 0)
    finally:
        ctx.close()


def test_the_admin_page_is_for_admins(hub, browser):
    hub.token_for("jack")
    ctx, page = login(browser, hub, "jack", "/hub/home")
    try:
        r = page.goto(hub.url + "/hub/admin/users")
        assert r.status == 403
    finally:
        ctx.close()


def test_the_spawn_form_shows_the_balance_and_the_cost_and_starts_with_them(hub, browser):
    hub.token_for("kim")
    status, body = hub.admin("POST", "/hub/admin/api/quota/users/kim", {"action": "set", "amount": 100})
    assert status == 200, body
    ctx, page = login(browser, hub, "kim", "/hub/spawn")
    try:
        page.wait_for_function("window.quotaSpawn && window.quotaSpawn.state !== undefined")
        assert page.evaluate("window.quotaSpawn.state") == "ready", page.evaluate("window.quotaSpawn.error")
        assert page.locator("#quota-balance").text_content() == "100"
        page.get_by_label("PHX").check()
        page.get_by_label("Runtime (minutes, 1-480)").fill("30")
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('60 ')")
        assert page.locator("#quota-cost").text_content() == "60 credits (2/min x 30 min)"
        page.get_by_label("Runtime (minutes, 1-480)").fill("55")
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('110 ')")
        assert "more than your balance" in page.locator("#quota-cost-note").text_content()
        page.get_by_label("Runtime (minutes, 1-480)").fill("25")
        page.get_by_role("button", name="Start").click()
        wait_for("kim's server", lambda: hub.server_state("kim") is not None)
    finally:
        ctx.close()
    conn = sqlite3.connect(hub.quota_db())
    try:
        row = conn.execute("SELECT resource_type, runtime_minutes, estimated_cost_milli FROM sessions WHERE username = 'kim'").fetchone()
    finally:
        conn.close()
    hub.wait_ready("kim")
    hub.stop_server("kim")
    assert row[:2] == ("phx", 25)
