"""The host conformance suite (tests/conformance/faults.json), as the JupyterHub package meets it:
storage faults through its own SQLite bridge (the bridge's ``run`` and ``begin`` wrapped), guest
faults through the fault-injection component, every expectation as the file states it for every
host."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from jupyterhub_quota import Caller, Component, EngineError, QuotaEngine, StorageError

REPO = Path(__file__).resolve().parents[2]
FAULT = REPO / "target" / "wasm" / "quota-engine-fault.wasm"
SUITE = json.loads((REPO / "tests" / "conformance" / "faults.json").read_text())
T0 = 1_795_000_000
WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE)", re.I)


def cases():
    for c in SUITE["cases"]:
        writes = c["fault"]["write"] if isinstance(c["fault"].get("write"), list) else [c["fault"].get("write")]
        for w in writes:
            yield pytest.param(c, w, id=f"{c['name']}" + (f" (write {w})" if len(writes) > 1 else ""))


def dump(path: Path, e: QuotaEngine) -> list:
    """Every row of the engine's tables (the hosting contract's list), in key order."""
    with sqlite3.connect(path) as d:
        return [d.execute(f"SELECT {', '.join(cols)} FROM {name} ORDER BY {', '.join(key)}").fetchall()
                for name, cols, key in e.contract.tables]


def inject(e: QuotaEngine, kind: str, write: int, times, nth_run=None) -> None:
    """The ``write``-th write of each run (of the ``run``-th only, when given) of a call fails with
    ``kind``, ``times`` runs."""
    b = e.bridge
    state = {"seen": 0, "runs": 0, "left": float("inf") if times == "always" else (times or 1)}
    run, rows_of, begin = b.run, b._execute_rows, b.begin

    def fault(sql: str) -> None:
        if WRITE.match(sql) and state["left"] > 0 and nth_run in (None, state["runs"]):
            state["seen"] += 1
            if state["seen"] == write:
                state["left"] -= 1
                raise e.contract.failed(kind, f"injected: {kind}")

    def faulty_run(sql, params=()):
        fault(sql)
        return run(sql, params)

    def faulty_rows(sql, rows):
        # Each row of an execute-many is a write, as the contract counts them.
        changed = 0
        for row in rows:
            fault(sql)
            changed += rows_of(sql, [row])
        return changed

    def faulty_begin(w=True):
        state["seen"] = 0
        state["runs"] += 1
        begin(w)

    b.run, b._execute_rows, b.begin = faulty_run, faulty_rows, faulty_begin


def balances(path: Path, users: list) -> dict:
    with sqlite3.connect(path) as d:
        return {u: (d.execute("SELECT balance FROM users WHERE username = ?", (u,)).fetchone() or (None,))[0] for u in users}


def send(e: QuotaEngine, r: dict):
    c = r["caller"]
    caller = Caller(c["name"], admin=c.get("admin", False), scopes=tuple(c.get("scopes", ())))
    return e.handle_request(r["method"], r["path"], body=r.get("body", ""), caller=caller, now=T0)


@pytest.mark.parametrize("case,write", list(cases()))
def test_conformance(tmp_path, case, write):
    db = tmp_path / "q.db"
    fault = case["fault"]
    if "guest" in fault:
        e = QuotaEngine(str(db), SUITE["values"], component=Component.load(FAULT),
                        call_deadline=fault.get("deadline_ms", 30_000) / 1000)
    else:
        e = QuotaEngine(str(db), SUITE["values"], refresh_chunk_users=case.get("chunk_users"))
    for r in case["before"]:
        assert send(e, r).status < 300, r["path"]
    before = dump(db, e)
    if "storage" in fault:
        inject(e, fault["storage"], write, fault.get("times"), fault.get("run"))
    x = case["expect"]
    answer, error = None, None
    try:
        answer = send(e, case["request"])
    except (StorageError, EngineError) as err:
        error = err
    if "error" in x:
        assert isinstance(error, StorageError), f"expected a storage error, got {error or answer}"
        assert (error.kind, error.transient, error.http_status) == (x["error"], x["transient"], x["http_status"])
    elif x.get("engine_error"):
        assert isinstance(error, EngineError), f"expected an engine error, got {error or answer}"
    else:
        assert error is None and answer.status == x["status"], answer
    if "retries" in x:
        want = e.contract.retry_attempts if x["retries"] == "contract" else x["retries"]
        assert e.conflicts_retried == want
    if x.get("unchanged"):
        assert dump(db, e) == before, "the failed call left a write behind"
    if "balance" in x:
        user, want = x["balance"]
        assert balances(db, [user]) == {user: want}
    if "balances" in x:
        assert balances(db, list(x["balances"])) == x["balances"]
    if "then" in case:
        then = case["then"]
        r = send(e, then)
        assert r.status == then["status"], r.body
        for k, v in then.get("json", {}).items():
            assert r.json()[k] == v, k
        if "balances" in then:
            assert balances(db, list(then["balances"])) == then["balances"]
    e.close()
