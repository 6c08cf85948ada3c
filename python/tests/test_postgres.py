"""The Python bridge over a real PostgreSQL server (scripts/with-postgres.sh starts one and sets
QUOTA_TEST_PG_URL; scripts/test-python.sh runs the suite under it): every scenario byte for byte as
the native core, and concurrent engines keeping every balance equal to its ledger."""

from __future__ import annotations

import itertools
import json
import os
import threading

import psycopg
import pytest

from jupyterhub_quota import Caller, QuotaEngine

from support.scenarios import assert_matches_native, files

_n = itertools.count()


def server_url() -> str:
    url = os.environ.get("QUOTA_TEST_PG_URL")
    assert url, "QUOTA_TEST_PG_URL is not set: run through scripts/with-postgres.sh (scripts/test-python.sh does)"
    return url


def fresh_database(prefix: str) -> str:
    url = server_url()
    name = f"py_{prefix}_{os.getpid()}_{next(_n)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


@pytest.mark.parametrize("path", files(), ids=lambda p: p.name)
def test_scenario_transcript_over_postgres_matches_the_native_core(path, native_transcripts):
    assert_matches_native(path, native_transcripts, lambda values: QuotaEngine(fresh_database("scenario"), values))


def test_concurrent_engines_keep_the_ledger_exact():
    url = fresh_database("concurrent")
    values = {"custom": {"authMode": "github", "quota": {"defaultQuota": 0}}}
    admin = Caller("admin", admin=True)
    engines = [QuotaEngine(url, values) for _ in range(4)]
    errors = []

    def work(e: QuotaEngine, t: int):
        try:
            for r in range(30):
                body = json.dumps({"action": "add", "amount": 1 + r % 3})
                resp = e.handle_request("POST", f"/admin/api/quota/users/u{(t + r) % 3}", body=body, caller=admin, now=1_795_000_000)
                assert resp.status == 200, resp.body
        except Exception as ex:  # noqa: BLE001 - reported below
            errors.append(repr(ex))

    threads = [threading.Thread(target=work, args=(e, t)) for t, e in enumerate(engines)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with psycopg.connect(url) as c:
        wrong = c.execute(
            "SELECT u.username FROM users u LEFT JOIN transactions t ON t.username = u.username "
            "GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)").fetchall()
        (n,) = c.execute("SELECT COUNT(*) FROM transactions").fetchone()
    assert wrong == [] and n == 4 * 30
    print(f"4 engines x 30 adds: ledger exact, {sum(e.conflicts_retried for e in engines)} conflict retries")
    for e in engines:
        e.close()


def _ledger_mismatches(url: str) -> list:
    with psycopg.connect(url) as c:
        return c.execute(
            "SELECT u.username FROM users u LEFT JOIN transactions t ON t.username = u.username "
            "GROUP BY u.username, u.balance HAVING u.balance <> COALESCE(SUM(t.amount), 0)").fetchall()


def test_the_service_pools_one_connection_per_worker_and_keeps_the_ledger_exact():
    import asyncio

    from jupyterhub_quota.host.service import HUB, QuotaService

    url = fresh_database("pool")
    values = {"custom": {"authMode": "github", "quota": {"defaultQuota": 1000}}}
    service = QuotaService(lambda: QuotaEngine(url, values), workers=4)
    # Four calls that can only all finish if four workers run them at once, each on its own engine.
    barrier = threading.Barrier(4, timeout=60)
    engines = set()

    def meet(e: QuotaEngine) -> None:
        engines.add(id(e))
        barrier.wait()

    async def scenario() -> list:
        await asyncio.gather(*(service.run(meet) for _ in range(4)))
        starts = [
            service.request("POST", "/api/quota/sessions", {"username": f"p{i % 10}", "runtime_minutes": 10}, caller=HUB)
            for i in range(80)
        ]
        started = await asyncio.gather(*starts)
        assert all(r.status == 201 for r in started), [r.body for r in started if r.status != 201]
        ends = [
            service.request("POST", f"/api/quota/sessions/{r.json()['session_id']}/end", {}, caller=HUB)
            for r in started
        ]
        return await asyncio.gather(*ends)

    ended = asyncio.run(scenario())
    assert len(engines) == 4
    assert all(r.status == 200 for r in ended), [r.body for r in ended if r.status != 200]
    with psycopg.connect(url) as c:
        (n,) = c.execute("SELECT COUNT(*) FROM sessions WHERE status <> 'active'").fetchone()
        (conns,) = c.execute(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert n == 80
    assert conns == 4, f"{conns} connections for 4 workers"
    assert _ledger_mismatches(url) == []
    print(f"4 workers, 80 sessions started and ended at once: {service.conflicts_retried} conflict retries")


def test_a_refresh_committed_in_chunks_matches_one_call_and_resumes_each_user_once():
    values = {"custom": {"authMode": "github", "quota": {"defaultQuota": 5}}}
    admin = Caller("admin", admin=True)
    whole_url, chunked_url = fresh_database("whole"), fresh_database("chunked")
    whole = QuotaEngine(whole_url, values)
    chunked = QuotaEngine(chunked_url, values, refresh_chunk_users=7)
    for e in (whole, chunked):
        for i in range(100):
            body = json.dumps({"action": "set", "amount": i})
            assert e.handle_request("POST", f"/admin/api/quota/users/c{i:03}", body=body, caller=admin, now=1_795_000_000).status == 200
    body = json.dumps({"action": "add", "amount": 10, "max_balance": 50, "run_id": "r1"})
    a = whole.handle_request("POST", "/admin/api/quota/refresh", body=body, caller=admin, now=1_795_000_060)
    b = chunked.handle_request("POST", "/admin/api/quota/refresh", body=body, caller=admin, now=1_795_000_060)
    assert (a.status, a.body) == (b.status, b.body)
    dump = "SELECT username, balance FROM users ORDER BY username"
    rows = "SELECT id, username, amount, balance_after FROM transactions ORDER BY id"
    with psycopg.connect(whole_url) as w, psycopg.connect(chunked_url) as c:
        assert w.execute(dump).fetchall() == c.execute(dump).fetchall()
        assert w.execute(rows).fetchall() == c.execute(rows).fetchall()
    # A run cut off after its first chunk (as a killed process leaves it) is completed by its run id.
    from jupyterhub_quota.host.engine import _record

    again = json.dumps({"action": "add", "amount": 1, "run_id": "r2"})
    req = _record(method="POST", path="/admin/api/quota/refresh", query="", body=again,
                  caller=_record(name="admin", admin=True, scopes=[]))
    step = chunked._call(lambda f, s: f["handle-request-step"](s, req, 1_795_000_120, 7))
    assert step is None, step  # `more`: one chunk committed
    second = "SELECT COUNT(*), COUNT(DISTINCT username) FROM transactions WHERE created_at = 1795000120"
    with psycopg.connect(chunked_url) as c:
        assert c.execute(second).fetchone() == (7, 7)
    r = chunked.handle_request("POST", "/admin/api/quota/refresh", body=again, caller=admin, now=1_795_000_120)
    assert r.status == 200, r.body
    assert json.loads(r.body)["users_updated"] == 100
    with psycopg.connect(chunked_url) as c:
        assert c.execute(second).fetchone() == (100, 100)
    assert _ledger_mismatches(chunked_url) == []
    whole.close()
    chunked.close()
