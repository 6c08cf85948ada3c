"""The authorization matrix inside JupyterHub (issue 48): every quota route of
tests/authorization/matrix.json, under the hub's /hub/, against every kind of caller a hub has: no
token and a bad token (the hub's own 403), a user for self and for another, an admin's full token,
an admin's token narrowed to custom:quota:self!user (what a server the admin opens receives), an
instructor with admin:users but no quota scope, course staff of group g (custom:quota:manage!group=g)
for a member, for a non-member and for themselves (a member of g too), course staff of a group
named like a scope (g<U+00A0>quota:admin) for a member of g, and each service scope. An unfiltered
custom:quota:manage is no caller a hub can have: a hub whose roles hand it out does not start
(test_names.py). Rights come from the request's scopes only; every cell's status is asserted, and every refusal (a 4xx) leaves the quota database as it
was. `QUOTA_MATRIX_RECORD=1` records the statuses seen instead (then review them)."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from conftest import REPO
from support.chromium import login
from support.hub_process import HERE, Hub
from support.names_gen import generated

MATRIX = REPO / "tests" / "authorization" / "matrix.json"
HOST = "hub"


def engine_tables(path) -> list:
    """Every row of every table of the quota database, in a fixed order."""
    with sqlite3.connect(path) as c:
        names = [n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return [(n, sorted(map(repr, c.execute(f'SELECT * FROM "{n}"')))) for n in names]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    state = tmp_path_factory.mktemp("hub-roles")
    values = state / "values.json"
    values.write_text(json.dumps({"custom": {"authMode": "github", "quota": {
        "cpuRate": 1, "minimumToStart": 1, "warnBeforeStopMinutes": [],
        "groups": {g: {"staffAllowance": {"perChange": 40}} for g in generated()},
        "budgets": {"bg": {"description": "g's", "groups": ["g"], "accelerators": ["cpu"]},
                    "bo": {"description": "h's", "groups": ["h"], "accelerators": ["cpu"]}}}}}))
    h = Hub(state / "hub", values, config=HERE / "hub_config_roles.py").start()
    yield h
    h.stop()


def test_every_quota_route_against_every_hub_caller_as_the_matrix_says(hub):
    run_matrix(hub)


def test_course_staff_see_their_group_in_the_hubs_admin_page_and_an_instructor_sees_no_quota_link(hub, browser):
    """In Chromium, through the hub's login: course staff of g get the Quota link and a page of g's
    members with the actions they may take; an instructor with admin:users only gets neither."""
    ctx, page = login(browser, hub, "tina", "/hub/home")
    try:
        page.get_by_role("link", name="Manage credits", exact=True).click()
        page.wait_for_function("window.quotaPage && window.quotaPage.state === 'ready'")
        assert page.get_by_role("heading", level=1).text_content() == "Users of g"
        shown = page.locator("#users tbody th").all_text_contents()
        assert "cat" not in shown and "ann" in shown, shown
        assert not page.get_by_role("button", name="Refresh Quota").is_visible()
        assert page.get_by_role("checkbox", name="Unlimited for ann").is_disabled()
        # Her own row (she is a member of g too): no actions, and why.
        own = page.locator('#users tr[data-user="tina"]')
        assert own.locator("button.edit").is_disabled()
        assert own.locator("input.sel").is_disabled()
        assert own.locator(".own-note").text_content() == " (you)"
        assert "another manager of your group or a quota admin changes it" in own.locator("button.edit").get_attribute("title")
        assert page.get_by_role("button", name="Edit quota for ann").is_enabled()
        own.locator("button.edit").click(force=True)
        assert page.locator("input.quota-input").count() == 0
        shots = REPO / "target" / "test-artifacts"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "hub-staff-admin.png"), full_page=True)
    finally:
        ctx.close()
    # Staff of a group with an allowance read it, and what is left.
    ctx, page = login(browser, hub, "ps1", "/hub/home")
    try:
        page.get_by_role("link", name="Manage credits", exact=True).click()
        page.wait_for_function("window.quotaPage && window.quotaPage.state === 'ready'")
        text = page.locator(".staff-allowance").text_content()
        assert text.startswith(f"Your allowance for \u201c{generated()[1]}\u201d: up to 40 credits in one change;"), text
        page.screenshot(path=str(REPO / "target" / "test-artifacts" / "hub-staff-allowance.png"), full_page=True)
    finally:
        ctx.close()
    ctx, page = login(browser, hub, "olga", "/hub/home")
    try:
        assert page.get_by_role("link", name="Manage credits", exact=True).count() == 0
        response = page.goto(hub.url + "/hub/admin/users")
        assert response.status == 403
    finally:
        ctx.close()


def test_every_generated_group_name_is_one_group_inside_the_hub(hub):
    """The property test inside JupyterHub: each generated name (every Unicode space, invisible
    characters, every separator; support/names_gen.py) is one hub group, its staff's scope
    custom:quota:manage!group=<name> reaches its member only, never their own credit, within the
    values file's allowance for the group."""
    names = generated()
    assert len(names) >= 30
    for i, g in enumerate(names):
        who = f"{g!r} (ps{i})"
        token = hub.token_for(f"ps{i}")
        st, rights = hub.api("GET", "/hub/api/quota/me/rights", token)
        assert st == 200 and rights["manages"] == [g] and rights["quota_admin"] is False, (who, rights)
        assert rights["staff_allowances"] == [{"group": g, "per_change": 40, "per_month": None,
                                               "added_this_month": 0, "left_this_month": None}], (who, rights)
        add = lambda user, n: hub.api("POST", f"/hub/admin/api/quota/users/{user}", token, {"action": "add", "amount": n})[0]  # noqa: E731
        assert add(f"pm{i}", 3) == 200, who
        assert add(f"pm{i}", 41) == 403, f"{who}: past perChange"
        assert add(f"pm{(i + 1) % len(names)}", 1) == 403, f"{who}: another group's member"
        assert add(f"ps{i}", 1) == 403, f"{who}: their own credit"
        st, body = hub.api("GET", "/hub/admin/api/quota/users", token)
        assert st == 200 and [u["username"] for u in body["users"]] == [f"pm{i}"], (who, body)
        st, body = hub.api("GET", f"/hub/admin/api/quota/transactions?username=pm{i}", token)
        assert st == 200 and body["transactions"][0]["created_by"] == f"ps{i}", (who, body)


def test_a_member_removed_in_the_hub_is_out_of_reach_at_the_next_request(hub):
    """No cache window: the hub's groups as they are at each staff request (issue 58 counted 15
    adds in the 30 s the engine's copy lagged before)."""
    tm = hub.token_for("tm")
    add = lambda: hub.api("POST", "/hub/admin/api/quota/users/stu", tm, {"action": "add", "amount": 1})  # noqa: E731
    assert add()[0] == 200
    st, body = hub.admin("DELETE", "/hub/api/groups/cs101/users", {"users": ["stu"]})
    assert st == 200, body
    refused = [add() for _ in range(15)]
    assert all(r[0] == 403 for r in refused), refused
    st, body = hub.admin("POST", "/hub/api/groups/cs101/users", {"users": ["stu"]})
    assert st == 200, body
    assert add()[0] == 200


def test_odd_names_from_the_hub_are_skipped_with_a_warning_and_every_other_goes_on(hub):
    """A user name with a space (ted x, in cs101) and a group with a control character (bell<BEL>)
    are names the engine cannot take: each is named in one WARNING, and staff requests, a refresh
    and everyone else's spawns go on; a Keycloak-style path is a group its staff manage."""
    tm, pat = hub.token_for("tm"), hub.token_for("pat")
    st, body = hub.api("GET", "/hub/admin/api/quota/users", tm)
    assert st == 200 and "ted x" not in [u["username"] for u in body["users"]], body
    st, body = hub.admin("POST", "/hub/admin/api/quota/refresh", {"action": "add", "amount": 1, "rule_name": "names"})
    assert st == 200, body
    log = hub.log()
    assert "the hub's user 'ted x' is skipped" in log, log[-3000:]
    assert "the hub's group 'bell\\x07' is skipped" in log, log[-3000:]
    assert hub.api("POST", "/hub/admin/api/quota/users/pia", pat, {"action": "add", "amount": 2})[0] == 200
    st, body = hub.api("GET", "/hub/api/quota/me/rights", pat)
    assert body["manages"] == ["/course/101"], body
    st, body = hub.api("GET", "/hub/admin/api/quota/usage?group=%2Fcourse%2F101&from=2026-01-01&to=2026-12-31", pat)
    assert st == 200, body
    # The user the engine cannot take: their start is a 400 naming the field, nobody else's.
    st, body = hub.admin("POST", "/hub/api/users/ted%20x/server")
    assert st == 400 and "username" in json.dumps(body), (st, body)


def test_a_hub_whose_roles_hand_out_an_unfiltered_manage_scope_does_not_start(tmp_path):
    """custom:quota:manage without a group filter would let its holder make a token for any
    group's filter of it: the hub stops at start with a CRITICAL line naming the role and the fix."""
    config = tmp_path / "hub_config_unfiltered.py"
    config.write_text(
        f"load_subconfig({str(HERE / 'hub_config.py')!r})\n"
        "c = get_config()\n"
        "c.JupyterHub.load_roles = [*c.JupyterHub.load_roles, "
        "{'name': 'all-staff', 'scopes': ['custom:quota:manage'], 'users': ['tina']}]\n")
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"custom": {"authMode": "github"}}))
    h = Hub(tmp_path / "hub", values, config=config)
    with pytest.raises(AssertionError, match="the hub exited with"):
        h.start()
    assert h.exited() not in (None, 0)
    log = h.log()
    assert "CRITICAL" in log or "[C " in log, log[-2000:]
    assert "'all-staff' hands out custom:quota:manage without a group filter" in log, log[-2000:]
    assert "custom:quota:manage!group=<group>" in log


def run_matrix(hub: Hub) -> None:
    status, body = hub.admin("POST", "/hub/admin/api/quota/batch", {"users": [
        {"username": "ann", "amount": 1000}, {"username": "cat", "amount": 1000}, {"username": "tina", "amount": 1000}]})
    assert status == 200, body
    status, body = hub.admin("POST", "/hub/api/users/admin/tokens", {"scopes": ["custom:quota:self!user"], "note": "narrowed"})
    assert status == 201, body
    narrowed = body["token"]
    ann, tina, olga, mona = hub.token_for("ann"), hub.token_for("tina"), hub.token_for("olga"), hub.token_for("mona")
    cols = {
        "none": (None, "ann"), "bad": ("0" * 32, "ann"), "self": (ann, "ann"), "other": (ann, "cat"),
        "admin": (hub.token_for("admin"), "ann"), "narrowed": (narrowed, "ann"), "admin_users": (olga, "ann"),
        "manager_member": (tina, "ann"), "manager_other": (tina, "cat"), "manager_self": (tina, "tina"),
        "manager_nbsp": (mona, "ann"), "unfiltered": None, "sessions": (hub.sessions_token, "ann"),
        "refresh": (hub.cron_token, "ann"), "service_admin": (hub.admin_token[::-1], "ann"),
    }
    # Course staff's first request reads the hub's groups into the engine; later ones find them
    # unchanged and write nothing.
    assert hub.api("GET", "/hub/admin/api/quota/users", tina)[0] == 200
    assert hub.api("GET", "/hub/admin/api/quota/users", mona)[0] == 200

    def fill(text: str, who: str, n: int) -> str:
        t = text.replace("{who}", who).replace("{budget}", "bo" if who == "cat" else "bg").replace("{server}", f"m{n}")
        if "{sid}" in t or "{sid_server}" in t:
            st, s = hub.api("POST", "/hub/api/quota/sessions", hub.sessions_token, {"username": who, "runtime_minutes": 1, "server_name": f"fx{n}"})
            assert st == 201, s
            t = t.replace("{sid}", str(s["session_id"])).replace("{sid_server}", f"fx{n}")
        if "{rid}" in t:
            st, b = hub.admin("GET", "/hub/admin/api/quota/requests?status=pending")
            assert st == 200, b
            mine = [r for r in b["requests"] if r["username"] == who and r["budget"] is None]
            if mine:
                rid = mine[0]["id"]
            else:
                st, r = hub.api("POST", "/hub/api/quota/me/requests", hub.token_for(who), {"amount": 1, "reason": "fixture"})
                assert st == 201, r
                rid = r["id"]
            t = t.replace("{rid}", str(rid))
        return t

    matrix = json.loads(MATRIX.read_text())
    record = os.environ.get("QUOTA_MATRIX_RECORD") == "1"
    wrong = []
    n = 0
    for row in matrix["rows"]:
        if HOST not in row.get("hosts", [HOST]):
            continue
        seen = []
        for i, col in enumerate(matrix["columns"]):
            if cols[col] is None:
                seen.append(None)
                continue
            token, who = cols[col]
            n += 1
            path = "/hub" + fill(row["path"], who, n)
            body = None if row["body"] is None else json.loads(fill(json.dumps(row["body"]), who, n))
            before = engine_tables(hub.quota_db())
            st, answer = hub.api(row["method"], path, token, body)
            if st >= 400:
                assert engine_tables(hub.quota_db()) == before, f"{row['method']} {path} as {col} was refused ({st} {answer}) but changed the database"
            want = (row.get(HOST) or [None] * len(matrix["columns"]))[i]
            if not record and st != want:
                wrong.append(f"{row['method']} {path} as {col}: {st} (the matrix: {want}) {answer}")
            seen.append(st)
        if record:
            row[HOST] = seen
    if record:
        MATRIX.write_text(json.dumps(matrix, indent=2) + "\n")
    assert not wrong, f"{len(wrong)} cell(s) differ:\n" + "\n".join(wrong)
