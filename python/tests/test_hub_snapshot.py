"""The hub's long quota work never holds the engine's worker for its whole length: the group
snapshot (the hub's groups read from a real JupyterHub database through its own session a page of
users per transaction, the engine's read a page at a time, only the users whose groups differ written, a page per transaction)
and a refresh with a run id (a chunk of users per worker call), so a call made meanwhile runs
between the pages or chunks. (test_hub_groups.py runs the snapshot inside a real JupyterHub.)"""

from __future__ import annotations

import asyncio

import pytest

from jupyterhub_quota import Caller, QuotaEngine
from jupyterhub_quota.hub import groups
from jupyterhub_quota.hub.integration import Integration
from jupyterhub_quota.host.service import QuotaService

VALUES = {"custom": {"authMode": "github", "quota": {"defaultQuota": 5}}}
ADMIN = Caller("admin", admin=True)
T0 = 1_795_000_000


def hub_db(path, members: dict[str, list[str]]):
    """A JupyterHub database (JupyterHub's own ORM on a SQLite file) with these users in these groups."""
    from jupyterhub import orm

    db = orm.new_session_factory(f"sqlite:///{path}")()
    found: dict[str, orm.Group] = {}
    for name, names in members.items():
        user = orm.User(name=name)
        db.add(user)
        for g in names:
            if g not in found:
                found[g] = orm.Group(name=g)
                db.add(found[g])
            found[g].users.append(user)
    db.commit()
    return db


def engine_groups(service: QuotaService) -> dict[str, list[str]]:
    r = service.run_sync(lambda e: e.handle_request("GET", "/admin/api/quota/memberships", "", "", ADMIN, T0))
    return {m["username"]: m["groups"] for m in r.json()["memberships"] if m["groups"]}


class Calls:
    """The engine's memberships writes counted."""

    replaced = 0


def test_a_snapshot_writes_only_what_differs_a_page_at_a_time_from_the_hubs_own_database(tmp_path, monkeypatch):
    monkeypatch.setattr(groups, "HUB_PAGE", 2)
    monkeypatch.setattr(groups, "READ_PAGE", 3)
    monkeypatch.setattr(groups, "WRITE_PAGE", 2)
    calls = Calls()
    service = QuotaService(lambda: QuotaEngine(str(tmp_path / "q.db"), VALUES))
    real = QuotaEngine.replace_memberships

    def counted(self, users, complete, now=None):
        assert not complete and len(users) <= 2, users
        calls.replaced += 1
        return real(self, users, complete, now)

    monkeypatch.setattr(QuotaEngine, "replace_memberships", counted)
    # What the engine was told before: `gone` has left every hub group since, `bo` moved.
    service.run_sync(lambda e: real(e, [("gone", ["lab"]), ("bo", ["old"]), ("cy", ["lab"])], True, T0))
    hub = {"ann": ["lab", "gpu"], "bo": ["new"], "cy": ["lab"], "dee": ["lab"], "eve": ["x"], "fay": []}
    db = hub_db(tmp_path / "jupyterhub.sqlite", hub)
    q = Integration(service, scheduler=False, auto_stop=False, snapshot_groups=groups.snapshot)
    q.app = type("App", (), {"db": db})()

    asyncio.run(q.snapshot_groups())
    want = {u: sorted(g) for u, g in hub.items() if g}
    assert engine_groups(service) == want
    # ann, bo, dee, eve and gone differ (cy does not): three pages of at most two.
    assert calls.replaced == 3
    asyncio.run(q.snapshot_groups())
    assert calls.replaced == 3, "nothing differs the second time: nothing written"
    # A hub change is the only write of the next snapshot.
    from jupyterhub import orm

    x = db.query(orm.Group).filter_by(name="x").one()  # held: the session keeps objects weakly
    x.users.clear()
    db.commit()
    asyncio.run(q.snapshot_groups())
    assert calls.replaced == 4
    assert engine_groups(service) == {u: g for u, g in want.items() if u != "eve"}


@pytest.mark.parametrize("how", ["rest", "rule"])
def test_a_call_made_during_a_refresh_runs_between_its_chunks(tmp_path, how):
    values = {"custom": {"authMode": "github", "quota": {"defaultQuota": 5, "refreshRules": {
        "daily": {"enabled": True, "schedule": "0 0 * * *", "action": "add", "amount": 1}}}}}
    log: list[str] = []
    service: QuotaService

    def after(_e):
        log.append("call")
        if len(log) == 1:
            # Made while the refresh's first chunk ran: queued behind it, and before its next one.
            service.executor.submit(lambda: log.append("other"))

    service = QuotaService(lambda: QuotaEngine(str(tmp_path / "q.db"), values, refresh_chunk_users=10), after_call=after)
    service.run_sync(lambda e: e.conn.executemany(
        "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?, 0, 0, ?)",
        [(f"u{i:03}", T0) for i in range(35)]))
    log.clear()

    async def refresh():
        if how == "rest":
            r = await service.request("POST", "/admin/api/quota/refresh", {"action": "add", "amount": 1, "run_id": "r1"}, ADMIN)
            assert r.status == 200, r.body
            return r.json()
        return await service.run_steps(lambda e: e.run_rule_step("daily", "daily@1", now=T0))

    out = asyncio.run(refresh())
    assert out["users_updated"] == 35
    # Four chunks of at most 10 users (the last one answers), the other call after the first.
    assert log == ["call", "other", "call", "call", "call"], log
    balances = service.run_sync(lambda e: e.conn.execute("SELECT DISTINCT balance FROM users").fetchall())
    assert balances == [(1,)]
