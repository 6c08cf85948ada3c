"""The authorization matrix inside JupyterHub (issue 48): every quota route of
tests/authorization/matrix.json, under the hub's /hub/, against every kind of caller a hub has: no
token and a bad token (the hub's own 403), a user for self and for another, an admin's full token,
an admin's token narrowed to custom:quota:self!user (what a server the admin opens receives), an
instructor with admin:users but no quota scope, course staff of group g (custom:quota:manage!group=g)
for a member and for a non-member, and each service scope. Rights come from the request's scopes
only; every cell's status is asserted, and every refusal (a 4xx) leaves the quota database as it
was. `QUOTA_MATRIX_RECORD=1` records the statuses seen instead (then review them)."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from conftest import REPO
from support.chromium import login
from support.hub_process import HERE, Hub

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
        shots = REPO / "target" / "test-artifacts"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "hub-staff-admin.png"), full_page=True)
    finally:
        ctx.close()
    ctx, page = login(browser, hub, "olga", "/hub/home")
    try:
        assert page.get_by_role("link", name="Manage credits", exact=True).count() == 0
        response = page.goto(hub.url + "/hub/admin/users")
        assert response.status == 403
    finally:
        ctx.close()


def run_matrix(hub: Hub) -> None:
    status, body = hub.admin("POST", "/hub/admin/api/quota/batch", {"users": [{"username": "ann", "amount": 1000}, {"username": "cat", "amount": 1000}]})
    assert status == 200, body
    status, body = hub.admin("POST", "/hub/api/users/admin/tokens", {"scopes": ["custom:quota:self!user"], "note": "narrowed"})
    assert status == 201, body
    narrowed = body["token"]
    ann, tina, olga = hub.token_for("ann"), hub.token_for("tina"), hub.token_for("olga")
    cols = {
        "none": (None, "ann"), "bad": ("0" * 32, "ann"), "self": (ann, "ann"), "other": (ann, "cat"),
        "admin": (hub.token_for("admin"), "ann"), "narrowed": (narrowed, "ann"), "admin_users": (olga, "ann"),
        "manager_member": (tina, "ann"), "manager_other": (tina, "cat"), "sessions": (hub.sessions_token, "ann"),
        "refresh": (hub.cron_token, "ann"), "service_admin": (hub.admin_token[::-1], "ann"),
    }
    # Course staff's first request reads the hub's groups into the engine; later ones find them
    # unchanged and write nothing.
    assert hub.api("GET", "/hub/admin/api/quota/users", tina)[0] == 200

    def fill(text: str, who: str, n: int) -> str:
        t = text.replace("{who}", who).replace("{budget}", "bg" if who == "ann" else "bo").replace("{server}", f"m{n}")
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
                st, r = hub.api("POST", "/hub/api/quota/me/requests", ann if who == "ann" else hub.token_for("cat"), {"amount": 1, "reason": "fixture"})
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
