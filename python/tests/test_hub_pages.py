"""The quota pages inside a real JupyterHub (with its real proxy), in Debian's headless Chromium
driven by playwright: an admin signs in through the hub's login form and sets a quota inline on
/hub/admin/users, a page inside the hub's own template (navigation bar, theme, dark mode), linked
from the hub's navigation, showing each user's server as the hub knows it; a user's spawn form
shows their balance and the cost of a choice, computed in the page, and starting from it reaches
the gate with the form's runtime and accelerator."""

from __future__ import annotations

import sqlite3

import pytest

from support.hub_process import HERE, Hub, wait_for
from support.chromium import login


@pytest.fixture(scope="module")
def hub(shared_hub):
    """The hub test_hub.py uses too (conftest.py): these tests' users are their own."""
    return shared_hub


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
        assert page.locator("#quota-balance").text_content() == "100 credits"
        page.get_by_label("PHX").check()
        page.get_by_label("Runtime (minutes, 1-480)").fill("30")
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('60 ')")
        assert page.locator("#quota-cost").text_content() == "60 credits (2 credits/min x 30 minutes)"
        assert page.locator("#quota-next-refresh").text_content() == "No refresh rule will change your balance."
        # A run that leaves less than the minimum to start (10) is warned about.
        page.get_by_label("Runtime (minutes, 1-480)").fill("46")
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('92 ')")
        assert page.locator("#quota-cost-note").text_content() == (
            "A full run leaves 8 credits available, less than the 10 credits needed to start a server again."
        )
        page.get_by_label("Runtime (minutes, 1-480)").fill("55")
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('110 ')")
        # More than is available: an alert, and Start is off with the reason.
        alert = page.locator("#quota-cost-note[role=alert]")
        alert.wait_for()
        assert alert.locator("#quota-over").text_content() == "Not enough credits: PHX for 55 minutes costs 110 credits; you have 100 credits available."
        assert page.get_by_role("button", name="Start").is_disabled()
        assert page.locator("#quota-start-reason").text_content() == "Start is off: PHX for 55 minutes needs more credits than you have available."
        page.get_by_label("Runtime (minutes, 1-480)").fill("25")
        page.wait_for_function("!document.querySelector('#quota-cost-note[role=alert]')")
        assert page.get_by_role("button", name="Start").is_enabled()
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


def test_the_admin_page_belongs_to_the_hub(hub, browser):
    """Reached from the hub's navigation bar (its own admin panel included), drawn in the hub's
    template and theme, and showing each user's server as the hub knows it."""
    for user in ("runner", "slowpoke", "idler"):
        status, body = hub.admin("POST", f"/hub/admin/api/quota/users/{user}", {"action": "set", "amount": 100})
        assert status == 200, body
        hub.token_for(user)
    status, body = hub.spawn("runner", {"runtime_minutes": 30})
    assert status in (201, 202), (status, body)
    hub.wait_ready("runner")
    status, body = hub.spawn("slowpoke", {"runtime_minutes": 30})
    assert status in (201, 202), (status, body)
    wait_for("slowpoke's spawn to be pending", lambda: (s := hub.server_state("slowpoke")) and s.get("pending") == "spawn")
    ctx, page = login(browser, hub, "admin", "/hub/admin")
    try:
        # The hub's own admin panel links to the quota page from its navigation bar.
        link = page.locator("nav.navbar #quota-nav-link")
        assert link.text_content().strip() == "Manage credits"
        link.click()
        page.wait_for_url("**/hub/admin/users")
        page.wait_for_function("window.quotaPage && window.quotaPage.state !== 'loading'")
        assert page.evaluate("window.quotaPage.state") == "ready", page.locator("#alert").text_content()
        # The hub's template: its navigation bar, logo and theme toggle around the quota page.
        assert page.locator("nav.navbar #jupyterhub-logo").count() == 1
        assert page.locator("nav.navbar #quota-nav-link").count() == 1
        assert page.title() == "Manage credits · JupyterHub"

        def server(user: str) -> str:
            return page.locator(f'#users tr[data-user="{user}"] td.server').text_content()

        assert (server("runner"), server("slowpoke"), server("idler")) == ("running", "pending", "stopped")
        # Dark mode: the hub's toggle recolours the quota page with the hub's theme.
        colours = "[getComputedStyle(document.body).color, getComputedStyle(document.querySelector('#users tbody th')).color]"
        light_body, light_cell = page.evaluate(colours)
        assert light_cell == light_body
        page.locator("#dark-theme-toggle").click()
        page.wait_for_function("document.documentElement.getAttribute('data-bs-theme') === 'dark'")
        dark_body, dark_cell = page.evaluate(colours)
        assert dark_cell == dark_body != light_body
    finally:
        ctx.close()
    # A user who is not a quota admin sees no link.
    ctx, page = login(browser, hub, "idler", "/hub/home")
    try:
        assert page.locator("nav.navbar").count() == 1
        assert page.locator("#quota-nav-link").count() == 0
    finally:
        ctx.close()
    hub.stop_server("slowpoke")
    hub.stop_server("runner")


def test_a_user_reaches_their_own_quota_page_from_the_hub_home(hub, browser):
    """/hub/quota with the hub's login: the balance, a charged session in the chart (its bars equal
    its table and the API), the ledger; no other user's rows; linked from the hub's home page."""
    hub.token_for("lara")
    status, body = hub.admin("POST", "/hub/admin/api/quota/users/lara", {"action": "set", "amount": 100})
    assert status == 200, body
    status, body = hub.spawn("lara", {"runtime_minutes": 30, "gpu_selection": "phx"})
    assert status in (201, 202), (status, body)
    hub.wait_ready("lara")
    hub.stop_server("lara")
    ctx, page = login(browser, hub, "lara", "/hub/home")
    try:
        link = page.locator("nav.navbar #quota-user-link")
        assert link.text_content().strip() == "Credits"
        link.click()
        page.wait_for_url("**/hub/quota")
        page.wait_for_function("window.quotaUser && window.quotaUser.state !== 'loading'")
        assert page.evaluate("window.quotaUser.state") == "ready", page.locator("#alert").text_content()
        assert page.title() == "Your credits · JupyterHub"
        me = page.evaluate("window.quotaUser.api.get('/api/quota/me')")
        usage = page.evaluate("window.quotaUser.api.get('/api/quota/me/usage')")
        assert page.locator("#balance").text_content() == f"{me['available']} credits available" and me["held"] == 0
        assert me["balance"] < 100, "the PHX session was charged"
        api = {d["key"]: {r["resource_type"]: r["credits"] for r in d["by_resource"] if r["credits"]}
               for d in usage["days"] if d["credits"]}
        assert api and sum(c for d in api.values() for c in d.values()) == 100 - me["balance"]
        bars = page.evaluate("""() => { const out = {};
            for (const e of document.querySelectorAll('#usage-chart [data-credits]'))
              (out[e.dataset.day] ??= {})[e.dataset.resource] = Number(e.dataset.credits);
            return out; }""")
        cells = page.evaluate("""() => { const out = {};
            for (const r of document.querySelectorAll('#usage-table tbody tr'))
              for (const td of r.querySelectorAll('td[data-resource]'))
                if (Number(td.textContent)) (out[r.dataset.day] ??= {})[td.dataset.resource] = Number(td.textContent);
            return out; }""")
        assert bars == api == cells
        history = page.locator("#history").text_content()
        assert "usage" in history and "set" in history
        assert "kim" not in history and "admin" not in history
        # Another user's page is theirs: the admin API stays closed to lara.
        r = page.evaluate("window.quotaUser.api.get('/admin/api/quota/usage?from=2026-01-01&to=2026-01-02').then(() => 200, (e) => e.status)")
        assert r == 403
    finally:
        ctx.close()


def test_a_course_budget_by_hub_group_two_students_spawn_on_it_the_third_is_past_its_limit(hub, browser):
    # The course's students are the hub group's members; the budget pays at most 50 a month each.
    for student in ("sam", "sue", "sid"):
        hub.token_for(student)
    status, body = hub.admin("POST", "/hub/api/groups/course-101", {"users": ["sam", "sue", "sid"]})
    assert status in (201, 409), (status, body)
    status, body = hub.admin("PUT", "/hub/admin/api/quota/budgets/course-101",
                             {"description": "Intro to ML", "groups": ["course-101"], "member_limit": 50})
    assert status == 200, body
    status, body = hub.admin("POST", "/hub/admin/api/quota/budgets/course-101", {"action": "add", "amount": 1000})
    assert status == 200, body
    for student, minutes in (("sam", "30"), ("sue", "40")):
        ctx, page = login(browser, hub, student, "/hub/spawn")
        try:
            page.wait_for_function("window.quotaSpawn && window.quotaSpawn.state !== undefined")
            assert page.evaluate("window.quotaSpawn.state") == "ready", page.evaluate("window.quotaSpawn.error")
            # Their own credit is 0: the course pays, chosen under "Charge to".
            choice = page.get_by_label("course-101", exact=False)
            assert "50 available to you" in page.locator("#quota-charge-to").text_content()
            choice.check()
            page.get_by_label("Runtime (minutes, 1-480)").fill(minutes)
            page.wait_for_function(f"document.getElementById('quota-cost').textContent.startsWith('{minutes} ')")
            assert page.locator("#quota-cost-note").text_content() == ""
            page.get_by_role("button", name="Start").click()
            wait_for(f"{student}'s server", lambda: hub.server_state(student) is not None)
        finally:
            ctx.close()
        hub.wait_ready(student)
        hub.stop_server(student)
    # The third asks more than one month's limit allows: refused with the budget's text, no server.
    ctx, page = login(browser, hub, "sid", "/hub/spawn")
    try:
        page.wait_for_function("window.quotaSpawn && window.quotaSpawn.state === 'ready'")
        page.get_by_label("course-101", exact=False).check()
        page.get_by_label("Runtime (minutes, 1-480)").fill("60")
        page.wait_for_function("document.getElementById('quota-cost').textContent.startsWith('60 ')")
        assert page.locator("#quota-over").text_content() == (
            "Not enough credits: CPU for 60 minutes costs 60 credits; the budget course-101 has 50 credits available to you.")
        # What would start on the budget now, and Start off with the reason.
        assert page.locator("#quota-cheaper").text_content() == "Would start now: CPU for 50 minutes (50 credits)"
        assert page.get_by_role("button", name="Start").is_disabled()
        assert page.locator("#quota-start-reason").text_content() == (
            "Start is off: CPU for 60 minutes needs more credits than the budget course-101 has available.")
    finally:
        ctx.close()
    # Asked anyway (the hub's REST API, as a form with the script off would post): the budget's text.
    hub.token_for("sid")
    status, body = hub.spawn("sid", {"runtime_minutes": 60, "budget": "course-101"})
    assert status == 403, (status, body)
    assert body["message"] == ("Cannot start container: monthly limit of budget course-101 reached. Spent this month: 0, limit: 50, "
                               "estimated cost: 60.")
    assert hub.server_state("sid") is None
    conn = sqlite3.connect(hub.quota_db())
    try:
        rows = conn.execute("SELECT username, budget, status FROM sessions WHERE budget = 'course-101' ORDER BY id").fetchall()
        charged = conn.execute("SELECT username, amount FROM transactions WHERE budget = 'course-101' AND transaction_type = 'usage'"
                               " ORDER BY id").fetchall()
        own = dict(conn.execute("SELECT username, balance FROM users WHERE username IN ('sam', 'sue', 'sid')").fetchall())
    finally:
        conn.close()
    assert rows == [("sam", "course-101", "completed"), ("sue", "course-101", "completed")], rows
    assert [u for u, _ in charged] == ["sam", "sue"] and all(a < 0 for _, a in charged), charged
    assert own == {"sam": 0, "sue": 0, "sid": 0}, "the students' own credit is untouched"
