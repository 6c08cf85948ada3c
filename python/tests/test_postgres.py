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

from scenarios import assert_matches_native, files

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
