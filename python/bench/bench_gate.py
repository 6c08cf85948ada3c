"""The spawn gate through the Python bridge: median microseconds per check-start (the hub's
`POST /api/quota/sessions`, each call its own transaction), over SQLite `:memory:` (with and
without the hub's metrics, which count the observations each call returns) and over a file with
`synchronous=FULL`, and through the hub's worker thread; beside the Rust host's figures for the
same component in the same run. Prints figures; asserts nothing about time.

    bash scripts/build-wasm.sh && target/pyenv/bin/python python/bench/bench_gate.py
(`bash scripts/test-python.sh` creates target/pyenv.)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from jupyterhub_quota import Caller, QuotaEngine
from jupyterhub_quota.hub.metrics import Metrics
from jupyterhub_quota.host.service import QuotaService

REPO = Path(__file__).resolve().parents[2]
VALUES = {"custom": {"authMode": "github", "accelerators": {"phx": {"quotaRate": 2.5}}}}
HUB = Caller("hub", scopes=("quota:sessions",))
USERS = 200
ROUNDS = 10
T0 = 1_795_000_000


def seed(e: QuotaEngine) -> None:
    e.conn.executemany(
        "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?, 1000000000, 0, 0)",
        [(f"user{i:05}",) for i in range(USERS)],
    )


#: Groups (issue 25): 20 restricted accelerators, and a user who reports 50 groups at every start.
GROUP_VALUES = {"custom": {
    "authMode": "github",
    "quota": {"groups": {f"g{k:02}": {"accelerators": [f"a{k % 20:02}"]} for k in range(100)}},
    "accelerators": {f"a{a:02}": {"quotaRate": 2.5} for a in range(20)},
}}
FIFTY = [f"g{k:02}" for k in range(50)]


def bodies(groups: bool = False) -> list[str]:
    if groups:
        return [
            json.dumps({"username": f"user{i:05}", "runtime_minutes": 60, "resource_type": f"a{i % 20:02}", "groups": FIFTY})
            for i in range(USERS)
        ]
    return [json.dumps({"username": f"user{i:05}", "runtime_minutes": 60, "resource_type": "phx"}) for i in range(USERS)]


def gate_us(e: QuotaEngine, groups: bool = False) -> float:
    seed(e)
    times = []
    for r in range(ROUNDS):
        now = T0 + r * 7200
        for b in bodies(groups):
            t = time.perf_counter()
            resp = e.handle_request("POST", "/api/quota/sessions", "", b, HUB, now)
            times.append(time.perf_counter() - t)
            assert resp.status == 201, resp.body
        e.cleanup_stale(now + 9 * 3600)
    return statistics.median(times) * 1e6


def through_worker_us(db: str) -> float:
    service = QuotaService(lambda: QuotaEngine(db, VALUES))
    service.run_sync(seed)

    async def run() -> float:
        times = []
        for b in bodies():
            t = time.perf_counter()
            r = await service.request("POST", "/api/quota/sessions", b, HUB)
            times.append(time.perf_counter() - t)
            assert r.status == 201, r.body
        return statistics.median(times) * 1e6

    return asyncio.run(run())


def rust() -> dict:
    out = subprocess.run(
        ["cargo", "bench", "-q", "--locked", "-p", "quota-host", "--bench", "component"],
        cwd=REPO, env={**os.environ, "BENCH_PROFILE": "gate"}, capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        mem = gate_us(QuotaEngine(":memory:", VALUES))
        grouped = gate_us(QuotaEngine(":memory:", GROUP_VALUES), groups=True)
        counted = QuotaEngine(":memory:", VALUES)
        counted.observer = Metrics(registry=CollectorRegistry())
        mem_metrics = gate_us(counted)
        disk = gate_us(QuotaEngine(str(Path(d) / "q.db"), VALUES))
        hop = through_worker_us(str(Path(d) / "w.db"))
    print(f"check-start through the Python bridge (wasmtime-py, {USERS} users x {ROUNDS} rounds, median per call):")
    print(f"  SQLite :memory:                          {mem:8.0f} us")
    print(f"  SQLite :memory:, the hub's metrics on    {mem_metrics:8.0f} us   ({mem_metrics / mem:.2f}x)")
    print(f"  SQLite :memory:, 50 groups reported, 20 restricted accelerators {grouped:8.0f} us   ({grouped / mem:.2f}x)")
    print(f"  SQLite file, WAL, synchronous=FULL       {disk:8.0f} us")
    print(f"  file, from the event loop via the worker {hop:8.0f} us")
    r = rust()
    print("the same component through the Rust host (wasmtime), SQLite :memory::")
    print(f"  as the hub's REST request                {r['check_start_rest_ns'] / 1000:8.1f} us   (Python/Rust {mem / (r['check_start_rest_ns'] / 1000):.0f}x)")
    print(f"  typed check-start                        {r['check_start_typed_ns'] / 1000:8.1f} us")


if __name__ == "__main__":
    sys.exit(main())
