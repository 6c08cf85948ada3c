"""The admin list of 50,000 users through the Python host, as the hub's admin page asks for it
(`GET /admin/api/quota/`, whole), over a SQLite file: median of 10 engine calls, and where the
time of one call goes (the engine's own wasm, the storage imports, the converters) with
``--profile``. Prints figures; asserts nothing about time.

    bash scripts/build-wasm.sh && bash scripts/python-env.sh && target/pyenv/bin/python python/bench/bench_admin_list.py [--profile]
"""

from __future__ import annotations

import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jupyterhub_quota import Caller, QuotaEngine

USERS = 50_000
ROUNDS = 10
ADMIN = Caller("admin", admin=True)
VALUES = {"custom": {"authMode": "github"}}
T0 = 1_795_000_000


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        e = QuotaEngine(str(Path(d) / "q.db"), VALUES)
        e.conn.execute("BEGIN")
        e.conn.executemany(
            "INSERT INTO users (username, balance, unlimited, updated_at) VALUES (?, ?, 0, ?)",
            [(f"u{i:05}", i % 100, T0) for i in range(USERS)],
        )
        e.conn.execute("COMMIT")
        times = []
        for _ in range(ROUNDS):
            t = time.perf_counter()
            r = e.handle_request("GET", "/admin/api/quota/", "", "", ADMIN, T0)
            times.append(time.perf_counter() - t)
            assert r.status == 200, r.body
        n = len(json.loads(r.body)["users"])
        assert n == USERS, n
        print(f"GET /admin/api/quota/ with {USERS:,} users through the Python host (SQLite file), median of {ROUNDS}: "
              f"{statistics.median(times) * 1e3:.1f} ms ({len(r.body):,} bytes)")
        if "--profile" in sys.argv:
            p = cProfile.Profile()
            p.enable()
            e.handle_request("GET", "/admin/api/quota/", "", "", ADMIN, T0)
            p.disable()
            pstats.Stats(p).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
